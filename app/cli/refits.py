"""``oddsboost refit`` and ``oddsboost scheduler``."""

from __future__ import annotations

import datetime as dt
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
from app.domain.vocabulary import FitTarget


def _parse_until(value: str | None) -> dt.datetime | None:
    from app.domain.records import as_utc

    if value is None:
        return None
    try:
        return as_utc(dt.datetime.fromisoformat(value))
    except ValueError as error:
        fail(f"--until: {error} (use ISO 8601, e.g. 2019-06-01T00:00:00Z)", code=2)


def refit_command(
    until: Annotated[
        str | None,
        typer.Option(help="Pretend 'now' is this ISO 8601 moment (backtests); default: now."),
    ] = None,
    run_id: Annotated[
        int | None, typer.Option(help="Carry out this queued run (used by POST /admin/refit).")
    ] = None,
    fit_target: Annotated[
        FitTarget | None,
        typer.Option(
            help="Fit toward the results or Pinnacle's closing line; default: "
            "ODDSBOOST_REFIT_FIT_TARGET."
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Refit the model once. Exits 0 when it succeeded, was rejected or was skipped."""
    from app.domain.vocabulary import RunStatus, RunTrigger
    from app.logs import configure_logging
    from app.services import refit

    settings = load_settings()
    if fit_target is not None:
        settings = settings.model_copy(update={"refit_fit_target": fit_target})
    if run_id is None:
        log_as_a_command(settings)
    else:
        configure_logging(settings)  # a run of the server's: its lines join the server's log
    moment = _parse_until(until)
    try:
        with database(settings, writes=True) as (engine, _sessions):
            outcome = refit.run_refit(
                engine,
                settings,
                trigger=RunTrigger.API if run_id else RunTrigger.CLI,
                until=moment,
                run_id=run_id,
            )
    except refit.RefitError as error:
        fail(str(error))
    if as_json:
        show_json(
            {
                "run_id": outcome.run_id,
                "status": outcome.status,
                "message": outcome.message,
                "version_id": outcome.version_id,
            }
        )
    else:
        say(f"refit run {outcome.run_id} {outcome.status}: {outcome.message}")
    if outcome.status == RunStatus.FAILED:
        raise typer.Exit(1)


def scheduler_command(
    run_now: Annotated[
        bool,
        typer.Option("--run-now", help="Refit once at start too; every job keeps its schedule."),
    ] = False,
) -> None:
    """Run the service's six jobs, each on its own cron (UTC), until SIGTERM or SIGINT.

    - the refit: ODDSBOOST_REFIT_CRON (default 0 3 * * *);
    - the track record, logging each match that kicked off as it was served:
      ODDSBOOST_TRACK_RECORD_CRON (default every 5 minutes; empty: off);
    - The Odds API feed: ODDSBOOST_ODDS_API_CRON (unset: off);
    - the closing line, The Odds API again for the sports with a kickoff in the next
      ODDSBOOST_CLOSING_LINE_MINUTES (15): ODDSBOOST_CLOSING_LINE_CRON (unset: off);
    - the Football-Data.co.uk feed: ODDSBOOST_FOOTBALL_DATA_CRON (unset: off);
    - thinning the price history of old matches, as `oddsboost quotes thin` does:
      ODDSBOOST_QUOTE_HISTORY_CRON (unset: off).

    A job that fails is logged (a refit or a fetch is also recorded as a failed run);
    the others keep their schedules.
    """
    from app.logs import configure_logging
    from app.services import scheduling

    settings = load_settings()
    configure_logging(settings)
    with database(settings, writes=True) as (engine, _sessions):
        scheduling.run_scheduler(engine, settings, run_now=run_now)
