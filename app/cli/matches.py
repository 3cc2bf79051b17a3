"""``oddsboost matches delete``."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.common import database_session, fail, load_settings, say
from app.domain.wording import counted

matches_cli = typer.Typer(help="Stored matches: corrections.", no_args_is_help=True)


@matches_cli.command("delete")
def delete_match(
    match_id: Annotated[int, typer.Argument(metavar="ID", min=1, help="The match's id.")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete it even if a stored model version was trained on it (its kickoff is "
            "inside the version's data window).",
        ),
    ] = False,
) -> None:
    """Delete a match and its quotes: a duplicate, or a match that was never played."""
    from app.domain.records import MAX_ID
    from app.services import matches

    if match_id > MAX_ID:
        fail(f"ID: {match_id} is not an id: ids go up to {MAX_ID}", code=2)
    settings = load_settings()
    try:
        with database_session(settings, writes=True) as session:
            deleted = matches.delete_match(session, match_id, force=force)
    except matches.MatchNotFoundError as error:
        fail(str(error))
    except matches.MatchTrainedOnError as error:
        fail(f"{error}; pass --force to delete it anyway")
    except matches.MatchHasBetsError as error:
        fail(str(error))
    say(
        f"deleted match {deleted.id} ({deleted.competition} {deleted.season}, "
        f"{deleted.home_team} v {deleted.away_team}, {deleted.kickoff:%Y-%m-%d}) and its "
        f"{counted(deleted.quotes_deleted, 'quote')}"
    )
    if deleted.model_versions:
        versions = ", ".join(str(v) for v in deleted.model_versions)
        say(f"model versions trained on it: {versions}")
