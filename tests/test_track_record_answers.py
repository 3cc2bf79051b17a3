"""The track record's answers are kept while what they read is unchanged, and requests
that ask the same question at once share one computation."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory
from app.db.orm import Competition, Match, PredictionLogEntry, Team
from app.main import create_app
from app.services import track_record
from app.services.single_flight import SingleFlight
from app.services.track_record_answers import TrackRecordAnswers
from tests.apps import refit_settings_for
from tests.databases import Databases
from tests.helpers import DEADLINE_SECONDS, hand_made_served

UTC = dt.UTC


def test_callers_of_one_key_share_one_computation() -> None:
    async def scenario() -> tuple[list[int], int]:
        flights: SingleFlight[str, int] = SingleFlight()
        release = asyncio.Event()
        computed = 0

        async def compute() -> int:
            nonlocal computed
            computed += 1
            await release.wait()
            return 42

        callers = [asyncio.ensure_future(flights.run("key", compute)) for _ in range(6)]
        await asyncio.sleep(0)  # every caller has asked
        assert flights.running("key")
        release.set()
        answers = await asyncio.gather(*callers)
        # Once it ended, the next caller computes again.
        await flights.run("key", compute)
        return answers, computed

    answers, computed = asyncio.run(scenario())
    assert answers == [42] * 6
    assert computed == 2


def test_callers_of_one_key_share_its_failure_and_other_keys_their_own() -> None:
    async def scenario() -> tuple[Any, ...]:
        flights: SingleFlight[str, str] = SingleFlight()

        async def fail() -> str:
            await asyncio.sleep(0)
            raise LookupError("nothing")

        async def other() -> str:
            return "other"

        return await asyncio.gather(
            flights.run("a", fail),
            flights.run("a", fail),
            flights.run("b", other),
            return_exceptions=True,
        )

    first, second, other = asyncio.run(scenario())
    assert isinstance(first, LookupError)
    assert second is first
    assert other == "other"


def _log_one(session: Session, day: int, goals: tuple[int, int] | None) -> Match:
    competition = session.scalar(select(Competition).where(Competition.code == "E0"))
    if competition is None:
        competition = Competition(code="E0")
        session.add(competition)
    home, away = Team(name=f"Home {day}"), Team(name=f"Away {day}")
    session.add_all([home, away])
    session.flush()
    kickoff = dt.datetime(2026, 3, day, 15, tzinfo=UTC)
    match = Match(
        competition_id=competition.id,
        season="2526",
        kickoff=kickoff,
        kickoff_date=kickoff.date(),
        kickoff_time_known=True,
        home_team_id=home.id,
        away_team_id=away.id,
    )
    if goals is not None:
        match.home_goals, match.away_goals = goals
        match.result = "1" if goals[0] > goals[1] else "X" if goals[0] == goals[1] else "2"
    session.add(match)
    session.flush()
    session.add(
        PredictionLogEntry(
            match_id=match.id,
            kickoff=kickoff,
            model_version=None,
            served=hand_made_served((0.5, 0.3, 0.2)),
        )
    )
    session.flush()
    return match


def test_an_answer_is_kept_until_a_result_or_the_log_changes(session: Session) -> None:
    answers = TrackRecordAnswers()
    computed: list[int] = []

    def matches(session: Session) -> int:
        found = len(track_record.settled_entries(session, track_record.PerformanceQuery()))
        computed.append(found)
        return found

    def ask() -> int:
        return asyncio.run(answers.answer(session, "matches", matches))

    first = _log_one(session, 2, (1, 0))
    assert ask() == 1
    assert ask() == 1
    assert computed == [1]  # the second was kept
    first.home_goals = first.away_goals = first.result = None
    session.flush()
    assert ask() == 0  # a result changed
    _log_one(session, 3, (0, 0))
    assert ask() == 1  # an entry came
    assert computed == [1, 0, 1]


def test_a_kept_answer_has_a_bound() -> None:
    answers = TrackRecordAnswers(max_entries=2)
    for question in ("a", "b", "c"):
        answers._kept.put((question, None), question)
    assert [answers._kept.get((question, None)) for question in "abc"] == [None, "b", "c"]


@pytest.fixture(scope="module")
def logged_template(databases: Databases, fitted_template: str) -> str:
    """The fitted data with one season of each competition logged and committed, once for
    the module."""
    template = databases.copy(fitted_template)
    engine = make_engine(template)
    try:
        track_record.rebuild_in_chunks(
            make_session_factory(engine, for_writes=True),
            refit_settings_for(template),
            kickoff_from=dt.datetime(2017, 8, 1, tzinfo=UTC),
            kickoff_to=dt.datetime(2018, 6, 1, tzinfo=UTC),
            now=dt.datetime(2026, 1, 1, tzinfo=UTC),
            between_chunks=lambda: None,
        )
    finally:
        engine.dispose()
    databases.seal(template)
    return template


@pytest.fixture
def logged_url(databases: Databases, logged_template: str) -> Iterator[str]:
    """A database of its own with the logged data committed."""
    database = databases.copy(logged_template)
    yield database
    databases.drop(database)


PATHS = ("/performance?competition=E0", "/dashboard/track-record", "/dashboard/model")
# The connections of a pool: SQLAlchemy's default 5, and 10 more when those are taken.
POOLED = 15
# How many requests at once, and how many have reached the computation when it goes on:
# with more requests than connections, the others wait for one, held by a request that
# waits for the computation.
CASES = [(path, 6, 6) for path in PATHS] + [("/performance", 32, POOLED)]


@pytest.mark.parametrize(("path", "concurrent", "arrived"), CASES)
def test_requests_asking_at_once_share_one_computation(
    logged_url: str, monkeypatch: pytest.MonkeyPatch, path: str, concurrent: int, arrived: int
) -> None:
    from app.services import track_record_answers

    computing, release = threading.Event(), threading.Event()
    computations = 0
    joined = 0
    run = SingleFlight.run

    async def counted_run(self: SingleFlight[Any, Any], key: Any, compute: Any) -> Any:
        nonlocal joined
        joined += 1
        return await run(self, key, compute)

    def held(compute: Callable[[Session], Any]) -> Callable[[Session], Any]:
        def computation(session: Session) -> Any:
            nonlocal computations
            computations += 1
            computing.set()
            assert release.wait(DEADLINE_SECONDS), "the requests never all arrived"
            return compute(session)

        return computation

    original = track_record_answers.TrackRecordAnswers.answer

    async def answer(
        self: TrackRecordAnswers, session: Session, question: Any, compute: Any, **asked: Any
    ) -> Any:
        return await original(self, session, question, held(compute), **asked)

    monkeypatch.setattr(SingleFlight, "run", counted_run)
    monkeypatch.setattr(track_record_answers.TrackRecordAnswers, "answer", answer)
    # As many requests of the track record at once as are sent, on SQLAlchemy's default pool
    # (no refusal: the test is of requests that wait for a connection and the computation).
    settings = refit_settings_for(logged_url).model_copy(
        update={
            "admission_track_record": concurrent,
            "admission_pages": concurrent,
            "database_pool_size": 5,
            "database_pool_overflow": POOLED - 5,
            "database_pool_timeout_seconds": 30.0,
        }
    )
    with TestClient(create_app(settings)) as client:
        app = client.app

        async def started_app(scope: Any, receive: Any, send: Any) -> None:
            await app({**scope, "state": dict(client.app_state)}, receive, send)

        async def together() -> list[httpx.Response]:
            transport = httpx.ASGITransport(app=started_app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                requests = [asyncio.create_task(http.get(path)) for _ in range(concurrent)]
                deadline = time.monotonic() + DEADLINE_SECONDS
                while joined < arrived:
                    assert time.monotonic() < deadline, f"{joined} requests arrived"
                    await asyncio.sleep(0.01)
                release.set()
                return await asyncio.gather(*requests)

        answers = asyncio.run(together())
        assert computing.is_set()
        again = client.get(path)
    assert computations == 1
    assert [answer.status_code for answer in answers] == [200] * concurrent
    if path.startswith("/performance"):
        assert len({answer.content for answer in answers}) == 1
        assert again.content == answers[0].content
        assert answers[0].json()["performance"]["matches"] > 300


def test_a_check_whose_callers_went_away_fails_quietly_and_the_next_starts_afresh() -> None:
    async def scenario() -> tuple[list[dict[str, Any]], str]:
        flights: SingleFlight[str, str] = SingleFlight()
        unretrieved: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
        started = asyncio.Event()

        async def fail() -> str:
            started.set()
            await asyncio.sleep(0)
            raise LookupError("the database is down")

        async def fresh() -> str:
            return "fresh"

        caller = asyncio.ensure_future(flights.run_after("key", fail))
        await started.wait()
        caller.cancel()  # the client went away before the check failed
        with contextlib.suppress(asyncio.CancelledError):
            await caller
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()  # a failure nobody retrieved is reported when its future goes
        return unretrieved, await flights.run_after("key", fresh)

    unretrieved, answer = asyncio.run(scenario())
    assert unretrieved == []
    assert answer == "fresh"
