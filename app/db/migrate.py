"""Run the Alembic migrations programmatically (``oddsboost migrate``, ``serve``, tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect

import app


def migrations_directory() -> Path:
    """Where the migration scripts are: inside the wheel, or beside the package in a checkout."""
    package_dir = Path(app.__file__).resolve().parent
    for candidate in (package_dir / "_migrations", package_dir.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(f"no migrations found next to {package_dir}")


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_directory()))
    # ConfigParser interpolation would choke on '%' in URL-encoded passwords.
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade_to_head(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "head")


@dataclass(frozen=True, slots=True)
class SchemaUpgrade:
    """The revisions before (None: no schema) and after an upgrade, and the tables it made."""

    before: str | None
    after: str | None
    tables_created: tuple[str, ...]


def upgrade_and_report(database_url: str) -> SchemaUpgrade:
    from app.db.engine import make_engine

    engine = make_engine(database_url)
    try:
        before, tables_before = current_revision(engine), _table_names(engine)
        upgrade_to_head(database_url)
        after, tables_after = current_revision(engine), _table_names(engine)
    finally:
        engine.dispose()
    created = tables_after - tables_before - {ALEMBIC_TABLE}
    return SchemaUpgrade(before, after, tuple(sorted(created)))


ALEMBIC_TABLE = "alembic_version"


def _table_names(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return set(inspect(connection).get_table_names())


def downgrade_to(database_url: str, revision: str) -> None:
    command.downgrade(alembic_config(database_url), revision)


def head_revision() -> str | None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return script.get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


class SchemaNotCurrentError(RuntimeError):
    """The database is not at the schema this version of the code needs."""


def require_current_schema(engine: Engine) -> None:
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = "has no schema yet" if current is None else f"is at revision {current}"
        raise SchemaNotCurrentError(
            f"the database {state}; this version needs revision {head}: run `oddsboost migrate`"
        )


def create_schema_if_empty(engine: Engine, database_url: str) -> bool:
    """Bring a database with no tables to the newest schema; whether it did. Only ``oddsboost
    migrate`` upgrades one with tables (a migration may transform its data)."""
    with engine.connect() as connection:
        if inspect(connection).get_table_names():
            return False
    upgrade_to_head(database_url)
    return True
