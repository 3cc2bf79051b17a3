"""One refit at a time, across processes and machines.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) taken on one dedicated
connection that is not from the pool, held for the whole run, and released on that same
connection (closing it would release it too, so a crashed process cannot leave it held).
SQLite: an exclusive ``flock`` on a file beside the database file, which the operating
system releases when the process ends; an in-memory database uses a lock of this process.
"""

from __future__ import annotations

import fcntl
import os
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.pool import NullPool

# A fixed 32-bit key naming "the refit" among the advisory locks of the database.
REFIT_LOCK_KEY = zlib.crc32(b"oddsboost.refit")
_memory_lock = threading.Lock()


@contextmanager
def refit_lock(engine: Engine) -> Iterator[bool]:
    """Try to take the refit lock; yields whether it was taken. Never waits."""
    backend = engine.dialect.name
    if backend == "postgresql":
        with _advisory_lock(engine) as taken:
            yield taken
    elif backend == "sqlite":
        database = engine.url.database
        if database in (None, "", ":memory:"):
            with _process_lock() as taken:
                yield taken
        else:
            with _file_lock(Path(f"{database}.refit-lock")) as taken:
                yield taken
    else:  # pragma: no cover - only the two supported backends reach here
        raise NotImplementedError(f"no refit lock for {backend}")


@contextmanager
def _advisory_lock(engine: Engine) -> Iterator[bool]:
    dedicated = create_engine(engine.url, poolclass=NullPool)
    connection = dedicated.connect()
    taken = False
    try:
        taken = bool(
            connection.execute(
                text("SELECT pg_try_advisory_lock(:key)"), {"key": REFIT_LOCK_KEY}
            ).scalar()
        )
        connection.commit()  # a session-level lock outlives the transaction
        yield taken
    finally:
        try:
            if taken:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": REFIT_LOCK_KEY})
                connection.commit()
        finally:
            connection.close()
            dedicated.dispose()


@contextmanager
def _file_lock(path: Path) -> Iterator[bool]:
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    taken = False
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = True
        except BlockingIOError:
            taken = False
        yield taken
    finally:
        if taken:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
        os.close(descriptor)


@contextmanager
def _process_lock() -> Iterator[bool]:
    taken = _memory_lock.acquire(blocking=False)
    try:
        yield taken
    finally:
        if taken:
            _memory_lock.release()
