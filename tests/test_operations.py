"""Operations: health and readiness, metrics, request ids and logs, body limits, CORS."""

from __future__ import annotations

import datetime as dt
import http.client
import io
import json
import logging
import math
import re
import signal
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.domain.vocabulary import RunTrigger
from app.logs import SecretFilter, logging_config
from app.main import create_app
from app.services import readiness
from app.settings import Settings
from app.state import app_state
from tests.admin_requests import quote
from tests.apps import ADMIN_KEY, REFIT_UNTIL, build_app, client_on
from tests.databases import Databases, SharedDatabase
from tests.helpers import error_messages, json_handler, request_statements, written
from tests.processes import Server, child_environment, running_server

INLINE = {"odds": [{"bookmaker": "B365", "home": 2.1, "draw": 3.4, "away": 3.6}]}


# --- health and readiness ----------------------------------------------------------------


def test_health_never_touches_the_database(seeded_client: TestClient) -> None:
    statements: list[str] = []
    engine = app_state(seeded_client.app_state).engine
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(str(a[2])))
    for _ in range(3):
        response = seeded_client.get("/health")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
    assert request_statements(statements) == []


def test_the_background_refresh_is_not_taken_for_a_requests_statements(
    seeded_client: TestClient,
) -> None:
    """The refresh may run while a request is watched (on a loaded machine it does): it reads
    on an engine of its own, and none of its statements, its transaction's own included,
    counts as the request's."""
    on_requests: list[str] = []
    on_refresh: list[str] = []
    state = app_state(seeded_client.app_state)
    event.listen(state.engine, "before_cursor_execute", lambda *a: on_requests.append(str(a[2])))
    event.listen(
        state.refresh_engine, "before_cursor_execute", lambda *a: on_refresh.append(str(a[2]))
    )
    state.models.refresh()
    assert on_requests == []
    assert on_refresh
    assert request_statements(on_refresh) == []


def test_ready_without_a_model_is_ready_and_says_so(seeded_client: TestClient) -> None:
    response = seeded_client.get("/ready")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["database"] == "ok"
    assert body["model"]["state"] == "none"
    assert "no model fitted yet" in body["model"]["detail"]
    assert body == {
        "status": "ready",
        "database": "ok",
        "model": {"state": "none", "detail": readiness.NO_MODEL_DETAIL},
    }


def test_ready_with_a_model(fitted_client: TestClient) -> None:
    assert fitted_client.get("/ready").json()["model"] == {"state": "loaded", "version": 1}
    assert fitted_client.get("/ready").json() == {
        "status": "ready",
        "database": "ok",
        "model": {"state": "loaded", "version": 1},
    }


