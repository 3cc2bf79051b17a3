"""What every command shares: the consoles, the settings, an open database, list options."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from app.settings import Settings

cli = typer.Typer(
    name="oddsboost",
    help="Football 1X2 forecasts from bookmakers' odds (AdaBoost.M2 over bookmakers).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Messages and errors go to stderr; results (tables, JSON) to stdout.
console = Console(stderr=True)
output = Console()


def load_settings() -> Settings:
    """The settings of this process, or exit 2 with what is wrong in the environment."""
    from pydantic import ValidationError

    from app.settings import get_settings

    try:
        return get_settings()
    except ValidationError as error:
        console.print(f"[red]configuration error:[/red] {error}")
        raise typer.Exit(2) from None


def open_database(settings: Settings, *, writes: bool) -> tuple[Engine, sessionmaker[Session]]:
    """An engine on a reachable database at the current schema, or a clear exit.

    A command that ``writes`` first brings an empty database (no tables at all) to the
    newest schema, as ``serve`` does, and says so on stderr. A database with tables at
    another revision is refused: ``oddsboost migrate`` upgrades it.
    """
    from sqlalchemy.exc import OperationalError

    from app.db.engine import make_engine, make_session_factory
    from app.db.migrate import (
        SchemaNotCurrentError,
        create_schema_if_empty,
        head_revision,
        require_current_schema,
    )

    engine = make_engine(settings.database_url)
    try:
        if writes and create_schema_if_empty(engine, settings.database_url):
            console.print(
                f"the database had no tables: created the newest schema ({head_revision()})",
                markup=False,
            )
        require_current_schema(engine)
    except SchemaNotCurrentError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    except OperationalError as error:
        console.print(f"[red]cannot reach the database {engine.url!r}:[/red] {error.orig}")
        raise typer.Exit(1) from None
    return engine, make_session_factory(engine, for_writes=True)


def split_list(value: str | None) -> tuple[str, ...] | None:
    """``"E0, SP1"`` as ``("E0", "SP1")``; nothing given (or only blanks) is ``None``."""
    if value is None or not value.strip():
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())
