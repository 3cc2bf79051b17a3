"""One run of a kind at a time (one refit; one fetch of each feed), across processes and
machines.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) taken on one dedicated
connection that is not from the pool, held for the whole run, and released on that same
connection (closing it would release it too, so a crashed process cannot leave it held).
Because a connection can also end under a running refit (a server timeout, an
administrator), the refit checks, inside the transaction that would store and promote its
version, that the lock is still held by that connection. Activations of a version, a
refit's promotion or one by hand, are serialised by a transaction-level advisory lock, and
so are requests to refit and changes of team aliases, each by a lock of its own.

SQLite: an exclusive ``flock`` on a file beside the database file, which the operating
system releases when the process ends; an in-memory database uses a lock of this process.

Either way a crashed process holds no lock, so whoever holds one knows that a run of its
kind still marked running belongs to a process that died.
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

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

log = logging.getLogger(__name__)

REFIT = "refit"
# Fixed 32-bit keys naming each transaction lock among the database's advisory locks (a run
# lock's key is its name's, as ``run_lock_key`` makes it).
PROMOTION_LOCK_KEY = zlib.crc32(b"oddsboost.promotion")
REQUEST_LOCK_KEY = zlib.crc32(b"oddsboost.refit-request")
MATCH_REWRITE_LOCK_KEY = zlib.crc32(b"oddsboost.team-alias")
TRACK_RECORD_LOCK_KEY = zlib.crc32(b"oddsboost.track-record")
_memory_locks: dict[str, threading.Lock] = {}
_memory_locks_guard = threading.Lock()


@dataclass(frozen=True)
class RunLock:
    """Whether the lock was taken, and how to check, inside a transaction, that it still is."""

    taken: bool
    still_held: Callable[[Session], bool] = lambda _session: True


def run_lock_key(name: str) -> int:
    """The advisory lock key of the run lock ``name``."""
    return zlib.crc32(f"oddsboost.{name}".encode())


@contextmanager
def refit_lock(engine: Engine) -> Iterator[RunLock]:
    """Try to take the refit lock. Never waits."""
    with run_lock(engine, REFIT) as lock:
        yield lock


@contextmanager
def run_lock(engine: Engine, name: str) -> Iterator[RunLock]:
    """Try to take the lock of the runs called ``name`` (``refit``, ``fetch-football-data``)
    for as long as the block runs. Never waits."""
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
            # The connection sits idle for the whole refit: a server-wide idle timeout must
            # not end it (and with it the lock).
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
            # The connection is gone, and the lock went with it; nothing is left to release.
            log.warning("could not release a run lock (%s); it ended with its connection", error)
        finally:
            _close_quietly(connection)
            dedicated.dispose()


def _held_by(session: Session, key: int, holder: int) -> bool:
    """Inside the caller's transaction: wait for any other promotion, then check that the
    lock ``key`` is still held by the ``holder`` backend."""
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
    """Inside the caller's transaction: wait for any other activation of a model version
    (a refit's promotion, or one by hand) to commit, so that this one reads the active
    version it replaces as committed, and the later of two simply wins.

    PostgreSQL: a transaction-level advisory lock; without it, two activations could each
    clear the version active before either committed and both set their own, which the
    index allowing one active version refuses. SQLite: nothing to do, a write session
    already holds the database's write lock from its BEGIN.
    """
    _transaction_lock(session, PROMOTION_LOCK_KEY)


def serialise_refit_requests(session: Session) -> None:
    """Inside the caller's transaction: wait for any other request to refit to commit, so
    that two requests never both find no run under way and both start one."""
    _transaction_lock(session, REQUEST_LOCK_KEY)


def serialise_match_rewrites(session: Session) -> None:
    """Inside the caller's transaction: wait for any other change of a team alias (adding
    one, with the merge it makes; removing one, with its undo) or deletion of a match to
    commit, so that this one reads the aliases, teams and matches as that one left them:
    the same alias added twice is found there, not refused by the unique index with a
    database error; and a merge, which locks a match's quotes before the match, never runs
    beside a deletion, which locks them the other way round (a deadlock)."""
    _transaction_lock(session, MATCH_REWRITE_LOCK_KEY)


def _transaction_lock(session: Session, key: int) -> None:
    """PostgreSQL: wait for the advisory lock ``key``, held until the transaction ends.
    SQLite: nothing to do, a write session already holds the database's write lock from
    its BEGIN."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _close_quietly(connection: Connection) -> None:
    with suppress(SQLAlchemyError):  # closing a connection that is already dead
        connection.close()


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
    """Inside the caller's transaction: wait for any other writer of the track record's
    aggregates to commit, so that two never replace the same day's rows at once (each
    would delete the rows the other had not committed yet, and both insert theirs)."""
    _transaction_lock(session, TRACK_RECORD_LOCK_KEY)
