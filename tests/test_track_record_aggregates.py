"""The track record read from its daily aggregates equals the per-entry computation.

The reference is :func:`app.domain.track_record_scores.performance_of` (and
``served_reliability``) over every scored entry of the window, read one by one: what
``GET /performance`` and the model page computed before the aggregates. Both read the same
entries and results, so every figure must agree to floating-point rounding, whichever way
the aggregates answer a day (stored rows, or computed from the entries for a day the
window cuts, a day whose matches changed since the last pass, a day not filled yet).

The log is real: a year of E0 and SP1 logged at kickoff, served by two versions in
turn and by the consensus before them; one day's kickoffs are spread over the afternoon so
that a window can cut it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import (
    Match,
    ModelActivation,
    PredictionLogEntry,
    TrackRecordDay,
    TrackRecordState,
)
from app.domain.track_record_scores import Performance
from app.domain.vocabulary import ActivatedBy
from app.services import dashboard, track_record
from app.services import track_record_aggregates as aggregates
from app.services.ingest.results import ResultItem, settle_results
from app.services.matches import delete_match
from app.services.model_versions import activate
from app.settings import Settings
from tests.databases import (
    Databases,
    SharedDatabase,
    rolled_back_connection,
    savepoint_session,
)
from tests.helpers import hand_made_version
from tests.reference_track_record import performance_of, served_reliability

UTC = dt.UTC
LOG_FROM = dt.datetime(2017, 1, 1, tzinfo=UTC)
LOG_TO = dt.datetime(2018, 1, 1, tzinfo=UTC)
# The day whose kickoffs are spread over the afternoon (every 45 minutes from 12:00).
SPREAD_DAY = dt.date(2017, 1, 14)
NOW = dt.datetime(2026, 1, 1, tzinfo=UTC)
Query = track_record.PerformanceQuery


def at(day: dt.date, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour, minute), UTC)


def _spread_kickoffs(session: Session) -> None:
    matches = session.scalars(
        select(Match)
        .where(Match.kickoff >= at(SPREAD_DAY), Match.kickoff < at(SPREAD_DAY, 23, 59))
        .order_by(Match.id)
    ).all()
    assert len(matches) > 4
    for index, match in enumerate(matches):
        match.kickoff = at(SPREAD_DAY, 12) + dt.timedelta(minutes=45 * index)
    session.flush()


def _serve_with_two_versions(session: Session) -> None:
    """Version 1 from March 2017, a second one from 2017/18; the consensus before."""
    session.execute(update(ModelActivation).values(activated_at=at(dt.date(2017, 3, 1))))
    second = hand_made_version(weights={"B365": 1.0, "PS": 2.0, "WH": 0.5})
    session.add(second)
    session.flush()
    activation = activate(session, second, by=ActivatedBy.CLI)
    activation.activated_at = at(dt.date(2017, 8, 1))
    session.flush()


@pytest.fixture(scope="module")
def logged_database(
    databases: Databases, fitted_template: str, fitted_settings: Settings
) -> Iterator[SharedDatabase]:
    """The real log and the aggregates written by the rebuild that logged it, committed
    once for the module; each test reads it in a transaction of its own that is rolled
    back, so what one test changes no other sees."""
    template = databases.copy(fitted_template)
    engine = make_engine(template)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        _spread_kickoffs(session)
        _serve_with_two_versions(session)
        done = track_record.rebuild(
            session, fitted_settings, kickoff_from=LOG_FROM, kickoff_to=LOG_TO, now=NOW
        )
    engine.dispose()
    assert done.written > 700, str(done)
    databases.seal(template)
    shared = databases.share(template)
    yield shared
    shared.engine.dispose()


@pytest.fixture
def logged(logged_database: SharedDatabase) -> Iterator[Session]:
    """The real log, its aggregates written by the rebuild that logged it."""
    with (
        rolled_back_connection(logged_database.engine) as connection,
        savepoint_session(connection) as session,
    ):
        yield session


def assert_same(found: Any, expected: Any, where: str = "performance") -> None:
    """Equal records, their floats to within 1e-9."""
    if dataclasses.is_dataclass(found):
        assert type(found) is type(expected), where
        for field in dataclasses.fields(found):
            name = field.name
            assert_same(getattr(found, name), getattr(expected, name), f"{where}.{name}")
    elif isinstance(found, tuple | list):
        assert len(found) == len(expected), f"{where}: {len(found)} != {len(expected)}"
        for index, (one, other) in enumerate(zip(found, expected, strict=True)):
            assert_same(one, other, f"{where}[{index}]")
    elif isinstance(found, float) and isinstance(expected, float):
        assert math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-9), (
            f"{where}: {found} != {expected}"
        )
    else:
        assert found == expected, f"{where}: {found!r} != {expected!r}"


def latest_days(performance: Performance, days_max: int) -> Performance:
    """``performance`` listing only its latest ``days_max`` days, and the bankroll's points
    on those days."""
    days = performance.days[-days_max:]
    first = days[0].day if days else dt.date.max
    value_bets = performance.value_bets
    points = tuple(p for p in value_bets.bankroll if p.kickoff.astimezone(UTC).date() >= first)
    return dataclasses.replace(
        performance, days=days, value_bets=dataclasses.replace(value_bets, bankroll=points)
    )


def answered_and_reference(
    session: Session, settings: Settings, query: Query
) -> tuple[Performance, Performance]:
    report = track_record.performance(session, query, settings)
    reference = performance_of(
        track_record.settled_entries(session, query),
        kelly_fraction=report.kelly_fraction,
        stake_cap=report.stake_cap,
    )
    return report.performance, latest_days(reference, report.days_max)


def assert_answers_per_entry(session: Session, settings: Settings, query: Query) -> Performance:
    found, expected = answered_and_reference(session, settings, query)
    assert_same(found, expected)
    return found


WINDOWS = {
    "everything": Query(),
    "one competition": Query(competition="E0"),
    "the other": Query(competition="SP1"),
    "a competition without a log": Query(competition="D1"),
    "days cut at both ends": Query(at(dt.date(2017, 1, 2), 13), at(dt.date(2017, 10, 1), 14, 10)),
    "inside one day": Query(at(SPREAD_DAY, 13), at(SPREAD_DAY, 16, 1), "E0"),
    "whole days": Query(at(dt.date(2017, 3, 1)), at(dt.date(2017, 5, 1))),
    "from a day on": Query(kickoff_from=at(dt.date(2017, 9, 20), 19, 30)),
    "up to a day": Query(kickoff_to=at(dt.date(2017, 2, 11), 6)),
    "before the log": Query(kickoff_to=LOG_FROM),
}


@pytest.mark.parametrize("query", WINDOWS.values(), ids=WINDOWS.keys())
def test_every_figure_equals_the_per_entry_computation(
    logged: Session, fitted_settings: Settings, query: Query
) -> None:
    assert_answers_per_entry(logged, fitted_settings, query)


def test_the_log_has_what_the_windows_need(logged: Session, fitted_settings: Settings) -> None:
    """The cases above are the ones they say: several competitions and versions, value bets,
    a best bookmaker, a day cut inside, and every day taken from the stored rows."""
    everything = assert_answers_per_entry(logged, fitted_settings, Query())
    assert everything.matches > 700
    assert everything.best_bookmaker.code is not None
    assert everything.value_bets.bets > 20
    assert everything.value_bets.bets_with_closing > 0
    versions = set(logged.scalars(select(PredictionLogEntry.model_version).distinct()))
    assert None in versions
    assert len(versions) == 3
    inside = assert_answers_per_entry(logged, fitted_settings, WINDOWS["inside one day"])
    assert 0 < inside.matches < len(_entries_of_day(logged, SPREAD_DAY))
    stored = logged.scalar(select(func.sum(TrackRecordDay.matches)))
    assert stored == everything.matches


def _entries_of_day(session: Session, day: dt.date) -> list[int]:
    return list(
        session.scalars(
            select(PredictionLogEntry.id).where(
                PredictionLogEntry.kickoff >= at(day),
                PredictionLogEntry.kickoff < at(day + dt.timedelta(days=1)),
            )
        )
    )


@pytest.mark.parametrize("days_max", [1, 30, 1000])
def test_the_days_listed_are_the_latest_of_the_window(
    logged: Session, fitted_settings: Settings, days_max: int
) -> None:
    settings = fitted_settings.model_copy(update={"performance_days_max": days_max})
    for query in (Query(), WINDOWS["days cut at both ends"], WINDOWS["one competition"]):
        found = assert_answers_per_entry(logged, settings, query)
        everything = track_record.settled_entries(logged, query)
        days = {entry.kickoff.date() for entry in everything}
        assert len(found.days) == min(days_max, len(days))
        assert found.days[-1].day == max(days)
        if found.value_bets.bankroll:
            # The bankroll goes on from where the earlier days left it.
            assert found.value_bets.bankroll[0].kickoff.date() >= found.days[0].day


def test_one_entry(logged: Session, fitted_settings: Settings) -> None:
    kickoff = at(SPREAD_DAY, 12, 45)
    one = assert_answers_per_entry(
        logged, fitted_settings, Query(kickoff, kickoff + dt.timedelta(minutes=1))
    )
    assert one.matches == 1


def test_no_entries(session: Session, settings: Settings) -> None:
    assert_answers_per_entry(session, settings, Query())
    assert dashboard.served_reliability(session, settings).curves == ()


def test_the_reliability_equals_the_per_entry_bins(
    logged: Session, fitted_settings: Settings
) -> None:
    found = dashboard.served_reliability(logged, fitted_settings)
    entries = track_record.settled_entries(logged, Query())
    assert found.matches == len(entries)
    assert_same(found.curves, served_reliability(entries, found.bins), "reliability")


def _a_scored_entry(session: Session) -> PredictionLogEntry:
    entry = session.scalar(
        select(PredictionLogEntry)
        .where(PredictionLogEntry.kickoff == at(SPREAD_DAY, 12, 45))
        .limit(1)
    )
    assert entry is not None
    return entry


def _pass(session: Session, settings: Settings) -> None:
    aggregates.refresh(session, track_record.tally_terms(settings), now=dt.datetime.now(UTC))


def test_a_corrected_result_is_scored_again_at_once_and_after_the_next_pass(
    logged: Session, fitted_settings: Settings
) -> None:
    entry = _a_scored_entry(logged)
    match = logged.get(Match, entry.match_id)
    assert match is not None
    assert match.home_goals is not None
    before = track_record.performance(logged, Query(), fitted_settings).performance
    goals = (match.home_goals + 3, 0) if match.result != "1" else (0, match.home_goals + 3)
    report = settle_results(
        logged, [ResultItem(goals[0], goals[1], match_id=match.id)], source="test"
    )
    assert report.results_set == 1
    corrected = assert_answers_per_entry(logged, fitted_settings, Query())
    assert corrected.served.log_loss != before.served.log_loss
    _pass(logged, fitted_settings)
    assert_answers_per_entry(logged, fitted_settings, Query())
    assert_answers_per_entry(logged, fitted_settings, WINDOWS["inside one day"])


def test_a_postponed_match_is_not_scored(logged: Session, fitted_settings: Settings) -> None:
    entry = _a_scored_entry(logged)
    match = logged.get(Match, entry.match_id)
    assert match is not None
    before = track_record.performance(logged, Query(), fitted_settings).performance
    match.kickoff += dt.timedelta(days=21)
    logged.flush()
    moved = assert_answers_per_entry(logged, fitted_settings, Query())
    assert moved.matches == before.matches - 1
    _pass(logged, fitted_settings)
    assert_answers_per_entry(logged, fitted_settings, Query())


def test_a_deleted_match_leaves_the_track_record(
    logged: Session, fitted_settings: Settings
) -> None:
    entry = _a_scored_entry(logged)
    before = track_record.performance(logged, Query(), fitted_settings).performance
    delete_match(logged, entry.match_id, force=True)
    gone = assert_answers_per_entry(logged, fitted_settings, Query())
    assert gone.matches == before.matches - 1
    assert_answers_per_entry(logged, fitted_settings, WINDOWS["inside one day"])


def _forget_aggregates(session: Session) -> None:
    """The state of a database whose log was kept before the aggregates existed."""
    for table in aggregates.TABLES_BY_DAY:
        session.execute(table.__table__.delete())  # type: ignore[attr-defined]
    session.execute(
        update(TrackRecordState).values(
            complete=False,
            filled_until=None,
            kelly_fraction=None,
            stake_cap=None,
            reliability_bins=None,
            entries_through=0,
            matches_through=None,
            checked_at=None,
        )
    )
    session.expire_all()


@pytest.mark.slow
def test_a_log_kept_before_the_aggregates_is_answered_right_while_they_are_filled(
    logged: Session, fitted_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forget_aggregates(logged)
    for query in WINDOWS.values():
        assert_answers_per_entry(logged, fitted_settings, query)
    monkeypatch.setattr(aggregates, "FILL_ENTRIES", 200)
    terms = track_record.tally_terms(fitted_settings)
    steps = []
    while (step := aggregates.fill_chunk(logged, terms, now=NOW)) is not None:
        steps.append(step)
        # Half filled: the days filled are read, the others computed.
        assert_answers_per_entry(logged, fitted_settings, Query())
        assert_answers_per_entry(logged, fitted_settings, WINDOWS["days cut at both ends"])
    assert len(steps) >= 3
    assert all(a.last_day < b.first_day for a, b in itertools.pairwise(steps))
    state = logged.get(TrackRecordState, aggregates.STATE_ID)
    assert state is not None
    assert state.complete
    for query in WINDOWS.values():
        assert_answers_per_entry(logged, fitted_settings, query)
