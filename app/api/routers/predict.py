"""Ensemble probabilities for one match or many.

/predict is the service's hot path. The body is parsed straight from its bytes, the
prediction service answers, and the answer is written once, without FastAPI's second
validation pass (the documented schemas stay the response models).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError

from app.api.answers import BatchResult, batch_json, prediction_json
from app.api.deps import (
    JSON_BODY,
    PredictionsDep,
    SettingsDep,
    check_item_count,
    check_json_body,
    predictions_of,
)
from app.api.schemas.predict import (
    PREDICT_BODY,
    RESPONSIBLE_USE,
    BatchIn,
    BatchOut,
    PredictIn,
    PredictionOut,
)
from app.api.schemas.problems import (
    NOT_JSON,
    TOO_LARGE,
    Problem,
    field_errors,
    problem_responses,
)
from app.services.busy import DatabaseUnreachableError
from app.services.prediction import ON_LOOP_MAX, Refusal, Unanswerable

router = APIRouter(tags=["predict"])
PREDICT_IN = TypeAdapter(PredictIn)
PREDICT_PATH = "/predict"
BATCH_PATH = "/predict/batch"

INVALID_OR_UNQUOTED = (
    "Invalid input (`errors` names each field that is wrong), or no usable quote of the match."
)

# The HTTP status of each reason an item gets no prediction.
REFUSAL_STATUS = {
    Unanswerable.NO_SUCH_MATCH: status.HTTP_404_NOT_FOUND,
    Unanswerable.NO_USABLE_QUOTE: status.HTTP_422_UNPROCESSABLE_CONTENT,
    Unanswerable.DATABASE_DOWN: status.HTTP_503_SERVICE_UNAVAILABLE,
}


# The route's API docs, ending with the text every value's docs share.
PREDICT_DOCS = (
    "Ensemble probabilities of 1, X and 2 for a stored match or an inline one.\n\n"
    'Send ``{"match_id": 17}`` or an inline match with ``odds`` (teams, competition and '
    "kickoff optional). An inline request touches no database. Before any model exists the "
    "answer is the consensus of the quotes, with ``model: null`` and a note saying so.\n\n"
    "The answer's ``value`` gives, for each outcome, the best price of the bookmakers you can "
    "bet with, its expected value (probability × price − 1) and a suggested stake (a share of "
    "the Kelly stake, capped), by the terms of the request's ``value`` or the settings'. "
    + RESPONSIBLE_USE
)


def _json(body: bytes) -> Response:
    return Response(body, media_type="application/json")


@router.post(
    PREDICT_PATH,
    response_model=PredictionOut,
    responses=problem_responses(
        {
            404: "No match with that id.",
            413: TOO_LARGE,
            415: NOT_JSON,
            422: INVALID_OR_UNQUOTED,
            503: "The database is unreachable (a prediction by match_id only); Retry-After "
            "says when to send the request again.",
        }
    ),
    openapi_extra=PREDICT_BODY,
    description=PREDICT_DOCS,
)
async def predict(request: Request) -> Response:
    predictions = predictions_of(request)
    body = await request.body()
    check_json_body(request.headers.get("content-type"), body)
    try:
        item = PredictIn.model_validate_json(body)
    except ValidationError as error:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in error.errors()]
        ) from None
    terms = item.value_terms(predictions.default_terms)
    (answer,) = await predictions.answer([item.to_request()], None if terms is None else [terms])
    if isinstance(answer, Refusal):
        if answer.reason is Unanswerable.DATABASE_DOWN:
            # Answered as every endpoint answers a database it cannot reach.
            raise DatabaseUnreachableError(answer.detail)
        raise HTTPException(REFUSAL_STATUS[answer.reason], answer.detail)
    return _json(prediction_json(answer))


@router.post(
    BATCH_PATH,
    response_model=BatchOut,
    dependencies=[JSON_BODY],
    responses=problem_responses({413: TOO_LARGE, 415: NOT_JSON, 422: INVALID_OR_UNQUOTED}),
)
async def predict_batch(
    batch: BatchIn, settings: SettingsDep, predictions: PredictionsDep
) -> Response:
    """Many predictions, answered in order; one item's error does not fail the others.

    Each item is what /predict takes, its own ``value`` terms included, and its prediction
    is what /predict answers, ``value`` included (an estimate: see /predict).
    """
    check_item_count(len(batch.items), settings.predict_batch_max, ["body", "items"], per="batch")
    if len(batch.items) > ON_LOOP_MAX:
        valid, results = await run_in_threadpool(_check_items, batch.items)
    else:
        valid, results = _check_items(batch.items)
    defaults = predictions.default_terms
    answers = iter(
        await predictions.answer(
            [item.to_request() for item in valid],
            [item.value_terms(defaults) for item in valid],
        )
    )
    for result in results:
        if result.status == status.HTTP_422_UNPROCESSABLE_CONTENT:
            continue
        answer = next(answers)
        if isinstance(answer, Refusal):
            result.status = REFUSAL_STATUS[answer.reason]
            result.error = Problem.of(result.status, answer.detail, _item(result.index))
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
            problem = Problem.invalid(field_errors(error.errors()), _item(index))
            results.append(BatchResult(index, status.HTTP_422_UNPROCESSABLE_CONTENT, error=problem))
    return valid, results


def _item(index: int) -> str:
    """A batch item, as the instance of its problem: the item in the request body."""
    return f"{BATCH_PATH}#/items/{index}"


def install(app: FastAPI) -> None:
    """The routes of this router, added to ``app`` itself, first: FastAPI matches the routes of
    an included router through a layer of its own, which costs /predict, the hot path, about
    a tenth of what the bare framework takes for a whole answer."""
    for route in router.routes:
        assert isinstance(route, APIRoute)
        app.add_api_route(
            route.path,
            route.endpoint,
            methods=sorted(route.methods or ()),
            name=route.name,
            tags=list(route.tags),
            summary=route.summary,
            description=route.description,
            response_description=route.response_description,
            response_model=route.response_model,
            status_code=route.status_code,
            dependencies=list(route.dependencies),
            responses=route.responses,
            openapi_extra=route.openapi_extra,
        )
