"""``oddsboost track-record rebuild`` writes in chunks, each its own transaction.

Between two chunks no transaction of the rebuild is open, so a writer waits for one chunk
at most (on SQLite, whose write lock a transaction holds from its BEGIN); the hook the
rebuild calls between chunks is where the tests write. A rebuild stopped between two
chunks (killed: its open chunk rolls back) goes on where it stopped when run again, and
ends with the log and the aggregates one uninterrupted run writes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, PredictionLogEntry, TrackRecordState
from app.domain.track_record_aggregates import TallyTerms
from app.main import create_app
from app.services import track_record
from app.services import track_record_aggregates as aggregates
from app.services.ingest.results import ResultItem, settle_results
from app.settings import Settings
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.databases import Databases
from tests.reference_track_record import performance_of

UTC = dt.UTC
FROM = dt.datetime(2015, 8, 1, tzinfo=UTC)
TO = dt.datetime(2018, 6, 1, tzinfo=UTC)
NOW = dt.datetime(2026, 1, 1, tzinfo=UTC)
CHUNK = 400


class StoppedError(Exception):
    """The rebuild's process ended between two chunks."""


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(track_record, "REBUILD_CHUNK", CHUNK)


@pytest.fixture
def fitted_engine(fitted_url: str) -> Iterator[Engine]:
    engine = make_engine(fitted_url)
    yield engine
    engine.dispose()


def write_sessions(engine: Engine) -> sessionmaker[Session]:
    return make_session_factory(engine, for_writes=True)


def rebuild(engine: Engine, settings: Settings, **hook: Any) -> track_record.LogCount:
    return track_record.rebuild_in_chunks(
        write_sessions(engine), settings, kickoff_from=FROM, kickoff_to=TO, now=NOW, **hook
    )


def new_quote(number: int) -> dict[str, Any]:
    """A quote of a match of its own, in the shape of the README's example."""
    return {
        "match": {
            "competition": "E0",
            "kickoff": "2030-08-10T19:00:00Z",
            "home_team": f"Home {number}",
            "away_team": f"Away {number}",
        },
        "bookmaker": "B365",
        "home": 1.57,
        "draw": 3.9,
        "away": 7.5,
        "phase": "pre",
    }


@pytest.mark.slow
@pytest.mark.usefixtures("small_chunks")
def test_a_writer_gets_in_between_two_chunks(fitted_url: str, fitted_engine: Engine) -> None:
    settings = refit_settings_for(fitted_url)
    # A write that finds the database locked gives up almost at once (503).
    impatient = settings.model_copy(update={"sqlite_busy_timeout_seconds": 0.05})
    answers: list[int] = []
    with TestClient(create_app(impatient)) as client:

        def post_odds() -> None:
            answer = client.post(
                "/admin/odds",
                json={"quotes": [new_quote(len(answers))]},
                headers={"X-API-Key": ADMIN_KEY},
            )
            answers.append(answer.status_code)

        done = rebuild(fitted_engine, settings, between_chunks=post_odds)
    assert done.written > 3 * CHUNK
    assert len(answers) >= done.written // CHUNK
    assert set(answers) == {200}


def log_of(engine: Engine) -> list[tuple[Any, ...]]:
    with session_scope(make_session_factory(engine)) as session:
        rows = session.execute(
            select(
                PredictionLogEntry.match_id,
                PredictionLogEntry.kickoff,
                PredictionLogEntry.model_version,
                PredictionLogEntry.served,
            ).order_by(PredictionLogEntry.match_id)
        )
        return [tuple(row) for row in rows]


