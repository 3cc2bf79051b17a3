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


def log_as_a_command(settings: Settings) -> None:
    """Log lines of what a command a person runs calls go to stderr as text, warnings and
    errors only: the command's own output stays on stdout, its messages on stderr, unburied.
    (The server, the scheduler and the refits they start log as configured.)"""
    from app.logs import configure_logging

    configure_logging(settings, command=True)


def open_database(settings: Settings) -> tuple[Engine, sessionmaker[Session]]:
    """An engine on a reachable database at the current schema, or a clear exit."""
    from sqlalchemy.exc import OperationalError

    from app.db.engine import make_engine, make_session_factory
    from app.db.migrate import SchemaNotCurrentError, require_current_schema

    engine = make_engine(
        settings.database_url, sqlite_busy_timeout_seconds=settings.sqlite_busy_timeout_seconds
    )
    try:
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
