"""Databases beside the one under test: empty ones, and copies of templates built once.

SQLite databases are files in one directory; a copy is made with SQLite's backup API.
PostgreSQL databases are created on the server of the database under test; a copy is
``CREATE DATABASE ... TEMPLATE ...``. A template is sealed once built (a read-only file, or
a database that accepts no connections), so no test can change what later tests copy.
PostgreSQL makes a checkpoint for every ``DROP DATABASE`` and waits for it, so databases are
dropped on threads of their own while the tests go on, several at once: drops that wait
together share the next checkpoint. Every drop has ended, or failed the run, when
``drop_all`` returns.

A shared database is a copy that many tests read. Each test writes only inside a transaction
of its own that is rolled back; everything else (an app's own engine, a command) connects
through a read-only URL, so nothing a test does is left for the next one to read.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from app.db.engine import make_engine

# Files SQLite and the refit lock keep beside a database file.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal", ".refit-lock")
# PostgreSQL databases dropped at once (each on a connection of its own while it waits).
DROPPERS = 4


@dataclass(frozen=True)
class SharedDatabase:
    """A database many tests read: ``engine`` for their own transactions (each rolled back),
    ``read_only_url`` for every other connection (an app's engine, a command)."""

    engine: Engine
    read_only_url: str


class Databases:
    """Creates, copies and drops databases of the same kind as ``database_url``."""

    def __init__(self, database_url: str, directory: Path) -> None:
        self.url = make_url(database_url)
        self.directory = directory
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        self._created: list[str] = []
        # Its connections are kept between statements: a new one costs the server more than
        # most of the statements sent on it.
        self._admin = (
            None
            if self.is_sqlite
            else create_engine(self.url, isolation_level="AUTOCOMMIT", pool_size=DROPPERS + 1)
        )
        self._dropper = None if self.is_sqlite else ThreadPoolExecutor(max_workers=DROPPERS)
        self._drops: list[Future[None]] = []

    def create(self) -> str:
        """A new empty database (no schema)."""
        return self._new()

    def copy(self, template: str) -> str:
        """A new database holding what ``template`` holds."""
        return self._new(template)

    def share(self, template: str) -> SharedDatabase:
        """A new database holding what ``template`` holds, for many tests to read."""
        database = self.copy(template)
        engine = make_engine(database)
        # Connecting puts a SQLite file in WAL mode (see make_engine): read-only connections
        # can then read it while a test's transaction writes.
        with engine.connect():
            pass
        return SharedDatabase(engine, self.read_only_url(database))

    def read_only_url(self, database: str) -> str:
        """``database`` for connections that can read it but never write to it."""
        if self.is_sqlite:
            return f"sqlite:///file:{self._path(database)}?mode=ro&uri=true"
        read_only = {"options": "-c default_transaction_read_only=on"}
        return make_url(database).update_query_dict(read_only).render_as_string(hide_password=False)

    def seal(self, template: str) -> None:
        """Make ``template`` read-only from now on: it is only ever copied."""
        if self.is_sqlite:
            path = self._path(template)
            with closing(sqlite3.connect(path)) as connection:
                # A rollback journal needs nothing but the file itself to be read.
                connection.execute("PRAGMA journal_mode=DELETE")
            path.chmod(0o444)
        else:
            name = self._name(template)
            self._execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
            # A session the app that filled it still holds (a read of a background task that
            # outlived its shutdown) would make every copy fail: none is wanted any more.
            self._execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
            )

    def drop(self, database: str) -> None:
        if self.is_sqlite:
            path = self._path(database)
            for file in (path, *(Path(f"{path}{suffix}") for suffix in SQLITE_COMPANIONS)):
                file.unlink(missing_ok=True)
        else:
            assert self._dropper is not None
            self._drops.append(self._dropper.submit(self._drop_postgresql, self._name(database)))
        if database in self._created:
            self._created.remove(database)

    def drop_all(self) -> None:
        for database in reversed(self._created):
            self.drop(database)
        if self._dropper is not None:
            self._dropper.shutdown()
            for dropped in self._drops:
                dropped.result()
        if self._admin is not None:
            self._admin.dispose()

    def _drop_postgresql(self, name: str) -> None:
        # A sealed template must be unsealed before it can be dropped.
        self._execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _new(self, template: str | None = None) -> str:
        name = f"oddsboost_test_{uuid.uuid4().hex[:12]}"
        if self.is_sqlite:
            path = self.directory / f"{name}.db"
            if template is not None:
                source_uri = f"file:{self._path(template)}?mode=ro"
                with (
                    closing(sqlite3.connect(source_uri, uri=True)) as source,
                    closing(sqlite3.connect(path)) as target,
                ):
                    source.backup(target)
            database = f"sqlite:///{path}"
        else:
            copied = "" if template is None else f' TEMPLATE "{self._name(template)}"'
            self._execute(f'CREATE DATABASE "{name}"{copied}')
            database = self.url.set(database=name).render_as_string(hide_password=False)
        self._created.append(database)
        return database

    def _execute(self, statement: str) -> None:
        assert self._admin is not None
        with self._admin.connect() as connection:
            connection.execute(text(statement))

    @staticmethod
    def _path(database: str) -> Path:
        path = make_url(database).database
        assert path, f"not a SQLite file: {database}"
        return Path(path)

    @staticmethod
    def _name(database: str) -> str:
        name = make_url(database).database
        assert name, f"no database name in {database}"
        return name


@contextmanager
def rolled_back_connection(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that is rolled back at the end of the block."""
    with engine.connect() as connection:
        transaction = connection.begin()
        try:
            yield connection
        finally:
            transaction.rollback()


@contextmanager
def savepoint_session(connection: Connection) -> Iterator[Session]:
    """A session whose commits are savepoints inside the transaction of ``connection``."""
    with Session(
        bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
    ) as session:
        yield session