def test_not_ready_when_the_database_does_not_answer(
    seeded_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(_sessions: Any) -> None:
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    monkeypatch.setattr(readiness, "ping_database", unreachable)
    response = seeded_client.get("/ready")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert "not reachable" in body["problems"]["database"]
    problem = "the database is not reachable: OperationalError"
    assert body == {
        "status": "not ready",
        "database": problem,
        "model": {"state": "none", "detail": readiness.NO_MODEL_DETAIL},
        "problems": {"database": problem},
    }
    assert seeded_client.get("/health").status_code == 200  # alive all the same


def test_not_ready_until_the_model_state_is_read(
    seeded_database: SharedDatabase, seeded_settings: Settings
) -> None:
    # No background refresh during the test: it would read the model state again.
    settings = seeded_settings.model_copy(update={"model_refresh_seconds": 3600.0})
    with client_on(seeded_database, settings) as client:
        app_state(client.app_state).models.loaded = False
        response = client.get("/ready")
    assert response.status_code == 503
    assert "has not been read" in response.json()["problems"]["model"]
    assert response.json() == {
        "status": "not ready",
        "database": "ok",
        "model": {"state": "unknown"},
        "problems": {"model": readiness.MODEL_NOT_READ},
    }


def test_probes_are_not_in_the_api_docs(seeded_client: TestClient) -> None:
    paths = seeded_client.get("/openapi.json").json()["paths"]
    assert not {"/health", "/ready", "/metrics"} & set(paths)


# --- metrics ------------------------------------------------------------------------------


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text format."""
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        match = re.match(r"^([a-z_]+)(\{(.*)\})? ([0-9.e+-]+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(match.group(4))
    raise AssertionError(f"no sample {name}{labels}")


def test_metrics_after_some_requests(seeded_client: TestClient) -> None:
    before = seeded_client.get("/metrics").text
    try:  # earlier tests of this process may have answered /predict, with 200 or an error
        start = sample(before, "oddsboost_http_requests_total", route="/predict", status="200")
    except AssertionError:
        start = 0.0
    for _ in range(3):
        seeded_client.post("/predict", json=INLINE)
    match_id = seeded_client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    seeded_client.get(f"/matches/{match_id}")
    seeded_client.get("/matches/999999")
    seeded_client.post("/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": ADMIN_KEY})
    response = seeded_client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert (
        sample(text, "oddsboost_http_requests_total", method="POST", route="/predict", status="200")
        == start + 3
    )
    # By route template, never the raw path.
    assert (
        sample(text, "oddsboost_http_requests_total", route="/matches/{match_id}", status="200")
        >= 1
    )
    assert (
        sample(text, "oddsboost_http_requests_total", route="/matches/{match_id}", status="404")
        >= 1
    )
    assert f'/matches/{match_id}"' not in text
    assert (
        sample(
            text, "oddsboost_http_request_duration_seconds_count", method="POST", route="/predict"
        )
        >= 3
    )
    assert sample(text, "oddsboost_predictions_total", source="inline", basis="consensus") >= 3
    assert sample(text, "oddsboost_ingested_rows_total", kind="quotes_inserted") >= 1
    assert sample(text, "oddsboost_active_model_version") == 0.0


def test_refit_metrics(refit_settings: Settings) -> None:
    from app.db.engine import make_engine
    from app.services.refit import run_refit

    engine = make_engine(refit_settings.database_url)
    with TestClient(create_app(refit_settings)) as client:
        before_refits = time.time()
        run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=REFIT_UNTIL)
        run_refit(engine, refit_settings, trigger=RunTrigger.CLI, until=dt_early())
        engine.dispose()
        app_state(client.app_state).models.refresh()
        text = client.get("/metrics").text
    since_before_refits = time.time() - before_refits
    assert sample(text, "oddsboost_active_model_version") == 1.0
    assert sample(text, "oddsboost_refit_runs_total", status="succeeded") == 1.0
    assert sample(text, "oddsboost_refit_runs_total", status="failed") == 1.0
    # The successful refit finished between the two readings of the clock.
    since = sample(text, "oddsboost_seconds_since_last_successful_refit")
    assert 0 <= since <= since_before_refits
    assert sample(text, "oddsboost_refit_last_duration_seconds", status="failed") >= 0


def dt_early() -> Any:
    import datetime as dt

    return dt.datetime(2015, 9, 1, tzinfo=dt.UTC)  # too few matches: a failed run


@pytest.mark.slow
def test_metrics_add_up_across_workers(refit_settings: Settings, tmp_path: Path) -> None:
    with (
        running_server(
            child_environment(refit_settings), tmp_path / "server.log", "--workers", "2"
        ) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        for _ in range(40):
            assert client.post("/predict", json=INLINE).status_code == 200
        # Whichever worker answers the scrape, it reports both workers' requests.
        totals = {
            sample(
                client.get("/metrics").text,
                "oddsboost_http_requests_total",
                route="/predict",
                status="200",
            )
            for _ in range(6)
        }
    assert totals == {40.0}


# --- request ids and logs --------------------------------------------------------------------


def test_every_answer_carries_a_request_id(seeded_client: TestClient) -> None:
    generated = seeded_client.get("/health").headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert seeded_client.get("/health").headers["X-Request-ID"] != generated
    assert (
        seeded_client.get("/health", headers={"X-Request-ID": "dash-42.a"}).headers["X-Request-ID"]
        == "dash-42.a"
    )
    odd = seeded_client.get("/health", headers={"X-Request-ID": "x" * 200}).headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", odd)
    assert seeded_client.get("/nowhere").headers["X-Request-ID"]  # errors too


def test_an_unexpected_failure_is_answered_and_logged_with_the_request_id(
    settings: Settings, session: Session
) -> None:
    app = build_app(settings, session)

    def fails() -> None:
        raise RuntimeError("injected failure")

    app.add_api_route("/fails", fails)
    handler, buffer = json_handler(settings)
    root, access = logging.getLogger(), logging.getLogger("oddsboost.access")
    level = access.level
    root.addHandler(handler)
    access.setLevel(logging.INFO)
    try:
        with TestClient(app) as client:
            given = client.get("/fails", headers={"X-Request-ID": "trace-500"})
            generated = client.get("/fails")
    finally:
        root.removeHandler(handler)
        access.setLevel(level)
    assert given.status_code == generated.status_code == 500
    assert given.headers["content-type"] == "application/problem+json"
    assert given.json()["detail"] == "the request failed unexpectedly; the error is logged"
    assert given.headers["X-Request-ID"] == "trace-500"
    assert re.fullmatch(r"[0-9a-f]{32}", generated.headers["X-Request-ID"])
    lines = written(buffer)
    failures = [line for line in lines if "exc_info" in line]
    assert [line["request_id"] for line in failures] == [
        "trace-500",
        generated.headers["X-Request-ID"],
    ]
    assert all("RuntimeError: injected failure" in line["exc_info"] for line in failures)
    requests = [line for line in lines if line["logger"] == "oddsboost.access"]
    assert [(line["request_id"], line["status"]) for line in requests] == [
        ("trace-500", 500),
        (generated.headers["X-Request-ID"], 500),
    ]


def test_a_failure_after_the_answer_began_is_tied_to_its_request_once(
    settings: Settings, session: Session
) -> None:
    app = build_app(settings, session)

    def chunks() -> Iterator[bytes]:
        yield b"first part"
        raise RuntimeError("injected failure")

    app.add_api_route("/breaks", lambda: StreamingResponse(chunks()))
    handler, buffer = json_handler(settings)
    logging.getLogger().addHandler(handler)
    try:
        with TestClient(app) as client, pytest.raises(RuntimeError, match="injected failure"):
            client.get("/breaks", headers={"X-Request-ID": "trace-late"})
    finally:
        logging.getLogger().removeHandler(handler)
    failures = [line for line in written(buffer) if line["level"] == "ERROR"]
    # One line with the request id; the traceback is the server's to write, once.
    assert [(line["request_id"], "exc_info" in line) for line in failures] == [
        ("trace-late", False)
    ]
    assert failures[0]["message"] == "GET /breaks failed after its answer began"


@pytest.mark.parametrize("given", [ADMIN_KEY, f"trace-{ADMIN_KEY}-1"])
def test_a_request_id_holding_the_admin_key_is_replaced(client: TestClient, given: str) -> None:
    echoed = client.get("/health", headers={"X-Request-ID": given}).headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", echoed)


@pytest.mark.slow
def test_request_lines_are_json_with_the_request_id_and_no_secrets(
    refit_settings: Settings, tmp_path: Path
) -> None:
    # The admin key, and a database password where the backend takes one, must never be
    # written, whatever happens: right key, wrong key, errors.
    with (
        running_server(child_environment(refit_settings), tmp_path / "server.log") as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        client.post("/predict", json=INLINE, headers={"X-Request-ID": "trace-me-1"})
        client.post("/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": ADMIN_KEY})
        client.post(
            "/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": "not-" + ADMIN_KEY}
        )
        client.post("/predict", content=b"{broken", headers={"Content-Type": "application/json"})
        client.get(f"/{ADMIN_KEY}", headers={"X-Request-ID": ADMIN_KEY})
    logs = server.output()
    assert ADMIN_KEY not in logs
    lines = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line["logger"] == "oddsboost.access"]
    traced = [line for line in requests if line["request_id"] == "trace-me-1"]
    assert len(traced) == 1
    assert traced[0]["method"] == "POST"
    assert traced[0]["route"] == "/predict"
    assert traced[0]["status"] == 200
    duration_ms = traced[0]["duration_ms"]
    assert isinstance(duration_ms, int | float)
    assert math.isfinite(duration_ms)
    assert duration_ms >= 0
    assert {line["status"] for line in requests} >= {200, 403, 422}
    ingest = [line for line in lines if line["message"].startswith("ingest from /admin/odds")]
    assert ingest
    assert ingest[0]["request_id"]


def test_secrets_are_redacted_from_any_log_line() -> None:
    settings = Settings(
        database_url="postgresql+psycopg://oddsboost:s3cret-pw@db/oddsboost",
        admin_api_key="very-secret-admin-key",
        log_format="json",
    )
    config = logging_config(settings)
    secrets = config["filters"]["secrets"]["secrets"]
    assert set(secrets) == {"very-secret-admin-key", "s3cret-pw"}
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretFilter(secrets))
    logger = logging.getLogger("test.secrets")
    logger.addHandler(handler)
    try:
        logger.warning(
            "connecting to %s with key %s", settings.database_url, "very-secret-admin-key"
        )
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert "s3cret-pw" not in written
    assert "very-secret-admin-key" not in written
    assert "***" in written
    assert "very-secret-admin-key" not in repr(settings)


# --- limits -----------------------------------------------------------------------------------


def test_bodies_over_the_limit_are_refused(
    seeded_client: TestClient, seeded_settings: Settings
) -> None:
    headers = {"X-API-Key": ADMIN_KEY, "Content-Type": "application/json"}
    big = b'{"alias": "' + b" " * (seeded_settings.body_limit_bytes + 10) + b'"}'
    response = seeded_client.post("/admin/teams/aliases", content=big, headers=headers)
    assert response.status_code == 413
    assert "at most 1048576 bytes (1.0 MiB)" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield b'{"alias": "'
        for _ in range(40):
            yield b" " * 32_768
        yield b'"}'

    streamed = seeded_client.post("/admin/teams/aliases", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert "request body too large" in streamed.json()["detail"]
    assert seeded_client.post("/predict", content=big, headers=headers).status_code == 413


def readme_quote() -> dict[str, Any]:
    """The quote of the docs' example of POST /admin/odds, as it is written there."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "importing.md").read_text()
    payload = text.split("localhost:8000/admin/odds -d '", 1)[1].split("'", 1)[0]
    (item,) = json.loads(payload)["quotes"]
    assert isinstance(item, dict)
    return item


def test_the_admin_json_endpoints_take_as_many_items_as_a_request_may_hold(
    client: TestClient, settings: Settings
) -> None:
    """ODDSBOOST_ADMIN_ITEMS_MAX quotes of the README's shape, and as many results for the
    same matches, as a JSON library writes them (indented), fit in the body a request may
    send; a body over the limit is still refused, with the limit."""
    headers = {"X-API-Key": ADMIN_KEY, "Content-Type": "application/json"}
    item = readme_quote()
    first = dt.datetime.fromisoformat(item["match"]["kickoff"])
    # 100 matches on 100 days, each quoted by 100 bookmakers with codes as long as B365.
    matches = [
        {**item["match"], "kickoff": (first + dt.timedelta(days=day)).isoformat()}
        for day in range(100)
    ]
    quotes = [
        {**item, "match": match, "bookmaker": f"B{code:03d}"}
        for match in matches
        for code in range(100)
    ]
    assert len(quotes) == settings.admin_items_max
    odds = json.dumps({"quotes": quotes}, indent=2)
    results = json.dumps(
        {
            "results": [
                {"match": quote["match"], "home_goals": 2, "away_goals": 1} for quote in quotes
            ]
        },
        indent=2,
    )
    assert min(len(odds), len(results)) > settings.body_limit_bytes
    stored = client.post("/admin/odds", content=odds, headers=headers)
    assert stored.status_code == 200, stored.text
    assert stored.json()["quotes_inserted"] == settings.admin_items_max
    settled = client.post("/admin/results", content=results, headers=headers)
    assert settled.status_code == 200, settled.text
    assert settled.json()["results_set"] == len(matches)
    limit = settings.admin_json_body_limit_bytes
    for path in ("/admin/odds", "/admin/results"):
        over = client.post(path, content=b" " * (limit + 1), headers=headers)
        assert over.status_code == 413
        assert f"at most {limit} bytes" in over.json()["detail"]


def test_imports_may_be_larger(seeded_client: TestClient, season_file: Any) -> None:
    headers = {"X-API-Key": ADMIN_KEY, "Content-Type": "text/csv"}
    # A real season file, padded with blank all-comma rows to 3 MiB.
    content = season_file("I1_0203").read_bytes()
    padded = content + b",,,,,,,,\n" * ((3 * 1024 * 1024 - len(content)) // 9 + 1)
    assert len(padded) > 3 * 1024 * 1024
    response = seeded_client.post("/admin/import/football-data", content=padded, headers=headers)
    assert response.status_code == 200
    assert response.json()["matches_created"] == 306
    huge = padded * 4
    assert (
        seeded_client.post("/admin/import/football-data", content=huge, headers=headers).status_code
        == 413
    )


# How long a test waits for the server to close a connection: far more than the one-second
# timeouts it is given, so a busy machine cannot fail the test; a server that never closes
# the connection does.
CLOSE_WAIT_SECONDS = 30.0


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=CLOSE_WAIT_SECONDS)


def until_closed(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout fails)."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def one_answer(connection: socket.socket) -> bytes:
    """One whole answer (its head and the body its Content-Length gives), read from a
    connection kept open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


def answer_of(received: bytes) -> tuple[int, dict[str, Any]]:
    """The status and the body of an answer the server wrote itself: a problem."""
    head, _, body = received.partition(b"\r\n\r\n")
    assert b"\r\ncontent-type: application/problem+json\r\n" in head.lower(), head
    return int(head.split()[1]), json.loads(body)


@pytest.fixture(scope="module")
def strict_server(
    databases: Databases, migrated_template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server with a small header limit and one-second deadlines, for the tests of the
    answers it writes itself, none of which writes to the database: starting one costs more
    than what each test does with it. Once it stops, its whole output is checked."""
    database = databases.copy(migrated_template)
    settings = Settings(
        database_url=database,
        header_limit_bytes=8192,
        header_timeout_seconds=1,
        body_timeout_seconds=1,
    )
    log_path = tmp_path_factory.mktemp("strict_server") / "server.log"
    try:
        with running_server(child_environment(settings), log_path) as server:
            yield server
        assert "Traceback" not in server.output()
    finally:
        databases.drop(database)


@pytest.mark.slow
def test_headers_over_the_limit_are_refused_with_431(strict_server: Server) -> None:
    server = strict_server
    # One endless header, never finished: refused as the bytes pile up.
    with connect(server.port) as endless:
        endless.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000)
        status, body = answer_of(until_closed(endless))
    assert status == 431
    (message,) = error_messages(body)
    assert "at most 8192 bytes" in message
    # Many headers, each small, sent at once with the end of the request.
    many = "".join(f"X-Part-{i}: {'b' * 500}\r\n" for i in range(20))
    with connect(server.port) as crowded:
        crowded.sendall(f"GET /health HTTP/1.1\r\nHost: x\r\n{many}\r\n".encode())
        assert answer_of(until_closed(crowded))[0] == 431
    # Under the limit, served as ever.
    assert httpx.get(f"{server.base_url}/health", headers={"X-Some": "c" * 6000}).is_success
    # Logged before the answer was written.
    assert "431" in server.output()


