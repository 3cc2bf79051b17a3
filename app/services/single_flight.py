"""One computation per key at a time, shared by everyone who asks for it meanwhile.

Requests that arrive together for the same answer (a dashboard opened by many at once, a
poll of many clients) would each compute it: the cost multiplies by the number of callers
just when the service is busiest. :class:`SingleFlight` starts the computation for the first
caller of a key and hands the others the same result (or the same error) when it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

KeyT = TypeVar("KeyT", bound=Hashable)
ValueT = TypeVar("ValueT")


class SingleFlight(Generic[KeyT, ValueT]):
    """The computations under way, by key, and those waiting to start. Used from the event
    loop only (as the caches beside it are), so it needs no lock."""

    def __init__(self) -> None:
        self._running: dict[KeyT, asyncio.Future[ValueT]] = {}
        self._next: dict[KeyT, asyncio.Future[ValueT]] = {}

    async def run(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> ValueT:
        """What ``compute()`` gives, computed once for all the callers of ``key`` while it
        runs; a caller that comes after it ended computes again."""
        running = self._running.get(key)
        if running is None:
            running = self._start(key, compute)
        # Shielded: a caller that goes away does not cancel the computation the others wait for.
        return await asyncio.shield(running)

    async def run_after(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> ValueT:
        """What ``compute()`` gives when started after this call: for a computation that
        reads what may have changed just before (a poll must see a write that committed
        before it was sent). A caller that comes while one runs waits for the next, started
        when that one ends and shared by every caller that came meanwhile."""
        waiting = self._next.get(key)
        if waiting is None:
            waiting = self._next[key] = asyncio.ensure_future(self._after(key, compute))
            waiting.add_done_callback(_retrieved)
        return await asyncio.shield(waiting)

    async def _after(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> ValueT:
        try:
            running = self._running.get(key)
            if running is not None:
                await asyncio.wait([running])
        finally:
            # From here on (or once this wait was cancelled) a caller that comes waits for
            # the next computation.
            del self._next[key]
        return await self._start(key, compute)

    def _start(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> asyncio.Future[ValueT]:
        running = self._running[key] = asyncio.ensure_future(compute())
        running.add_done_callback(lambda done: self._forget(key, done))
        return running

    def running(self, key: KeyT) -> bool:
        return key in self._running

    def _forget(self, key: KeyT, done: asyncio.Future[ValueT]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        _retrieved(done)


def _retrieved(done: asyncio.Future[Any]) -> None:
    """Marks ``done``'s failure as seen: one whose callers all went away is not logged as
    never retrieved (they got theirs, or no longer want it)."""
    if not done.cancelled():
        done.exception()
