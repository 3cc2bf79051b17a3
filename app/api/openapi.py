"""The OpenAPI document, completed: the problem schemas, the nulls of the examples, and a
bound a setting chooses, stated with its value; Swagger UI and ReDoc served from the
package, so that ``/docs`` and ``/redoc`` work on a closed network."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from app.api.schemas.problems import Problem
from app.settings import Settings

SETTING_MAXIMUM = "x-maximum-setting"
# Where Swagger UI's and ReDoc's bundles, the files of the fastapi-offline package, are served.
DOCS_ASSETS = "/docs-assets"
_ASSETS_DIRECTORY = files("fastapi_offline") / "static"
# Swagger UI would show a badge fetched from validator.swagger.io.
SWAGGER_UI_PARAMETERS = {"validatorUrl": None}


def setting_maximum(name: str) -> dict[str, Any]:
    """Mark a parameter or a list as bounded by the setting ``name``: the document states the
    setting's value as its ``maximum`` (``maxItems`` for a list)."""
    return {SETTING_MAXIMUM: name}


class DocumentedAPI(FastAPI):
    """The application, its OpenAPI document completed."""

    def __init__(self, settings: Settings, **options: Any) -> None:
        super().__init__(docs_url=None, redoc_url=None, **options)
        self.settings = settings
        self._completed: dict[str, Any] | None = None

    def openapi(self) -> dict[str, Any]:
        document = super().openapi()
        if document is not self._completed:
            _add_problem_schemas(document)
            _restore_examples(document)
            _state_setting_maxima(document, self.settings)
            self._completed = document
        return document


def _add_problem_schemas(document: dict[str, Any]) -> None:
    """The problem schema, and those of the problems with members of their own."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    models: list[type[Problem]] = [Problem, *Problem.__subclasses__()]
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in schema.pop("$defs", {}).items():
            schemas.setdefault(name, definition)
        schemas.setdefault(model.__name__, schema)


def _models() -> Iterator[type[BaseModel]]:
    pending = list(BaseModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model.__module__.startswith("app."):
            yield model


def _restore_examples(document: dict[str, Any]) -> None:
    """Put back the examples of the app's models as they declare them: FastAPI leaves the
    nulls out of the document, and an absent ``external_id`` is not a null one."""
    schemas = document.get("components", {}).get("schemas", {})
    by_name: dict[str, list[type[BaseModel]]] = {}
    for model in _models():
        by_name.setdefault(model.__name__, []).append(model)
    for name, schema in schemas.items():
        models = by_name.get(name, [])
        if len(models) != 1:
            continue
        declared = models[0].model_json_schema()
        if "examples" in declared:
            schema["examples"] = declared["examples"]
        for field, property_schema in schema.get("properties", {}).items():
            examples = declared.get("properties", {}).get(field, {}).get("examples")
            if examples is not None:
                property_schema["examples"] = examples


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


def install_docs(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc, with their assets served by the application itself."""
    assert app.openapi_url is not None
    openapi_url = app.openapi_url
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(_ASSETS_DIRECTORY)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=root + redirect_url,
            swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )

    @app.get(redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            with_google_fonts=False,
        )