@pytest.mark.slow
def test_a_request_that_is_not_http_is_refused_with_a_400_problem(strict_server: Server) -> None:
    server = strict_server
    # A header line without its colon.
    with connect(server.port) as broken:
        broken.sendall(b"GET /health HTTP/1.1\r\nHost x\r\n\r\n")
        status, body = answer_of(until_closed(broken))
    assert (status, body["instance"]) == (400, "/health")
    assert error_messages(body) == ["the request is not valid HTTP/1.1"]
    # Not HTTP at all.
    with connect(server.port) as garbage:
        garbage.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n")
        assert answer_of(until_closed(garbage))[0] == 400
    # On a connection kept alive, after a request answered in full.
    with connect(server.port) as kept:
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert one_answer(kept).startswith(b"HTTP/1.1 200 ")
        kept.sendall(b"GET /health HTTP/1.1\r\nHost x\r\n\r\n")
        assert answer_of(until_closed(kept))[0] == 400
    assert httpx.get(f"{server.base_url}/health").is_success


def silent_client(port: int) -> None:
    """Connects and sends nothing: closed, no answer."""
    with connect(port) as silent:
        assert until_closed(silent) == b""


def half_request_client(port: int) -> None:
    """The headers never end."""
    with connect(port) as half:
        half.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        status, body = answer_of(until_closed(half))
        assert (status, error_messages(body)) == (408, ["request headers not complete within 1 s"])


