"""Ensemble probabilities for one match or many.

/predict is the service's hot path. The body is parsed straight from its bytes, the
prediction service answers, and the answer is written once, without FastAPI's second
validation pass (the documented schemas stay the response models).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from app.api.answers import BatchResult, batch_json, prediction_json
from app.api.deps import PredictionsDep, SettingsDep, check_item_count
from app.api.errors import shown_errors
from app.api.schemas.predict import (
    PREDICT_BODY,
    BatchIn,
    BatchOut,
    ItemErrorOut,
    PredictIn,
    PredictionOut,
)
from app.services.prediction import ON_LOOP_MAX, Refusal, Unanswerable

router = APIRouter(tags=["predict"])
PREDICT_IN = TypeAdapter(PredictIn)

PREDICT_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "No match with that id."},
    422: {"description": "Invalid input, or no usable quote; the message names what and where."},
}

# The HTTP status of each reason an item gets no prediction.
REFUSAL_STATUS = {
    Unanswerable.NO_SUCH_MATCH: status.HTTP_404_NOT_FOUND,
    Unanswerable.NO_USABLE_QUOTE: status.HTTP_422_UNPROCESSABLE_CONTENT,
    Unanswerable.DATABASE_DOWN: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def _json(body: bytes) -> Response:
    return Response(body, media_type="application/json")


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
    return _json(prediction_json(answer))


@router.post("/predict/batch", response_model=BatchOut, responses={422: PREDICT_ERRORS[422]})
async def predict_batch(
    batch: BatchIn, settings: SettingsDep, predictions: PredictionsDep
) -> Response:
    """Many predictions, answered in order; one item's error does not fail the others."""
    check_item_count(len(batch.items), settings.predict_batch_max, per="batch")
    if len(batch.items) > ON_LOOP_MAX:
        valid, results = await run_in_threadpool(_check_items, batch.items)
    else:
        valid, results = _check_items(batch.items)
    answers = iter(await predictions.answer([item.to_request() for item in valid]))
    for result in results:
        if result.status == status.HTTP_422_UNPROCESSABLE_CONTENT:
            continue
        answer = next(answers)
        if isinstance(answer, Refusal):
            result.status, result.error = REFUSAL_STATUS[answer.reason], answer.detail
        else:
            result.prediction = answer
    return _json(batch_json(results))


def _check_items(items: list[Any]) -> tuple[list[PredictIn], list[BatchResult]]:
    """Each item checked on its own; the results of the answer, errors filled in."""
    valid: list[PredictIn] = []
    results: list[BatchResult] = []
    for index, raw in enumerate(items):
        try:
            valid.append(PREDICT_IN.validate_python(raw))
            results.append(BatchResult(index))
        except ValidationError as error:
            # Where, what and the kind of each error, at most a hundred of them.
            errors = [ItemErrorOut.model_validate(e) for e in shown_errors(error.errors())]
            results.append(BatchResult(index, status.HTTP_422_UNPROCESSABLE_CONTENT, error=errors))
    return valid, results
