"""``oddsboost track-record rebuild``: log the past matches the track record lacks."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Annotated

import typer

from app.cli.common import AsJson, database, database_errors, load_settings, say, show_json

track_record_cli = typer.Typer(
    help="The track record: what was served for each match at kickoff.",
    no_args_is_help=True,
)


def _moment(text: str) -> dt.datetime:
    """A date or an ISO 8601 moment, UTC when it names no zone."""
    from app.domain.records import as_utc

    return as_utc(dt.datetime.fromisoformat(text))


@track_record_cli.command("rebuild")
def rebuild_command(
    kickoff_from: Annotated[
        dt.datetime,
        typer.Option(
            "--from",
            parser=_moment,
            metavar="DATE",
            help="Earliest kickoff (a date or ISO 8601 moment, UTC if it names no zone).",
        ),
    ],
    kickoff_to: Annotated[
        dt.datetime | None,
        typer.Option(
            "--to",
            parser=_moment,
            metavar="DATE",
            help="Kickoffs before this one (default: now).",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Log each match that kicked off in the window and is not logged yet, as it would
    have been served at kickoff: its last quotes before kickoff, the model version active
    then. Entries already logged are never rewritten. Written in chunks, each its own
    transaction: stopped half-way, a second run goes on where the first stopped."""
    from app.services import track_record

    if kickoff_to is not None and kickoff_to <= kickoff_from:
        raise typer.BadParameter("must be after --from", param_hint="--to")
    settings = load_settings()
    with (
        database(settings, writes=True) as (_engine, sessions),
        database_errors(settings.database_url),
    ):
        done = track_record.rebuild_in_chunks(
            sessions,
            settings,
            kickoff_from=kickoff_from,
            kickoff_to=kickoff_to,
            now=dt.datetime.now(dt.UTC),
        )
    if as_json:
        show_json(dataclasses.asdict(done))
    else:
        say(str(done))