def trickling_client(port: int) -> None:
    """A byte at a time, never quite stopping."""
    with connect(port) as trickle:
        trickle.settimeout(0.1)
        trickle.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        started, received = time.monotonic(), None
        while received is None and time.monotonic() - started < CLOSE_WAIT_SECONDS:
            try:
                received = trickle.recv(65536)
            except TimeoutError:
                trickle.sendall(b"s")
        assert received is not None, "the trickling connection was never closed"
        assert received.startswith(b"HTTP/1.1 408 ")


def unfinished_body_client(port: int) -> None:
    """The body never ends."""
    with connect(port) as unfinished:
        unfinished.sendall(
            b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"odds": '
        )
        status, body = answer_of(until_closed(unfinished))
        assert (status, error_messages(body)) == (408, ["request body not complete within 1 s"])


@pytest.mark.slow
def test_silent_and_slow_clients_are_cut_off(strict_server: Server) -> None:
    # Each connection has deadlines of its own: the four wait out theirs side by side.
    clients = (silent_client, half_request_client, trickling_client, unfinished_body_client)
    with ThreadPoolExecutor(max_workers=len(clients)) as pool:
        waiting = [pool.submit(client, strict_server.port) for client in clients]
    for done in waiting:
        done.result()
    # A client that keeps up is served, on a connection kept alive between requests.
    with httpx.Client(base_url=strict_server.base_url) as client:
        for _ in range(3):
            assert client.post("/predict", json=INLINE).status_code == 200


