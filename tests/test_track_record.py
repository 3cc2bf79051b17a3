"""The track record on three matches whose quotes and results are chosen by hand (see
tests/plugins/track_record.py, which describes them and logs their track record).
"""

from __future__ import annotations

import datetime as dt
import math

import pytest
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, OddsQuote, PredictionLogEntry, utcnow
from app.main import create_app
from app.services import track_record
from app.services.ingest.latest import refresh_latest_quotes
from app.settings import Settings
from tests.commands import Oddsboost
from tests.helpers import count_rows, error_messages
from tests.plugins.track_record import (
    BEFORE,
    M1,
    M1_KICKOFF,
    M3_KICKOFF,
    UTC,
    Fixture,
    activate_at,
    add_quotes,
    at,
    entry_of,
    seed,
    settings_for,
    settle,
    store_match,
)

T95 = float(stats.t.ppf(0.975, 2))  # Student's t, 2 degrees of freedom


def test_an_entry_holds_the_served_prediction_its_bets_and_quotes(
    session: Session, logged: dict[str, int]
) -> None:
    served = entry_of(session, logged["M1"]).served
    assert served.probabilities == pytest.approx((0.5, 0.25, 0.25))
    assert served.consensus == pytest.approx((0.5, 0.85 / 3, 0.65 / 3))
    assert served.basis == "model"
    assert [q.bookmaker for q in served.quotes] == ["B365", "BW", "PS"]
    assert served.quotes[2].probabilities == pytest.approx((0.6, 0.2, 0.2))
    assert served.quotes[0].captured_at == M1_KICKOFF - BEFORE
    # B365's 2.5 home, PS's 5.0 draw and B365's 5.0 away are each worth 0.25 exactly: one
    # bet a match, the first of equal values in 1, X, 2 order.
    bets = {(b.outcome, b.bookmaker, b.price): b for b in served.bets}
    assert set(bets) == {("1", "B365", 2.5)}
    assert bets["1", "B365", 2.5].expected_value == 0.25
    assert bets["1", "B365", 2.5].stake_fraction == pytest.approx(0.02)
    assert entry_of(session, logged["M2"]).served.bets == ()


def test_the_version_active_at_kickoff_predicts(session: Session, settings: Settings) -> None:
    first = activate_at(session, {"BW": 1.0}, M1_KICKOFF - dt.timedelta(days=1))
    match_id = store_match(session, M1)
    # Activated after kickoff: not what was served.
    second = activate_at(session, {"B365": 1.0}, M1_KICKOFF + dt.timedelta(minutes=1))
    assert second != first
    track_record.log_kickoffs(
        session, settings_for(settings.database_url), now=M1_KICKOFF + dt.timedelta(minutes=5)
    )
    entry = entry_of(session, match_id)
    assert entry.model_version == first
    assert entry.served.model_version == first
    assert entry.served.probabilities == pytest.approx((0.5, 0.25, 0.25))


def test_with_no_version_active_at_kickoff_the_consensus_is_served(
    session: Session, settings: Settings
) -> None:
    match_id = store_match(session, M1)
    activate_at(session, {"BW": 1.0}, M1_KICKOFF + dt.timedelta(hours=1))
    track_record.log_kickoffs(
        session, settings_for(settings.database_url), now=M1_KICKOFF + dt.timedelta(hours=2)
    )
    served = entry_of(session, match_id).served
    assert served.model_version is None
    assert served.basis == "consensus"
    assert served.probabilities == pytest.approx((0.5, 0.85 / 3, 0.65 / 3))


def test_quotes_captured_after_kickoff_are_not_used(session: Session, settings: Settings) -> None:
    activate_at(session, {"BW": 1.0}, dt.datetime(2026, 1, 1, tzinfo=UTC))
    match_id = store_match(session, M1)
    add_quotes(session, match_id, {"BW": (1.5, 5.0, 7.5)}, M1_KICKOFF + dt.timedelta(minutes=1))
    track_record.log_kickoffs(
        session, settings_for(settings.database_url), now=M1_KICKOFF + dt.timedelta(minutes=10)
    )
    served = entry_of(session, match_id).served
    assert served.probabilities == pytest.approx((0.5, 0.25, 0.25))
    bw = next(q for q in served.quotes if q.bookmaker == "BW")
    assert (bw.home, bw.captured_at) == (2.0, M1_KICKOFF - BEFORE)


