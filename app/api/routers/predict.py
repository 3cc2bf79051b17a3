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
from sqlalchemy.exc import SQLAlchemyError

from app.api.deps import SessionDep, page_window
from app.api.model_schemas import (
    BatchIn,
    BatchOut,
    ModelVersionOut,
    PredictIn,
    PredictionOut,
    prediction_body,
)
from app.api.schemas import MAX_ID, Page
from app.db.orm import ModelVersion
from app.domain.ensemble import Ensemble
from app.domain.prediction import QuotedOdds, predict_matches
from app.domain.vocabulary import Method, Phase
from app.metrics import PREDICTIONS
from app.services import model_versions
from app.services.pagination import PageWindow
from app.services.serving import AnswerCache, ModelCache, StoredMatch, stored_matches
from app.settings import Settings

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


class PredictError(Exception):
    def __init__(self, status_code: int, detail: Any) -> None:
        self.status_code, self.detail = status_code, detail


def _json(body: Any) -> Response:
    # Serialised once; the documented schema stays response_model (tests check real answers
    # against it).
    return Response(to_json(body), media_type="application/json")


def _phase(cache: ModelCache, settings: Settings) -> Phase:
    ensemble = cache.ensemble
    return ensemble.phase if ensemble is not None else settings.refit_phase


def _prepare(
    item: PredictIn, stored: dict[int, StoredMatch], cache: ModelCache, settings: Settings
) -> tuple[list[QuotedOdds], dict[str, Any]]:
    """The quotes to combine for one item and the description of its match."""
    if item.match_id is not None:
        match = stored.get(item.match_id)
        if match is None:
            raise PredictError(status.HTTP_404_NOT_FOUND, f"no match with id {item.match_id}")
        if not match.odds:
            raise PredictError(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"match {match.id} has no usable quote: no {_phase(cache, settings)} quote "
                "captured before kickoff",
            )
        return match.odds, {
            "id": match.id,
            "competition": match.competition,
            "home_team": match.home_team,
            "away_team": match.away_team,
            "kickoff": match.kickoff,
        }
    assert item.odds is not None
    odds = [QuotedOdds(o.bookmaker, o.home, o.draw, o.away) for o in item.odds]
    return odds, {
        "id": None,
        "competition": item.competition,
        "home_team": item.home_team,
        "away_team": item.away_team,
        "kickoff": item.kickoff,
    }


class DatabaseUnavailableError(Exception):
    pass


def _load(request: Request, match_ids: list[int], phase: Phase) -> dict[int, StoredMatch]:
    try:
        with request.app.state.engine.connect() as connection:
            return stored_matches(connection, match_ids, phase=phase)
    except SQLAlchemyError as error:
        log.warning("could not read stored quotes: %s", error)
        raise DatabaseUnavailableError from None


UNAVAILABLE = PredictError(
    status.HTTP_503_SERVICE_UNAVAILABLE,
    "the database is not reachable: a prediction by match_id needs it (an inline one does not)",
)
# More pending predictions than this are computed in the thread pool, off the event loop.
ON_LOOP_MAX = 8


def _compute(
    pending: list[tuple[int, list[QuotedOdds], dict[str, Any]]],
    ensemble: Ensemble | None,
    method: Method,
) -> list[dict[str, Any]]:
    predictions = predict_matches([odds for _, odds, _ in pending], ensemble, method)
    return [
        prediction_body(prediction, ensemble, summary)
        for (_, _, summary), prediction in zip(pending, predictions, strict=True)
    ]


def _cache_key(cache: ModelCache, match_id: int, settings: Settings) -> tuple[Any, ...]:
    ensemble = cache.ensemble
    version = None if ensemble is None else ensemble.version
    return (match_id, version, _phase(cache, settings))


async def _answers(
    request: Request, items: list[PredictIn], settings: Settings
) -> list[dict[str, Any] | PredictError]:
    """Answers in order; stored matches are read in one go, cached answers are reused."""
    cache: ModelCache = request.app.state.models
    answers_by_id: AnswerCache = request.app.state.answers
    results: list[dict[str, Any] | PredictError | None] = [None] * len(items)
    missing: list[int] = []
    for index, item in enumerate(items):
        if item.match_id is not None:
            cached = answers_by_id.get(_cache_key(cache, item.match_id, settings))
            if cached is not None:
                results[index] = cached
                PREDICTIONS.labels("match_id", cached["basis"]).inc()
            else:
                missing.append(item.match_id)
    stored: dict[int, StoredMatch] = {}
    database_down = False
    if missing:
        try:
            stored = await run_in_threadpool(_load, request, missing, _phase(cache, settings))
        except DatabaseUnavailableError:
            database_down = True
    ensemble = cache.ensemble  # read once: a concurrent model swap cannot mix two versions
    pending: list[tuple[int, list[QuotedOdds], dict[str, Any]]] = []
    for index, item in enumerate(items):
        if results[index] is not None:
            continue
        if database_down and item.match_id is not None:
            results[index] = UNAVAILABLE
            continue
        try:
            odds, summary = _prepare(item, stored, cache, settings)
        except PredictError as error:
            results[index] = error
            continue
        pending.append((index, odds, summary))
    if pending:
        if len(pending) > ON_LOOP_MAX:
            answers = await run_in_threadpool(_compute, pending, ensemble, settings.demargin_method)
        else:
            answers = _compute(pending, ensemble, settings.demargin_method)
        for (index, _, _), answer in zip(pending, answers, strict=True):
            results[index] = answer
            match_id = items[index].match_id
            PREDICTIONS.labels("inline" if match_id is None else "match_id", answer["basis"]).inc()
            if match_id is not None:
                answers_by_id.put(_cache_key(cache, match_id, settings), answer)
    return [result for result in results if result is not None]


@router.post(
    "/predict",
    response_model=PredictionOut,
    responses=PREDICT_ERRORS,
    openapi_extra=PREDICT_BODY,
)
async def predict(request: Request) -> Response:
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
    (answer,) = await _answers(request, [item], request.app.state.settings)
    if isinstance(answer, PredictError):
        raise HTTPException(answer.status_code, answer.detail)
    return _json(answer)


@router.post("/predict/batch", response_model=BatchOut, responses={422: PREDICT_ERRORS[422]})
async def predict_batch(batch: BatchIn, request: Request) -> Response:
    """Many predictions, answered in order; one item's error does not fail the others."""
    settings: Settings = request.app.state.settings
    if len(batch.items) > settings.predict_batch_max:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"at most {settings.predict_batch_max} items per batch, got {len(batch.items)}",
        )
    if len(batch.items) > ON_LOOP_MAX:
        valid, entries = await run_in_threadpool(_check_items, batch.items)
    else:
        valid, entries = _check_items(batch.items)
    answers = iter(await _answers(request, valid, settings))
    for entry in entries:
        if entry["status"] == 422:
            continue
        answer = next(answers)
        if isinstance(answer, PredictError):
            entry.update(status=answer.status_code, error=answer.detail)
        else:
            entry["prediction"] = answer
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
    version = session.get(ModelVersion, version_id)
    if version is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no model version {version_id}")
    return ModelVersionOut.of(version)
