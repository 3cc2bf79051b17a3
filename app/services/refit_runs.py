"""Refit runs: recording them, starting one in its own process, and listing them.

``POST /admin/refit`` calls :func:`queue_refit`; ``run_refit`` (``app.services.refit``)
records and closes the runs it carries out with :func:`create_run` and :func:`finish_run`.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.orm import RefitRun, utcnow
from app.domain.vocabulary import RunStatus, RunTrigger
from app.services.pagination import Paged, PageWindow, paginate
from app.settings import Settings, settings_environment


class RefitNotStartedError(RuntimeError):
    """The refit process could not be started; its run is recorded as failed."""


def create_run(
    factory: sessionmaker[Session],
    *,
    trigger: RunTrigger,
    until: dt.datetime,
    status: RunStatus = RunStatus.QUEUED,
) -> int:
    with factory.begin() as session:
        run = RefitRun(trigger=trigger, status=status, until=until, started_at=utcnow())
        session.add(run)
        session.flush()
        return run.id


def finish_run(
    factory: sessionmaker[Session],
    run_id: int,
    status: RunStatus,
    message: str,
    version_id: int | None = None,
) -> None:
    with factory.begin() as session:
        session.execute(
            update(RefitRun)
            .where(RefitRun.id == run_id)
            .values(status=status, message=message, version_id=version_id, finished_at=utcnow())
        )


def start_refit_process(settings: Settings, run_id: int, until: dt.datetime) -> None:
    """Run ``oddsboost refit --run-id`` in a new process with these settings; do not wait.

    The process outlives the request (and the worker), and the refit lock keeps it from
    overlapping another refit. A thread reaps it when it exits.
    """
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
    process = subprocess.Popen(  # noqa: S603 - a fixed command line, no shell
        command,
        env={**os.environ, **settings_environment(settings)},
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
) -> int:
    """Record a queued run and start the process that carries it out; returns its id at
    once. The run is committed before the process starts, so the process finds it.

    Raises :class:`RefitNotStartedError` (the run then ends as failed) when no process
    could be started.
    """
    until = until or utcnow()
    run_id = create_run(factory, trigger=trigger, until=until)
    try:
        start_refit_process(settings, run_id, until)
    except OSError as error:
        message = f"could not start the refit process: {error}"
        finish_run(factory, run_id, RunStatus.FAILED, message)
        raise RefitNotStartedError(message) from None
    return run_id


def latest_runs(session: Session, window: PageWindow) -> Paged[RefitRun]:
    """Refit runs, newest first."""
    return paginate(session, select(RefitRun).order_by(RefitRun.id.desc()), window)


def get_run(session: Session, run_id: int) -> RefitRun | None:
    return session.get(RefitRun, run_id)
