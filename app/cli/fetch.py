"""``oddsboost fetch``: the feeds, run once from the command line (the scheduler runs them
on their schedules)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import (
    AsJson,
    database,
    fail,
    load_settings,
    log_as_a_command,
    new_table,
    say,
    show_json,
    show_table,
)
from app.domain.wording import counted

if TYPE_CHECKING:
    from app.services.football_data_feed import FeedOutcome
    from app.services.odds_api_feed import OddsApiFetch

fetch_cli = typer.Typer(
    help="Fetch fixtures, odds and results from a feed once, and store them.",
    no_args_is_help=True,
)


@fetch_cli.command("the-odds-api")
def the_odds_api(
    sports: Annotated[
        str | None,
        typer.Option(
            help="Sport keys, comma-separated (default: ODDSBOOST_ODDS_API_SPORTS), e.g. "
            "soccer_epl,soccer_germany_bundesliga."
        ),
    ] = None,
    regions: Annotated[
        str | None,
        typer.Option(
            help="Regions, comma-separated (default: ODDSBOOST_ODDS_API_REGIONS): uk, eu, us, "
            "us2, au. Each costs one credit per sport."
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Fetch the 1X2 prices of upcoming matches from The Odds API and store them: one
    transaction per sport, the run recorded (GET /admin/fetches). Exits with 1 if any sport
    failed or was left out to keep the quota's reserve."""
    from app.domain.odds_api import region_keys, sport_keys
    from app.domain.vocabulary import FetchStatus, RunTrigger
    from app.services.odds_api_feed import fetch_the_odds_api

    settings = load_settings()
    log_as_a_command(settings)
    chosen_sports = _listed("--sports", sports, sport_keys)
    chosen_regions = _listed("--regions", regions, region_keys)
    if settings.odds_api_key is None:
        fail("ODDSBOOST_ODDS_API_KEY is not set", code=2)
    with database(settings, writes=True) as (_engine, sessions):
        outcome = fetch_the_odds_api(
            sessions,
            settings,
            trigger=RunTrigger.CLI,
            sports=chosen_sports,
            regions=chosen_regions,
        )
    _show(outcome, as_json=as_json)
    if outcome.status is FetchStatus.FAILED:
        raise typer.Exit(1)


def _listed(
    option: str, value: str | None, check: Callable[[list[str]], tuple[str, ...]]
) -> tuple[str, ...] | None:
    """A comma-separated option, checked; None when not given. A bad one ends the command
    with exit 2, naming the option."""
    if value is None:
        return None
    try:
        return check(value.split(","))
    except ValueError as error:
        fail(f"{option}: {error}", code=2)


def _show(outcome: OddsApiFetch, *, as_json: bool) -> None:
    from app.domain.vocabulary import FetchStatus

    if as_json:
        show_json(
            {
                "run_id": outcome.run_id,
                "status": outcome.status.value,
                "error": outcome.error,
                **dataclasses.asdict(outcome.counts),
                "sports": [
                    {"sport": s.sport, "error": s.error, **dataclasses.asdict(s.counts)}
                    for s in outcome.sports
                ],
            }
        )
        return
    table = new_table(f"The Odds API fetch run {outcome.run_id}: {outcome.status.value}")
    for name in ("sport", "requests", "matches", "quotes", "skipped", "error"):
        table.add_column(name, justify="left" if name in ("sport", "error") else "right")
    for sport in outcome.sports:
        counts = sport.counts
        table.add_row(
            sport.sport,
            str(counts.requests),
            str(counts.matches),
            str(counts.quotes),
            str(counts.skipped),
            sport.error or "",
        )
    show_table(table)
    quota = outcome.counts
    say(
        f"{counted(quota.requests, 'request')} sent; quota: "
        f"{'unknown' if quota.quota_remaining is None else quota.quota_remaining} remaining, "
        f"{'unknown' if quota.quota_used is None else quota.quota_used} used"
    )
    if outcome.status is FetchStatus.SKIPPED:
        say(f"skipped: {outcome.error}")
    elif outcome.error is not None:
        say(f"failed: {outcome.error}")


@fetch_cli.command("football-data")
def fetch_football_data(
    leagues: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated league codes: main leagues (E0, SP1, ...) and extra ones "
            "(BRA, USA, ...); default: ODDSBOOST_FOOTBALL_DATA_LEAGUES."
        ),
    ] = None,
    season: Annotated[
        str,
        typer.Option(
            help="The main leagues' season: current (the August-July season of today) or "
            "2025/26. An extra league's file holds all its seasons."
        ),
    ] = "current",
    as_json: AsJson = False,
) -> None:
    """Download the Football-Data.co.uk files of some leagues that changed since the last
    fetch, and import each in its own transaction. Exits 1 if a file failed (or the run
    ended early: its deadline, a stop); 0 when skipped because another fetch was running."""
    import datetime as dt

    from app.domain.football_data_feed import UnknownLeagueError
    from app.domain.vocabulary import FetchStatus, RunTrigger
    from app.services.football_data_feed import FeedRequest
    from app.services.football_data_feed import fetch_football_data as fetch

    settings = load_settings()
    log_as_a_command(settings)
    today = dt.datetime.now(dt.UTC).date()
    try:
        request = FeedRequest.of(settings, leagues=leagues, season=season, today=today)
    except UnknownLeagueError as error:
        fail(f"--leagues: {error}", code=2)
    except ValueError as error:
        fail(f"--season: {error}", code=2)
    with database(settings, writes=True) as (_engine, sessions):
        outcome = fetch(sessions, settings, request, trigger=RunTrigger.CLI)
    if as_json:
        show_json(_outcome_json(outcome))
    else:
        _print_outcome(outcome)
    if outcome.status is FetchStatus.FAILED:
        raise typer.Exit(1)


def _outcome_json(outcome: FeedOutcome) -> dict[str, object]:
    return {
        "run_id": outcome.run_id,
        "status": outcome.status.value,
        "error": outcome.error or outcome.skipped,
        "documents": [
            {
                "path": document.path,
                "status": document.status.value,
                **dataclasses.asdict(document.counts),
                "error": document.error,
                "url": document.url,
            }
            for document in outcome.documents
        ],
        "total": dataclasses.asdict(outcome.counts),
    }


def _print_outcome(outcome: FeedOutcome) -> None:
    if outcome.skipped is not None:
        say(f"fetch run {outcome.run_id} skipped: {outcome.skipped}")
        return
    table = new_table(f"fetch run {outcome.run_id}")
    columns = ("file", "status", "requests", "matches", "quotes", "results", "skipped")
    for name in columns:
        table.add_column(name, justify="left" if name in ("file", "status") else "right")
    for document in outcome.documents:
        counts = document.counts
        numbers = (counts.requests, counts.matches, counts.quotes, counts.results, counts.skipped)
        table.add_row(document.path, document.status.value, *(str(n) for n in numbers))
    show_table(table)
    for document in outcome.documents:
        if document.error is not None:
            say(f"failed {document.path}: {document.error}")
    if outcome.ended_early is not None:
        say(f"ended early: {outcome.ended_early}")
    status = outcome.status.value
    counts = outcome.counts
    say(
        f"fetch run {outcome.run_id} {status}: {counts.changed} of "
        f"{counted(len(outcome.documents), 'file')} changed; "
        f"{counted(counts.matches, 'new match')}, {counted(counts.quotes, 'quote')}, "
        f"{counted(counts.results, 'result')} stored"
    )
