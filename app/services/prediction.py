"""Answering predictions: one model snapshot per call, stored quotes read in one go.

:func:`predict_stored` is the one way to predict stored matches (/predict, the upcoming
board, the dashboard). ``PredictionService`` adds what /predict needs: inline matches touch
no database, and a stored match's answer is reused for ``answer_ttl_seconds``, keyed by the
model version that made it. Value by the default terms is kept with an answer; a request's
own terms get a copy, never kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from app.domain.ensemble import Ensemble
from app.domain.prediction import (
    MatchInfo,
    MatchPrediction,
    QuotedMatch,
    QuotedOdds,
    StoredQuotes,
    predict_matches,
)
from app.domain.value import MatchValue, ValueTerms, match_value, match_values
from app.metrics import count_model_weight, count_prediction
from app.services.caching import AnswerCache
from app.services.serving import ModelCache, ServingSnapshot, stored_matches

log = logging.getLogger(__name__)

# More pending predictions than this are computed in a worker thread, off the event loop.
ON_LOOP_MAX = 8


class Unanswerable(Enum):
    """Why one item got no prediction."""

    NO_SUCH_MATCH = "no such match"
    NO_USABLE_QUOTE = "no usable quote"
    DATABASE_DOWN = "database down"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An item that got no prediction, why, and its stored match when there is one."""

    reason: Unanswerable
    detail: str
    match: MatchInfo | None = None


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class PredictionAnswer:
    """One prediction and what it was made from. Never changed once made: the cache serves
    it again, and a writer may keep its output beside it (it can be weakly referenced)."""

    match: MatchInfo
    prediction: MatchPrediction
    model: Ensemble | None
    terms: ValueTerms
    value: MatchValue  # by ``terms``, from the served probabilities and ``odds``
    quotes: StoredQuotes | None = None  # which stored quotes; None: the sender's
    odds: Sequence[QuotedOdds] = ()  # the quotes it was predicted from


Answer = PredictionAnswer | Refusal
# What may be asked: a stored match by id, or a match given with its quotes.
PredictionRequest = int | QuotedMatch

DATABASE_DOWN = Refusal(
    Unanswerable.DATABASE_DOWN,
    "the database is not reachable: a prediction by match_id needs it (an inline one does not)",
)


def predict_stored(
    connection: Connection | Session,
    match_ids: Sequence[int],
    snapshot: ServingSnapshot,
    terms: ValueTerms,
) -> dict[int, Answer]:
    """Each of ``match_ids`` answered from its stored quotes (:func:`stored_matches`), or
    refused."""
    stored = stored_matches(connection, match_ids, phase=snapshot.phase)
    usable = [match for match in stored.values() if match.odds]
    answers: dict[int, Answer] = {}
    for match, answer in zip(usable, _predict(usable, snapshot, terms), strict=True):
        assert match.info.id is not None
        answers[match.info.id] = answer
    for match_id in match_ids:
        if match_id not in stored:
            answers[match_id] = Refusal(Unanswerable.NO_SUCH_MATCH, f"no match with id {match_id}")
        elif not stored[match_id].odds:
            answers[match_id] = Refusal(
                Unanswerable.NO_USABLE_QUOTE,
                f"match {match_id} has no usable quote: no quote of any phase captured before "
                "kickoff",
                stored[match_id].info,
            )
    return answers


class PredictionService:
    """Answers predictions for one process, keeping its recent answers."""

    def __init__(
        self,
        *,
        engine: Engine,
        models: ModelCache,
        answer_ttl_seconds: float,
        default_terms: ValueTerms | None = None,
    ) -> None:
        self._engine = engine
        self._models = models
        self._answers: AnswerCache[PredictionAnswer] = AnswerCache(answer_ttl_seconds)
        self.default_terms = ValueTerms() if default_terms is None else default_terms

    async def answer(
        self,
        requests: Sequence[PredictionRequest],
        terms: Sequence[ValueTerms | None] | None = None,
    ) -> list[Answer]:
        """An answer per request, in order, its value by its ``terms`` (None: the default)."""
        assert terms is None or len(terms) == len(requests), "one terms per request"
        snapshot = self._models.snapshot()
        stored = await self._stored_answers(requests, snapshot)
        inline = [request for request in requests if not isinstance(request, int)]
        if len(inline) > ON_LOOP_MAX:
            made = await asyncio.to_thread(_predict, inline, snapshot, self.default_terms)
        else:
            made = _predict(inline, snapshot, self.default_terms)
        inline_answers = iter(made)
        answers: list[Answer] = []
        for request in requests:
            answer = stored[request] if isinstance(request, int) else next(inline_answers)
            if isinstance(answer, PredictionAnswer):
                by_id = isinstance(request, int)
                count_prediction("match_id" if by_id else "inline", answer.prediction.basis)
                count_model_weight("predict", answer.prediction.model_weight_present)
            answers.append(answer)
        if terms is not None:
            answers = [
                self._valued(answer, own, snapshot)
                for answer, own in zip(answers, terms, strict=True)
            ]
        return answers

    async def _stored_answers(
        self, requests: Sequence[PredictionRequest], snapshot: ServingSnapshot
    ) -> dict[int, Answer]:
        found: dict[int, Answer] = {}
        missing: list[int] = []
        for request in requests:
            if isinstance(request, int):
                kept = self._answers.get((request, snapshot.version, snapshot.phase))
                if kept is None:
                    missing.append(request)
                else:
                    found[request] = kept
        if missing:
            read = await self._read(missing, snapshot)
            for match_id in missing:
                answer = DATABASE_DOWN if read is None else read[match_id]
                if isinstance(answer, PredictionAnswer):
                    self._answers.put((match_id, snapshot.version, snapshot.phase), answer)
                found[match_id] = answer
        return found

    async def _read(
        self, match_ids: list[int], snapshot: ServingSnapshot
    ) -> dict[int, Answer] | None:
        """The stored matches answered, or None when the database cannot be read."""

        def read() -> dict[int, Answer]:
            with self._engine.connect() as connection:
                return predict_stored(connection, match_ids, snapshot, self.default_terms)

        try:
            return await asyncio.to_thread(read)
        except SQLAlchemyError as error:
            log.warning("could not read stored quotes: %s", error)
            return None

    def _valued(
        self, answer: Answer, terms: ValueTerms | None, snapshot: ServingSnapshot
    ) -> Answer:
        if isinstance(answer, Refusal) or terms is None or terms == self.default_terms:
            return answer
        served = answer.prediction.probabilities
        value = match_value(served, answer.odds, terms, snapshot.method)
        return replace(answer, terms=terms, value=value)


def _predict(
    matches: Sequence[QuotedMatch], snapshot: ServingSnapshot, terms: ValueTerms
) -> list[PredictionAnswer]:
    if not matches:
        return []
    odds = [match.odds for match in matches]
    predictions = predict_matches(odds, snapshot.ensemble, snapshot.method)
    served = [prediction.probabilities for prediction in predictions]
    values = match_values(served, odds, terms, snapshot.method)
    return [
        PredictionAnswer(
            match.info, prediction, snapshot.ensemble, terms, value, match.stored, match.odds
        )
        for match, prediction, value in zip(matches, predictions, values, strict=True)
    ]
