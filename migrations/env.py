"""Alembic environment: the URL comes from the caller's config or the service settings."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import Connection, event, pool

from app.db.engine import make_engine
from app.db.orm import Base
from app.settings import Settings

config = context.config
target_metadata = Base.metadata


def _database_url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    return url if url else Settings().database_url


def run_migrations_offline() -> None:
    context.configure(
        url=_database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _foreign_keys_off(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA foreign_keys=OFF")


def _check_foreign_keys(connection: Connection) -> None:
    """Every row still refers to a row that exists (SQLite's own check, run before the
    migrations' transaction commits)."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        raise RuntimeError(f"the migration left rows that refer to no row: {broken[:5]}")


def run_migrations_online() -> None:
    engine = make_engine(_database_url(), poolclass=pool.NullPool)
    sqlite = engine.dialect.name == "sqlite"
    if sqlite:
        # Batch mode rebuilds a table by dropping it and renaming its copy; with foreign
        # keys enforced, the drop would delete (ON DELETE CASCADE) the rows that refer to
        # it. Turned off as the connection opens (the pragma does nothing inside a
        # transaction), and the links checked before the transaction commits.
        event.listen(engine, "connect", _foreign_keys_off)
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                # SQLite cannot ALTER most things; batch mode rebuilds tables instead.
                render_as_batch=True,
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    _check_foreign_keys(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
