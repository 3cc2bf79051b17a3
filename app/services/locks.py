"""One refit at a time, across processes and machines.

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

# Fixed 32-bit keys naming "the refit" and "a promotion" among the database's advisory locks.
REFIT_LOCK_KEY = zlib.crc32(b"oddsboost.refit")
PROMOTION_LOCK_KEY = zlib.crc32(b"oddsboost.promotion")
REQUEST_LOCK_KEY = zlib.crc32(b"oddsboost.refit-request")
MATCH_REWRITE_LOCK_KEY = zlib.crc32(b"oddsboost.team-alias")
TRACK_RECORD_LOCK_KEY = zlib.crc32(b"oddsboost.track-record")
_memory_lock = threading.Lock()


@dataclass(frozen=True)
class RefitLock:
    """Whether the lock was taken, and how to check, inside a transaction, that it still is."""

    taken: bool
    still_held: Callable[[Session], bool] = lambda _session: True


@contextmanager
def refit_lock(engine: Engine) -> Iterator[RefitLock]:
    """Try to take the refit lock. Never waits."""
    backend = engine.dialect.name
    if backend == "postgresql":
        with _advisory_lock(engine) as lock:
            yield lock
    elif backend == "sqlite":
        database = engine.url.database
        if database in (None, "", ":memory:"):
            with _process_lock() as taken:
                yield RefitLock(taken)
        else:
            with _file_lock(Path(f"{database}.refit-lock")) as taken:
                yield RefitLock(taken)
    else:  # pragma: no cover - only the two supported backends reach here
        raise NotImplementedError(f"no refit lock for {backend}")


@contextmanager
def _advisory_lock(engine: Engine) -> Iterator[RefitLock]:
    dedicated = create_engine(engine.url, poolclass=NullPool)
    connection = dedicated.connect()
    taken = False
    try:
        if int(connection.execute(text("SHOW server_version_num")).scalar() or 0) >= 140000:
            # The connection sits idle for the whole refit: a server-wide idle timeout must
            # not end it (and with it the lock).
            connection.execute(text("SET idle_session_timeout = 0"))
        taken = bool(
            connection.execute(
                text("SELECT pg_try_advisory_lock(:key)"), {"key": REFIT_LOCK_KEY}
            ).scalar()
        )
        holder = int(connection.execute(text("SELECT pg_backend_pid()")).scalar() or 0)
        connection.commit()  # a session-level lock outlives the transaction
        yield RefitLock(taken, lambda session: _held_by(session, holder))
    finally:
        try:
            if taken:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": REFIT_LOCK_KEY})
                connection.commit()
        except SQLAlchemyError as error:
            # The connection is gone, and the lock went with it; nothing is left to release.
            log.warning(
                "could not release the refit lock (%s); it ended with its connection", error
            )
        finally:
            _close_quietly(connection)
            dedicated.dispose()


def _held_by(session: Session, holder: int) -> bool:
    """Inside the caller's transaction: wait for any other promotion, then check that the
    refit lock is still held by the ``holder`` backend."""
    serialise_promotions(session)
    return bool(
        session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                "AND classid = 0 AND objid = :key AND objsubid = 1 AND pid = :holder "
                "AND granted)"
            ),
            {"key": REFIT_LOCK_KEY, "holder": holder},
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
    that two requests never both find no run under way and both start one.

    PostgreSQL: a transaction-level advisory lock. SQLite: nothing to do, a write session
    already holds the database's write lock from its BEGIN.
    """
    _transaction_lock(session, REQUEST_LOCK_KEY)


def serialise_match_rewrites(session: Session) -> None:
    """Inside the caller's transaction: wait for any other change of a team alias (adding
    one, with the merge it makes; removing one, with its undo) or deletion of a match to
    commit, so that this one reads the aliases, teams and matches as that one left them:
    the same alias added twice is found there, not refused by the unique index with a
    database error; and a merge, which locks a match's quotes before the match, never runs
    beside a deletion, which locks them the other way round (a deadlock).

    PostgreSQL: a transaction-level advisory lock. SQLite: nothing to do, a write session
    already holds the database's write lock from its BEGIN.
    """
    _transaction_lock(session, MATCH_REWRITE_LOCK_KEY)


def _transaction_lock(session: Session, key: int) -> None:
    """PostgreSQL: wait for the advisory lock ``key``, held until the transaction ends."""
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
def _process_lock() -> Iterator[bool]:
    taken = _memory_lock.acquire(blocking=False)
    try:
        yield taken
    finally:
        if taken:
            _memory_lock.release()


def serialise_track_record_writes(session: Session) -> None:
    """Inside the caller's transaction: wait for any other writer of the track record's
    aggregates to commit, so that two never replace the same day's rows at once (each
    would delete the rows the other had not committed yet, and both insert theirs).

    PostgreSQL: a transaction-level advisory lock. SQLite: nothing to do, a write session
    already holds the database's write lock from its BEGIN.
    """
    _transaction_lock(session, TRACK_RECORD_LOCK_KEY)
