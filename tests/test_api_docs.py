"""The API's documentation: every operation documents the errors it answers, as problems, and
the bounds the settings choose; /docs and /redoc load nothing from another origin."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.settings import Settings
from tests.conftest import build_app

PROBLEM = "application/problem+json"
PROBLEM_CONTENT = {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}
METHODS = {"get", "post", "put", "patch", "delete"}


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def test_every_operation_documents_its_errors_as_problems(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert set(schemas["Problem"]["required"]) == {"title", "status", "detail", "instance"}
    assert set(schemas["Problem"]["properties"]) == {
        "type",
        "title",
        "status",
        "detail",
        "instance",
        "errors",
    }
    assert set(schemas["FieldError"]["required"]) == {"loc", "msg", "type"}
    seen = 0
    for path, method, operation in operations(document):
        where = f"{method.upper()} {path}"
        responses = operation["responses"]
        errors = {int(status) for status in responses if int(status) >= 400}
        assert 500 in errors, where
        if operation.get("parameters") or "requestBody" in operation:
            assert 422 in errors, where
        if "requestBody" in operation:
            assert 413 in errors, where
        if path.startswith("/admin/"):
            assert {401, 403, 503} <= errors, where
        for status in errors:
            assert responses[str(status)]["content"] == PROBLEM_CONTENT, (where, status)
            assert responses[str(status)]["description"], (where, status)
        seen += 1
    assert seen == 19


def test_bounds_chosen_by_settings_are_documented(database_url: str, session: Session) -> None:
    settings = Settings(database_url=database_url, page_size_max=37, predict_batch_max=12)
    with TestClient(build_app(settings, session)) as client:
        document = client.get("/openapi.json").json()
    limits = [
        parameter["schema"]
        for _, _, operation in operations(document)
        for parameter in operation.get("parameters", [])
        if parameter["name"] == "limit"
    ]
    assert len(limits) == 3
    assert all(schema["maximum"] == 37 for schema in limits)
    items = document["components"]["schemas"]["BatchIn"]["properties"]["items"]
    assert items["maxItems"] == 12
    assert "x-maximum-setting" not in str(document)


# Every URL a page makes the browser load: attributes, and the spec URL in Swagger UI's script.
PAGE_URLS = re.compile(r"""(?:src|href|spec-url)="([^"]+)"|url: '([^']+)'""")
ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
# What each bundle defines, so a served file is the real one and not an empty stand-in.
ASSET_MARKERS = {"swagger-ui-bundle.js": b"SwaggerUIBundle", "redoc.standalone.js": b"Redoc"}


@pytest.mark.parametrize(("page", "assets"), [("/docs", 3), ("/redoc", 2)])
def test_the_api_docs_load_only_from_the_service(
    client: TestClient, page: str, assets: int
) -> None:
    response = client.get(page)
    assert response.status_code == 200
    html = response.text
    assert "http://" not in html
    assert "https://" not in html
    urls = [attribute or script for attribute, script in PAGE_URLS.findall(html)]
    assert "/openapi.json" in urls
    served = [url for url in urls if url != "/openapi.json"]
    assert len(served) == assets, urls
    for url in served:
        assert url.startswith("/"), url
        assert not url.startswith("//"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        suffix = url[url.rindex(".") :]
        assert asset.headers["content-type"].startswith(ASSET_TYPES[suffix]), url
        marker = ASSET_MARKERS.get(url.rsplit("/", 1)[-1])
        if marker is not None:
            assert len(asset.content) > 500_000
            assert marker in asset.content
