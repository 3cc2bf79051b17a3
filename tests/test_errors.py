"""One error shape: every error answer is an RFC 9457 problem, whatever raised it, and every
status an operation answers is documented on it with that shape."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.services import queries
from app.settings import Settings
from tests.apps import ADMIN_KEY, build_app
from tests.helpers import error_messages

PROBLEM = "application/problem+json"
JSON = {"Content-Type": "application/json"}
ADMIN = {"X-API-Key": ADMIN_KEY}
ADMIN_JSON = {**ADMIN, **JSON}

QUOTE = {
    "match": {
        "competition": "E0",
        "kickoff": "2018-08-10T19:00:00Z",
        "home_team": "Man United",
        "away_team": "Leicester",
    },
    "bookmaker": "B365",
    "home": 1.57,
    "draw": 3.9,
    "away": 7.5,
}
INLINE = {"odds": [{"bookmaker": "B365", "home": 2.1, "draw": 3.4, "away": 3.6}]}
# RFC 9110's names of the statuses, written out here rather than read from the code.
TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def problem_of(response: httpx2.Response, path: str | None = None) -> dict[str, Any]:
    """The body of an error answer, checked to be a problem of the answer's status."""
    assert response.headers["content-type"] == PROBLEM, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"type", "title", "status", "detail", "instance", "errors"}, body
    assert body["type"] == "about:blank"
    assert body["status"] == response.status_code
    assert body["title"] == TITLES[response.status_code]
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert body["instance"] == (path or response.request.url.path)
    for error in body["errors"]:
        assert set(error) == {"loc", "msg", "type"}, error
    return body


Call = Callable[[TestClient], httpx2.Response]

# One request for each way the service answers an error, with the status it must get and a
# fact of its message.
ERRORS: list[tuple[str, Call, int, str]] = [
    (
        "no key",
        lambda c: c.post("/admin/odds", json={"quotes": [QUOTE]}),
        401,
        "missing X-API-Key header",
    ),
    (
        "wrong key",
        lambda c: c.post("/admin/odds", json={"quotes": [QUOTE]}, headers={"X-API-Key": "no"}),
        403,
        "wrong X-API-Key",
    ),
    ("no such match", lambda c: c.get("/matches/4242"), 404, "no match with id 4242"),
    ("no such route", lambda c: c.get("/no/such/thing"), 404, "nothing at /no/such/thing"),
    (
        "wrong method",
        lambda c: c.delete("/matches"),
        405,
        "DELETE is not allowed on /matches; allowed: GET",
    ),
    (
        "no such team",
        lambda c: c.post(
            "/admin/teams/aliases", json={"alias": "Spirit", "team": "Ghost"}, headers=ADMIN
        ),
        404,
        "no team named 'Ghost'",
    ),
    (
        "body over the limit",
        lambda c: c.post("/predict", content=b" " * (1024 * 1024 + 1), headers=JSON),
        413,
        "request body too large: at most 1048576 bytes (1.0 MiB) here",
    ),
    (
        "not JSON",
        lambda c: c.post(
            "/admin/odds",
            content=b"quotes=1",
            headers={**ADMIN, "Content-Type": "application/x-www-form-urlencoded"},
        ),
        415,
        "send the body as JSON (Content-Type: application/json); "
        "not application/x-www-form-urlencoded",
    ),
    (
        "a field",
        lambda c: c.post("/admin/odds", json={"quotes": [{**QUOTE, "home": 0.9}]}, headers=ADMIN),
        422,
        "body.quotes.0.home: Value error, price 0.9 must be greater than 1.0 (decimal odds)",
    ),
    (
        "a broken multipart form",
        lambda c: c.post(
            "/admin/import/football-data",
            content=b"no boundary here",
            headers={**ADMIN, "Content-Type": "multipart/form-data"},
        ),
        400,
        "Missing boundary in multipart.",
    ),
]


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [pytest.param(call, status, message, id=name) for name, call, status, message in ERRORS],
)
def test_every_error_is_a_problem(
    client: TestClient, call: Call, status: int, message: str
) -> None:
    response = call(client)
    assert response.status_code == status
    assert error_messages(problem_of(response)) == [message]


def test_a_conflict_is_a_problem(client: TestClient) -> None:
    client.post("/admin/odds", json={"quotes": [QUOTE]}, headers=ADMIN)
    response = client.post(
        "/admin/teams/aliases", json={"alias": "Man United", "team": "Man United"}, headers=ADMIN
    )
    assert response.status_code == 409
    assert problem_of(response)["errors"] == []


def test_a_disabled_admin_api_is_a_problem(database_url: str, session: Session) -> None:
    app = build_app(Settings(database_url=database_url, admin_api_key=None), session)
    with TestClient(app) as client:
        response = client.get("/admin/refits", headers=ADMIN)
    assert response.status_code == 503
    assert error_messages(problem_of(response)) == [
        "admin API disabled: set ODDSBOOST_ADMIN_API_KEY"
    ]


