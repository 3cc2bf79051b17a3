"""``oddsboost teams alias`` and ``oddsboost teams unalias``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import (
    AsJson,
    console,
    database_session,
    fail,
    load_settings,
    log_as_a_command,
    say,
    show_json,
)
from app.domain.wording import counted

if TYPE_CHECKING:
    from app.services.teams import MergePreview, UnaliasReport

teams_cli = typer.Typer(
    help="Team aliases: other sources' names for stored teams.", no_args_is_help=True
)


@teams_cli.command("alias")
def add_alias(
    alias: Annotated[
        str, typer.Argument(help="The other source's name, e.g. 'Manchester United'.")
    ],
    team: Annotated[str, typer.Argument(help="The stored team, e.g. 'Man United'.")],
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Merge a team stored as ALIAS even though the two look like two teams (in a "
            "season both played, they share no competition).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Map ALIAS to TEAM for every ingest; a team already stored as ALIAS is merged into TEAM
    (what moves is shown first)."""
    from app.services import teams
    from app.services.flags import FlagTerms

    settings = load_settings()
    log_as_a_command(settings)
    try:
        with database_session(settings, writes=True) as session:
            report = teams.add_alias(
                session,
                alias=alias,
                team=team,
                confirm=yes,
                dry_run=dry_run,
                window=FlagTerms.of(settings).closing_window,
            )
    except teams.MergeNeedsConfirmationError as error:
        if as_json:
            show_json({"error": str(error), "preview": dataclasses.asdict(error.preview)})
        else:
            _print_preview(error.preview)
        console.print(f"{error}; run again with --yes to merge them anyway", soft_wrap=True)
        raise typer.Exit(1) from None
    except (teams.TeamNotFoundError, teams.AliasConflictError, ValueError) as error:
        fail(str(error))
    if as_json:
        show_json(dataclasses.asdict(report))
        return
    if report.preview is not None:
        _print_preview(report.preview)
    if report.dry_run:
        say("dry run: nothing was changed")
    elif not report.created:
        say(f"{report.alias!r} already maps to {report.team!r}")
    elif report.merged_team:
        say(
            f"{report.alias!r} now maps to {report.team!r}; merged the team stored under that "
            f"name: {counted(report.matches_moved, 'match')} moved, "
            f"{report.matches_merged} merged, {counted(report.quotes_moved, 'quote')} moved"
        )
    else:
        say(f"{report.alias!r} now maps to {report.team!r}")


@teams_cli.command("unalias")
def remove_alias(
    alias: Annotated[str, typer.Argument(help="The alias to remove.")], as_json: AsJson = False
) -> None:
    """Remove an alias; if adding it merged a team, restore that team with the matches that
    moved over (matches merged into the other team's keep the quotes of both)."""
    from app.services import teams

    settings = load_settings()
    log_as_a_command(settings)
    try:
        with database_session(settings, writes=True) as session:
            report = teams.remove_alias(session, alias)
    except (teams.TeamNotFoundError, teams.AliasConflictError) as error:
        fail(str(error))
    if as_json:
        show_json(dataclasses.asdict(report))
        return
    say(f"removed alias {alias!r}")
    if report.restored_team:
        _print_undo(report)


def _print_preview(preview: MergePreview) -> None:
    say(
        f"merging the team {preview.merged_team!r} into {preview.team!r} moves "
        f"{counted(preview.matches_moved, 'match')} with "
        f"{counted(preview.quotes_moved_with_matches, 'quote')}, and merges "
        f"{preview.matches_merged} into matches {preview.team!r} already has "
        f"({counted(preview.quotes_moved, 'quote')} moved to them, {preview.quotes_dropped} "
        "they already had)"
    )
    for part in preview.competitions:
        say(
            f"{preview.merged_team!r} played {part.competition} {part.season}: "
            f"{counted(part.matches, 'match')}",
            indent=2,
        )


def _print_undo(report: UnaliasReport) -> None:
    say(
        f"restored the team {report.alias!r}: {counted(report.matches_moved_back, 'match')} "
        f"moved back from {report.team!r}"
    )
    lines = [f"its aliases again: {name!r}" for name in report.aliases_moved_back]
    lines += [
        f"match {item.match_id if item.match_id is not None else '(deleted)'} not moved back: "
        f"{item.reason}"
        for item in report.not_moved_back
    ]
    lines += [
        f"match {match_id} stays merged: it keeps the quotes of both teams' matches, which "
        "cannot be split again (correct it by hand, or delete it with `oddsboost matches "
        "delete`)"
        for match_id in report.merged_matches
    ]
    for line in lines:
        say(line, indent=2)