def test_an_entry_is_never_rewritten_by_a_refit_or_a_rebuild(
    session: Session, settings: Settings, logged: dict[str, int]
) -> None:
    before = entry_of(session, logged["M1"])
    kept = (before.id, before.logged_at, before.model_version, before.served)
    # Another version, recorded as active since before the kickoffs: as if the past had
    # been refitted. Logged afresh, M1 would now be B365's line.
    activate_at(session, {"B365": 1.0}, dt.datetime(2026, 2, 1, tzinfo=UTC))
    again = track_record.rebuild(
        session,
        settings_for(settings.database_url),
        kickoff_from=dt.datetime(2026, 3, 1, tzinfo=UTC),
        kickoff_to=dt.datetime(2026, 3, 4, tzinfo=UTC),
        now=dt.datetime(2026, 3, 10, tzinfo=UTC),
    )
    assert again == track_record.LogCount(already_logged=3)
    # A direct second write of a logged match is a no-op too.
    rewritten = track_record.log_matches(
        session, settings_for(settings.database_url), [(logged["M1"], M1_KICKOFF)]
    )
    assert rewritten == track_record.LogCount(already_logged=1)
    session.expire_all()
    after = entry_of(session, logged["M1"])
    assert (after.id, after.logged_at, after.model_version, after.served) == kept
    assert count_rows(session, PredictionLogEntry) == 3


@pytest.mark.usefixtures("logged")
def test_performance_is_scored_by_hand(track_client: TestClient) -> None:
    body = track_client.get("/performance", params={"from": "2026-03-01", "to": "2026-03-04"})
    assert body.status_code == 200, body.text
    answer = body.json()
    assert answer["from"] == "2026-03-01T00:00:00Z"
    performance = answer["performance"]
    assert performance["matches"] == 3
    served = performance["served"]
    assert served["log_loss"] == pytest.approx(-(math.log(0.5) + math.log(0.2) + math.log(0.1)) / 3)
    assert served["brier"] == pytest.approx((0.375 + 0.96 + 1.46) / 3)
    assert served["rps"] == pytest.approx((0.15625 + 0.16 + 0.725) / 3)
    assert served["accuracy"] == pytest.approx(1 / 3)
    consensus = performance["consensus"]
    assert consensus["log_loss"] == pytest.approx(
        -(math.log(0.5) + math.log(0.2) + math.log(0.15)) / 3
    )
    assert consensus["accuracy"] == pytest.approx(1 / 3)
    # Per match served − consensus: 0, 0, ln 1.5; its sd is ln 1.5 / √3, its se ln 1.5 / 3.
    difference = performance["served_minus_consensus"]
    a = math.log(1.5)
    assert difference["matches"] == 3
    assert difference["mean"] == pytest.approx(a / 3)
    assert difference["low"] == pytest.approx(a / 3 - T95 * a / 3)
    assert difference["high"] == pytest.approx(a / 3 + T95 * a / 3)
    assert difference["p_value"] == pytest.approx(2 * stats.t.sf(1.0, 2))
    # BW and PS quoted every match, B365 two of three; PS's log loss is the lower.
    best = performance["best_bookmaker"]
    assert (best["code"], best["coverage"]) == ("PS", 1.0)
    assert best["scores"]["log_loss"] == pytest.approx(
        -(math.log(0.6) + math.log(0.2) + math.log(0.1)) / 3
    )
    b = math.log(0.6 / 0.5)
    assert best["served_minus_best"]["mean"] == pytest.approx(b / 3)
    assert best["served_minus_best"]["high"] == pytest.approx(b / 3 + T95 * b / 3)
    value = performance["value_bets"]
    # One bet a match: M1's home win (CLV 0.5, won at 2.5), M3's (CLV 0.6, lost).
    assert (value["bets"], value["bets_with_closing"]) == (2, 2)
    clv = [0.5, 0.6]
    assert value["clv"]["mean"] == pytest.approx(sum(clv) / 2)
    clv_se = stats.tstd(clv) / math.sqrt(2)  # 0.05
    assert value["clv"]["low"] == pytest.approx(0.55 - stats.t.ppf(0.975, 1) * clv_se)
    assert value["roi"]["mean"] == pytest.approx((1.5 - 1) / 2)
    assert value["profit"] == pytest.approx(0.5)
    # M1's bet: +.02 × 1.5; then M3's −.02.
    assert [point["bankroll"] for point in value["bankroll"]] == pytest.approx([1.03, 1.03 * 0.98])
    assert [point["kickoff"] for point in value["bankroll"]] == [
        "2026-03-02T15:00:00Z",
        "2026-03-03T15:00:00Z",
    ]
    assert performance["days"] == [
        {
            "day": "2026-03-02",
            "matches": 2,
            "served_log_loss": pytest.approx(-(math.log(0.5) + math.log(0.2)) / 2),
            "consensus_log_loss": pytest.approx(-(math.log(0.5) + math.log(0.2)) / 2),
            # PS, the best of the window, gave M1's home win .6 and M2's draw .2.
            "best_bookmaker_matches": 2,
            "best_bookmaker_log_loss": pytest.approx(-(math.log(0.6) + math.log(0.2)) / 2),
            "bets": 1,
            "profit": pytest.approx(1.5),
        },
        {
            "day": "2026-03-03",
            "matches": 1,
            "served_log_loss": pytest.approx(-math.log(0.1)),
            "consensus_log_loss": pytest.approx(-math.log(0.15)),
            "best_bookmaker_matches": 1,
            "best_bookmaker_log_loss": pytest.approx(-math.log(0.1)),
            "bets": 1,
            "profit": pytest.approx(-1.0),
        },
    ]


