"""``oddsboost teams alias`` and ``oddsboost teams unalias``."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.common import console, load_settings, open_database, output

teams_cli = typer.Typer(
    help="Team aliases: other sources' names for stored teams.", no_args_is_help=True
)


@teams_cli.command("alias")
def add_alias(
    alias: Annotated[
        str, typer.Argument(help="The other source's name, e.g. 'Manchester United'.")
    ],
    team: Annotated[str, typer.Argument(help="The stored team, e.g. 'Man United'.")],
) -> None:
    """Map ALIAS to TEAM for every ingest; a team already stored as ALIAS is merged into TEAM."""
    from app.db.engine import session_scope
    from app.services import teams

    settings = load_settings()
    engine, factory = open_database(settings, writes=True)
    try:
        with session_scope(factory) as session:
            report = teams.add_alias(session, alias=alias, team=team)
    except (teams.TeamNotFoundError, teams.AliasConflictError, ValueError) as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    if not report.created:
        output.print(f"{report.alias!r} already maps to {report.team!r}")
    elif report.merged_team:
        output.print(
            f"{report.alias!r} now maps to {report.team!r}; merged the team stored under that "
            f"name: {report.matches_moved} matches moved, {report.matches_merged} merged, "
            f"{report.quotes_moved} quotes moved"
        )
    else:
        output.print(f"{report.alias!r} now maps to {report.team!r}")


@teams_cli.command("unalias")
def remove_alias(alias: Annotated[str, typer.Argument(help="The alias to remove.")]) -> None:
    """Remove an alias (stored matches keep their team)."""
    from app.db.engine import session_scope
    from app.services import teams

    settings = load_settings()
    engine, factory = open_database(settings, writes=True)
    try:
        with session_scope(factory) as session:
            teams.remove_alias(session, alias)
    except teams.TeamNotFoundError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    output.print(f"removed alias {alias!r}")
