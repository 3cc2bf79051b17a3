"""Plain requests outnumbering the worker's threads, themselves outnumbering its connections,
are all answered while the pool is contended: none stalls until the pool's timeout.

A plain (``def``) route runs on AnyIO's threads, and so does the validation of its answer,
after the route has returned but before its session is closed. Were the requests waiting for
a connection to do so on threads, the requests holding the connections could wait for a
thread to finish their answers while every thread waits for a connection, all of them until
the pool's timeout (then 503). A worker of two threads and one connection, sent forty plain
requests at once, shows it; a first request holding the only connection at a gate, with two
more sent behind it and every task of the worker waiting before the gate opens, shows that
the requests behind it are served once it is done. Nothing is timed: the pool's timeout is
long, and a request that waited it out would get 503, which the tests refuse. (The settings
are copied without their check: the admission limits, which none of these endpoints uses,
would need a larger pool.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import anyio.to_thread
import pytest
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from app.main import create_app
from app.services import model_versions
from tests.apps import refit_settings_for
from tests.helpers import DEADLINE_SECONDS, wait_until

THREADS = 2
# Long enough never to run out while the scene is set; a request that waited it out (the
# stall) gets 503, which fails the test.
POOL_TIMEOUT_SECONDS = 20.0
ONE_CONNECTION = {
    "database_pool_size": 1,
    "database_pool_overflow": 0,
    "database_pool_timeout_seconds": POOL_TIMEOUT_SECONDS,
    "model_refresh_seconds": 3600.0,
    "warm_board": False,
}
PLAIN = ("/models/activations", "/models", "/matches", "/models/active", "/bookmakers")


class Arrivals:
    """The app, counting the HTTP requests that reached it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            with self._lock:
                self.count += 1
        await self.app(scope, receive, send)


class Gate:
    """Holds the listing of activations, its connection checked out, until opened."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()

    def hold(self, read: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            answer = read(*args, **kwargs)  # the session's connection stays checked out
            self.reached.set()
            assert self.opened.wait(DEADLINE_SECONDS), "the gate was never opened"
            return answer

        return held


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    gate = Gate()
    monkeypatch.setattr(
        model_versions, "list_activations", gate.hold(model_versions.list_activations)
    )
    yield gate
    gate.opened.set()


async def _limit_threads() -> None:
    anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS


def _worker(database_url: str) -> tuple[TestClient, Arrivals]:
    settings = refit_settings_for(database_url).model_copy(update=ONE_CONNECTION)
    arrivals = Arrivals(create_app(settings))
    return TestClient(arrivals, raise_server_exceptions=False), arrivals


def test_requests_behind_one_holding_the_only_connection_are_answered_when_it_is_done(
    fitted_url: str, gate: Gate
) -> None:
    client, arrivals = _worker(fitted_url)
    with client, ThreadPoolExecutor(3) as senders:
        assert client.portal is not None
        client.portal.call(_limit_threads)
        first = senders.submit(client.get, "/models/activations")
        assert gate.reached.wait(DEADLINE_SECONDS), "the first request never read"
        behind = [senders.submit(client.get, "/models/activations") for _ in range(2)]
        wait_until(lambda: arrivals.count == 3, "both requests behind the first arrived")
        # Every task of the worker waits (for a thread, a connection or a place) ...
        client.portal.call(anyio.wait_all_tasks_blocked)
        # ... when the first is let go.
        gate.opened.set()
        answers = [future.result() for future in [first, *behind]]

    assert [answer.status_code for answer in answers] == [200, 200, 200], [
        answer.text[:200] for answer in answers
    ]


def test_many_plain_requests_on_few_threads_and_one_connection_are_all_answered(
    fitted_url: str,
) -> None:
    client, _ = _worker(fitted_url)
    with client, ThreadPoolExecutor(16) as senders:
        assert client.portal is not None
        client.portal.call(_limit_threads)
        sent = [(path, senders.submit(client.get, path)) for path in PLAIN * 8]
        answers = [(path, future.result()) for path, future in sent]

    assert [(path, r.status_code) for path, r in answers if r.status_code != 200] == []