def test_a_corrected_result_is_scored_again(
    track_client: TestClient, session: Session, logged: dict[str, int]
) -> None:
    settle(session, logged["M3"], (3, 0))  # the away win was a home win
    performance = track_client.get("/performance").json()["performance"]
    assert performance["served"]["log_loss"] == pytest.approx(
        -(math.log(0.5) + math.log(0.2) + math.log(0.8)) / 3
    )
    assert performance["value_bets"]["profit"] == pytest.approx(1.5 + 1.0)


def test_unsettled_matches_and_other_windows_are_left_out(
    track_client: TestClient, session: Session, logged: dict[str, int]
) -> None:
    match = session.get(Match, logged["M3"])
    assert match is not None
    match.result = match.home_goals = match.away_goals = None
    session.flush()
    one_day = track_client.get("/performance", params={"to": "2026-03-02T16:00:00Z"}).json()
    assert one_day["performance"]["matches"] == 1
    assert track_client.get("/performance").json()["performance"]["matches"] == 2


@pytest.mark.usefixtures("logged")
def test_an_empty_window_answers_zeros_and_nulls(track_client: TestClient) -> None:
    answer = track_client.get("/performance", params={"competition": "SP1"})
    assert answer.status_code == 200, answer.text
    performance = answer.json()["performance"]
    assert performance["matches"] == 0
    assert performance["served"] == {
        "matches": 0,
        "log_loss": None,
        "brier": None,
        "rps": None,
        "accuracy": None,
    }
    assert performance["served_minus_consensus"]["mean"] is None
    assert performance["best_bookmaker"]["code"] is None
    assert performance["value_bets"]["bets"] == 0
    assert performance["value_bets"]["clv"]["mean"] is None
    assert performance["value_bets"]["bankroll"] == []
    assert performance["days"] == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "2026-03-04", "to": "2026-03-01"}, "query.to: must be after `from`"),
        ({"from": "yesterday"}, "query.from"),
        ({"to": "2026-13-01"}, "query.to"),
        ({"competition": "X" * 100}, "query.competition"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(
    client: TestClient, params: dict[str, str], message: str
) -> None:
    answer = client.get("/performance", params=params)
    assert answer.status_code == 422, answer.text
    assert any(text.startswith(message) for text in error_messages(answer.json())), answer.json()


def test_the_job_logs_each_match_once_it_has_kicked_off(migrated_url: str) -> None:
    settings = settings_for(migrated_url)
    engine = make_engine(migrated_url)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            ids = seed(session)
        factory = make_session_factory(engine)
        track_record.track_record_job(
            engine, settings, clock=at(M1_KICKOFF - dt.timedelta(minutes=1))
        )
        with session_scope(factory) as session:
            assert count_rows(session, PredictionLogEntry) == 0
        track_record.track_record_job(
            engine, settings, clock=at(M1_KICKOFF + dt.timedelta(minutes=5))
        )
        with session_scope(factory) as session:
            logged = session.scalars(select(PredictionLogEntry.match_id)).all()
            assert logged == [ids["M1"]]
        # An hour after M3's kickoff, M2's is 21 hours back: both are written, M1 is left
        # as it was.
        track_record.track_record_job(
            engine, settings, clock=at(M3_KICKOFF + dt.timedelta(hours=1))
        )
        with session_scope(factory) as session:
            assert count_rows(session, PredictionLogEntry) == 3
        # Beyond the day it looks back, a match never logged is left to a rebuild.
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            late = store_match(
                session, Fixture("Hull", "Stoke", M3_KICKOFF, (0, 0), {"BW": (2.5, 5.0, 2.5)})
            )
        track_record.track_record_job(engine, settings, clock=at(M3_KICKOFF + dt.timedelta(days=2)))
        with session_scope(factory) as session:
            assert entry_count_of(session, late) == 0
    finally:
        engine.dispose()


def entry_count_of(session: Session, match_id: int) -> int:
    return len(
        session.scalars(
            select(PredictionLogEntry.id).where(PredictionLogEntry.match_id == match_id)
        ).all()
    )


def test_the_gauge_shows_the_rolling_difference(migrated_url: str) -> None:
    settings = settings_for(migrated_url)
    engine = make_engine(migrated_url)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            seed(session)
        track_record.track_record_job(
            engine, settings, clock=at(M1_KICKOFF + dt.timedelta(minutes=5))
        )
        track_record.track_record_job(
            engine, settings, clock=at(M3_KICKOFF + dt.timedelta(hours=3))
        )
    finally:
        engine.dispose()
    with TestClient(create_app(settings)) as client:
        metrics = client.get("/metrics").text
    line = next(
        line
        for line in metrics.splitlines()
        if line.startswith("oddsboost_served_minus_consensus_log_loss_30d ")
    )
    assert float(line.split()[1]) == pytest.approx(math.log(1.5) / 3)


def test_rebuild_says_how_many_it_wrote(migrated_url: str, oddsboost: Oddsboost) -> None:
    engine = make_engine(migrated_url)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            seed(session)
    finally:
        engine.dispose()
    env = {"ODDSBOOST_DATABASE_URL": migrated_url, "ODDSBOOST_DEMARGIN_METHOD": "multiplicative"}
    first = oddsboost.run(
        "track-record", "rebuild", "--from", "2026-03-02", "--to", "2026-03-03", env=env
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (
        "2 entries written, 0 matches already logged, 0 matches with no quote before kickoff"
    )
    second = oddsboost.run("track-record", "rebuild", "--from", "2026-03-01", env=env)
    assert second.stdout.strip() == (
        "1 entry written, 2 matches already logged, 0 matches with no quote before kickoff"
    )
    refused = oddsboost.run(
        "track-record", "rebuild", "--from", "2026-03-03", "--to", "2026-03-01", env=env
    )
    assert refused.returncode == 2
    assert "--to" in refused.stderr


def test_the_job_leaves_a_match_whose_quotes_all_came_after_kickoff(migrated_url: str) -> None:
    """A season file imported with its results brings undated quotes stored after kickoff:
    nothing was served at kickoff, so the job logs nothing; a rebuild of history may."""
    settings = settings_for(migrated_url)
    engine = make_engine(migrated_url)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            late = store_match(session, M1)
            # Undated, and stored (received, by the default: now) long after the kickoff.
            session.execute(
                update(OddsQuote).where(OddsQuote.match_id == late).values(captured_at=None)
            )
            refresh_latest_quotes(session, [late], utcnow())
        track_record.track_record_job(
            engine, settings, clock=at(M1_KICKOFF + dt.timedelta(minutes=5))
        )
        factory = make_session_factory(engine, for_writes=True)
        with session_scope(factory) as session:
            assert entry_count_of(session, late) == 0
            count = track_record.rebuild(
                session, settings, kickoff_from=M1_KICKOFF, kickoff_to=None, now=M3_KICKOFF
            )
            assert count.written == 1
    finally:
        engine.dispose()


def test_an_entry_of_a_postponed_match_is_not_scored(
    track_client: TestClient, session: Session, logged: dict[str, int]
) -> None:
    match = session.get(Match, logged["M3"])
    assert match is not None
    match.kickoff = M3_KICKOFF + dt.timedelta(days=21)  # rearranged, then played
    session.flush()
    assert track_client.get("/performance").json()["performance"]["matches"] == 2
    assert entry_of(session, logged["M3"]).kickoff == M3_KICKOFF  # the log is left as it was


def test_the_bets_logged_are_the_served_forecasts_whatever_the_operators_source(
    session: Session, settings: Settings
) -> None:
    ids = seed(session)
    operator = settings_for(settings.database_url)
    # Pinnacle's line first: judged by it, M1's home win at B365's 2.5 would claim
    # EV .6 × 2.5 − 1 = .5, exactly its CLV against that same line.
    assert operator.value_probability_source == "PS,consensus"
    track_record.log_matches(session, operator, [(ids["M1"], M1_KICKOFF)])
    served = entry_of(session, ids["M1"]).served
    assert served.value_source == "ensemble"
    (bet,) = served.bets
    # Judged by the served .5 instead: .5 × 2.5 − 1, a quarter below its CLV of .5.
    assert (bet.outcome, bet.price) == ("1", 2.5)
    assert bet.probability == pytest.approx(0.5)
    assert bet.expected_value == pytest.approx(0.25)
