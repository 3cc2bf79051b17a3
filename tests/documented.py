"""The operations the OpenAPI document lists, and a request for each made from the document's
own examples, for the tests that must reach every operation without naming them one by one;
the document's schemas found by title and resolved, and whether a model accepts a body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from app.api.middleware import GUARDED_PREFIXES

METHODS = {"get", "post", "put", "patch", "delete"}
JSON_MEDIA_TYPE = "application/json"


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def is_admin(path: str) -> bool:
    """An operation guarded by the admin key (the admin API, the bettor's book), by the
    prefixes the key's middleware guards."""
    return f"{path}/".startswith(GUARDED_PREFIXES)


def json_operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of every operation that takes a JSON body."""
    return [
        (method, path)
        for path, method, operation in operations(document)
        if JSON_MEDIA_TYPE in operation.get("requestBody", {}).get("content", {})
    ]


@dataclass(frozen=True)
class DocumentedRequest:
    """One request to an operation, its path filled in and its body the documented example."""

    method: str
    template: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None

    @property
    def name(self) -> str:
        return f"{self.method.upper()} {self.template}"

    def send(self, client: TestClient, **headers: str) -> httpx2.Response:
        return client.request(
            self.method,
            self.path,
            content=self.content,
            headers={**self.headers, **headers},
            follow_redirects=False,
        )


def documented_requests(document: dict[str, Any], admin_key: str) -> list[DocumentedRequest]:
    """A request for every operation: each path parameter its first example, the body the
    first example of the body's schema (none for a body that may be left out), the admin key
    on the admin operations."""
    components = document["components"]["schemas"]
    requests = []
    for template, method, operation in operations(document):
        path = template
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                value = str(parameter["schema"]["examples"][0])
                path = path.replace("{" + parameter["name"] + "}", value)
        headers = {"X-API-Key": admin_key} if is_admin(template) else {}
        content_type, content = _example_body(operation, components)
        if content_type is not None:
            headers["Content-Type"] = content_type
        requests.append(DocumentedRequest(method, template, path, headers, content))
    return requests


def _example_body(
    operation: dict[str, Any], components: dict[str, Any]
) -> tuple[str | None, bytes | None]:
    body = operation.get("requestBody")
    if body is None:
        return None, None
    content_type, media = next(iter(body["content"].items()))
    if "example" in media:
        return content_type, str(media["example"]).encode()
    schema = media["schema"]
    reference = schema.get("$ref")
    if reference is not None:
        schema = components[reference.rsplit("/", 1)[-1]]
    if "examples" not in schema:
        assert not body.get("required"), f"no example of a required body: {operation}"
        return None, None
    return content_type, json.dumps(schema["examples"][0]).encode()


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


def accepts(model: Any, body: dict[str, Any]) -> bool:
    """Whether the API takes ``body`` as ``model`` (a model, or a union of models)."""
    try:
        TypeAdapter(model).validate_json(json.dumps(body))
    except ValueError:
        return False
    return True


def documented(node: Any, title: str) -> dict[str, Any] | None:
    """The first object schema (or union of them) of the document with that title (a
    component, or a request body, which the document writes out in place)."""
    if isinstance(node, dict):
        if node.get("title") == title and ("properties" in node or "oneOf" in node):
            return node
        node = list(node.values())
    if isinstance(node, list):
        for value in node:
            found = documented(value, title)
            if found is not None:
                return found
    return None
