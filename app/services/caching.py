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
    until it is pushed out). With ``max_bytes``, the sizes ``size_of`` gives the entries
    (an estimate the caller makes) add up to no more: an answer larger than that is not kept.
    Used from the event loop only, so it needs no lock."""

    def __init__(
        self,
        ttl: float | None,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_bytes: int | None = None,
        size_of: Callable[[ValueT], int] | None = None,
    ) -> None:
        assert max_bytes is None or size_of is not None, "a byte budget needs sizes"
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._clock = clock
        self._size_of = size_of
        self._entries: OrderedDict[Hashable, tuple[float, ValueT, int]] = OrderedDict()
        self._bytes = 0

    @property
    def held_bytes(self) -> int:
        """The sizes of the entries kept, added up (0 without ``size_of``)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> ValueT | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < self._clock():
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, value: ValueT) -> None:
        if self.ttl is not None and self.ttl <= 0:
            return
        size = 0 if self._size_of is None else self._size_of(value)
        self._drop(key)
        if self.max_bytes is not None and size > self.max_bytes:
            return
        expires = float("inf") if self.ttl is None else self._clock() + self.ttl
        self._entries[key] = (expires, value, size)
        self._bytes += size
        while len(self._entries) > self.max_entries or (
            self.max_bytes is not None and self._bytes > self.max_bytes
        ):
            _, (_, _, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[2]


class KeptBodies:
    """The written bodies of one kind of answer of one application, by ETag (which names all
    an answer shows): an answer asked for again is written once, not once a request. Within
    ``max_entries`` bodies and ``max_bytes`` (their lengths added up), each kept ``ttl``
    seconds (None: until pushed out). Used from the event loop only."""

    def __init__(self, ttl: float | None, *, max_entries: int, max_bytes: int) -> None:
        self.kept = AnswerCache[bytes](ttl, max_entries, max_bytes=max_bytes, size_of=len)

    def get(self, etag: str) -> bytes | None:
        return self.kept.get(etag)

    def put(self, etag: str, body: bytes) -> None:
        self.kept.put(etag, body)

    def forget(self) -> None:
        """Drops every body, as in a process that kept none."""
        kept = self.kept
        self.kept = AnswerCache[bytes](
            kept.ttl, kept.max_entries, max_bytes=kept.max_bytes, size_of=len
        )
