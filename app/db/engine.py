"""Engine and session factory. Nothing here connects at import time."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

SQLITE_BUSY_TIMEOUT_SECONDS = 30.0
SQLITE_BEGIN_OPTION = "oddsboost_sqlite_begin"
# Where a session keeps what waits for its commit: (transaction of the work, callback) pairs.
ON_COMMIT_KEY = "oddsboost_on_commit"
SUPPORTED_BACKENDS = ("sqlite", "postgresql")
URL_FORMS = "sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/NAME"


class DatabaseUrlError(ValueError):
    """The database URL names nothing the service can open (the message hides the password)."""


@dataclass(frozen=True, slots=True)
class PoolLimits:
    """How many connections an engine keeps (``size``), may open beyond them while all are
    in use (``overflow``), and how long a checkout waits for one before it fails."""

    size: int = 5
    overflow: int = 10
    timeout_seconds: float = 30.0

    @property
    def connections(self) -> int:
        """The most connections the engine holds at once."""
        return self.size + self.overflow


# SQLAlchemy's own defaults, for engines of commands and tests.
DEFAULT_POOL = PoolLimits()


def make_engine(
    database_url: str,
    *,
    sqlite_busy_timeout_seconds: float = SQLITE_BUSY_TIMEOUT_SECONDS,
    pool: PoolLimits = DEFAULT_POOL,
    **kwargs: Any,
) -> Engine:
    """An engine, not connected yet; :class:`DatabaseUrlError` for a URL that is none, a
    database other than SQLite and PostgreSQL, or a driver not installed.

    ``pool`` bounds the connections of a database file or server (an in-memory SQLite
    database, or an engine given its own ``poolclass``, keeps its own pool)."""
    url = read_database_url(database_url)
    if url.get_backend_name() not in SUPPORTED_BACKENDS:
        raise DatabaseUrlError(f"the database URL {shown(url)} is not supported: use {URL_FORMS}")
    if "poolclass" not in kwargs and not _in_memory(url):
        kwargs = {
            "pool_size": pool.size,
            "max_overflow": pool.overflow,
            "pool_timeout": pool.timeout_seconds,
            **kwargs,
        }
    try:
        return _create_engine(url, sqlite_busy_timeout_seconds, **kwargs)
    except (NoSuchModuleError, ImportError):
        raise DatabaseUrlError(
            f"the database URL {shown(url)} needs the driver {url.drivername!r}, which is not "
            f"installed: use {URL_FORMS}"
        ) from None


def read_database_url(database_url: str) -> URL:
    """The database URL as SQLAlchemy reads it, or :class:`DatabaseUrlError`."""
    try:
        return make_url(database_url)
    except (ArgumentError, ValueError):
        # SQLAlchemy's ArgumentError for text that is no URL; a plain ValueError for a port
        # that is not a number.
        raise DatabaseUrlError(
            f"the database URL {unreadable_url(database_url)[0]!r} cannot be read as one: "
            f"use {URL_FORMS}"
        ) from None


def unreadable_url(database_url: str) -> tuple[str, str | None]:
    """A URL SQLAlchemy cannot read, as messages show it, and what it holds as a password:
    whatever stands between the user's name and the last ``@`` (None where nothing does)."""
    userinfo, at, host = database_url.rpartition("@")
    scheme, separator, credentials = userinfo.rpartition("://")
    user, colon, password = credentials.partition(":")
    if not (at and colon):
        return database_url, None
    return f"{scheme}{separator}{user}:***@{host}", password or None


