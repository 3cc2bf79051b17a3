"""The edges of HTTP, held on every operation the OpenAPI document lists: no redirect built
from the Host header, a body nested too deeply is invalid JSON, the admin key is checked
before anything else of a request, and every JSON endpoint takes JSON only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.routers import dashboard
from app.settings import Settings
from tests.apps import ADMIN_KEY, build_app
from tests.documented import (
    DocumentedRequest,
    documented_requests,
    is_admin,
    json_operations,
    operations,
)

PROBLEM = "application/problem+json"
JSON = "application/json"
# Deeper than any parser's recursion limit, and each far inside the 1 MiB body limit.
NESTED_BODIES = {
    "lists-1000-deep": b"[" * 1000 + b"]" * 1000,
    "objects-1000-deep": b'{"a":' * 1000 + b"1" + b"}" * 1000,
    "lists-100000-deep": b"[" * 100_000 + b"]" * 100_000,
}
NOT_JSON_TYPES = ["text/plain", "application/xml", "application/x-www-form-urlencoded", None]


def requests_of(client: TestClient) -> list[DocumentedRequest]:
    document = client.get("/openapi.json").json()
    pages = [
        # The admin key on every page: the bets page asks for it, the others read past it.
        DocumentedRequest(
            "get", route.path, route.path.replace("{match_id}", "1"), {"X-API-Key": ADMIN_KEY}
        )
        for route in dashboard.router.routes
        if isinstance(route, APIRoute)
    ]
    return documented_requests(document, ADMIN_KEY) + pages


def problem_of(response: httpx2.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    return body


# --- no redirect to the Host a request names -----------------------------------------------------


def test_a_trailing_slash_is_not_redirected_to_the_host_the_request_names(
    client: TestClient,
) -> None:
    response = client.get("/dashboard/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert "location" not in response.headers
    problem_of(response, 404)
    for request in requests_of(client):
        if request.path == "/":
            continue  # the home page: below
        slashed = DocumentedRequest(
            request.method, request.template, request.path + "/", request.headers, request.content
        )
        answer = slashed.send(client, Host="evil.example")
        assert "location" not in answer.headers, request.name
        # No such path; or, for a path parameter that takes a "/", a path of another method.
        assert answer.status_code in (404, 405), (request.name, answer.status_code)


def test_the_home_page_redirects_without_naming_a_host(client: TestClient) -> None:
    response = client.get("/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == "/dashboard"


# --- JSON nested too deeply ----------------------------------------------------------------------


@pytest.mark.parametrize("body", list(NESTED_BODIES.values()), ids=list(NESTED_BODIES))
def test_a_body_nested_too_deeply_is_invalid_json_on_every_json_endpoint(
    client: TestClient, body: bytes
) -> None:
    document = client.get("/openapi.json").json()
    endpoints = json_operations(document)
    assert ("post", "/predict/batch") in endpoints
    for method, path in endpoints:
        headers = {"Content-Type": JSON, **({"X-API-Key": ADMIN_KEY} if is_admin(path) else {})}
        path = path.replace("{version_id}", "1").replace("{bet_id}", "1")
        response = client.request(method, path, content=body, headers=headers)
        problem = problem_of(response, 422)
        (error,) = problem["errors"]
        assert (error["loc"], error["type"]) == (["body"], "json_invalid"), (path, problem)
        assert "Invalid JSON" in error["msg"], (path, problem)


# --- the admin key before anything else ----------------------------------------------------------


def oversized_chunks() -> Iterator[bytes]:
    """A body over every body limit, sent without a length (chunked)."""
    for _ in range(200):
        yield b"[" * 65536


@dataclass(frozen=True)
class BadRequest:
    """A way a request to an admin operation may be wrong besides its key."""

    content: bytes | Callable[[], Iterator[bytes]] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

    def send(
        self, client: TestClient, method: str, path: str, key: dict[str, str]
    ) -> httpx2.Response:
        content = self.content() if callable(self.content) else self.content
        return client.request(
            method, path, content=content, headers={**self.headers, **key}, params=self.params
        )


JSON_TYPE = {"Content-Type": JSON}
# None of them is looked at before the key: not even a body declared too large to read.
BAD_REQUESTS = {
    "cut-short JSON": BadRequest(b'{"quotes": [', JSON_TYPE),
    "nested too deeply": BadRequest(NESTED_BODIES["lists-1000-deep"], JSON_TYPE),
    "not JSON": BadRequest(b"quotes=1", {"Content-Type": "application/x-www-form-urlencoded"}),
    "invalid fields": BadRequest(b'{"quotes": "nonsense"}', JSON_TYPE),
    "declared over the limit": BadRequest(
        b"{}", {**JSON_TYPE, "Content-Length": str(1024 * 1024 * 1024)}
    ),
    "chunked over the limit": BadRequest(oversized_chunks, JSON_TYPE),
    "a NUL in the query": BadRequest(params={"season": "\x00"}),
    "a broken multipart form": BadRequest(
        b"no boundary here", {"Content-Type": "multipart/form-data"}
    ),
}


def test_the_operations_that_need_the_key_are_those_under_admin(client: TestClient) -> None:
    # The key is checked first for every path under /admin, the admin API's one prefix.
    document = client.get("/openapi.json").json()
    for path, method, operation in operations(document):
        assert bool(operation.get("security")) == is_admin(path), (method, path)


@pytest.mark.parametrize("bad", list(BAD_REQUESTS.values()), ids=list(BAD_REQUESTS))
def test_the_admin_key_is_checked_before_anything_else(
    client: TestClient, database_url: str, session: Session, bad: BadRequest
) -> None:
    document = client.get("/openapi.json").json()
    admin = [
        (request.method, request.path)
        for request in documented_requests(document, ADMIN_KEY)
        if is_admin(request.template)
    ]
    assert len(admin) >= 10
    admin.append(("get", "/admin/no/such/thing"))
    for method, path in admin:
        missing = bad.send(client, method, path, {})
        assert "X-API-Key" in problem_of(missing, 401)["detail"], (method, path)
        assert missing.headers["WWW-Authenticate"] == "ApiKey"
        problem_of(bad.send(client, method, path, {"X-API-Key": "not-the-key"}), 403)
    disabled = Settings(database_url=database_url, admin_api_key=None)
    with TestClient(build_app(disabled, session)) as off:
        for method, path in admin:
            answer = bad.send(off, method, path, {"X-API-Key": ADMIN_KEY})
            assert "admin API disabled" in problem_of(answer, 503)["detail"], (method, path)


# --- JSON only, on every JSON endpoint -----------------------------------------------------------


@pytest.mark.parametrize("content_type", NOT_JSON_TYPES)
def test_every_json_endpoint_refuses_a_body_not_sent_as_json(
    client: TestClient, content_type: str | None
) -> None:
    document = client.get("/openapi.json").json()
    refused = 0
    for request in documented_requests(document, ADMIN_KEY):
        if (request.method, request.template) not in json_operations(document):
            continue
        headers = {k: v for k, v in request.headers.items() if k != "Content-Type"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        # The documented example, a valid body in every way but its declared type.
        content = request.content or b"{}"
        response = client.request(request.method, request.path, content=content, headers=headers)
        detail = problem_of(response, 415)["detail"]
        assert "send the body as JSON (Content-Type: application/json)" in detail, request.name
        refused += 1
    assert refused == len(json_operations(document))


def test_predict_takes_json_with_its_parameters_and_any_json_type(client: TestClient) -> None:
    inline = b'{"odds": [{"bookmaker": "B365", "home": 2.1, "draw": 3.4, "away": 3.6}]}'
    for content_type in [JSON, "application/json; charset=utf-8", "application/vnd.api+json"]:
        response = client.post("/predict", content=inline, headers={"Content-Type": content_type})
        assert response.status_code == 200, (content_type, response.text)


def test_the_api_docs_state_the_json_rule(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    assert "415" in document["info"]["description"]
    for path, method, operation in operations(document):
        if (method, path) in json_operations(document):
            assert "415" in operation["responses"], (method, path)
