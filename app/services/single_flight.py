"""One computation per key at a time, its result (or error) shared by everyone who asks for
it meanwhile: callers that come together would otherwise multiply the cost just when the
service is busiest."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

KeyT = TypeVar("KeyT", bound=Hashable)
ValueT = TypeVar("ValueT")


class SingleFlight(Generic[KeyT, ValueT]):
    """The computations under way and waiting, by key; of the event loop only, so lock-free."""

    def __init__(self) -> None:
        self._running: dict[KeyT, asyncio.Future[ValueT]] = {}
        self._next: dict[KeyT, asyncio.Future[ValueT]] = {}

    async def run(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> ValueT:
        """``compute()``, once for all the callers of ``key`` while it runs."""
        running = self._running.get(key)
        if running is None:
            running = self._start(key, compute)
        # Shielded: a caller that goes away does not cancel the computation the others wait for.
        return await asyncio.shield(running)

    async def run_after(self, key: KeyT, compute: Callable[[], Awaitable[ValueT]]) -> ValueT:
        """``compute()`` started after this call (a poll must see a write committed before it
        was sent): callers that come while one runs share the next."""
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
    """Marks ``done``'s failure as seen, so that none is logged as never retrieved."""
    if not done.cancelled():
        done.exception()
