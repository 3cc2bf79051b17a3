"""What every command shares: the consoles, how results are printed, the settings, an open
database."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

if TYPE_CHECKING:
    from rich.table import Table
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

# The option of every command whose results a script may read.
AsJson = Annotated[
    bool, typer.Option("--json", help="Print the results as one JSON document, for scripts.")
]

# Messages and errors go to stderr; results (tables, JSON) to stdout.
console = Console(stderr=True)
output = Console()

# The width of lines written to a pipe or a file, unless COLUMNS says otherwise: rich would
# take that of whichever stream is a terminal (stdin, say).
PIPE_WIDTH = 80


def output_width() -> int:
    if output.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return output.width
    return PIPE_WIDTH


def say(text: str, *, indent: int = 0, hang: int = 2) -> None:
    """A line of the results on stdout, without markup, wrapped at the output's width with
    the lines it continues on ``hang`` spaces further in."""
    import textwrap

    lines = textwrap.wrap(
        text,
        width=output_width(),
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hang),
        break_on_hyphens=False,
    )
    output.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def new_table(title: str | None = None) -> Table:
    """A table of results without box characters, so that a list fits in 80 columns and each
    row is one line on a pipe."""
    from rich.table import Table

    return Table(
        title=title,
        box=None,
        title_justify="left",
        pad_edge=False,
    )


def show_table(table: Table) -> None:
    """Print a table on stdout; a cell too long for the output folds rather than being cut."""
    for column in table.columns:
        column.overflow = "fold"
    output.print(table, width=output_width())


def show_json(document: Mapping[str, Any]) -> None:
    import json

    output.print_json(json.dumps(document))


def load_settings() -> Settings:
    """The settings of this process, or exit 2 with a line per problem in the environment."""
    from app.settings import ConfigurationError, get_settings

    try:
        return get_settings()
    except ConfigurationError as error:
        for problem in error.problems:
            console.print(
                f"configuration error: {problem}", style="red", markup=False, soft_wrap=True
            )
        raise typer.Exit(2) from None


def log_as_a_command(settings: Settings) -> None:
    """Log warnings and errors only, as text on stderr, so they do not bury the output."""
    from app.logs import configure_logging

    configure_logging(settings, command=True)


@contextmanager
def database(settings: Settings, *, writes: bool) -> Iterator[tuple[Engine, sessionmaker[Session]]]:
    """An engine on a reachable database at the current schema for the block, or a clear
    exit. A command that ``writes`` first gives a database with no tables the newest schema."""
    from app.db.engine import make_engine, make_session_factory
    from app.db.migrate import create_schema_if_empty, head_revision, require_current_schema

    with database_errors(settings.database_url):
        engine = make_engine(
            settings.database_url,
            sqlite_busy_timeout_seconds=settings.sqlite_busy_timeout_seconds,
        )
    try:
        with database_errors(settings.database_url):
            if writes and create_schema_if_empty(engine, settings.database_url):
                console.print(
                    f"the database had no tables: created the newest schema ({head_revision()})",
                    markup=False,
                )
            require_current_schema(engine)
        yield engine, make_session_factory(engine, for_writes=True)
    finally:
        engine.dispose()


@contextmanager
def database_session(settings: Settings, *, writes: bool) -> Iterator[Session]:
    """One session on the :func:`database`, committed unless the block raises."""
    from app.db.engine import session_scope

    with database(settings, writes=writes) as (_engine, factory), session_scope(factory) as session:
        yield session


@contextmanager
def database_errors(database_url: str) -> Iterator[None]:
    """A database that cannot be opened, reached or migrated ends the command with one line
    on stderr (password hidden) and exit 1."""
    from alembic.util import CommandError
    from sqlalchemy.exc import DBAPIError

    from app.db.engine import DatabaseUrlError, shown, unusable_database
    from app.db.migrate import SchemaNotCurrentError

    try:
        yield
    except (DatabaseUrlError, SchemaNotCurrentError) as error:
        fail(str(error))
    except DBAPIError as error:
        fail(unusable_database(error, database_url))
    except CommandError as error:
        fail(f"cannot migrate the database {shown(database_url)}: {error}")


def fail(message: str, *, code: int = 1) -> NoReturn:
    """End the command with ``message`` on stderr, without markup or wrapping."""
    console.print(message, style="red", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def split_list(value: str | None) -> tuple[str, ...] | None:
    """``"E0, SP1"`` as ``("E0", "SP1")``; nothing given (or only blanks) is ``None``."""
    if value is None or not value.strip():
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())
