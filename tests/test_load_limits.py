"""Many viewers at once: every answer is the page asked for or 503 with Retry-After in the
problem shape, never another 5xx.

Contention is made, not hoped for: the only place for the track record is held by a request
whose computation waits at a gate, and (in one case) every pooled connection of the worker is
checked out by the test, so the requests that need one must time out waiting for it. The
waits are the settings' own (short); nothing is timed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.pool import QueuePool

from app.db.engine import PoolLimits, make_engine
from app.main import create_app
from app.metrics import REGISTRY
from app.services import track_record
from app.services.admission import RESERVED_CONNECTIONS
from app.services.busy import DatabaseBusyError, unavailable_as_service_error
from app.settings import Settings
from app.state import app_state
from tests.apps import refit_settings_for
from tests.helpers import DEADLINE_SECONDS, hand_made_version, store_versions, wait_until

PROBLEM = "application/problem+json"
# One place per kind and a pool that holds them all and the reserve exactly: the board 1,
# the pages 1 × 2, the track record 1, the batch 1 (see CONNECTIONS_PER_REQUEST), and the
# RESERVED_CONNECTIONS.
TIGHT_POOL = PoolLimits(2, 3 + RESERVED_CONNECTIONS, 0.2)
TIGHT = {
    "admission_board": 1,
    "admission_pages": 1,
    "admission_track_record": 1,
    "admission_batch": 1,
    "admission_wait_seconds": 0.05,
    "database_pool_size": TIGHT_POOL.size,
    "database_pool_overflow": TIGHT_POOL.overflow,
    "database_pool_timeout_seconds": TIGHT_POOL.timeout_seconds,
    "model_refresh_seconds": 3600.0,
    "predict_cache_seconds": 0.0,
}
EXPENSIVE = (
    "/performance",
    "/dashboard/track-record",
    "/dashboard/model",
    "/dashboard/matches/1",
    "/dashboard",
    "/upcoming",
    "/value-bets",
)
CHEAP = ("/matches", "/matches/1", "/bookmakers", "/models/active")
BATCH = ("/predict/batch", {"items": [{"match_id": 1}, {"match_id": 2}]})


class Gate:
    """Holds the track record's computation until opened; says when one has reached it."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()

    def hold(self, computation: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            self.reached.set()
            assert self.opened.wait(DEADLINE_SECONDS), "the gate was never opened"
            return computation(*args, **kwargs)

        return held


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    gate = Gate()
    monkeypatch.setattr(track_record, "performance", gate.hold(track_record.performance))
    yield gate
    gate.opened.set()


@contextmanager
def tight_client(database_url: str) -> Iterator[TestClient]:
    settings = refit_settings_for(database_url).model_copy(update=TIGHT)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


@contextmanager
def every_connection_taken(engine: Engine, limits: PoolLimits) -> Iterator[None]:
    """Every connection the engine's pool may still hand out, checked out (none of them in a
    transaction, so nothing is locked)."""
    pool = engine.pool
    assert isinstance(pool, QueuePool)
    with ExitStack() as stack:
        for _ in range(limits.connections - pool.checkedout()):
            stack.enter_context(engine.connect())
        yield


def what_is_wrong(name: str, response: httpx2.Response) -> list[str]:
    """Nothing for an answer or a 503 with Retry-After in the problem shape."""
    if response.status_code < 500:
        return []
    if response.status_code != 503:
        return [f"{name}: {response.status_code} {response.text[:200]}"]
    wrong = []
    retry_after = response.headers.get("Retry-After", "")
    if not (retry_after.isdigit() and int(retry_after) > 0):
        wrong.append(f"{name}: Retry-After {retry_after!r}")
    if response.headers["content-type"] != PROBLEM or response.json()["status"] != 503:
        wrong.append(f"{name}: not a problem: {response.text[:200]}")
    return wrong


def refusals(kind: str) -> float:
    value = REGISTRY.get_sample_value("oddsboost_admission_refusals_total", {"endpoints": kind})
    return value or 0.0


def test_a_request_over_its_kinds_limit_waits_then_is_told_when_to_come_back(
    fitted_url: str, gate: Gate
) -> None:
    with tight_client(fitted_url) as client, ThreadPoolExecutor(1) as pool:
        first = pool.submit(client.get, "/performance")
        assert gate.reached.wait(DEADLINE_SECONDS), "the first request never computed"
        before = refusals("track_record")

        # The only place of the track record is taken: both of its pages are refused...
        over = [client.get("/performance?competition=E0"), client.get("/dashboard/track-record")]
        # ... while the other kinds keep theirs.
        board = client.get("/upcoming")

        gate.opened.set()
        assert first.result().status_code == 200
        after = client.get("/performance?competition=E0")

    for response in over:
        assert response.status_code == 503
        # The wait (0.05 s) rounded up: a place turns over within it.
        assert response.headers["Retry-After"] == "1"
        assert response.headers["content-type"] == PROBLEM
        problem = response.json()
        assert problem["status"] == 503
        assert "at most 1 request for the track record at once" in problem["detail"]
    assert refusals("track_record") == before + 2
    assert board.status_code == 200
    assert after.status_code == 200  # the place is free again


@pytest.mark.parametrize("pool_taken", [False, True], ids=["pool free", "pool taken"])
def test_many_viewers_at_once_get_answers_or_503_never_another_5xx(
    fitted_url: str, gate: Gate, pool_taken: bool
) -> None:
    with tight_client(fitted_url) as client, ThreadPoolExecutor(48) as pool:
        holder = pool.submit(client.get, "/performance")
        assert gate.reached.wait(DEADLINE_SECONDS), "the first request never computed"
        engine = app_state(client.app_state).engine
        with every_connection_taken(engine, TIGHT_POOL) if pool_taken else ExitStack():
            sent: list[tuple[str, Future[httpx2.Response]]] = []
            for path in (EXPENSIVE + CHEAP) * 4:
                sent.append((path, pool.submit(client.get, path)))
            for _ in range(4):
                sent.append((BATCH[0], pool.submit(client.post, BATCH[0], json=BATCH[1])))
            answers = [(path, future.result()) for path, future in sent]
        gate.opened.set()
        answers.append(("/performance (the first)", holder.result()))

    wrong = [problem for path, response in answers for problem in what_is_wrong(path, response)]
    assert wrong == []
    # The track record's place was held throughout: the others asking for it were refused.
    statuses = {path: {r.status_code for p, r in answers if p == path} for path, _ in answers}
    assert statuses["/performance"] == {503}
    assert statuses["/dashboard/track-record"] == {503}
    if pool_taken:
        # No connection came free: whatever needed one was told to come back.
        for path in EXPENSIVE[2:] + CHEAP:
            assert statuses[path] == {503}, path
        # A batch is refused whole, or answers each stored match's item 503.
        for path, response in answers:
            if path == BATCH[0] and response.status_code == 200:
                assert {item["status"] for item in response.json()["results"]} == {503}


def test_the_model_refresh_has_a_connection_of_its_own_and_retries_after_a_failure(
    fitted_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = refit_settings_for(fitted_url).model_copy(
        update={**TIGHT, "model_refresh_seconds": 0.05}
    )
    caplog.set_level(logging.ERROR, logger="app.main")
    with TestClient(create_app(settings)) as client:
        state = app_state(client.app_state)
        assert state.models.ensemble is not None
        assert state.models.ensemble.version == 1
        with every_connection_taken(state.engine, TIGHT_POOL):
            with state.refresh_engine.connect():  # the refresh's only connection, taken
                (new_version,) = store_versions(fitted_url, hand_made_version())
                wait_until(
                    lambda: "could not check for a new model version" in caplog.text,
                    "a refresh failed for want of its connection",
                )
                assert state.models.ensemble.version == 1  # kept while it cannot check
            # Its connection back, the next refresh picks the new version up while every
            # connection of the requests is still taken.
            wait_until(
                lambda: (
                    state.models.ensemble is not None
                    and state.models.ensemble.version == new_version
                ),
                "the refresh picked up the new version",
            )


def test_a_pool_sized_by_the_settings_hands_out_that_many_then_is_busy(database_url: str) -> None:
    engine = make_engine(database_url, pool=PoolLimits(1, 1, 0.01))
    try:
        with (
            engine.connect(),
            engine.connect(),
            pytest.raises(DatabaseBusyError, match="every connection"),
            unavailable_as_service_error(),
        ):
            engine.connect()
    finally:
        engine.dispose()


def test_limits_that_could_hold_more_connections_than_the_pool_are_refused() -> None:
    # 4 + 2 × 4 + 2 + 2 = 16 connections by default, and the 2 kept for the other endpoints.
    assert Settings(database_pool_size=10, database_pool_overflow=8).database_pool_size == 10
    with pytest.raises(ValidationError, match="16 database connections at once") as error:
        Settings(database_pool_size=10, database_pool_overflow=7)
    assert "the 17 of ODDSBOOST_DATABASE_POOL_SIZE" in str(error.value)
