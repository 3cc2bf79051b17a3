"""While the database cannot be reached, every endpoint that needs it answers 503 with
Retry-After and a problem, never 500; the others answer as before.

Each operation of the OpenAPI document, and each dashboard page, is sent once while the
database is there, with the document's own examples; the ones that took a connection from
the pool need the database. Then the database goes away for real (tests/outage.py) and each
is sent again; once it is back, the same application serves it again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from app.api.routers import dashboard
from app.db.engine import is_database_unreachable, make_engine
from app.main import create_app
from app.services import refit_runs
from app.services.busy import RETRY_AFTER_SECONDS, DatabaseBusyError, unavailable_as_service_error
from app.state import app_state
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.documented import DocumentedRequest, documented_requests
from tests.helpers import free_port
from tests.outage import Outage

PROBLEM = "application/problem+json"
# A batch answers each item on its own: an item that needs the database gets 503 inside an
# answer of 200, beside the items answered without it.
BATCH = "POST /predict/batch"


@pytest.fixture
def outage(fitted_url: str, tmp_path: Path) -> Iterator[Outage]:
    outage = Outage(fitted_url, tmp_path)
    yield outage
    outage.close()


def dashboard_requests() -> list[DocumentedRequest]:
    """Every page of the dashboard (not in the OpenAPI document), its ids filled in."""
    return [
        # The admin key on every page: the bets page asks for it, the others read past it.
        DocumentedRequest(
            "get", route.path, route.path.replace("{match_id}", "1"), {"X-API-Key": ADMIN_KEY}
        )
        for route in dashboard.router.routes
        if isinstance(route, APIRoute)
    ]


def check_unavailable(response: httpx2.Response, name: str) -> list[str]:
    """What is wrong with an answer that says the database cannot be reached."""
    wrong = []
    if response.status_code != 503:
        return [f"{name}: {response.status_code}, not 503: {response.text[:200]}"]
    retry_after = response.headers.get("Retry-After", "")
    if not (retry_after.isdigit() and int(retry_after) > 0):  # RFC 9110 delay-seconds
        wrong.append(f"{name}: Retry-After {retry_after!r}")
    if response.headers["content-type"] != PROBLEM:
        wrong.append(f"{name}: {response.headers['content-type']}, not a problem")
    elif response.json()["status"] != 503 or "not reachable" not in response.json()["detail"]:
        wrong.append(f"{name}: {response.json()}")
    return wrong


def check_batch(response: httpx2.Response, content: bytes | None) -> list[str]:
    assert content is not None
    items = json.loads(content)["items"]
    statuses = [result["status"] for result in response.json()["results"]]
    expected = [503 if "match_id" in item else 200 for item in items]
    return [] if statuses == expected else [f"{BATCH}: items {statuses}, not {expected}"]


def test_every_endpoint_that_needs_the_database_answers_503_while_it_is_unreachable(
    outage: Outage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No background refresh and no cached answers: every request reads what it needs itself.
    settings = refit_settings_for(outage.url).model_copy(
        update={"model_refresh_seconds": 3600.0, "predict_cache_seconds": 0.0}
    )
    # A refit queued while the database is there is recorded, never run.
    monkeypatch.setattr(refit_runs, "start_refit_process", lambda *_args: None)
    with TestClient(create_app(settings)) as client:
        document = client.get("/openapi.json").json()
        requests = documented_requests(document, ADMIN_KEY) + dashboard_requests()
        engine = app_state(client.app_state).engine
        checkouts: list[Any] = []
        event.listen(engine, "checkout", lambda *args: checkouts.append(args))
        before: dict[str, int] = {}
        needs_database: set[str] = set()
        for request in requests:
            checkouts.clear()
            before[request.name] = request.send(client).status_code
            if checkouts:
                needs_database.add(request.name)
        assert before[BATCH] == 200
        outage.take_away(engine)
        wrong: list[str] = []
        for request in requests:
            response = request.send(client)
            if request.name == BATCH:
                wrong += check_batch(response, request.content)
            elif request.name in needs_database:
                wrong += check_unavailable(response, request.name)
                operation = document["paths"].get(request.template, {}).get(request.method)
                if operation is not None and "503" not in operation["responses"]:
                    wrong.append(f"{request.name}: 503 is not documented")
            elif response.status_code != before[request.name]:
                wrong.append(f"{request.name}: {response.status_code}, not as before")
        outage.bring_back()
        back = client.get("/matches")  # the same application, nothing restarted
        assert back.status_code == 200, back.text
        assert back.json()["items"]
    assert not wrong, "\n".join(wrong)
    # Every operation of the document reads or writes the database in one of its requests,
    # and so does every dashboard page but the redirect and the stylesheet.
    documented = {request.name for request in requests if request.template in document["paths"]}
    assert documented - needs_database == set()
    pages = {request.name for request in dashboard_requests()}
    assert pages - needs_database == {"GET /", "GET /dashboard/static/dashboard.css"}


def test_only_a_database_that_cannot_be_reached_is_taken_for_one(
    database_url: str, tmp_path: Path
) -> None:
    reachable = make_engine(database_url)
    try:
        with pytest.raises(DBAPIError) as query_error, reachable.connect() as connection:
            connection.execute(text("SELECT no_such_column FROM no_such_table"))
    finally:
        reachable.dispose()
    assert not is_database_unreachable(query_error.value)
    if make_url(database_url).get_backend_name() == "sqlite":
        gone = f"sqlite:///{tmp_path / 'no_such_folder' / 'oddsboost.db'}"
    else:
        gone = make_url(database_url).set(host="127.0.0.1", port=free_port()).render_as_string()
    unreachable = make_engine(gone)
    try:
        with pytest.raises(DBAPIError) as connection_error:
            unreachable.connect()
    finally:
        unreachable.dispose()
    assert is_database_unreachable(connection_error.value)


def test_a_request_that_finds_every_pooled_connection_taken_is_told_to_come_back(
    database_url: str,
) -> None:
    """A wait for a pooled connection that times out is a busy database (503 with
    Retry-After), not an unexpected failure (500)."""
    engine = create_engine(database_url, pool_size=1, max_overflow=0, pool_timeout=0.01)
    try:
        # The only connection is held by another request.
        with (
            engine.connect(),
            pytest.raises(DatabaseBusyError, match="every connection") as refused,
            unavailable_as_service_error(),
        ):
            engine.connect()
    finally:
        engine.dispose()
    assert refused.value.retry_after_seconds == RETRY_AFTER_SECONDS
