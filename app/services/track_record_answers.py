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
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from app.services import track_record_aggregates
from app.services.caching import AnswerCache
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
        # Computations run on threads of their own: never queued behind the reads of the
        # stamp, which may wait for a pooled connection that a request waiting for a
        # computation holds.
        self._computing = ThreadPoolExecutor(COMPUTING_THREADS, "track-record")
        self._kept: AnswerCache[Any] = AnswerCache(None, max_entries=max_entries)
        self._flights: SingleFlight[Hashable, Any] = SingleFlight()

    async def answer(
        self, session: Session, question: Hashable, compute: Callable[[Session], AnswerT]
    ) -> AnswerT:
        """The answer to ``question``: kept, or ``compute(session)`` (run in a worker
        thread, once for every request asking it meanwhile)."""
        stamp = await asyncio.to_thread(track_record_aggregates.stamp, session)
        key = (question, stamp)
        kept: AnswerT | None = self._kept.get(key)
        if kept is not None:
            return kept

        async def computed() -> AnswerT:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self._computing, compute, session)
            self._kept.put(key, found)
            return found

        answer: AnswerT = await self._flights.run(key, computed)
        return answer

    def close(self) -> None:
        """Let the computing threads end once their work is done."""
        self._computing.shutdown(wait=False)
