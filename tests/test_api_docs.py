"""The API's documentation: every operation documents the errors it answers, as problems, and
the bounds the settings choose; every request field is described with an example that is
valid; /docs and /redoc load nothing from another origin."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Annotated, Any

import jsonschema_rs
import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, TypeAdapter
from sqlalchemy.orm import Session

from app.api.schemas import common, ingest, predict, refits
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


# --- examples -------------------------------------------------------------------------------


def request_models() -> list[type[BaseModel]]:
    """Every request body and part of one: the strict models of app/api/schemas/."""
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [common.StrictModel]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model is not common.StrictModel:
            found.append(model)
    modules = {ingest.__name__, predict.__name__, refits.__name__}
    assert {model.__module__ for model in found} == modules
    return found


MODELS = request_models()


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_every_request_field_has_a_description_and_a_valid_example(
    model: type[BaseModel],
) -> None:
    for name, field in model.model_fields.items():
        assert field.description, f"{model.__name__}.{name} has no description"
        assert field.examples, f"{model.__name__}.{name} has no example"
        # The field as it is declared, with its constraints and checks; read as JSON, as the
        # API reads it.
        declared: Any = (
            Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        )
        adapter: TypeAdapter[Any] = TypeAdapter(declared)
        for example in field.examples:
            adapter.validate_json(json.dumps(example))


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_every_request_example_is_a_valid_body(model: type[BaseModel]) -> None:
    examples = model.model_json_schema().get("examples", [])
    if model is not refits.RefitIn:  # its one field is its example
        assert examples, f"{model.__name__} has no example"
    for example in examples:
        model.model_validate_json(json.dumps(example))


def test_no_two_teams_or_prices_of_an_example_are_the_same() -> None:
    quote = ingest.QUOTE_EXAMPLE
    match = ingest.MATCH_EXAMPLE
    assert match["home_team"] != match["away_team"]
    assert len({quote["home"], quote["draw"], quote["away"]}) == 3
    assert quote["bookmaker"] != match["competition"]
    for odds in predict.ODDS_EXAMPLES:
        assert isinstance(odds, dict)
        assert len({odds["home"], odds["draw"], odds["away"]}) == 3


def resolved(node: Any, components: dict[str, Any]) -> Any:
    """A schema with its references to the document's components replaced by what they name."""
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/components/schemas/"):
            return resolved(components[reference.rsplit("/", 1)[-1]], components)
        return {key: resolved(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [resolved(value, components) for value in node]
    return node


def examples_in(node: Any, where: str = "#") -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """Every example of the document, with where it is and the schema it must fit."""
    if isinstance(node, dict):
        examples = node.get("examples")
        if isinstance(examples, list) and "properties" not in where.rsplit("/", 1)[-1]:
            for example in examples:
                yield where, example, node
        if "example" in node and "schema" in node:
            yield where, node["example"], node["schema"]
        for key, value in node.items():
            yield from examples_in(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from examples_in(value, f"{where}/{index}")


def test_every_example_in_the_openapi_document_fits_its_schema(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    components = document["components"]["schemas"]
    checked, wrong = 0, []
    for where, example, schema in examples_in(document):
        validator = jsonschema_rs.Draft202012Validator(
            resolved(schema, components), validate_formats=True
        )
        errors = [error.message for error in validator.iter_errors(example)]
        if errors:
            wrong.append((where, example, errors))
        checked += 1
    assert not wrong
    assert checked > 80
