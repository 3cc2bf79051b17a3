"""``oddsboost scheduler``: the refit, the track record, the feeds, the closing line and the
thinning of the price history on their cron schedules.

Several schedulers may run at once: each kind's run lock lets one of them run and records
the others as ``skipped``.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import ParamSpec, TypeVar

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import Engine

from app.db.orm import Clock, utcnow
from app.services.closing_line import closing_line_job
from app.services.football_data_feed import football_data_job
from app.services.odds_api_feed import odds_api_job
from app.services.quote_history import quote_history_job
from app.services.refit import refit_job
from app.services.run_bounds import Stop
from app.services.track_record import track_record_job
from app.settings import Settings

log = logging.getLogger(__name__)

SchedulerT = TypeVar("SchedulerT", bound=BaseScheduler)
JobParameters = ParamSpec("JobParameters")
JOBS_LEFT_RUNNING = 1  # the exit status

# Runs that fall due while one still runs, or while the process was asleep, make one run,
# unless it is over an hour late.
JOB_OPTIONS: dict[str, bool | int] = {
    "coalesce": True,
    "max_instances": 1,
    "misfire_grace_time": 3600,
}


class RunningJobs:
    """The jobs running now, so that a shutdown can wait for them to end."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def counting(self, function: Callable[JobParameters, None]) -> Callable[JobParameters, None]:
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
        with self._changed:
            return self._changed.wait_for(lambda: self._count == 0, timeout=seconds)


@dataclass(frozen=True, slots=True)
class Job:
    """A job: its name, the setting of its cron (unset: off), and its function, called with
    the engine, the settings, the clock and (``stoppable``) the process's :class:`Stop`."""

    name: str
    cron_setting: str
    run: Callable[..., None]
    stoppable: bool = True


JOBS = (
    Job("refit", "refit_cron", refit_job),
    Job("track-record", "track_record_cron", track_record_job, stoppable=False),
    Job("the-odds-api", "odds_api_cron", odds_api_job),
    Job("closing-line", "closing_line_cron", closing_line_job),
    Job("football-data", "football_data_cron", football_data_job),
    Job("quote-history", "quote_history_cron", quote_history_job),
)


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
    """``into``, a scheduler not started, with each of :data:`JOBS` the settings give a
    cron (``run_now``: the refit at once too). The moments the jobs record in the data are
    read from ``clock``; their runs' own start and end times are the real ones."""
    for job in JOBS:
        cron = getattr(settings, job.cron_setting)
        if not cron:
            continue
        now = run_now and job.name == "refit"
        into.add_job(
            job.run if running is None else running.counting(job.run),
            CronTrigger.from_crontab(cron, timezone=dt.UTC),
            args=(engine, settings),
            kwargs={"clock": clock} | ({"stop": stop} if job.stoppable else {}),
            id=job.name,
            name=job.name,
            **JOB_OPTIONS,
            **({"next_run_time": clock()} if now else {}),
        )
    return into


def run_scheduler(engine: Engine, settings: Settings, *, run_now: bool = False) -> None:
    """Block until SIGTERM or SIGINT, which stops a refit at its next checkpoint and a fetch
    at once (each recorded as failed). Jobs still running ``graceful_shutdown_seconds``
    later are left (exit status 1): the next run of each kind closes them."""
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
        # The jobs are waited for below.
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
