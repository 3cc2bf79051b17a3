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

from app.api.schemas import bets, common, ingest, model_versions, predict, refits
from app.domain.records import check_text, text_pattern
from app.settings import Settings
from tests.apps import ADMIN_KEY, build_app
from tests.documented import accepts, documented, operations, resolved

PROBLEM = "application/problem+json"
PROBLEM_CONTENT = {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}


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
        # Any request may be cut off by the server before it reaches the operation.
        assert {400, 408, 431, 500} <= errors, where
        assert "HTTP/1.1" in responses["400"]["description"], where
        assert "ODDSBOOST_BODY_TIMEOUT_SECONDS" in responses["408"]["description"], where
        assert "ODDSBOOST_HEADER_LIMIT_BYTES" in responses["431"]["description"], where
        if operation.get("parameters") or "requestBody" in operation:
            assert 422 in errors, where
        if "requestBody" in operation:
            assert 413 in errors, where
        if path.startswith("/admin/"):
            assert {401, 403, 503} <= errors, where
        for status in errors:
            assert is_problem_content(responses[str(status)]["content"], schemas), (where, status)
            assert responses[str(status)]["description"], (where, status)
        seen += 1
    assert seen >= 19  # every operation the service had when this was written, at least


def is_problem_content(content: dict[str, Any], schemas: dict[str, Any]) -> bool:
    """The problem schema; or either it or a problem with members of its own (every member
    of a problem, required as there, and more)."""
    if content == PROBLEM_CONTENT:
        return True
    (media_type,) = content
    if media_type != PROBLEM:
        return False
    problem, extended = (item["$ref"] for item in content[PROBLEM]["schema"]["anyOf"])
    if problem != "#/components/schemas/Problem":
        return False
    schema = schemas[extended.rsplit("/", 1)[-1]]
    return set(schemas["Problem"]["properties"]) < set(schema["properties"]) and set(
        schemas["Problem"]["required"]
    ) <= set(schema["required"])


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
    # matches, models, activations, refits, fetches, bookmakers, teams, value bets, upcoming,
    # flags, bets, alert deliveries
    assert len(limits) == 12
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
    modules = {
        bets.__name__,
        ingest.__name__,
        model_versions.__name__,
        predict.__name__,
        refits.__name__,
    }
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


# --- the schemas state the rules the API checks ---------------------------------------------

A_MATCH = {
    "competition": "E0",
    "kickoff": "2018-08-10T19:00:00Z",
    "home_team": "Man United",
    "away_team": "Leicester",
}
ODDS = [{"bookmaker": "B365", "home": 2.1, "draw": 3.4, "away": 3.6}]
PADDED = " " * 50 + "x" * 100 + "\t\u3000"

# A body, and whether the API takes it: its documented schema must say the same.
AGREEMENT: list[tuple[Any, dict[str, Any], bool]] = [
    (ingest.AliasIn, {"alias": "Manchester United", "team": "Man United"}, True),
    (ingest.AliasIn, {"alias": "", "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": "   ", "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": "\x1c Man Utd\u3000\n", "team": "Man United"}, True),
    (ingest.AliasIn, {"alias": "Man\nUtd", "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": "Man Utd\x00", "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": "x" * 100, "team": "Man United"}, True),
    (ingest.AliasIn, {"alias": "x" * 101, "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": PADDED, "team": "Man United"}, True),
    # Characters that cannot be seen are refused inside a name, as control characters are.
    (ingest.AliasIn, {"alias": "Man\u200bUtd", "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": "Man Utd\ufeff", "team": "Man United"}, False),
    (ingest.AliasIn, {"alias": "Man\x85Utd", "team": "Man United"}, False),
    (refits.RefitIn, {"until": "2019-06-01T00:00:00Z"}, True),
    (refits.RefitIn, {"until": None}, True),
    (refits.RefitIn, {"until": 0}, False),
    (refits.RefitIn, {"until": 1.5e9}, False),
    (refits.RefitIn, {"until": "0.5"}, False),
    (refits.RefitIn, {"until": "0110-08-31T05:46:00Z"}, False),
    (refits.RefitIn, {"until": "2100-01-01T00:00:00Z"}, False),
    (ingest.MatchRef, A_MATCH, True),
    (ingest.MatchRef, {**A_MATCH, "season": "  "}, True),
    (ingest.MatchRef, {**A_MATCH, "season": "x" * 17}, False),
    # A season is YYYY/YY of two consecutive years or a calendar year YYYY, 1900-2099.
    (ingest.MatchRef, {**A_MATCH, "season": " 2018/19 "}, True),
    (ingest.MatchRef, {**A_MATCH, "season": "1999/00"}, True),
    # The form a known competition plays (E0: over two years) is in the field's description:
    # the schema takes either form, as the API does for a competition it does not know.
    (ingest.MatchRef, {**A_MATCH, "competition": "CUP", "season": "2019"}, True),
    (ingest.MatchRef, {**A_MATCH, "season": "2018/20"}, False),
    (ingest.MatchRef, {**A_MATCH, "season": "2099/00"}, False),
    (ingest.MatchRef, {**A_MATCH, "season": "1899"}, False),
    (ingest.MatchRef, {**A_MATCH, "season": "summer"}, False),
    (ingest.MatchRef, {**A_MATCH, "external_id": ""}, False),
    (ingest.MatchRef, {**A_MATCH, "external_id": " 42 "}, True),
    (ingest.ResultIn, {"match_id": 17, "home_goals": 2, "away_goals": 1}, True),
    (ingest.ResultIn, {"match": A_MATCH, "match_id": None, "home_goals": 2, "away_goals": 1}, True),
    (ingest.ResultIn, {"match": A_MATCH, "match_id": 17, "home_goals": 2, "away_goals": 1}, False),
    (ingest.ResultIn, {"home_goals": 2, "away_goals": 1}, False),
    (ingest.ResultIn, {"match": None, "match_id": None, "home_goals": 2, "away_goals": 1}, False),
    # The largest price, in a book a bookmaker could offer (its overround within bounds).
    (predict.OddsIn, {"bookmaker": "B365", "home": 1000.0, "draw": 1.5, "away": 2.9}, True),
    (predict.OddsIn, {"bookmaker": "B365", "home": 1.0, "draw": 3.4, "away": 3.6}, False),
    # A bookmaker is named by code or name, trimmed before its length is checked.
    (predict.OddsIn, {"bookmaker": "   ", "home": 2.1, "draw": 3.4, "away": 3.6}, False),
    (predict.OddsIn, {"bookmaker": PADDED, "home": 2.1, "draw": 3.4, "away": 3.6}, True),
    (predict.OddsIn, {"bookmaker": "b" * 101, "home": 2.1, "draw": 3.4, "away": 3.6}, False),
    (predict.OddsIn, {"bookmaker": "Bet\x7f365", "home": 2.1, "draw": 3.4, "away": 3.6}, False),
    (predict.OddsIn, {"bookmaker": "B365", "home": 1000.5, "draw": 3.4, "away": 3.6}, False),
    (predict.PredictIn, {"match_id": 17}, True),
    (predict.PredictIn, {"match_id": 17, "home_team": None, "odds": None}, True),
    (predict.PredictIn, {"odds": ODDS}, True),
    (predict.PredictIn, {"odds": ODDS, "match_id": None, "home_team": "Arsenal"}, True),
    (predict.PredictIn, {"match_id": 17, "odds": ODDS}, False),
    (predict.PredictIn, {"match_id": 17, "competition": "E0"}, False),
    (predict.PredictIn, {}, False),
    (predict.PredictIn, {"match_id": None, "odds": None}, False),
]


