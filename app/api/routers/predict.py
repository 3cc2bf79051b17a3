"""Ensemble probabilities for one match or many."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Response, status
from fastapi.concurrency import run_in_threadpool
from pydantic import TypeAdapter, ValidationError

from app.api.deps import (
    BATCH_ADMISSION,
    JSON_BODY,
    PredictionsDep,
    SettingsDep,
    check_item_count,
)
from app.api.schemas.predict import (
    RESPONSIBLE_USE,
    BatchIn,
    BatchItemOut,
    BatchOut,
    PredictIn,
    PredictionOut,
)
from app.api.schemas.problems import (
    NOT_JSON,
    TOO_LARGE,
    UNAVAILABLE_OR_AT_LIMIT,
    Problem,
    field_errors,
    problem_responses,
)
from app.api.written import WrittenBodies
from app.services.busy import DatabaseUnreachableError
from app.services.prediction import ON_LOOP_MAX, Answer, PredictionAnswer, Refusal, Unanswerable

router = APIRouter(tags=["predict"])
PREDICT_IN: TypeAdapter[PredictIn] = TypeAdapter(PredictIn)
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
    "bet with, its expected value (probability × net price − 1, an exchange's price net of "
    "its commission) and whether it is the match's one value bet, with a suggested stake (a "
    "share of the Kelly stake, capped), by the terms of the request's ``value`` or the "
    "settings'. " + RESPONSIBLE_USE
)


def _prediction_json(answer: PredictionAnswer) -> bytes:
    return PredictionOut.model_validate(answer).model_dump_json(by_alias=True).encode()


# A stored match's answer is served again while the service keeps it: its body with it.
_STORED_BODIES = WrittenBodies(_prediction_json)


@router.post(
    "/predict",
    response_model=PredictionOut,
    dependencies=[JSON_BODY],
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
    description=PREDICT_DOCS,
)
async def predict(item: PredictIn, predictions: PredictionsDep) -> PredictionOut | Response:
    terms = item.value_terms(predictions.default_terms)
    (answer,) = await predictions.answer([item.to_request()], None if terms is None else [terms])
    if isinstance(answer, Refusal):
        if answer.reason is Unanswerable.DATABASE_DOWN:
            # Answered as every endpoint answers a database it cannot reach.
            raise DatabaseUnreachableError(answer.detail)
        raise HTTPException(REFUSAL_STATUS[answer.reason], answer.detail)
    if answer.match.id is None:  # inline: answered once
        return PredictionOut.model_validate(answer)
    return _STORED_BODIES.response(answer)


@router.post(
    BATCH_PATH,
    dependencies=[BATCH_ADMISSION, JSON_BODY],
    responses=problem_responses(
        {413: TOO_LARGE, 415: NOT_JSON, 422: INVALID_OR_UNQUOTED, 503: UNAVAILABLE_OR_AT_LIMIT}
    ),
)
async def predict_batch(
    batch: BatchIn, settings: SettingsDep, predictions: PredictionsDep
) -> BatchOut:
    """Many predictions, answered in order; one item's error does not fail the others.

    Each item is what /predict takes, its own ``value`` terms included, and its prediction
    is what /predict answers, ``value`` included (an estimate: see /predict).
    """
    check_item_count(len(batch.items), settings.predict_batch_max, ["body", "items"], per="batch")
    if len(batch.items) > ON_LOOP_MAX:
        checked = await run_in_threadpool(_check_items, batch.items)
    else:
        checked = _check_items(batch.items)
    valid = [item for item in checked if not isinstance(item, Problem)]
    defaults = predictions.default_terms
    answers = iter(
        await predictions.answer(
            [item.to_request() for item in valid],
            [item.value_terms(defaults) for item in valid],
        )
    )
    return BatchOut(
        results=[
            _result(index, item if isinstance(item, Problem) else next(answers))
            for index, item in enumerate(checked)
        ]
    )


def _check_items(items: list[Any]) -> list[PredictIn | Problem]:
    """Each item checked on its own: the request it makes, or the problem it has."""
    checked: list[PredictIn | Problem] = []
    for index, raw in enumerate(items):
        try:
            checked.append(PREDICT_IN.validate_python(raw))
        except ValidationError as error:
            checked.append(Problem.invalid(field_errors(error.errors()), _item(index)))
    return checked


def _result(index: int, outcome: Problem | Answer) -> BatchItemOut:
    """A batch item's result: its prediction, or the problem it has or got."""
    if isinstance(outcome, Problem):
        return BatchItemOut(index=index, status=outcome.status, error=outcome)
    if isinstance(outcome, Refusal):
        refused = REFUSAL_STATUS[outcome.reason]
        problem = Problem.of(refused, outcome.detail, _item(index))
        return BatchItemOut(index=index, status=refused, error=problem)
    prediction = PredictionOut.model_validate(outcome)
    return BatchItemOut(index=index, status=status.HTTP_200_OK, prediction=prediction)


def _item(index: int) -> str:
    """A batch item, as the instance of its problem: the item in the request body."""
    return f"{BATCH_PATH}#/items/{index}"
