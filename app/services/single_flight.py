"""One computation per key at a time, shared by everyone who asks for it meanwhile.

Requests that arrive together for the same answer (a dashboard opened by many at once, a
poll of many clients) would each compute it: the cost multiplies by the number of callers
just when the service is busiest. :class:`SingleFlight` starts the computation for the first
caller of a key and hands the others the same result (or the same error) when it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

KeyT = TypeVar("KeyT", bound=Hashable)
ValueT = TypeVar("ValueT")


class SingleFlight(Generic[KeyT, ValueT]):
    """The computations under way, by key. Used from the event loop only (as the caches
    beside it are), so it needs no lock."""

    def __init__(self) -> None:
        self._running: dict[KeyT, asyncio.Future[ValueT]] = {}

    async def run(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> ValueT:
        """What ``compute()`` gives, computed once for all the callers of ``key`` while it
        runs; a caller that comes after it ended computes again."""
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(compute())
            self._running[key] = running
            running.add_done_callback(lambda done: self._forget(key, done))
        # Shielded: a caller that goes away does not cancel the computation the others wait for.
        return await asyncio.shield(running)

    def running(self, key: KeyT) -> bool:
        return key in self._running

    def _forget(self, key: KeyT, done: asyncio.Future[ValueT]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved: a failure nobody awaited any more is not logged