# --- CORS -------------------------------------------------------------------------------------


def preflight(client: TestClient, origin: str) -> Any:
    return client.options(
        "/predict",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )


def test_no_browser_origin_is_allowed_by_default(seeded_client: TestClient) -> None:
    response = preflight(seeded_client, "https://dashboard.example")
    assert "access-control-allow-origin" not in response.headers


def test_configured_origins_pass_preflight(seeded_settings: Settings) -> None:
    allowed = seeded_settings.model_copy(
        update={"cors_allow_origins": ["https://dashboard.example"]}
    )
    with TestClient(create_app(allowed)) as client:
        ok = preflight(client, "https://dashboard.example")
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == "https://dashboard.example"
        assert "POST" in ok.headers["access-control-allow-methods"]
        other = preflight(client, "https://elsewhere.example")
        assert "access-control-allow-origin" not in other.headers
        answer = client.post(
            "/predict", json=INLINE, headers={"Origin": "https://dashboard.example"}
        )
        assert answer.headers["access-control-allow-origin"] == "https://dashboard.example"
        assert "x-request-id" in answer.headers["access-control-expose-headers"].lower()
        # A dashboard elsewhere polls the board conditionally: it sends If-None-Match and
        # reads the ETag.
        polled = client.options(
            "/upcoming",
            headers={
                "Origin": "https://dashboard.example",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "if-none-match",
            },
        )
        assert polled.status_code == 200
        assert "if-none-match" in polled.headers["access-control-allow-headers"].lower()
        board = client.get("/upcoming", headers={"Origin": "https://dashboard.example"})
        assert "etag" in board.headers["access-control-expose-headers"].lower()