def shown(url: URL | str) -> str:
    """A database URL as messages show it: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def unusable_database(error: DBAPIError, database_url: str) -> str:
    """One line saying why the database cannot be used: the driver's reason, the password
    hidden (and, for SQLite, a missing folder named)."""
    url = make_url(database_url)
    reason = " ".join(str(error.orig).split())
    if url.password:
        reason = reason.replace(str(url.password), "***")
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        folder = Path(url.database).parent
        if not folder.is_dir():
            reason += f" (the folder {folder} does not exist)"
    return f"cannot use the database {shown(url)}: {reason}"


def _in_memory(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def _create_engine(url: URL, sqlite_busy_timeout_seconds: float, **kwargs: Any) -> Engine:
    if url.get_backend_name() == "sqlite":
        connect_args = {"check_same_thread": False, **kwargs.pop("connect_args", {})}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        _configure_sqlite(
            engine,
            in_memory=_in_memory(url),
            busy_timeout_ms=round(sqlite_busy_timeout_seconds * 1000),
        )
        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


def is_database_locked(error: BaseException) -> bool:
    """Whether a driver error is SQLite's "database is locked" (past the busy timeout)."""
    code = getattr(getattr(error, "orig", error), "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


# SQLite's codes for a database file that cannot be opened or read at all.
_SQLITE_UNREACHABLE = (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR)
# PostgreSQL's SQLSTATEs of a server that cannot be reached or is going away: the class of
# connection exceptions, a shutdown under way, a server still starting, no connection free.
_POSTGRESQL_UNREACHABLE_CLASS = "08"
_POSTGRESQL_UNREACHABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def is_database_unreachable(error: BaseException) -> bool:
    """Whether a driver error says the database cannot be reached now, rather than anything
    about the query."""
    if getattr(error, "connection_invalidated", False):
        return True  # SQLAlchemy found the connection dead
    driver_error = getattr(error, "orig", error)
    code = getattr(driver_error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_UNREACHABLE
    import psycopg  # the driver of PostgreSQL, loaded already if the error is its own

    if not isinstance(driver_error, psycopg.Error):
        return False
    state = driver_error.sqlstate
    if state is None:
        # An error of the server always has a SQLSTATE; psycopg's own OperationalError has
        # none: the server was never heard from (a refused connection) or stopped answering.
        return isinstance(driver_error, psycopg.OperationalError)
    return state[:2] == _POSTGRESQL_UNREACHABLE_CLASS or state in _POSTGRESQL_UNREACHABLE_STATES


def _configure_sqlite(engine: Engine, *, in_memory: bool, busy_timeout_ms: int) -> None:
    # pysqlite opens transactions lazily and ignores SAVEPOINT semantics; taking over
    # BEGIN ourselves gives real transactions (one ingest batch = one transaction).
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        if not in_memory:
            # WAL lets readers (the API) proceed while an import or refit writes.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")


def make_session_factory(engine: Engine, *, for_writes: bool = False) -> sessionmaker[Session]:
    """Sessions on ``engine``; ``for_writes`` sessions take SQLite's write lock at BEGIN.

    A deferred SQLite transaction that reads then writes fails at once when another writer
    got there first (the busy timeout does not apply to a lock upgrade); readers stay
    deferred so they never queue behind an import.
    """
    bind = engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"}) if for_writes else engine
    return sessionmaker(bind=bind, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose work is committed on success and rolled back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def on_commit(session: Session, callback: Callable[[], None]) -> None:
    """Call ``callback`` (which must not fail) once the work done so far in ``session`` is
    committed, never if it is rolled back (with its transaction or a savepoint around it);
    at once when no transaction is under way."""
    work = session.get_nested_transaction() or session.get_transaction()
    if work is None:
        callback()
        return
    waiting: list[tuple[SessionTransaction, Callable[[], None]]] | None = session.info.get(
        ON_COMMIT_KEY
    )
    if waiting is None:
        waiting = session.info[ON_COMMIT_KEY] = []
        event.listen(session, "after_commit", _run_waiting)
        event.listen(session, "after_soft_rollback", _drop_undone)
    waiting.append((work, callback))


def _run_waiting(session: Session) -> None:
    if session.get_nested_transaction() is not None:
        return  # a savepoint was released: the work is not durable yet
    waiting = session.info[ON_COMMIT_KEY]
    callbacks = [callback for _, callback in waiting]
    waiting.clear()
    for callback in callbacks:
        callback()


def _drop_undone(session: Session, rolled_back: SessionTransaction) -> None:
    waiting = session.info[ON_COMMIT_KEY]
    waiting[:] = [(work, callback) for work, callback in waiting if not _within(work, rolled_back)]


def _within(transaction: SessionTransaction | None, outer: SessionTransaction) -> bool:
    while transaction is not None:
        if transaction is outer:
            return True
        transaction = transaction.parent
    return False
