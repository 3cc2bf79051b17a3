"""``oddsboost fetch``: the feeds, run once from the command line (the scheduler runs them
on their schedules)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON.")] = False,
) -> None:
    """Fetch the 1X2 prices of upcoming matches from The Odds API and store them: one
    transaction per sport, the run recorded (GET /admin/fetches). Exits with 1 if any sport
    failed or was left out to keep the quota's reserve."""
    from app.cli.common import console, fail, load_settings, log_as_a_command, open_database
    from app.domain.odds_api import region_keys, sport_keys
    from app.domain.vocabulary import FetchStatus, RunTrigger
    from app.services.odds_api_feed import OddsApiKeyMissingError, fetch_the_odds_api

    settings = load_settings()
    log_as_a_command(settings)
    chosen_sports = _listed("--sports", sports, sport_keys)
    chosen_regions = _listed("--regions", regions, region_keys)
    if settings.odds_api_key is None:
        console.print("ODDSBOOST_ODDS_API_KEY is not set", style="red", markup=False)
        raise typer.Exit(2)
    engine, factory = open_database(settings, writes=True)
    try:
        outcome = fetch_the_odds_api(
            factory,
            settings,
            trigger=RunTrigger.CLI,
            sports=chosen_sports,
            regions=chosen_regions,
        )
    except OddsApiKeyMissingError as error:
        fail(str(error), code=2)
    finally:
        engine.dispose()
    _show(outcome, as_json=as_json)
    if outcome.status is FetchStatus.FAILED:
        raise typer.Exit(1)


def _listed(
    option: str, value: str | None, check: Callable[[list[str]], tuple[str, ...]]
) -> tuple[str, ...] | None:
    """A comma-separated option, checked; None when not given. A bad one ends the command
    with exit 2, naming the option."""
    from app.cli.common import console

    if value is None:
        return None
    try:
        return check(value.split(","))
    except ValueError as error:
        console.print(f"{option}: {error}", style="red", markup=False)
        raise typer.Exit(2) from None


def _show(outcome: OddsApiFetch, *, as_json: bool) -> None:
    import dataclasses
    import json

    from rich.table import Table

    from app.cli.common import output

    if as_json:
        output.print_json(
            json.dumps(
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
        )
        return
    table = Table(title=f"The Odds API fetch run {outcome.run_id}: {outcome.status.value}")
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
    output.print(table)
    quota = outcome.counts
    output.print(
        f"{quota.requests} requests sent; quota: "
        f"{'unknown' if quota.quota_remaining is None else quota.quota_remaining} remaining, "
        f"{'unknown' if quota.quota_used is None else quota.quota_used} used",
        soft_wrap=True,
    )
    if outcome.error is not None:
        output.print(f"failed: {outcome.error}", style="red", markup=False, soft_wrap=True)
