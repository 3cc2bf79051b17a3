"""Ensemble probabilities for one match or many, and the model versions behind them.

/predict is the service's hot path. An inline request touches no database; a request by
match id reads the stored quotes once, then each worker reuses the answer for
ODDSBOOST_PREDICT_CACHE_SECONDS. The body is parsed straight from its bytes and the answer
is serialised once, without FastAPI's second validation pass.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_json

from app.api.deps import PredictionsDep, SessionDep, SettingsDep, page_window
from app.api.model_schemas import (
    BatchIn,
    BatchOut,
    ModelVersionOut,
    PredictIn,
    PredictionOut,
    prediction_body,
)
from app.api.schemas import MAX_ID, Page
from app.services import model_versions
from app.services.pagination import PageWindow
from app.services.prediction import ON_LOOP_MAX, Refusal, Unanswerable

log = logging.getLogger(__name__)
router = APIRouter(tags=["predict"])
PREDICT_IN = TypeAdapter(PredictIn)

PREDICT_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "No match with that id."},
    422: {"description": "Invalid input, or no usable quote; the message names what and where."},
}


def _inlined_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with its $defs inlined (an OpenAPI request body cannot
    point into a schema's own $defs)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref", "")
            if reference.startswith("#/$defs/"):
                return resolve(definitions[reference.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


PREDICT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": _inlined_schema(PredictIn)}},
    }
}


def _json(body: Any) -> Response:
    # Serialised once; the documented schema stays response_model (tests check real answers
    # against it).
    return Response(to_json(body), media_type="application/json")


# The HTTP status of each reason an item gets no prediction.
REFUSAL_STATUS = {
    Unanswerable.NO_SUCH_MATCH: status.HTTP_404_NOT_FOUND,
    Unanswerable.NO_USABLE_QUOTE: status.HTTP_422_UNPROCESSABLE_CONTENT,
    Unanswerable.DATABASE_DOWN: status.HTTP_503_SERVICE_UNAVAILABLE,
}


@router.post(
    "/predict",
    response_model=PredictionOut,
    responses=PREDICT_ERRORS,
    openapi_extra=PREDICT_BODY,
)
async def predict(request: Request, predictions: PredictionsDep) -> Response:
    """Ensemble probabilities of 1, X and 2 for a stored match or an inline one.

    Send ``{"match_id": 17}`` or an inline match with ``odds`` (teams, competition and
    kickoff optional). An inline request touches no database. Before any model exists the
    answer is the consensus of the quotes, with ``model: null`` and a note saying so.
    """
    try:
        item = PredictIn.model_validate_json(await request.body())
    except ValidationError as error:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in error.errors()]
        ) from None
    (answer,) = await predictions.answer([item.to_request()])
    if isinstance(answer, Refusal):
        raise HTTPException(REFUSAL_STATUS[answer.reason], answer.detail)
    return _json(prediction_body(answer))


@router.post("/predict/batch", response_model=BatchOut, responses={422: PREDICT_ERRORS[422]})
async def predict_batch(
    batch: BatchIn, settings: SettingsDep, predictions: PredictionsDep
) -> Response:
    """Many predictions, answered in order; one item's error does not fail the others."""
    if len(batch.items) > settings.predict_batch_max:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"at most {settings.predict_batch_max} items per batch, got {len(batch.items)}",
        )
    if len(batch.items) > ON_LOOP_MAX:
        valid, entries = await run_in_threadpool(_check_items, batch.items)
    else:
        valid, entries = _check_items(batch.items)
    answers = iter(await predictions.answer([item.to_request() for item in valid]))
    for entry in entries:
        if entry["status"] == 422:
            continue
        answer = next(answers)
        if isinstance(answer, Refusal):
            entry.update(status=REFUSAL_STATUS[answer.reason], error=answer.detail)
        else:
            entry["prediction"] = prediction_body(answer)
    return _json({"results": entries})


def _check_items(items: list[Any]) -> tuple[list[PredictIn], list[dict[str, Any]]]:
    """Each item checked on its own; the entries of the answer, errors filled in."""
    valid: list[PredictIn] = []
    entries: list[dict[str, Any]] = []
    for index, raw in enumerate(items):
        entry: dict[str, Any] = {"index": index, "status": 200, "prediction": None, "error": None}
        try:
            valid.append(PREDICT_IN.validate_python(raw))
        except ValidationError as error:
            entry.update(
                status=422,
                error=[
                    {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
                    for e in error.errors()
                ],
            )
        entries.append(entry)
    return valid, entries


@router.get("/models", response_model=Page[ModelVersionOut], tags=["models"])
def list_models(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(20))],
) -> Page[ModelVersionOut]:
    """Model versions with their validation metrics, newest first."""
    versions = model_versions.list_versions(session, page)
    return Page[ModelVersionOut](
        items=[ModelVersionOut.of(v) for v in versions.items],
        total=versions.total,
        limit=versions.limit,
        offset=versions.offset,
    )


@router.get(
    "/models/active",
    response_model=ModelVersionOut,
    tags=["models"],
    responses={404: {"description": "No model has been fitted yet."}},
)
def get_active_model(session: SessionDep) -> ModelVersionOut:
    version = model_versions.active_version(session)
    if version is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            "no model has been fitted yet: run `oddsboost refit` or POST /admin/refit",
        )
    return ModelVersionOut.of(version)


@router.get(
    "/models/{version_id}",
    response_model=ModelVersionOut,
    tags=["models"],
    responses={404: {"description": "No such version."}},
)
def get_model(
    version_id: Annotated[int, Path(ge=1, le=MAX_ID, examples=[2])], session: SessionDep
) -> ModelVersionOut:
    version = model_versions.get_version(session, version_id)
    if version is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no model version {version_id}")
    return ModelVersionOut.of(version)
