"""The flag ledger through the API: flags recorded by ingests (once, with their events), no
write by any read, settlement against a live close, a season file's close or none, and
GET /flags with its filters, pages, CSV and problems.

Books without margin are used where a figure is worked out by hand (see tests/flag_books.py).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import threading
from collections.abc import Collection
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Inspector, inspect, select, text
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import downgrade_to, upgrade_to_head
from app.db.orm import ValueFlag, ValueFlagEvent
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.vocabulary import Phase
from app.main import create_app
from app.services import flags
from app.services.flags import LedgerWrites, record_flags
from app.services.ingest import ingest_batch
from app.settings import Settings
from tests.admin_requests import post_csv, post_odds
from tests.apps import build_app, refit_settings_for
from tests.flag_books import at, book, raise_away_flag, season_file
from tests.helpers import count_rows, error_messages, hand_made_version, received_at, wait_until

FUTURE_KICKOFF = "2030-01-12T15:00:00Z"
RAISED = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
LONG_AWAY = (2.5, 5.0, 2.5)
PAST_KICKOFF = dt.datetime(2026, 1, 10, 15, 0, tzinfo=dt.UTC)
BEFORE_PAST = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Value judged by the served prediction, which with no model is the mean of the fair
    lines (the figures below are worked out from it)."""
    return refit_settings_for(database_url)


def flags_of(session: Session) -> list[ValueFlag]:
    return list(session.scalars(select(ValueFlag).order_by(ValueFlag.id)))


def events_of(session: Session) -> list[ValueFlagEvent]:
    return list(session.scalars(select(ValueFlagEvent).order_by(ValueFlagEvent.id)))


Prices = tuple[str, tuple[float, float, float]]


def post_books(
    client: TestClient, headers: dict[str, str], moment: dt.datetime, *books: Prices, **match: str
) -> None:
    """Each bookmaker's prices for the match at FUTURE_KICKOFF (Arsenal v Chelsea unless
    ``match`` names others), captured a minute before ``moment`` and received at it."""
    captured = moment - dt.timedelta(minutes=1)
    quotes = [book(FUTURE_KICKOFF, code, prices, captured, **match) for code, prices in books]
    with received_at(client, moment):
        post_odds(client, headers, *quotes)


