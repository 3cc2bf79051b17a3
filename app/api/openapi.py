"""The API's documentation: the OpenAPI document.

The document is FastAPI's, completed in two ways: the problem schema that every error answer
refers to is in its components, and a bound that a setting chooses (the largest page, the
largest batch) is stated with the value the running service was given.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from app.api.schemas.problems import Problem
from app.settings import Settings

SETTING_MAXIMUM = "x-maximum-setting"


def setting_maximum(name: str) -> dict[str, Any]:
    """Mark a parameter or a list as bounded by the setting ``name``: the document states the
    setting's value as its ``maximum`` (``maxItems`` for a list)."""
    return {SETTING_MAXIMUM: name}


class DocumentedAPI(FastAPI):
    """The application, whose OpenAPI document is completed as the module says."""

    def __init__(self, settings: Settings, **options: Any) -> None:
        super().__init__(**options)
        self.settings = settings
        self._completed: dict[str, Any] | None = None

    def openapi(self) -> dict[str, Any]:
        document = super().openapi()
        if document is not self._completed:
            _add_problem_schemas(document)
            _state_setting_maxima(document, self.settings)
            self._completed = document
        return document


def _add_problem_schemas(document: dict[str, Any]) -> None:
    schema = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in schema.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    schemas.setdefault(Problem.__name__, schema)


def _state_setting_maxima(node: Any, settings: Settings) -> None:
    if isinstance(node, dict):
        name = node.pop(SETTING_MAXIMUM, None)
        if name is not None:
            bound = "maxItems" if node.get("type") == "array" else "maximum"
            node[bound] = getattr(settings, name)
        for value in node.values():
            _state_setting_maxima(value, settings)
    elif isinstance(node, list):
        for value in node:
            _state_setting_maxima(value, settings)