# --- graceful shutdown -------------------------------------------------------------------------


def send_until_continue(port: int, path: str, body_length: int) -> socket.socket:
    """Send a request's headers with ``Expect: 100-continue`` and wait for the server's
    ``100 Continue``: from then on the request is in the application, waiting for its body."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=120)
    connection.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {body_length}\r\n"
        "Expect: 100-continue\r\nConnection: close\r\n\r\n".encode()
    )
    interim = b""
    while not interim.endswith(b"\r\n\r\n"):
        chunk = connection.recv(1)
        assert chunk, f"the connection closed after {interim!r}"
        interim += chunk
    assert interim.startswith(b"HTTP/1.1 100 "), interim
    return connection


@pytest.mark.slow
def test_requests_in_flight_finish_on_sigterm(refit_settings: Settings, tmp_path: Path) -> None:
    roomy = refit_settings.model_copy(update={"body_limit_bytes": 16 * 1024 * 1024})
    # A batch of 1,000 items with 60 quotes each: work for the worker after the signal.
    many_odds = [
        {"bookmaker": f"BK{i}", "home": 2.0 + i / 100, "draw": 3.4, "away": 3.6} for i in range(60)
    ]
    body = json.dumps({"items": [{"odds": many_odds}] * 1000}).encode()
    with running_server(child_environment(roomy), tmp_path / "server.log") as server:
        connection = send_until_continue(server.port, "/predict/batch", len(body))
        with connection:
            server.send_signal(signal.SIGTERM)  # while the request is in flight
            connection.sendall(body)
            response = http.client.HTTPResponse(connection)
            response.begin()
            status, answer = response.status, json.loads(response.read())
        returncode = server.wait()
    # uvicorn re-raises the signal once it has shut down cleanly, for process managers.
    assert returncode in (0, -signal.SIGTERM)
    assert {"status": status, "items": len(answer["results"])} == {"status": 200, "items": 1000}
    assert "Waiting for application shutdown" in server.output()


# --- the API docs -------------------------------------------------------------------------------


def test_every_operation_in_the_docs_has_an_example(seeded_client: TestClient) -> None:
    assert seeded_client.get("/docs").status_code == 200
    schema = seeded_client.get("/openapi.json").json()
    text_of_components = json.dumps(schema.get("components", {}))

    def has_example(node: Any, seen: frozenset[str] = frozenset()) -> bool:
        """An example in the operation itself or in any schema it refers to."""
        blob = json.dumps(node)
        if '"example' in blob:
            return True
        references = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', blob)) - seen
        return any(
            has_example(schema["components"]["schemas"].get(name, {}), seen | references)
            for name in references
        )

    missing = [
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if not has_example(operation)
    ]
    assert text_of_components
    assert missing == [], missing
