"""The track record's answers of one process (``GET /performance``, the track record and
model pages), kept while what they were read from is unchanged.

An answer is kept under its question and the :class:`~app.services.track_record_aggregates.Stamp`
it was read at (the aggregates' revision, the newest change of a match, the newest entry):
each request reads the stamp (three indexed look-ups) and gets the kept answer while the
stamp is the same, so a corrected result or a new entry is answered at once. Requests that
ask the same question at once share one computation (:class:`SingleFlight`).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from app.services import track_record_aggregates
from app.services.single_flight import SingleFlight

AnswerT = TypeVar("AnswerT")
# Answers kept per process: a few dozen windows asked for often, each at most a few
# hundred kilobytes (a window's days are bounded by ODDSBOOST_PERFORMANCE_DAYS_MAX).
KEPT_ANSWERS = 32
# Different questions computed at once.
COMPUTING_THREADS = 2


class TrackRecordAnswers:
    """Answers kept by question and stamp, the least recently used going first."""

    def __init__(self, *, max_entries: int = KEPT_ANSWERS) -> None:
        self._max_entries = max_entries
        # Computations run on threads of their own: never queued behind the reads of the
        # stamp, which may wait for a pooled connection that a request waiting for a
        # computation holds.
        self._computing = ThreadPoolExecutor(COMPUTING_THREADS, "track-record")
        # Used from the event loop only, as the single flight is.
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self._flights: SingleFlight[Hashable, Any] = SingleFlight()

    async def answer(
        self, session: Session, question: Hashable, compute: Callable[[Session], AnswerT]
    ) -> AnswerT:
        """The answer to ``question``: kept, or ``compute(session)`` (run in a worker
        thread, once for every request asking it meanwhile)."""
        stamp = await asyncio.to_thread(track_record_aggregates.stamp, session)
        key = (question, stamp)
        if key in self._kept:
            self._kept.move_to_end(key)
            kept: AnswerT = self._kept[key]
            return kept

        async def computed() -> AnswerT:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self._computing, compute, session)
            self._keep(key, found)
            return found

        answer: AnswerT = await self._flights.run(key, computed)
        return answer

    def close(self) -> None:
        """Let the computing threads end once their work is done."""
        self._computing.shutdown(wait=False)

    def _keep(self, key: Hashable, answer: object) -> None:
        self._kept[key] = answer
        self._kept.move_to_end(key)
        while len(self._kept) > self._max_entries:
            self._kept.popitem(last=False)