def test_the_documented_schemas_accept_what_the_api_accepts(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    components = document["components"]["schemas"]
    wrong = []
    for model, body, taken in AGREEMENT:
        title = TypeAdapter(model).json_schema()["title"]
        schema = documented(document, title)
        assert schema is not None, title
        validator = jsonschema_rs.Draft202012Validator(
            resolved(schema, components), validate_formats=True
        )
        if (accepts(model, body), validator.is_valid(body)) != (taken, taken):
            wrong.append((model.__name__, body, taken))
    assert not wrong


# Texts around every edge of check_text: spaces str.strip() takes off (and some it does not),
# control characters inside and at the ends, lengths at the limit.
EDGE_CHARACTERS = [chr(code) for code in range(0x0, 0xA1)] + [
    "\u1680",
    "\u180e",
    "\u2000",
    "\u200a",
    "\u200b",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
    "\ufeff",
    "é",
    "\U0001f600",
]


def texts() -> Iterator[str]:
    for character in EDGE_CHARACTERS:
        yield character
        yield f"a{character}"
        yield f"{character}a"
        yield f"a{character}b"
        yield f"{character}{character}ab{character}"
    for length in (1, 2, 15, 16, 17, 99, 100, 101):
        yield "x" * length
        yield f"  {'y' * length}\u3000"
        yield "z" + " " * (length - 2) + "z" if length >= 2 else "z"


@pytest.mark.parametrize(("max_length", "blank"), [(100, False), (16, True)])
def test_a_text_s_pattern_accepts_what_check_text_accepts(max_length: int, blank: bool) -> None:
    pattern = re.compile(text_pattern(max_length, blank=blank))

    def checked(text: str) -> bool:
        if blank and not text.strip():
            return True
        try:
            check_text(text, "text", max_length)
        except ValueError:
            return False
        return True

    wrong = [text for text in texts() if bool(pattern.match(text)) != checked(text)]
    assert not wrong
    # The spaces around the text are exactly those str.strip() takes off, over all Unicode.
    every_character = "".join(map(chr, range(0x110000)))
    spaces = {character for character in every_character if character.isspace()}
    space_class = text_pattern(max_length, blank=blank)[1:].split("*", 1)[0]
    assert set(re.findall(space_class, every_character)) == spaces


def test_a_number_is_not_a_timestamp(client: TestClient) -> None:
    # pydantic would read each as seconds since 1970.
    headers = {"X-API-Key": ADMIN_KEY}
    for value in ("0.5", "1700000000"):
        response = client.get("/matches", params={"to": value})
        assert response.status_code == 422, value
        assert response.json()["errors"][0]["loc"] == ["query", "to"]
    refit = client.post("/admin/refit", json={"until": 0}, headers=headers)
    assert refit.status_code == 422
    assert refit.json()["errors"][0]["msg"].endswith("not a number")
    quote = {
        "match": A_MATCH,
        "bookmaker": "B365",
        "home": 1.57,
        "draw": 3.9,
        "away": 7.5,
        "captured_at": 0,
    }
    odds = client.post("/admin/odds", json={"quotes": [quote]}, headers=headers)
    assert odds.status_code == 422
    assert odds.json()["errors"][0]["loc"] == ["body", "quotes", 0, "captured_at"]
