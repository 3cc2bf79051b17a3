"""Refit runs: recording them, starting one in its own process, and listing them."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.orm import RefitRun, utcnow
from app.domain.vocabulary import RunStatus, RunTrigger
from app.services.busy import unavailable_as_service_error
from app.services.locks import serialise_refit_requests
from app.services.pagination import Paged, PageWindow, paginate
from app.settings import SECRET_VARIABLES, Settings, settings_environment

# A queued run is claimed by its process within seconds; after this it never will be.
QUEUED_GRACE = dt.timedelta(minutes=5)


class RefitNotStartedError(RuntimeError):
    """The refit process could not be started; its run is recorded as failed."""


@dataclass(frozen=True, slots=True)
class QueuedRefit:
    """The run that answers a request to refit: a new one, or the one already under way."""

    run_id: int
    status: RunStatus  # queued or running
    started: bool  # False: a run was already queued or running, and no other was started


def create_run(
    factory: sessionmaker[Session],
    *,
    trigger: RunTrigger,
    until: dt.datetime,
    status: RunStatus = RunStatus.QUEUED,
) -> int:
    with factory.begin() as session:
        return _add_run(session, trigger=trigger, until=until, status=status)


def _add_run(
    session: Session, *, trigger: RunTrigger, until: dt.datetime, status: RunStatus
) -> int:
    run = RefitRun(trigger=trigger, status=status, until=until, started_at=utcnow())
    session.add(run)
    session.flush()
    return run.id


def finish_run(
    session: Session, run_id: int, status: RunStatus, message: str, version_id: int | None = None
) -> None:
    """Close the run, in the caller's transaction (the one that stored what it did)."""
    session.execute(
        update(RefitRun)
        .where(RefitRun.id == run_id)
        .values(status=status, message=message, version_id=version_id, finished_at=utcnow())
    )


def run_under_way(session: Session, now: dt.datetime) -> RefitRun | None:
    """The oldest run running, or queued recently enough that its process may yet claim it."""
    return session.scalar(
        select(RefitRun)
        .where(
            or_(
                RefitRun.status == RunStatus.RUNNING,
                (RefitRun.status == RunStatus.QUEUED) & (RefitRun.started_at >= now - QUEUED_GRACE),
            )
        )
        .order_by(RefitRun.id)
        .limit(1)
    )


def start_refit_process(settings: Settings, run_id: int, until: dt.datetime) -> None:
    """Start ``oddsboost refit --run-id`` in a process that outlives the request, with these
    settings but not the secrets, which a refit has no use for."""
    command = [
        sys.executable,
        "-m",
        "app",
        "refit",
        "--run-id",
        str(run_id),
        "--until",
        until.isoformat(),
    ]
    inherited = {name: value for name, value in os.environ.items() if name not in SECRET_VARIABLES}
    process = subprocess.Popen(  # noqa: S603 - a fixed command line, no shell
        command,
        # It queues the alerts of the flags its activation raises; the server sends them.
        env={**inherited, **settings_environment(settings), "ODDSBOOST_ALERT_SENDER": "false"},
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    threading.Thread(target=process.wait, name=f"refit-{run_id}", daemon=True).start()


def queue_refit(
    factory: sessionmaker[Session],
    settings: Settings,
    *,
    trigger: RunTrigger,
    until: dt.datetime | None = None,
) -> QueuedRefit:
    """Record a queued run, committed before its process starts so that the process finds
    it; or answer with the run already under way, so that requests never pile up processes."""
    until = until or utcnow()
    with unavailable_as_service_error(), factory.begin() as session:
        serialise_refit_requests(session)
        under_way = run_under_way(session, utcnow())
        if under_way is not None:
            return QueuedRefit(under_way.id, RunStatus(under_way.status), started=False)
        run_id = _add_run(session, trigger=trigger, until=until, status=RunStatus.QUEUED)
    try:
        start_refit_process(settings, run_id, until)
    except OSError as error:
        message = f"could not start the refit process: {error}"
        with factory.begin() as session:
            finish_run(session, run_id, RunStatus.FAILED, message)
        raise RefitNotStartedError(message) from None
    return QueuedRefit(run_id, RunStatus.QUEUED, started=True)


def latest_runs(session: Session, window: PageWindow) -> Paged[RefitRun]:
    """Refit runs, newest first."""
    return paginate(session, select(RefitRun).order_by(RefitRun.id.desc()), window)


def get_run(session: Session, run_id: int) -> RefitRun | None:
    return session.get(RefitRun, run_id)
