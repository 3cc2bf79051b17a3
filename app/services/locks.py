"""One run of a kind at a time (one refit; one fetch of each feed), across processes and
machines, and the transaction locks that serialise other writers.

PostgreSQL: a session-level advisory lock on a dedicated connection outside the pool, held
for the whole run; as that connection can end under a refit, the refit checks it still
holds the lock in the transaction that promotes its version. SQLite: a ``flock`` on a file
beside the database (an in-memory database: a lock of this process). Either way a crashed
process holds no lock, so a run still marked running that nobody holds the lock of is dead.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

log = logging.getLogger(__name__)

REFIT = "refit"
PROMOTION_LOCK_KEY = zlib.crc32(b"oddsboost.promotion")
REQUEST_LOCK_KEY = zlib.crc32(b"oddsboost.refit-request")
MATCH_REWRITE_LOCK_KEY = zlib.crc32(b"oddsboost.team-alias")
TRACK_RECORD_LOCK_KEY = zlib.crc32(b"oddsboost.track-record")
_memory_locks: dict[str, threading.Lock] = {}
_memory_locks_guard = threading.Lock()


@dataclass(frozen=True)
class RunLock:
    taken: bool
    still_held: Callable[[Session], bool] = lambda _session: True


def run_lock_key(name: str) -> int:
    return zlib.crc32(f"oddsboost.{name}".encode())


@contextmanager
def refit_lock(engine: Engine) -> Iterator[RunLock]:
    with run_lock(engine, REFIT) as lock:
        yield lock


@contextmanager
def run_lock(engine: Engine, name: str) -> Iterator[RunLock]:
    """Try to take the lock of the runs called ``name`` for the block. Never waits."""
    database = engine.url.database
    if engine.dialect.name == "postgresql":
        with _advisory_lock(engine, run_lock_key(name)) as lock:
            yield lock
    elif database in (None, "", ":memory:"):
        with _process_lock(name) as taken:
            yield RunLock(taken)
    else:
        with _file_lock(Path(f"{database}.{name}-lock")) as taken:
            yield RunLock(taken)


@contextmanager
def _advisory_lock(engine: Engine, key: int) -> Iterator[RunLock]:
    dedicated = create_engine(engine.url, poolclass=NullPool)
    connection = dedicated.connect()
    taken = False
    try:
        if int(connection.execute(text("SHOW server_version_num")).scalar() or 0) >= 140000:
            # The connection sits idle for the whole run: an idle timeout must not end it.
            connection.execute(text("SET idle_session_timeout = 0"))
        taken = bool(
            connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar()
        )
        holder = int(connection.execute(text("SELECT pg_backend_pid()")).scalar() or 0)
        connection.commit()  # a session-level lock outlives the transaction
        yield RunLock(taken, lambda session: _held_by(session, key, holder))
    finally:
        try:
            if taken:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                connection.commit()
        except SQLAlchemyError as error:
            log.warning("could not release a run lock (%s); it ended with its connection", error)
        finally:
            with suppress(SQLAlchemyError):  # already dead
                connection.close()
            dedicated.dispose()


def _held_by(session: Session, key: int, holder: int) -> bool:
    """Wait for any other promotion, then check the ``holder`` backend still holds ``key``."""
    serialise_promotions(session)
    return bool(
        session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                "AND classid = 0 AND objid = :key AND objsubid = 1 AND pid = :holder "
                "AND granted)"
            ),
            {"key": key, "holder": holder},
        ).scalar()
    )


def serialise_promotions(session: Session) -> None:
    """Wait for any other activation of a version to commit, so that two never both clear
    the active version and set their own (the later of two wins)."""
    _transaction_lock(session, PROMOTION_LOCK_KEY)


def serialise_refit_requests(session: Session) -> None:
    """Wait for any other request to refit to commit, so that two never both start a run."""
    _transaction_lock(session, REQUEST_LOCK_KEY)


def serialise_match_rewrites(session: Session) -> None:
    """Wait for any other change of a team alias or deletion of a match to commit: the same
    alias added twice is then found, not refused by the unique index, and a merge never
    deadlocks with a deletion (they lock quotes and matches in opposite orders)."""
    _transaction_lock(session, MATCH_REWRITE_LOCK_KEY)


def _transaction_lock(session: Session, key: int) -> None:
    """Wait for the advisory lock ``key`` until the transaction ends. SQLite needs none: a
    write session holds the database's write lock from its BEGIN."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


@contextmanager
def _file_lock(path: Path) -> Iterator[bool]:
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    taken = False
    try:
        with suppress(BlockingIOError):
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = True
        yield taken
    finally:
        if taken:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
        os.close(descriptor)


@contextmanager
def _process_lock(name: str) -> Iterator[bool]:
    with _memory_locks_guard:
        lock = _memory_locks.setdefault(name, threading.Lock())
    taken = lock.acquire(blocking=False)
    try:
        yield taken
    finally:
        if taken:
            lock.release()


def serialise_track_record_writes(session: Session) -> None:
    """Wait for any other writer of the track record's aggregates to commit, so that two
    never replace the same day's rows at once."""
    _transaction_lock(session, TRACK_RECORD_LOCK_KEY)