def aggregates_of(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every aggregate row, without its id, in a stable order."""
    found = {}
    with session_scope(make_session_factory(engine)) as session:
        for table in aggregates.TABLES_BY_DAY:
            columns = [c for c in table.__table__.columns if c.name != "id"]
            rows = session.execute(select(*columns).order_by(*columns)).all()
            found[table.__tablename__] = [tuple(row) for row in rows]
    return found


@pytest.fixture
def second_fitted_engine(databases: Databases, fitted_template: str) -> Iterator[Engine]:
    url = databases.copy(fitted_template)
    engine = make_engine(url)
    yield engine
    engine.dispose()
    databases.drop(url)


@pytest.mark.slow
@pytest.mark.usefixtures("small_chunks")
def test_a_rebuild_stopped_half_way_ends_as_one_run(
    fitted_url: str, fitted_engine: Engine, second_fitted_engine: Engine
) -> None:
    settings = refit_settings_for(fitted_url)
    chunks = 0

    def stop_after_two() -> None:
        nonlocal chunks
        chunks += 1
        if chunks == 2:
            raise StoppedError

    with pytest.raises(StoppedError):
        rebuild(fitted_engine, settings, between_chunks=stop_after_two)
    assert len(log_of(fitted_engine)) == 2 * CHUNK
    resumed = rebuild(fitted_engine, settings, between_chunks=lambda: None)
    assert resumed.already_logged == 2 * CHUNK
    again = rebuild(fitted_engine, settings, between_chunks=lambda: None)
    assert again.written == 0

    one_run = rebuild(second_fitted_engine, settings, between_chunks=lambda: None)
    assert one_run.written == resumed.written + 2 * CHUNK
    assert log_of(fitted_engine) == log_of(second_fitted_engine)
    assert aggregates_of(fitted_engine) == aggregates_of(second_fitted_engine)
    assert sum(len(rows) for rows in aggregates_of(fitted_engine).values()) > 0


@pytest.mark.usefixtures("small_chunks")
def swap_every_result(sessions: sessionmaker[Session]) -> list[Any]:
    """Every logged match's goals swapped, in three writes; the matches (id, goals)."""
    with session_scope(sessions) as session:
        matches = list(
            session.execute(
                select(Match.id, Match.home_goals, Match.away_goals)
                .join(PredictionLogEntry, PredictionLogEntry.match_id == Match.id)
                .where(Match.home_goals.is_not(None))
                .order_by(Match.id)
            ).all()
        )
    for part in range(3):
        with session_scope(sessions) as session:
            settle_results(
                session,
                [
                    ResultItem(away or 0, home or 0, match_id=match_id)  # the goals swapped
                    for match_id, home, away in matches[part::3]
                ],
                source="test",
            )
    return matches


@pytest.mark.slow
def test_results_changed_across_history_are_caught_up_in_chunks(
    fitted_url: str, fitted_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Corrected results of every logged match (three writes) are taken into the aggregates
    chunk by chunk, the watermark moving with each, so a writer gets in between."""
    settings = refit_settings_for(fitted_url)
    rebuild(fitted_engine, settings, between_chunks=lambda: None)
    sessions = write_sessions(fitted_engine)
    matches = swap_every_result(sessions)
    monkeypatch.setattr(aggregates, "FILL_ENTRIES", 300)
    impatient = make_engine(fitted_url, sqlite_busy_timeout_seconds=0.05)
    written: list[int] = []

    def write_between() -> None:
        with session_scope(write_sessions(impatient)) as session:
            written.append(session.execute(select(func.count()).select_from(Match)).scalar_one())
            session.execute(update(Match).where(Match.id == matches[0][0]).values(season="1718"))

    try:
        chunks = aggregates.catch_up(
            sessions, track_record.tally_terms(settings), now=NOW, between_chunks=write_between
        )
    finally:
        impatient.dispose()
    assert chunks >= 3
    assert len(written) == chunks
    with session_scope(make_session_factory(fitted_engine)) as session:
        state = session.get(TrackRecordState, aggregates.STATE_ID)
        assert state is not None
        # The watermark moved past the writes taken: few changes are left to a pass.
        assert state.matches_through is not None
        left = session.scalar(
            select(func.count()).select_from(Match).where(Match.updated_at > state.matches_through)
        )
        assert left is not None
        assert left < aggregates.FILL_ENTRIES
        report = track_record.performance(session, track_record.PerformanceQuery(), settings)
        reference = performance_of(
            track_record.settled_entries(session, track_record.PerformanceQuery()),
            kelly_fraction=report.kelly_fraction,
            stake_cap=report.stake_cap,
        )
        assert report.performance.matches == reference.matches
        assert report.performance.served.log_loss == pytest.approx(reference.served.log_loss)
        assert report.performance.value_bets.profit == pytest.approx(reference.value_bets.profit)


@pytest.mark.slow
def test_a_pass_after_the_chunks_of_a_catch_up_rewrites_only_what_they_left(
    fitted_url: str, fitted_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks of a catch-up count as passes: the job's refresh that follows takes the
    few changes they left, not the whole backlog again in one long write."""
    settings = refit_settings_for(fitted_url)
    rebuild(fitted_engine, settings, between_chunks=lambda: None)
    sessions = write_sessions(fitted_engine)
    swap_every_result(sessions)
    monkeypatch.setattr(aggregates, "FILL_ENTRIES", 300)
    # No look-back: every change is committed before the pass that reads it.
    monkeypatch.setattr(aggregates, "CHANGE_LAG", dt.timedelta(0))
    terms = track_record.tally_terms(settings)
    now = dt.datetime.now(UTC)
    aggregates.catch_up(sessions, terms, now=now, between_chunks=lambda: None)
    rewritten: list[dt.date] = []
    write_days = aggregates._write_days

    def counting(session: Session, days: Any, terms: TallyTerms) -> None:
        rewritten.extend(days)
        write_days(session, days, terms)

    monkeypatch.setattr(aggregates, "_write_days", counting)
    with session_scope(sessions) as session:
        state = session.get(TrackRecordState, aggregates.STATE_ID)
        assert state is not None
        assert state.matches_through is not None
        left = session.scalar(
            select(func.count())
            .select_from(Match)
            .join(PredictionLogEntry, PredictionLogEntry.match_id == Match.id)
            .where(Match.updated_at > state.matches_through)
        )
        aggregates.refresh(session, terms, now=now)
    assert left is not None
    assert left < aggregates.FILL_ENTRIES
    # At most one day for each change left; the three writes touched every logged day.
    assert len(rewritten) <= left
