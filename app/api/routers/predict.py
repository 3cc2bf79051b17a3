"""Ensemble probabilities for one match or many, and the model versions behind them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from pydantic import TypeAdapter, ValidationError

from app.api.deps import SessionDep, SettingsDep
from app.api.model_schemas import (
    BatchIn,
    BatchItemOut,
    BatchOut,
    MatchSummary,
    ModelVersionOut,
    PredictIn,
    PredictionOut,
)
from app.api.schemas import MAX_ID, Page
from app.db.models import ModelVersion
from app.domain.ensemble import NoUsableQuoteError, QuotedOdds, predict_match
from app.services import models
from app.services.serving import ModelCache, StoredMatch, stored_matches
from app.settings import Settings

router = APIRouter(tags=["predict"])
PREDICT_IN = TypeAdapter(PredictIn)

PREDICT_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "No match with that id."},
    422: {"description": "Invalid input, or no usable quote; the message names what and where."},
}


class PredictError(Exception):
    def __init__(self, status_code: int, detail: Any) -> None:
        self.status_code, self.detail = status_code, detail


def _cache(request: Request) -> ModelCache:
    cache: ModelCache = request.app.state.models
    return cache


def _phase(cache: ModelCache, settings: Settings) -> str:
    ensemble = cache.ensemble
    return ensemble.phase if ensemble is not None else settings.refit_phase


def _predict(
    item: PredictIn, stored: dict[int, StoredMatch], cache: ModelCache, settings: Settings
) -> PredictionOut:
    ensemble = cache.ensemble  # read once: a concurrent model swap cannot mix two versions
    if item.match_id is not None:
        match = stored.get(item.match_id)
        if match is None:
            raise PredictError(status.HTTP_404_NOT_FOUND, f"no match with id {item.match_id}")
        odds = match.odds
        summary = MatchSummary(
            id=match.id,
            competition=match.competition,
            home_team=match.home_team,
            away_team=match.away_team,
            kickoff=match.kickoff,
        )
        if not odds:
            phase = _phase(cache, settings)
            raise PredictError(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"match {match.id} has no usable quote: no {phase} quote captured before kickoff",
            )
    else:
        assert item.odds is not None
        odds = [QuotedOdds(o.bookmaker, o.home, o.draw, o.away) for o in item.odds]
        summary = MatchSummary(
            competition=item.competition,
            home_team=item.home_team,
            away_team=item.away_team,
            kickoff=item.kickoff,
        )
    try:
        prediction = predict_match(odds, ensemble, settings.demargin_method)
    except NoUsableQuoteError as error:
        raise PredictError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(error)) from None
    return PredictionOut.of(prediction, ensemble, summary)


def _load(request: Request, match_ids: list[int], phase: str) -> dict[int, StoredMatch]:
    with request.app.state.session_factory() as session:
        return stored_matches(session, match_ids, phase=phase)


@router.post("/predict", response_model=PredictionOut, responses=PREDICT_ERRORS)
async def predict(item: PredictIn, request: Request, settings: SettingsDep) -> PredictionOut:
    """Ensemble probabilities of 1, X and 2 for a stored match or an inline one.

    An inline request touches no database. Before any model exists the answer is the
    consensus of the quotes, with ``model: null`` and a note saying so.
    """
    cache = _cache(request)
    stored: dict[int, StoredMatch] = {}
    if item.match_id is not None:
        stored = await run_in_threadpool(_load, request, [item.match_id], _phase(cache, settings))
    try:
        return _predict(item, stored, cache, settings)
    except PredictError as error:
        raise HTTPException(error.status_code, error.detail) from None


@router.post("/predict/batch", response_model=BatchOut, responses={422: PREDICT_ERRORS[422]})
async def predict_batch(batch: BatchIn, request: Request, settings: SettingsDep) -> BatchOut:
    """Many predictions, answered in order; one item's error does not fail the others."""
    if len(batch.items) > settings.predict_batch_max:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"at most {settings.predict_batch_max} items per batch, got {len(batch.items)}",
        )
    cache = _cache(request)
    parsed: list[PredictIn | list[dict[str, Any]]] = []
    for raw in batch.items:
        try:
            parsed.append(PREDICT_IN.validate_python(raw))
        except ValidationError as error:
            parsed.append(
                [
                    {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
                    for e in error.errors()
                ]
            )
    match_ids = [p.match_id for p in parsed if isinstance(p, PredictIn) and p.match_id is not None]
    stored: dict[int, StoredMatch] = {}
    if match_ids:
        stored = await run_in_threadpool(_load, request, match_ids, _phase(cache, settings))
    results: list[BatchItemOut] = []
    for index, item in enumerate(parsed):
        if not isinstance(item, PredictIn):
            results.append(BatchItemOut(index=index, status=422, error=item))
            continue
        try:
            results.append(
                BatchItemOut(
                    index=index, status=200, prediction=_predict(item, stored, cache, settings)
                )
            )
        except PredictError as error:
            results.append(BatchItemOut(index=index, status=error.status_code, error=error.detail))
    return BatchOut(results=results)


@router.get("/models", response_model=Page[ModelVersionOut], tags=["models"])
def list_models(
    session: SessionDep,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1)] = 20,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> Page[ModelVersionOut]:
    """Model versions with their validation metrics, newest first."""
    if limit > settings.page_size_max:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"limit must be at most {settings.page_size_max}"
        )
    versions, total = models.list_versions(session, limit=limit, offset=offset)
    return Page[ModelVersionOut](
        items=[ModelVersionOut.of(v) for v in versions], total=total, limit=limit, offset=offset
    )


@router.get(
    "/models/active",
    response_model=ModelVersionOut,
    tags=["models"],
    responses={404: {"description": "No model has been fitted yet."}},
)
def get_active_model(session: SessionDep) -> ModelVersionOut:
    version = models.active_version(session)
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
    version_id: Annotated[int, Path(ge=1, le=MAX_ID)], session: SessionDep
) -> ModelVersionOut:
    version = session.get(ModelVersion, version_id)
    if version is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no model version {version_id}")
    return ModelVersionOut.of(version)