def test_a_flag_is_recorded_once_then_improved_then_withdrawn_its_first_record_kept(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    raise_away_flag(client, admin_headers, FUTURE_KICKOFF, RAISED)
    (flag,) = flags_of(session)
    first = (flag.outcome, flag.bookmaker, flag.price, flag.net_price, flag.raised_at)
    assert first == ("2", "PS", 4.0, 4.0, RAISED)
    assert flag.probability == pytest.approx(0.325)
    assert flag.expected_value == pytest.approx(0.3)
    assert (flag.value_source, flag.model_version, flag.status) == ("ensemble", None, "open")

    # The same quotes again: nothing new.
    raise_away_flag(client, admin_headers, FUTURE_KICKOFF, RAISED + dt.timedelta(hours=1))
    assert (count_rows(session, ValueFlag), count_rows(session, ValueFlagEvent)) == (1, 0)

    better_at = RAISED + dt.timedelta(days=1)
    with received_at(client, better_at):
        post_odds(
            client,
            admin_headers,
            book(FUTURE_KICKOFF, "PS", (1.9, 3.6, 4.4), better_at - dt.timedelta(minutes=1)),
        )
    (improved,) = events_of(session)
    assert (improved.change, improved.at, improved.bookmaker, improved.price) == (
        "improved",
        better_at,
        "PS",
        4.4,
    )

    # Both books alike with a margin: no outcome is worth a bet any more.
    gone_at = RAISED + dt.timedelta(days=2)
    captured = gone_at - dt.timedelta(minutes=1)
    with received_at(client, gone_at):
        post_odds(
            client,
            admin_headers,
            book(FUTURE_KICKOFF, "PS", (1.9, 3.5, 4.0), captured),
            book(FUTURE_KICKOFF, "B365", (1.9, 3.5, 4.0), captured),
        )
    withdrawn = events_of(session)[-1]
    assert (withdrawn.change, withdrawn.at, withdrawn.price) == ("withdrawn", gone_at, 4.0)
    assert withdrawn.expected_value is not None
    assert withdrawn.expected_value < 0
    session.expire_all()
    (flag,) = flags_of(session)
    assert (flag.outcome, flag.bookmaker, flag.price, flag.net_price, flag.raised_at) == first
    assert flag.status == "withdrawn"
    assert flag.expected_value == pytest.approx(0.3)


def test_a_flag_raised_again_lower_keeps_the_best_price_since_it_was_first_raised(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    raise_away_flag(client, admin_headers, FUTURE_KICKOFF, RAISED)

    def post(moment: dt.datetime, *books: Prices) -> None:
        post_books(client, admin_headers, moment, *books)

    post(RAISED + dt.timedelta(days=1), ("PS", (1.9, 3.6, 4.4)))  # improved: 4.4
    post(RAISED + dt.timedelta(days=2), ("PS", (1.9, 3.5, 4.0)), ("B365", (1.9, 3.5, 4.0)))
    # The books the flag was first raised on: raised again at 4.0, below the 4.4 it reached.
    post(RAISED + dt.timedelta(days=3), ("PS", (2.0, 4.0, 4.0)), ("B365", (2.5, 5.0, 2.5)))
    session.expire_all()
    (flag,) = flags_of(session)
    assert (flag.status, flag.best_net_price) == ("open", 4.4)
    # 4.2 beats the raise again's 4.0 but not the 4.4 seen since first raised: no event.
    post(RAISED + dt.timedelta(days=4), ("PS", (1.9, 3.6, 4.2)))
    assert [event.change for event in events_of(session)] == [
        "improved",
        "withdrawn",
        "raised_again",
    ]
    session.expire_all()
    assert flags_of(session)[0].best_net_price == 4.4


def test_only_the_matches_a_batch_changed_are_evaluated(
    client: TestClient, admin_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluated: list[set[int]] = []
    record = flags.after_ingest

    def spied(
        session: Session, match_ids: Collection[int], now: dt.datetime, terms: flags.FlagTerms
    ) -> flags.LedgerWrites:
        evaluated.append(set(match_ids))
        return record(session, match_ids, now, terms)

    monkeypatch.setattr(flags, "after_ingest", spied)
    raise_away_flag(client, admin_headers, FUTURE_KICKOFF, RAISED)
    other = {"home_team": "Everton", "away_team": "Fulham"}
    raise_away_flag(client, admin_headers, FUTURE_KICKOFF, RAISED, **other)
    # The first match's quotes again, unchanged, beside a new price of the second's.
    captured = RAISED - dt.timedelta(hours=1)
    with received_at(client, RAISED + dt.timedelta(hours=1)):
        post_odds(
            client,
            admin_headers,
            book(FUTURE_KICKOFF, "PS", (2.0, 4.0, 4.0), captured),
            book(FUTURE_KICKOFF, "PS", (2.0, 4.0, 4.2), captured, **other),
        )
    first, second, both = evaluated
    assert len(first) == len(second) == 1
    assert both == second


def test_no_read_writes_the_ledger(migrated_url: str) -> None:
    """/predict and every GET read the ledger's database and leave it as it was; the board
    shows the bet the ledger recorded."""
    engine = make_engine(migrated_url)
    settings = refit_settings_for(migrated_url)
    terms = flags.FlagTerms.of(settings)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        ingest_batch(session, _future_batch(), source="test", now=RAISED, flag_terms=terms)
    with session_scope(make_session_factory(engine)) as session:
        (flag,) = flags_of(session)
        counts = (count_rows(session, ValueFlag), count_rows(session, ValueFlagEvent))
    with TestClient(create_app(settings)) as client:
        assert client.post("/predict", json={"match_id": flag.match_id}).status_code == 200
        (bet,) = client.get("/value-bets", params={"to": "2030-02-01T00:00:00Z"}).json()["items"]
        for path in ("/upcoming", "/flags", f"/matches/{flag.match_id}", "/dashboard"):
            assert client.get(path).status_code == 200, path
    assert (bet["outcome"], bet["price"], bet["bookmaker"]) == (flag.outcome, 4.0, "PS")
    assert bet["expected_value"] == pytest.approx(flag.expected_value)
    with session_scope(make_session_factory(engine)) as session:
        assert (count_rows(session, ValueFlag), count_rows(session, ValueFlagEvent)) == counts
    engine.dispose()


def test_a_flag_records_the_link_that_priced_it_and_the_chain_in_force(
    settings: Settings, session: Session, admin_headers: dict[str, str]
) -> None:
    chained = settings.model_copy(update={"value_probability_source": "PS,consensus"})
    with TestClient(build_app(chained, session)) as client:
        # No PS line: the consensus of WH's (1/2, 1/4, 1/4) and B365's (2/5, 1/5, 2/5),
        # (0.45, 0.225, 0.325), prices it; the away side at WH's 4.0 has EV 0.3.
        post_books(client, admin_headers, RAISED, ("WH", (2.0, 4.0, 4.0)), ("B365", LONG_AWAY))
        # PS's line (1/2, 3/10, 1/5) prices it; the away side at B365's 6.0 has EV 0.2.
        post_books(
            client,
            admin_headers,
            RAISED + dt.timedelta(days=1),
            ("PS", (2.0, 10 / 3, 5.0)),
            ("B365", (1.8, 3.2, 6.0)),
            home_team="Everton",
            away_team="Fulham",
        )
        listed = client.get("/flags").json()["items"]
        assert [
            (
                f["match"]["home_team"],
                f["bookmaker"],
                f["price"],
                f["value_source"],
                f["value_chain"],
            )
            for f in listed
        ] == [
            ("Everton", "B365", 6.0, "PS", "PS,consensus"),
            ("Arsenal", "WH", 4.0, "consensus", "PS,consensus"),
        ]

        def homes(**params: str) -> list[str]:
            body = client.get("/flags", params=params).json()
            return [f["match"]["home_team"] for f in body["items"]]

        # Read as the one parser reads a link: any letter case, by code or by name.
        assert homes(source="ps") == homes(source="Pinnacle") == ["Everton"]
        assert homes(source=" CONSENSUS") == ["Arsenal"]
        assert homes(source="ensemble") == []
        assert homes(source="consensus,pinnacle") == ["Everton", "Arsenal"]
        rows = list(csv.DictReader(io.StringIO(client.get("/flags?format=csv").text)))
        assert [(row["value_source"], row["value_chain"]) for row in rows] == [
            ("PS", "PS,consensus"),
            ("consensus", "PS,consensus"),
        ]


def test_flags_raised_before_the_chain_was_recorded_have_none(migrated_url: str) -> None:
    engine = make_engine(migrated_url)
    settings = refit_settings_for(migrated_url)
    terms = flags.FlagTerms.of(settings)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        ingest_batch(session, _future_batch(), source="test", now=RAISED, flag_terms=terms)
    engine.dispose()
    downgrade_to(migrated_url, "0015")
    engine = make_engine(migrated_url)
    with engine.connect() as connection:
        inspector = inspect(connection)
        assert "value_chain" not in {c["name"] for c in inspector.get_columns("value_flags")}
        assert "ix_value_flags_settled_at" not in _index_names(inspector)
    engine.dispose()
    upgrade_to_head(migrated_url)
    engine = make_engine(migrated_url)
    with session_scope(make_session_factory(engine)) as session:
        (flag,) = flags_of(session)
        assert (flag.value_source, flag.value_chain) == ("ensemble", None)
    with TestClient(create_app(settings)) as client:
        (listed,) = client.get("/flags").json()["items"]
        assert listed["value_chain"] is None
        (row,) = csv.DictReader(io.StringIO(client.get("/flags?format=csv").text))
        assert row["value_chain"] == ""
    engine.dispose()


def test_the_newest_score_a_track_record_request_reads_is_found_by_an_index(
    migrated_url: str,
) -> None:
    engine = make_engine(migrated_url)
    with engine.connect() as connection:
        assert _index_names(inspect(connection))["ix_value_flags_settled_at"] == ["settled_at"]
        if connection.dialect.name == "sqlite":
            plan = connection.execute(
                text("EXPLAIN QUERY PLAN SELECT max(settled_at) FROM value_flags")
            ).all()
            assert any("ix_value_flags_settled_at" in str(step) for step in plan)
    engine.dispose()


def _index_names(inspector: Inspector) -> dict[str, list[str | None]]:
    return {ix["name"] or "": ix["column_names"] for ix in inspector.get_indexes("value_flags")}


def test_settlement_against_a_live_close(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    kickoff = at(PAST_KICKOFF)
    raise_away_flag(client, admin_headers, kickoff, BEFORE_PAST)
    # PS ten minutes before kickoff, without margin: the away side's fair chance is 1/8.
    captured = PAST_KICKOFF - dt.timedelta(minutes=10)
    with received_at(client, PAST_KICKOFF - dt.timedelta(minutes=5)):
        post_odds(client, admin_headers, book(kickoff, "PS", (1.6, 4.0, 8.0), captured))
    (flag,) = flags_of(session)
    results = {"results": [{"match_id": flag.match_id, "home_goals": 2, "away_goals": 1}]}
    assert client.post("/admin/results", json=results, headers=admin_headers).status_code == 200
    session.expire_all()
    (flag,) = flags_of(session)
    assert (flag.status, flag.result, flag.flat_return) == ("settled", "1", -1.0)
    assert (flag.close_home, flag.close_draw, flag.close_away) == (1.6, 4.0, 8.0)
    assert (flag.close_origin, flag.close_captured_at) == ("live", captured)
    assert flag.closing_probability == pytest.approx(0.125)
    assert flag.clv == pytest.approx(-0.5)  # 4.0 × 1/8 − 1, from the price when raised


def test_settlement_without_a_close_then_a_season_file_s_close_fills_it(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    match = {"home_team": "Everton", "away_team": "Fulham"}
    raise_away_flag(client, admin_headers, at(PAST_KICKOFF), BEFORE_PAST, **match)
    (flag,) = flags_of(session)
    results = {"results": [{"match_id": flag.match_id, "home_goals": 0, "away_goals": 2}]}
    assert client.post("/admin/results", json=results, headers=admin_headers).status_code == 200
    session.expire_all()
    (flag,) = flags_of(session)
    # PS's only quote was captured days before kickoff: no live close, and no season file.
    assert (flag.status, flag.result, flag.flat_return) == ("settled", "2", 3.0)
    assert (flag.close_origin, flag.closing_probability, flag.clv) == (None, None, None)

    # Pinnacle's closing prices arrive with the season file (fair 2/5, 1/5, 2/5).
    response = post_csv(
        client, admin_headers, season_file("Everton", "Fulham", (0, 2), (2.5, 5.0, 2.5))
    )
    assert response.status_code == 200, response.text
    session.expire_all()
    (flag,) = flags_of(session)
    assert (flag.close_origin, flag.close_home, flag.close_away) == ("season_file", 2.5, 2.5)
    assert flag.closing_probability == pytest.approx(0.4)
    assert flag.clv == pytest.approx(0.6)  # 4.0 × 2/5 − 1
    assert flag.flat_return == 3.0
    # Scoring again changes nothing.
    post_csv(client, admin_headers, season_file("Everton", "Fulham", (0, 2), (2.5, 5.0, 2.5)))
    session.expire_all()
    assert flags_of(session)[0].clv == pytest.approx(0.6)


def three_flags(client: TestClient, headers: dict[str, str]) -> None:
    """Flags of three matches: E0 raised on 1, 2 and 3 January; SP1's on the 2nd."""
    for day, home, away, competition in (
        (1, "Arsenal", "Chelsea", "E0"),
        (2, "Everton", "Fulham", "E0"),
        (3, "Sevilla", "Getafe", "SP1"),
    ):
        raise_away_flag(
            client,
            headers,
            FUTURE_KICKOFF,
            RAISED + dt.timedelta(days=day - 1),
            home_team=home,
            away_team=away,
            competition=competition,
        )


def test_the_list_filters_pages_and_exports_csv(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    three_flags(client, admin_headers)
    listed = client.get("/flags").json()
    assert listed["total"] == 3
    assert [f["match"]["home_team"] for f in listed["items"]] == ["Sevilla", "Everton", "Arsenal"]
    first = listed["items"][-1]
    assert (first["outcome"], first["price"], first["status"]) == ("2", 4.0, "open")
    assert first["events"] == []
    assert first["close"] is None

    def homes(**params: Any) -> list[str]:
        body = client.get("/flags", params=params).json()
        return [f["match"]["home_team"] for f in body["items"]]

    assert homes(competition="SP1") == ["Sevilla"]
    assert homes(status="open", source="ensemble") == ["Sevilla", "Everton", "Arsenal"]
    assert homes(status="settled") == []
    assert homes(**{"from": "2030-01-02T00:00:00Z", "to": "2030-01-02T23:00:00Z"}) == ["Everton"]
    assert homes(match_id=first["match"]["id"]) == ["Arsenal"]
    page = client.get("/flags", params={"limit": 2, "offset": 2}).json()
    assert (page["total"], page["limit"], page["offset"]) == (3, 2, 2)
    assert [f["match"]["home_team"] for f in page["items"]] == ["Arsenal"]

    for response in (
        client.get("/flags", params={"format": "csv"}),
        client.get("/flags", headers={"Accept": "text/csv"}),
    ):
        assert response.headers["content-type"].startswith("text/csv")
        assert response.headers["x-total-count"] == "3"
        rows = list(csv.DictReader(io.StringIO(response.text)))
        assert [row["home_team"] for row in rows] == ["Sevilla", "Everton", "Arsenal"]
        assert (rows[2]["outcome"], float(rows[2]["price"]), rows[2]["clv"]) == ("2", 4.0, "")
        assert rows[2]["raised_at"] == "2030-01-01T00:00:00Z"
    assert client.get("/flags", params={"format": "json"}).json()["total"] == 3


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"status": "closed"}, "query.status"),
        ({"limit": 0}, "query.limit"),
        ({"limit": 100_000}, "query.limit"),
        ({"match_id": 0}, "query.match_id"),
        ({"format": "xml"}, "query.format"),
        ({"from": "yesterday"}, "query.from"),
        ({"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, "query.to"),
        ({"competition": "E" * 65}, "query.competition"),
        ({"source": "nobody"}, "query.source"),
        ({"source": "PS,pinnacle"}, "query.source"),
        ({"source": "PS,"}, "query.source"),
        ({"source": "PS,consensus,ensemble,B365,WH,IW"}, "query.source"),
    ],
)
def test_bad_parameters_are_a_problem(
    client: TestClient, params: dict[str, Any], where: str
) -> None:
    response = client.get("/flags", params=params)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert any(message.startswith(f"{where}:") for message in error_messages(response.json()))


def _future_batch() -> IngestBatch:
    kickoff = dt.datetime(2030, 1, 12, 15, tzinfo=dt.UTC)
    match = MatchRecord(competition="E0", home_team="Arsenal", away_team="Chelsea", kickoff=kickoff)
    captured = RAISED - dt.timedelta(hours=1)
    return IngestBatch(
        matches=[match],
        quotes=[
            QuoteRecord(0, "PS", Phase.PRE, 2.0, 4.0, 4.0, captured),
            QuoteRecord(0, "B365", Phase.PRE, 2.5, 5.0, 2.5, captured),
        ],
    )


def test_two_writers_raising_the_same_flag_store_it_once(migrated_url: str) -> None:
    """The second writer reads no flag (the first's is not committed), so it tries to raise
    it too: its insert waits for the first's commit, then leaves the stored one alone."""
    if not migrated_url.startswith("postgresql"):
        pytest.skip("SQLite takes one writer at a time: two cannot raise a flag at once")
    engine = make_engine(migrated_url)
    writes = make_session_factory(engine, for_writes=True)
    with session_scope(writes) as session:
        ingest_batch(session, _future_batch(), source="test", now=RAISED)
        match_id = session.scalars(select(ValueFlag.match_id)).one()
        session.execute(text("DELETE FROM value_flags"))
    first = writes()
    assert record_flags(first, [match_id], RAISED).raised == 1
    second: list[LedgerWrites] = []

    def record_second() -> None:
        with session_scope(writes) as session:
            second.append(record_flags(session, [match_id], RAISED + dt.timedelta(minutes=1)))

    thread = threading.Thread(target=record_second)
    thread.start()
    with engine.connect() as watcher:

        def second_waits() -> bool:
            waiting = watcher.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'INSERT INTO value_flags%'"
                )
            )
            watcher.commit()  # each look at a fresh snapshot of the activity
            return bool(waiting) or not thread.is_alive()

        wait_until(second_waits, "the second writer waits for the first's flag")
    assert thread.is_alive(), "the second writer did not wait"
    first.commit()
    first.close()
    thread.join()
    assert second[0].raised == 0
    with session_scope(writes) as session:
        stored = session.execute(select(ValueFlag.raised_at)).all()
    assert [row[0] for row in stored] == [RAISED]
    engine.dispose()


def test_an_activation_evaluates_every_upcoming_match_with_the_new_model(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    # PS 2, 4, 4 (fair 1/2, 1/4, 1/4) and B365 2.5, 2.5, 5 (fair 2/5, 2/5, 1/5): served
    # without a model 0.45, 0.325, 0.225, the draw at PS's 4.0 worth 0.325 × 4 − 1 = 0.3.
    captured = RAISED - dt.timedelta(hours=1)
    with received_at(client, RAISED):
        post_odds(
            client,
            admin_headers,
            book(FUTURE_KICKOFF, "PS", (2.0, 4.0, 4.0), captured),
            book(FUTURE_KICKOFF, "B365", (2.5, 2.5, 5.0), captured),
        )
    (draw,) = flags_of(session)
    assert (draw.outcome, draw.bookmaker, draw.model_version) == ("X", "PS", None)
    assert draw.expected_value == pytest.approx(0.3)

    # A model trusting PS alone serves its fair line: the home side at B365's 2.5 and the
    # away side at its 5.0 are both worth 0.25 (the home side first, by the 1, X, 2 order);
    # the draw at 4.0 is worth 0.
    version = hand_made_version(weights={"PS": 1.0})
    session.add(version)
    session.flush()
    response = client.post(f"/admin/models/{version.id}/activate", headers=admin_headers)
    assert response.status_code == 200, response.text
    session.expire_all()
    draw, home = flags_of(session)
    assert draw.status == "withdrawn"
    assert draw.expected_value == pytest.approx(0.3)
    (withdrawn,) = events_of(session)
    assert (withdrawn.flag_id, withdrawn.change, withdrawn.model_version) == (
        draw.id,
        "withdrawn",
        version.id,
    )
    assert withdrawn.expected_value == pytest.approx(0.0)
    assert (home.outcome, home.bookmaker, home.price, home.model_version) == (
        "1",
        "B365",
        2.5,
        version.id,
    )
    assert home.probability == pytest.approx(0.5)
    assert home.expected_value == pytest.approx(0.25)
