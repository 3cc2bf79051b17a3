"""Answering predictions: one snapshot of the active model per call, stored quotes read in
one go, recent answers reused, and only what needs the database failed when it is down.

``PredictionService.answer`` is what POST /predict and /predict/batch call. An inline match
touches no database. A stored match is read once, then each process reuses its answer for
``answer_ttl_seconds``; the answer is keyed by the model version that computed it, so a model
swap never serves one version's answer as another's.

Every answer says where its outcomes offer value (``app.domain.value``). The value by the
default terms is computed with the prediction and kept with it; a request with terms of its
own gets a copy of the answer with its own value, which is never kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Generic, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.domain.ensemble import Ensemble
from app.domain.prediction import (
    MatchInfo,
    MatchPrediction,
    QuotedMatch,
    QuotedOdds,
    StoredQuotes,
    predict_matches,
)
from app.domain.value import MatchValue, ValueTerms, match_value
from app.domain.vocabulary import Method, Phase
from app.metrics import count_prediction
from app.services.serving import ModelCache, stored_matches

log = logging.getLogger(__name__)

# More pending predictions than this are computed in a worker thread, off the event loop.
ON_LOOP_MAX = 8

ValueT = TypeVar("ValueT")


class Unanswerable(Enum):
    """Why one item got no prediction."""

    NO_SUCH_MATCH = "no such match"
    NO_USABLE_QUOTE = "no usable quote"
    DATABASE_DOWN = "database down"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An item that got no prediction, and the message that says why."""

    reason: Unanswerable
    detail: str


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class PredictionAnswer:
    """One prediction, with the match it is for, the model version that made it (None
    before the first fit), where its outcomes offer value by ``terms`` and, for a stored
    match, which of its quotes it read.

    An answer is never changed once made: the same one is served again from the cache, and
    whoever writes it out may keep what it wrote beside it (it can be weakly referenced).
    """

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


