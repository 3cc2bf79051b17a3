"""``oddsboost quotes thin``."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated

import typer

from app.cli.common import (
    AsJson,
    database,
    fail,
    load_settings,
    log_as_a_command,
    say,
    show_json,
)
from app.domain.wording import counted

quotes_cli = typer.Typer(help="Stored quotes: the price history.", no_args_is_help=True)

DURATION = re.compile(r"^\s*(\d+)\s*([mhd])\s*$")
UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def duration(text: str, option: str) -> dt.timedelta:
    """``90m``, ``6h`` or ``30d`` as a duration, or exit 2 naming ``option``."""
    found = DURATION.match(text.lower())
    if found is None or int(found[1]) == 0:
        fail(
            f"{option}: {text!r} is not a duration: a whole number above 0 and m, h or d "
            "(minutes, hours, days), e.g. 6h or 30d",
            code=2,
        )
    return dt.timedelta(**{UNITS[found[2]]: int(found[1])})


@quotes_cli.command("thin")
def thin_quotes(
    interval: Annotated[
        str,
        typer.Option(
            "--interval",
            help="Keep one quote per bookmaker, phase and INTERVAL of each history (the "
            "last of each, UTC, e.g. 00:00-06:00 with 6h), besides its opening, close and "
            "latest: 90m, 6h, 1d, ...",
        ),
    ] = "6h",
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Thin the matches that kicked off more than this long ago: 30d, 12h, ...",
        ),
    ] = "30d",
    competition: Annotated[
        str | None,
        typer.Option("--competition", help="Only the matches of this competition, e.g. E0."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Count what would be removed; remove nothing."),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Thin the price history of old matches: per match, bookmaker and phase keep the
    opening, the close (the latest quote before kickoff, and the flag ledger's closing
    line), the latest quote, every undated one and the last of each interval; remove the
    rest. A batch of matches per transaction; running it again removes nothing."""
    from app.domain.quote_history import ThinningRule
    from app.services import quote_history

    settings = load_settings()
    log_as_a_command(settings)
    terms = quote_history.ThinningTerms(
        rule=ThinningRule(
            interval=duration(interval, "--interval"),
            closing_window=dt.timedelta(minutes=settings.closing_window_minutes),
        ),
        older_than=duration(older_than, "--older-than"),
        competition=competition,
        dry_run=dry_run,
    )
    try:
        with database(settings, writes=not dry_run) as (_engine, factory):
            thinned = quote_history.thin_history(factory, terms, now=dt.datetime.now(dt.UTC))
    except quote_history.UnknownCompetitionError as error:
        fail(f"--competition: {error}")
    if as_json:
        show_json(
            {
                "kicked_off_before": thinned.kicked_off_before.isoformat(),
                "matches": thinned.matches,
                "matches_thinned": thinned.matches_thinned,
                "quotes_kept": thinned.quotes_kept,
                "quotes_removed": thinned.quotes_removed,
                "dry_run": thinned.dry_run,
            }
        )
        return
    removed, kept = ("would remove", "would keep") if thinned.dry_run else ("removed", "kept")
    say(
        f"{counted(thinned.matches, 'match')} kicked off before "
        f"{thinned.kicked_off_before:%Y-%m-%d %H:%M} UTC: {removed} "
        f"{counted(thinned.quotes_removed, 'quote')} of "
        f"{counted(thinned.matches_thinned, 'match')}, {kept} "
        f"{counted(thinned.quotes_kept, 'quote')}"
    )
    if thinned.dry_run:
        say("dry run: nothing was changed")
