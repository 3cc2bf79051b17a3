"""``oddsboost scheduler``: refit on a cron schedule until told to stop.

Several schedulers may run at once (on one machine or many): the refit lock lets one of
them refit and records the others as ``skipped``.
"""

from __future__ import annotations

import datetime as dt
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType

from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import Engine

from app.domain.vocabulary import RunStatus, RunTrigger
from app.services.refit import run_refit
from app.settings import Settings

log = logging.getLogger(__name__)


def scheduled_refit(engine: Engine, settings: Settings, *, should_stop: Callable[[], bool]) -> None:
    """One scheduled refit, and the job's line that says how it ended: an error when it
    failed. (The scheduler's own "executed successfully" line would say nothing true about
    the refit; the logging configuration leaves it out.)"""
    log.info("scheduled refit starting")
    try:
        outcome = run_refit(engine, settings, trigger=RunTrigger.SCHEDULER, should_stop=should_stop)
    except Exception:
        # The run could not even be recorded (the database is down, say).
        log.exception("scheduled refit failed before it was recorded; the next one is on schedule")
        return
    level = logging.ERROR if outcome.status == RunStatus.FAILED else logging.INFO
    log.log(level, "scheduled refit run %s %s: %s", outcome.run_id, outcome.status, outcome.message)


def run_scheduler(engine: Engine, settings: Settings, *, run_now: bool = False) -> None:
    """Block until SIGTERM or SIGINT. A refit in progress then stops at its next checkpoint,
    is recorded as failed ("stopped by a shutdown"), and releases the lock before exit."""
    stopping = threading.Event()
    scheduler = BlockingScheduler(
        timezone=dt.UTC,
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600},
    )

    def refit_job() -> None:
        scheduled_refit(engine, settings, should_stop=stopping.is_set)

    options: dict[str, dt.datetime] = {}
    if run_now:
        options["next_run_time"] = dt.datetime.now(dt.UTC)
    scheduler.add_job(
        refit_job,
        CronTrigger.from_crontab(settings.refit_cron, timezone=dt.UTC),
        id="refit",
        name="refit",
        **options,
    )
    if settings.odds_api_cron is not None:
        from app.services.odds_api_feed import scheduled_fetch as scheduled_odds_api_fetch

        scheduler.add_job(
            lambda: scheduled_odds_api_fetch(engine, settings),
            CronTrigger.from_crontab(settings.odds_api_cron, timezone=dt.UTC),
            id="the-odds-api",
            name="the-odds-api",
        )

    if settings.track_record_cron is not None:
        from app.services.track_record import track_record_job

        scheduler.add_job(
            lambda: track_record_job(engine, settings),
            CronTrigger.from_crontab(settings.track_record_cron, timezone=dt.UTC),
            id="track-record",
            name="track record",
        )

    if settings.football_data_cron:
        from app.services.football_data_feed import scheduled_football_data_fetch

        scheduler.add_job(
            lambda: scheduled_football_data_fetch(engine, settings),
            CronTrigger.from_crontab(settings.football_data_cron, timezone=dt.UTC),
            id="football-data",
            name="football-data fetch",
        )

    def stop(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: stopping the scheduler", signal.Signals(signum).name)
        stopping.set()
        # Do not wait here: the job thread finishes (or stops at a checkpoint) on its own,
        # and the interpreter waits for it before the process exits.
        scheduler.shutdown(wait=False)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info(
        "scheduler started: refit on %r (UTC)%s",
        settings.refit_cron,
        ", and now" if run_now else "",
    )
    scheduler.start()
    log.info("scheduler stopped")