class AnswerCache(Generic[ValueT]):
    """Recent answers of one process, each kept for ``ttl`` seconds of ``clock`` (least
    recently used entries go first when full). Used from the event loop only, so it needs no
    lock."""

    def __init__(
        self,
        ttl: float,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, ValueT]] = OrderedDict()

    def get(self, key: Hashable) -> ValueT | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, value: ValueT) -> None:
        if self.ttl <= 0:
            return
        self._entries[key] = (self._clock() + self.ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The model one call works with from start to end: the phase of the quotes it reads,
    the weights it mixes with and the key its answers are kept under all come from it."""

    ensemble: Ensemble | None
    phase: Phase
    method: Method

    def key(self, match_id: int) -> tuple[int, int | None, Phase]:
        version = None if self.ensemble is None else self.ensemble.version
        return (match_id, version, self.phase)


class PredictionService:
    """Answers predictions for one process: holds its recent answers and reads the active
    model from ``models`` (kept fresh elsewhere)."""

    def __init__(
        self,
        *,
        engine: Engine,
        models: ModelCache,
        answer_ttl_seconds: float,
        default_method: Method,
        default_phase: Phase,
        default_terms: ValueTerms | None = None,
    ) -> None:
        self._engine = engine
        self._models = models
        self._answers: AnswerCache[PredictionAnswer] = AnswerCache(answer_ttl_seconds)
        self._default_method = default_method
        self._default_phase = default_phase
        self.default_terms = ValueTerms() if default_terms is None else default_terms

    def _snapshot(self) -> _Snapshot:
        ensemble = self._models.ensemble  # read once: see _Snapshot
        if ensemble is None:
            return _Snapshot(None, self._default_phase, self._default_method)
        return _Snapshot(ensemble, ensemble.phase, ensemble.method)

    async def answer(
        self,
        requests: Sequence[PredictionRequest],
        terms: Sequence[ValueTerms | None] | None = None,
    ) -> list[Answer]:
        """An answer per request, in order; one item's refusal does not fail the others.

        ``terms``, one per request, judge each answer's value (None: the default terms).
        """
        assert terms is None or len(terms) == len(requests), "one terms per request"
        snapshot = self._snapshot()
        results: list[Answer | None] = [None] * len(requests)
        missing = self._reuse_answers(requests, snapshot, results)
        stored: dict[int, QuotedMatch] | None = {}
        if missing:
            stored = await self._read_stored(missing, snapshot.phase)
        pending: list[tuple[int, QuotedMatch]] = []
        for index, request in enumerate(requests):
            if results[index] is None:
                match_or_refusal = _quoted_match(request, stored)
                if isinstance(match_or_refusal, Refusal):
                    results[index] = match_or_refusal
                else:
                    pending.append((index, match_or_refusal))
        if pending:
            await self._compute(pending, snapshot, requests, results)
        answers = [result for result in results if result is not None]
        assert len(answers) == len(requests), "every request was answered or refused"
        if terms is not None:
            answers = [
                self._valued(answer, own, snapshot.method)
                for answer, own in zip(answers, terms, strict=True)
            ]
        return answers

    def _valued(self, answer: Answer, terms: ValueTerms | None, method: Method) -> Answer:
        """The answer with its value by ``terms``: the one already made by the default
        terms, or a copy with its own value (per request, never kept)."""
        if isinstance(answer, Refusal) or terms is None or terms == self.default_terms:
            return answer
        served = answer.prediction.probabilities
        value = match_value(served, answer.odds, terms, method)
        return replace(answer, terms=terms, value=value)

    def _reuse_answers(
        self,
        requests: Sequence[PredictionRequest],
        snapshot: _Snapshot,
        results: list[Answer | None],
    ) -> list[int]:
        """Fills in the cached answers; returns the match ids still to read."""
        missing: list[int] = []
        for index, request in enumerate(requests):
            if isinstance(request, int):
                cached = self._answers.get(snapshot.key(request))
                if cached is None:
                    missing.append(request)
                else:
                    results[index] = cached
                    count_prediction("match_id", cached.prediction.basis)
        return missing

    async def _read_stored(
        self, match_ids: list[int], phase: Phase
    ) -> dict[int, QuotedMatch] | None:
        """The stored matches, or None when the database cannot be read."""
        try:
            return await asyncio.to_thread(self._load, match_ids, phase)
        except SQLAlchemyError as error:
            log.warning("could not read stored quotes: %s", error)
            return None

    def _load(self, match_ids: list[int], phase: Phase) -> dict[int, QuotedMatch]:
        with self._engine.connect() as connection:
            return stored_matches(connection, match_ids, phase=phase)

    async def _compute(
        self,
        pending: list[tuple[int, QuotedMatch]],
        snapshot: _Snapshot,
        requests: Sequence[PredictionRequest],
        results: list[Answer | None],
    ) -> None:
        matches = [match for _, match in pending]
        if len(pending) > ON_LOOP_MAX:
            answers = await asyncio.to_thread(_predict, matches, snapshot, self.default_terms)
        else:
            answers = _predict(matches, snapshot, self.default_terms)
        for (index, _), answer in zip(pending, answers, strict=True):
            results[index] = answer
            request = requests[index]
            if isinstance(request, int):
                count_prediction("match_id", answer.prediction.basis)
                self._answers.put(snapshot.key(request), answer)
            else:
                count_prediction("inline", answer.prediction.basis)


def _quoted_match(
    request: PredictionRequest, stored: dict[int, QuotedMatch] | None
) -> QuotedMatch | Refusal:
    """The match to predict, or why there is none."""
    if not isinstance(request, int):
        return request
    if stored is None:
        return DATABASE_DOWN
    match = stored.get(request)
    if match is None:
        return Refusal(Unanswerable.NO_SUCH_MATCH, f"no match with id {request}")
    if not match.odds:
        return Refusal(
            Unanswerable.NO_USABLE_QUOTE,
            f"match {request} has no usable quote: no quote of any phase captured before kickoff",
        )
    return match


def _predict(
    matches: list[QuotedMatch], snapshot: _Snapshot, terms: ValueTerms
) -> list[PredictionAnswer]:
    """The answers, each with its value by ``terms`` (made once with it: see the module)."""
    predictions = predict_matches([m.odds for m in matches], snapshot.ensemble, snapshot.method)
    return [
        PredictionAnswer(
            match.info,
            prediction,
            snapshot.ensemble,
            terms,
            match_value(prediction.probabilities, match.odds, terms, snapshot.method),
            match.stored,
            match.odds,
        )
        for match, prediction in zip(matches, predictions, strict=True)
    ]
