"""Boards kept in Redis, so that every worker and replica builds each one once per change.

The database stays the truth for whether something changed: a board is stored under its
query and the digest of the stamp it was built at (``app.services.upcoming``), so an entry is
valid for exactly that state of the database, whoever wrote it (a worker, a replica, a
command with no Redis). A process that finds no entry for its stamp takes a short lock
(``SET NX PX``): one process builds and writes while the others wait for the entry, and build
their own only if the wait runs out.

Redis is a help, never a requirement: when it fails, the board is built here, the failure is
counted (``oddsboost_shared_boards_total{result="failed"}``) and logged once, and Redis is
left alone for ``RETRY_AFTER_SECONDS`` so that an outage costs requests no time.

Entries are pickles: Redis is trusted like the database, and only this service writes under
its prefix. Keys carry the package's version and a digest of the shape of what is pickled
(:func:`shape_digest`), so two releases, or two builds of one version whose records differ,
never read each other's entries: in a rolling deploy an entry of the old code is never
unpickled into the new code's classes.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import logging
import pickle
import secrets
import threading
import time
import typing
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, cast

import redis
from redis.exceptions import RedisError

import app
from app.metrics import count_shared_board
from app.settings import Settings

log = logging.getLogger(__name__)

# The packages whose classes a shape is made of (see :func:`shape_digest`).
OWN_PACKAGES = ("app", "boosting")
# A builder that dies leaves its lock to expire after this.
LOCK_SECONDS = 30.0
POLL_SECONDS = 0.05
# After a failure, Redis is tried again only after this.
RETRY_AFTER_SECONDS = 5.0
# A Redis that does not answer within this costs a request no more.
SOCKET_TIMEOUT_SECONDS = 0.5

ValueT = TypeVar("ValueT")

# Deletes the lock only if it is still the one this process took.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


class SharedBoards(Generic[ValueT]):
    """Values by key in one Redis database, each built by one process (see the module).
    Called from worker threads: the client's pool and the outage state are thread-safe."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        shape: type[ValueT],
        prefix: str,
        ttl_seconds: float,
        wait_seconds: float,
        max_bytes: int,
    ) -> None:
        self._client = client
        self._prefix = f"{prefix}:board:{app.__version__}:{shape_digest(shape)}:"
        self._ttl_ms = max(1, int(ttl_seconds * 1000))
        self._wait_seconds = wait_seconds
        self._max_bytes = max_bytes
        self._release = client.register_script(_RELEASE)
        self._outage = threading.Lock()
        self._retry_at: float | None = None  # set while Redis is taken as down

    @classmethod
    def from_settings(cls, settings: Settings, shape: type[ValueT]) -> SharedBoards[ValueT] | None:
        """The store of values of type ``shape`` that ``settings`` ask for, or None without
        ``ODDSBOOST_REDIS_URL``. Nothing connects until the first board is asked for."""
        if settings.redis_url is None:
            return None
        client = redis.Redis.from_url(
            settings.redis_url,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
        )
        return cls(
            client,
            shape=shape,
            prefix=settings.redis_key_prefix,
            ttl_seconds=settings.redis_board_seconds,
            wait_seconds=settings.redis_build_wait_seconds,
            max_bytes=settings.redis_board_max_bytes,
        )

    def close(self) -> None:
        self._client.close()

    def fetch_or_build(self, key: str, build: Callable[[], ValueT]) -> ValueT:
        """The value stored under ``key``, or ``build()`` run here (and stored) or by the
        process that holds the key's lock."""
        entry = self.entry(key)
        if not self._reachable():
            return build()
        try:
            found, token = self._found_or_claimed(entry)
        except RedisError as error:
            self._failed(error)
            return build()
        if found is not None:
            return found
        if token is None:  # another process holds the lock
            found = self._wait_for(entry)
            if found is not None:
                count_shared_board("waited")
                return found
        try:
            value = build()
        except BaseException:
            # Otherwise every process asking for this board would wait out the lock.
            self._let_go(entry, token)
            raise
        self._offer(entry, value, token)
        return value

    def entry(self, key: str) -> str:
        """The Redis key the value of ``key`` is stored under (its lock: this + ``:lock``)."""
        return self._prefix + key

    def _found_or_claimed(self, entry: str) -> tuple[ValueT | None, str | None]:
        """The entry, or None and the token of the lock if this process took it (None: it
        is another's)."""
        found = self._read(entry)
        if found is None:
            token = secrets.token_hex(8)
            if not self._client.set(entry + ":lock", token, nx=True, px=_ms(LOCK_SECONDS)):
                return None, None
            # Written by a holder that finished between the read and the lock taken.
            found = self._read(entry)
            if found is None:
                return None, token
            self._release(keys=[entry + ":lock"], args=[token])
        count_shared_board("hit")
        return found, None

    def _read(self, entry: str) -> ValueT | None:
        payload = cast(bytes | None, self._client.get(entry))
        self._recovered()
        if payload is None:
            return None
        try:
            # Trusted like the database: only this service writes under its prefix.
            return cast(ValueT, pickle.loads(payload))  # noqa: S301
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            # Not one of ours after all (a cut-off write): built again and written over.
            log.warning("an unreadable board in Redis at %s; building it again", entry)
            return None

    def _wait_for(self, entry: str) -> ValueT | None:
        """The entry once the lock's holder wrote it; None when the wait runs out, the holder
        gave up without writing, or Redis failed."""
        deadline = time.monotonic() + self._wait_seconds
        try:
            while time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)
                # The lock first: its holder writes the entry before it lets the lock go.
                held = bool(self._client.exists(entry + ":lock"))
                found = self._read(entry)
                if found is not None or not held:
                    return found
        except RedisError as error:
            self._failed(error)
        return None

    def _offer(self, entry: str, value: ValueT, token: str | None) -> None:
        """Writes ``value`` unless it is too large, then releases the lock if held."""
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            if len(payload) > self._max_bytes:
                count_shared_board("too_large")
            else:
                self._client.set(entry, payload, px=self._ttl_ms)
                count_shared_board("miss")
            self._let_go(entry, token)
        except RedisError as error:
            self._failed(error)

    def _let_go(self, entry: str, token: str | None) -> None:
        """Releases the lock of ``entry`` if this process holds it (``token``)."""
        if token is None:
            return
        try:
            self._release(keys=[entry + ":lock"], args=[token])
        except RedisError as error:
            self._failed(error)

    def _reachable(self) -> bool:
        retry_at = self._retry_at
        return retry_at is None or time.monotonic() >= retry_at

    def _failed(self, error: RedisError) -> None:
        count_shared_board("failed")
        with self._outage:
            first = self._retry_at is None
            self._retry_at = time.monotonic() + RETRY_AFTER_SECONDS
        if first:
            log.warning("Redis failed (%s); each worker builds its own boards meanwhile", error)

    def _recovered(self) -> None:
        if self._retry_at is None:
            return
        with self._outage:
            was_down, self._retry_at = self._retry_at is not None, None
        if was_down:
            log.info("Redis answers again; boards are shared again")


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def shape_digest(root: type) -> str:
    """A digest of the names every class of this project reachable from ``root``'s annotations
    pickles its instances with (a dataclass's fields, a named tuple's, the members of an
    enum): equal in two builds whose pickles of ``root`` load into each other's classes."""
    shapes = sorted(_shapes(root))
    return hashlib.sha256(repr(shapes).encode()).hexdigest()[:16]


def _shapes(root: type) -> Iterator[tuple[str, tuple[str, ...]]]:
    seen: set[object] = set()
    waiting: list[object] = [root]
    while waiting:
        kind = waiting.pop()
        if kind in seen:
            continue
        seen.add(kind)
        waiting.extend(typing.get_args(kind))
        if isinstance(kind, type) and kind.__module__.split(".")[0] in OWN_PACKAGES:
            yield f"{kind.__module__}.{kind.__qualname__}", _names_of(kind)
            if not issubclass(kind, enum.Enum):
                waiting.extend(typing.get_type_hints(kind).values())


def _names_of(kind: type) -> tuple[str, ...]:
    if issubclass(kind, enum.Enum):
        return tuple(f"{member.name}={member.value!r}" for member in kind)
    if dataclasses.is_dataclass(kind):
        return tuple(field.name for field in dataclasses.fields(kind))
    return tuple(getattr(kind, "_fields", ()))