def test_the_framework_s_405_keeps_its_allow_header(client: TestClient) -> None:
    response = client.put("/predict", json=INLINE)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    problem_of(response)


def test_a_chunked_body_over_the_limit_is_a_problem(client: TestClient, settings: Settings) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: refused as the bytes arrive
        for _ in range(settings.admin_json_body_limit_bytes // 32_768 + 1):
            yield b" " * 32_768

    response = client.post("/admin/odds", content=chunks(), headers=ADMIN_JSON)
    assert response.status_code == 413
    assert "request body too large" in problem_of(response)["detail"]


def test_an_unexpected_failure_is_a_problem(
    settings: Settings, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("injected failure")

    monkeypatch.setattr(queries, "list_competitions", fail)
    with TestClient(build_app(settings, session), raise_server_exceptions=False) as client:
        response = client.get("/competitions")
    assert response.status_code == 500
    body = problem_of(response)
    assert "injected failure" not in response.text
    assert "the error is logged" in body["detail"]


# --- the 422s that used to be strings -------------------------------------------------------


@pytest.mark.parametrize("path", ["/matches", "/models", "/admin/refits"])
def test_a_page_too_large_names_the_parameter(client: TestClient, path: str) -> None:
    response = client.get(path, params={"limit": 501}, headers=ADMIN)
    assert response.status_code == 422
    (error,) = problem_of(response)["errors"]
    assert error == {
        "loc": ["query", "limit"],
        "msg": "limit must be at most 500",
        "type": "less_than_equal",
    }


def test_a_batch_too_large_names_the_list(database_url: str, session: Session) -> None:
    settings = Settings(database_url=database_url, predict_batch_max=2)
    with TestClient(build_app(settings, session)) as client:
        response = client.post("/predict/batch", json={"items": [INLINE] * 3})
    assert response.status_code == 422
    (error,) = problem_of(response)["errors"]
    assert error["loc"] == ["body", "items"]
    assert error["msg"] == "at most 2 items per batch, got 3"


def test_an_empty_import_names_the_body(client: TestClient) -> None:
    csv = {**ADMIN, "Content-Type": "text/csv"}
    response = client.post("/admin/import/football-data", content=b"  \n", headers=csv)
    assert response.status_code == 422
    (error,) = problem_of(response)["errors"]
    assert error["loc"] == ["body"]
    assert error["msg"].startswith("the request body is empty")
    form = client.post(
        "/admin/import/football-data", files={"note": (None, "no file")}, headers=ADMIN
    )
    assert form.status_code == 422
    assert problem_of(form)["errors"][0]["loc"] == ["body", "file"]


# --- malformed JSON: one status everywhere -----------------------------------------------------

JSON_ENDPOINTS = [
    ("/predict", JSON),
    ("/predict/batch", JSON),
    ("/admin/odds", ADMIN_JSON),
    ("/admin/results", ADMIN_JSON),
    ("/admin/import/the-odds-api", ADMIN_JSON),
    ("/admin/teams/aliases", ADMIN_JSON),
    ("/admin/refit", ADMIN_JSON),
]


@pytest.mark.parametrize(("path", "headers"), JSON_ENDPOINTS)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"items": [', id="cut-short"),
        pytest.param(b"{'single': 'quotes'}", id="not-json"),
        pytest.param(b'{"name": "\xff\xfe"}', id="not-utf-8"),
    ],
)
def test_malformed_json_is_422_on_every_endpoint(
    client: TestClient, path: str, headers: dict[str, str], body: bytes
) -> None:
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == 422, response.text
    (error,) = problem_of(response)["errors"]
    assert error["loc"] == ["body"]
    assert error["type"] == "json_invalid"
    assert error["msg"].startswith(("Invalid JSON", "JSON decode error"))


# --- batch items ---------------------------------------------------------------------------------


def test_a_batch_item_s_error_is_the_problem_predict_answers(client: TestClient) -> None:
    items = [INLINE, {"match_id": 4242}, {"odds": [{"bookmaker": "B365", "home": 2.1}]}]
    results = client.post("/predict/batch", json={"items": items}).json()["results"]
    assert [result["status"] for result in results] == [200, 404, 422]
    assert results[0]["error"] is None
    alone = client.post("/predict", json=items[1])
    missing = results[1]["error"]
    assert missing == {**alone.json(), "instance": "/predict/batch#/items/1"}
    invalid = results[2]["error"]
    assert invalid["status"] == 422
    assert invalid["title"] == TITLES[422]
    assert invalid["instance"] == "/predict/batch#/items/2"
    assert {tuple(error["loc"]) for error in invalid["errors"]} == {
        ("odds", 0, "draw"),
        ("odds", 0, "away"),
    }
