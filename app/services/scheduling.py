"""``oddsboost scheduler``: refit on a cron schedule until told to stop.

Several schedulers may run at once (on one machine or many): the refit lock lets one of
them refit and records the others as ``skipped``, and each feed's lock does the same for
its fetches.

On SIGTERM or SIGINT the process's :class:`Stop` is set: a refit stops at its next
checkpoint, a fetch at once (its request in flight is cut). The scheduler waits for its
running jobs for ``ODDSBOOST_GRACEFUL_SHUTDOWN_SECONDS``, and exits without them after
that: the next run of each kind closes what they left running.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import ParamSpec, TypeVar

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import Engine

from app.db.orm import Clock, utcnow
from app.domain.vocabulary import RunStatus, RunTrigger
from app.services.refit import run_refit
from app.services.run_bounds import Stop
from app.settings import Settings

log = logging.getLogger(__name__)

SchedulerT = TypeVar("SchedulerT", bound=BaseScheduler)
JobParameters = ParamSpec("JobParameters")
# The exit status of a scheduler that left jobs running when it exited.
JOBS_LEFT_RUNNING = 1

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


class RunningJobs:
    """The jobs running now, counted so that a shutdown can wait for them to end."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def counting(self, function: Callable[JobParameters, None]) -> Callable[JobParameters, None]:
        """``function``, counted while it runs."""

        @functools.wraps(function)
        def counted(*args: JobParameters.args, **kwargs: JobParameters.kwargs) -> None:
            with self._changed:
                self._count += 1
            try:
                function(*args, **kwargs)
            finally:
                with self._changed:
                    self._count -= 1
                    self._changed.notify_all()

        return counted

    def wait_until_none(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for every job to end; whether they all did."""
        with self._changed:
            return self._changed.wait_for(lambda: self._count == 0, timeout=seconds)


def build_scheduler(
    engine: Engine,
    settings: Settings,
    *,
    stop: Stop,
    clock: Clock = utcnow,
    run_now: bool = False,
    into: SchedulerT,
    running: RunningJobs | None = None,
) -> SchedulerT:
    """``into``, a scheduler not started, with the service's jobs: the refit, and each job
    the settings give a cron. Each job is its function with its arguments, the clock among
    them: the moments the service's data records (what a refit is fitted up to and when its
    version became active, when a quote was received, what kicked off) are read from
    ``clock``; the runs' own start and end times are the real ones. The refit and the
    feeds end early once ``stop`` is set; ``running`` counts the jobs running."""
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
            function if running is None else running.counting(function),
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
        {"should_stop": stop.is_set},
        clock() if run_now else None,
    )
    if settings.odds_api_cron is not None:
        from app.services.odds_api_feed import scheduled_fetch as scheduled_odds_api_fetch

        add(
            "the-odds-api",
            "the-odds-api",
            scheduled_odds_api_fetch,
            settings.odds_api_cron,
            {"stop": stop},
        )
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
            {"stop": stop},
        )
    return scheduler


def run_scheduler(engine: Engine, settings: Settings, *, run_now: bool = False) -> None:
    """Block until SIGTERM or SIGINT. A refit in progress then stops at its next checkpoint,
    is recorded as failed ("stopped by a shutdown"), and releases the lock; a fetch in
    progress stops at once, recorded the same way. Jobs still running
    ``graceful_shutdown_seconds`` after the signal are left: the process exits without
    them (status 1), and the next run of each kind closes the runs they leave running."""
    stop = Stop()
    running = RunningJobs()
    scheduler = build_scheduler(
        engine,
        settings,
        stop=stop,
        run_now=run_now,
        into=BlockingScheduler(timezone=dt.UTC),
        running=running,
    )

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: stopping the scheduler", signal.Signals(signum).name)
        stop.set()
        # Do not wait here: the jobs end on their own, and are waited for below.
        scheduler.shutdown(wait=False)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "scheduler started: refit on %r (UTC)%s",
        settings.refit_cron,
        ", and now" if run_now else "",
    )
    scheduler.start()
    if not running.wait_until_none(settings.graceful_shutdown_seconds):
        log.error(
            "jobs still running %g s after the signal (ODDSBOOST_GRACEFUL_SHUTDOWN_SECONDS): "
            "exiting without them; the next run of each closes what they left running",
            settings.graceful_shutdown_seconds,
        )
        logging.shutdown()
        # The job threads would keep the interpreter from exiting: leave at once.
        os._exit(JOBS_LEFT_RUNNING)
    log.info("scheduler stopped")
