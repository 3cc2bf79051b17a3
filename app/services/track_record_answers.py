"""The track record's answers of one process, kept under their question and the
:class:`~app.services.track_record_aggregates.Stamp` they were read at, so a corrected
result or a new entry is answered at once; requests asking at once share one computation.
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
    def __init__(self, *, max_entries: int = KEPT_ANSWERS) -> None:
        # Computations run on threads of their own: never queued behind the reads of the
        # stamp, which may wait for a pooled connection that a request waiting for a
        # computation holds.
        self._computing = ThreadPoolExecutor(COMPUTING_THREADS, "track-record")
        self._kept: AnswerCache[Any] = AnswerCache(None, max_entries=max_entries)
        self._flights: SingleFlight[Hashable, Any] = SingleFlight()

    async def stamp(self, session: Session) -> track_record_aggregates.Stamp:
        """The stamp answers are kept under now (what a page's ETag names)."""
        return await asyncio.to_thread(track_record_aggregates.stamp, session)

    async def answer(
        self,
        session: Session,
        question: Hashable,
        compute: Callable[[Session], AnswerT],
        *,
        stamp: track_record_aggregates.Stamp | None = None,
    ) -> AnswerT:
        """The answer to ``question`` at ``stamp`` (None: read now): kept, or
        ``compute(session)`` on a worker thread."""
        if stamp is None:
            stamp = await self.stamp(session)
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
        self._computing.shutdown(wait=False)
