"""The catalogue's counts (quotes per bookmaker and phase, matches per competition), read at
most once every ``fresh_seconds`` per process.

Counting reads the whole history, so requests must not pay for it each time: each count is
kept with the time it was read. The first request finding it ``fresh_seconds`` old reads it
again (it alone waits), while the requests coming meanwhile are answered with the kept
count; a count is thus at most ``fresh_seconds`` and one read old. Requests finding no
count (or every request, with ``fresh_seconds`` 0) share one read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from app.services import queries
from app.services.caching import AnswerCache
from app.services.pagination import Paged, PageWindow
from app.services.single_flight import SingleFlight

CountsT = TypeVar("CountsT")

QUOTE_COUNTS = "quotes by bookmaker and phase"
MATCH_COUNTS = "matches by competition"


class CatalogueCounts:
    def __init__(
        self, *, fresh_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.fresh_seconds = fresh_seconds
        self._clock = clock
        # Each count with the clock's time its read began.
        self._kept: AnswerCache[tuple[float, Any]] = AnswerCache(None, max_entries=2)
        self._flights: SingleFlight[str, Any] = SingleFlight()
        # One thread: the counts are read one after the other, never two at once.
        self._reading = ThreadPoolExecutor(1, "catalogue-counts")

    async def bookmakers(
        self, session: Session, window: PageWindow
    ) -> Paged[queries.BookmakerSummary]:
        counts = await self._counts(session, QUOTE_COUNTS, queries.quote_counts)
        return await asyncio.to_thread(queries.list_bookmakers, session, window, counts)

    async def competitions(self, session: Session) -> list[queries.CompetitionSummary]:
        counts = await self._counts(session, MATCH_COUNTS, queries.match_counts)
        return await asyncio.to_thread(queries.list_competitions, session, counts)

    async def _counts(
        self, session: Session, name: str, count: Callable[[Session], CountsT]
    ) -> CountsT:
        kept = self._kept.get(name)
        if kept is not None and self.fresh_seconds > 0:
            read_at, counts = kept
            if self._flights.running(name) or self._clock() - read_at < self.fresh_seconds:
                kept_counts: CountsT = counts
                return kept_counts
        read: CountsT = await self._flights.run(name, lambda: self._read(session, name, count))
        return read

    async def _read(
        self, session: Session, name: str, count: Callable[[Session], CountsT]
    ) -> CountsT:
        read_at = self._clock()
        loop = asyncio.get_running_loop()
        counts = await loop.run_in_executor(self._reading, count, session)
        self._kept.put(name, (read_at, counts))
        return counts

    def close(self) -> None:
        self._reading.shutdown(wait=False)
