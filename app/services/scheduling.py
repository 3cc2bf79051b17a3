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
from typing import TypeVar

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import Engine

from app.db.orm import Clock, utcnow
from app.domain.vocabulary import RunStatus, RunTrigger
from app.services.refit import run_refit
from app.settings import Settings

log = logging.getLogger(__name__)

SchedulerT = TypeVar("SchedulerT", bound=BaseScheduler)

# Each job: a run that falls due while the previous one still runs, or several that fell
# due while the process was stopped or asleep, make one run, unless it is over an hour late.
JOB_OPTIONS: dict[str, bool | int] = {
    "coalesce": True,
    "max_instances": 1,
    "misfire_grace_time": 3600,
}


def scheduled_refit(
    engine: Engine, settings: Settings, *, should_stop: Callable[[], bool], clock: Clock = utcnow
) -> None:
    """One scheduled refit, and the job's line that says how it ended: an error when it
    failed. (The scheduler's own "executed successfully" line would say nothing true about
    the refit; the logging configuration leaves it out.)"""
    log.info("scheduled refit starting")
    try:
        outcome = run_refit(
            engine, settings, trigger=RunTrigger.SCHEDULER, should_stop=should_stop, clock=clock
        )
    except Exception:
        # The run could not even be recorded (the database is down, say).
        log.exception("scheduled refit failed before it was recorded; the next one is on schedule")
        return
    level = logging.ERROR if outcome.status == RunStatus.FAILED else logging.INFO
    log.log(level, "scheduled refit run %s %s: %s", outcome.run_id, outcome.status, outcome.message)


def build_scheduler(
    engine: Engine,
    settings: Settings,
    *,
    should_stop: Callable[[], bool],
    clock: Clock = utcnow,
    run_now: bool = False,
    into: SchedulerT,
) -> SchedulerT:
    """``into``, a scheduler not started, with the service's jobs: the refit, and each job
    the settings give a cron. Each job is its function with its arguments, the clock among
    them: the moments the service's data records (what a refit is fitted up to and when its
    version became active, when a quote was received, what kicked off) are read from
    ``clock``; the runs' own start and end times are the real ones."""
    scheduler = into

    def add(
        job_id: str,
        name: str,
        function: Callable[..., None],
        cron: str,
        extra: dict[str, object] | None = None,
        first_run: dt.datetime | None = None,
    ) -> None:
        scheduler.add_job(
            function,
            CronTrigger.from_crontab(cron, timezone=dt.UTC),
            args=(engine, settings),
            kwargs={"clock": clock, **(extra or {})},
            id=job_id,
            name=name,
            **JOB_OPTIONS,
            **({} if first_run is None else {"next_run_time": first_run}),
        )

    add(
        "refit",
        "refit",
        scheduled_refit,
        settings.refit_cron,
        {"should_stop": should_stop},
        clock() if run_now else None,
    )
    if settings.odds_api_cron is not None:
        from app.services.odds_api_feed import scheduled_fetch as scheduled_odds_api_fetch

        add("the-odds-api", "the-odds-api", scheduled_odds_api_fetch, settings.odds_api_cron)
    if settings.track_record_cron is not None:
        from app.services.track_record import track_record_job

        add("track-record", "track record", track_record_job, settings.track_record_cron)
    if settings.football_data_cron:
        from app.services.football_data_feed import scheduled_football_data_fetch

        add(
            "football-data",
            "football-data fetch",
            scheduled_football_data_fetch,
            settings.football_data_cron,
        )
    return scheduler


def run_scheduler(engine: Engine, settings: Settings, *, run_now: bool = False) -> None:
    """Block until SIGTERM or SIGINT. A refit in progress then stops at its next checkpoint,
    is recorded as failed ("stopped by a shutdown"), and releases the lock before exit."""
    stopping = threading.Event()
    scheduler = build_scheduler(
        engine,
        settings,
        should_stop=stopping.is_set,
        run_now=run_now,
        into=BlockingScheduler(timezone=dt.UTC),
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
