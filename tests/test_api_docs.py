"""The API's documentation: every operation documents the errors it answers, as problems, and
the bounds the settings choose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
