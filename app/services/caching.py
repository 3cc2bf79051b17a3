"""The one cache of a process's answers: least recently used entries go first when full, and
each entry, when given a time to live, goes once that time has passed."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

ValueT = TypeVar("ValueT")


class AnswerCache(Generic[ValueT]):
    """Up to ``max_entries`` answers by key, each kept ``ttl`` seconds of ``clock`` (None:
    until it is pushed out). Used from the event loop only, so it needs no lock."""

    def __init__(
        self,
        ttl: float | None,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
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
        if self.ttl is not None and self.ttl <= 0:
            return
        expires = float("inf") if self.ttl is None else self._clock() + self.ttl
        self._entries[key] = (expires, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
