"""The nightly refit: learn how much to trust each bookmaker from recent settled matches.

``run_refit`` serves ``oddsboost refit``, the scheduler and ``POST /admin/refit``. It records
the run, takes the refit lock (a concurrent refit is ``skipped``), fits, validates and stores
a new version, active at once unless the promotion rule refuses it. A failure leaves the
active version alone and records a ``failed`` run whose message says what to do.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy import Engine, update
from sqlalchemy.orm import Session, sessionmaker

import app as package
from app.db.engine import make_session_factory
from app.db.orm import Clock, ModelVersion, RefitRun, utcnow
from app.domain.ensemble import ALGORITHM
from app.domain.fitting import Fit, FitError, FitOptions, fit_ensemble, methods_to_try
from app.domain.training import TrainingSet
from app.domain.validation import compare_with_active, promotion_refusal, validation_report
from app.domain.version_records import TargetCounts, fit_report, pool_of
from app.domain.vocabulary import ActivatedBy, RunStatus, RunTrigger
from app.domain.wording import counted
from app.services.flags import FlagTerms, record_upcoming_flags
from app.services.locks import RunLock, refit_lock
from app.services.model_versions import (
    activate,
    active_version,
    ensemble_of,
    load_tables,
    newest_settled_kickoff,
)
from app.services.refit_runs import QUEUED_GRACE, create_run, finish_run
from app.services.run_bounds import ABANDONED, STOPPED, Stop
from app.settings import Settings

log = logging.getLogger(__name__)


class RefitError(RuntimeError):
    """A refit that cannot proceed; the message says what to do about it."""


class RefitCancelledError(RuntimeError):
    """The process was asked to stop before the refit finished."""


@dataclass(frozen=True)
class RefitOutcome:
    run_id: int
    status: RunStatus  # succeeded, rejected, failed or skipped
    message: str
    version_id: int | None = None


def run_refit(
    engine: Engine,
    settings: Settings,
    *,
    trigger: RunTrigger,
    until: dt.datetime | None = None,
    run_id: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    clock: Clock = utcnow,
) -> RefitOutcome:
    """Refit once, up to ``until`` (default: ``clock``'s now). A failed fit is recorded, not
    raised; ``RefitError`` only when ``run_id`` is unknown or finished."""
    ends_now = until is None
    until = until or clock()
    factory = make_session_factory(engine, for_writes=True)
    if run_id is None:
        run_id = create_run(factory, trigger=trigger, until=until, status=RunStatus.RUNNING)
    else:
        _claim_run(factory, run_id, until)
    with refit_lock(engine) as lock:
        if not lock.taken:
            message = "another refit is running; this one did nothing"
            log.info("refit %s skipped: %s", run_id, message)
            return _ended(factory, run_id, RunStatus.SKIPPED, message)
        _abandon_stale_runs(factory, run_id)
        try:
            outcome = _refit(
                factory,
                settings,
                run_id=run_id,
                until=until,
                ends_now=ends_now,
                should_stop=should_stop,
                lock=lock,
                clock=clock,
            )
        except RefitCancelledError:
            message = f"{STOPPED}; the active model is unchanged"
            return _ended(factory, run_id, RunStatus.FAILED, message)
        except RefitError as error:
            log.warning("refit %s failed: %s", run_id, error)
            return _ended(factory, run_id, RunStatus.FAILED, str(error))
        except Exception as error:
            log.exception("refit %s failed", run_id)
            message = (
                f"{type(error).__name__}: {error}. The active model is unchanged; see the "
                "refit's log for the traceback, fix the cause and run `oddsboost refit` again."
            )
            return _ended(factory, run_id, RunStatus.FAILED, message)
    log.info("refit %s %s: %s", run_id, outcome.status, outcome.message)
    return outcome


def _ended(
    factory: sessionmaker[Session], run_id: int, status: RunStatus, message: str
) -> RefitOutcome:
    """A run that stored nothing, closed in a transaction of its own."""
    with factory.begin() as session:
        finish_run(session, run_id, status, message)
    return RefitOutcome(run_id, status, message)


def _claim_run(factory: sessionmaker[Session], run_id: int, until: dt.datetime) -> None:
    with factory.begin() as session:
        run = session.get(RefitRun, run_id)
        if run is None:
            raise RefitError(f"no refit run {run_id}")
        if run.status.is_final:
            raise RefitError(f"refit run {run_id} has already finished ({run.status})")
        run.status, run.until = RunStatus.RUNNING, until
        run.host, run.pid = socket.gethostname()[:255], os.getpid()


def _abandon_stale_runs(factory: sessionmaker[Session], current: int) -> None:
    """Close the runs of processes that died: running while we hold the lock, or queued
    and never claimed."""
    now = utcnow()
    with factory.begin() as session:
        session.execute(
            update(RefitRun)
            .where(RefitRun.status == RunStatus.RUNNING, RefitRun.id != current)
            .values(status=RunStatus.FAILED, finished_at=now, message=ABANDONED)
        )
        session.execute(
            update(RefitRun)
            .where(
                RefitRun.status == RunStatus.QUEUED,
                RefitRun.id != current,
                RefitRun.started_at < now - QUEUED_GRACE,
            )
            .values(
                status=RunStatus.FAILED,
                finished_at=now,
                message="never started: its refit process did not start or stopped at once; "
                "POST /admin/refit again",
            )
        )


def _refit(
    factory: sessionmaker[Session],
    settings: Settings,
    *,
    run_id: int,
    until: dt.datetime,
    ends_now: bool,
    should_stop: Callable[[], bool],
    lock: RunLock,
    clock: Clock,
) -> RefitOutcome:
    started = time.perf_counter()
    start = until - dt.timedelta(days=settings.refit_window_days)
    with factory() as session:
        matches, quotes = load_tables(session, start=start, end=until)
    options = fit_options(settings)
    _check(should_stop)
    try:
        fit = fit_ensemble(matches, quotes, end=until.timestamp(), options=options)
    except FitError as error:
        with factory() as session:
            newest = newest_settled_kickoff(session, before=until)
        if newest is not None and newest < start:
            ending = "today" if ends_now else f"on {until:%Y-%m-%d}"
            raise RefitError(
                f"the newest settled match is {newest:%Y-%m-%d}, older than the "
                f"{settings.refit_window_days}-day window ending {ending}; pass --until "
                f"{newest + dt.timedelta(days=1):%Y-%m-%d} or widen ODDSBOOST_REFIT_WINDOW_DAYS "
                '(through the API: POST /admin/refit with that "until")'
            ) from None
        raise RefitError(
            f"{error} between {start:%Y-%m-%d} and {until:%Y-%m-%d}. Import more seasons "
            "(`oddsboost import football-data ...`), widen ODDSBOOST_REFIT_WINDOW_DAYS, or lower "
            "ODDSBOOST_REFIT_MIN_MATCHES / ODDSBOOST_REFIT_MIN_QUOTES."
        ) from None
    _check(should_stop)
    training = fit.training
    report = validation_report(fit.validation, fit.validation_proba)
    fit_seconds = time.perf_counter() - started

    with factory.begin() as session:
        if not lock.still_held(session):
            raise RefitError(
                "lost the refit lock before storing the new version (its database connection "
                "ended); nothing was stored and the active model is unchanged. Run the refit "
                "again."
            )
        current = active_version(session)
        active = None if current is None else ensemble_of(current)
        if current is not None and _refitted_alike(current, fit):
            message = f"unchanged: identical to active version {current.id}"
            finish_run(session, run_id, RunStatus.SUCCEEDED, message, current.id)
            return RefitOutcome(run_id, RunStatus.SUCCEEDED, message, current.id)
        if active is not None:
            comparison = compare_with_active(
                active, matches, quotes, fit.validation, fit.validation_proba
            )
            report = replace(report, active_version=comparison)
        version = ModelVersion(
            created_at=clock(),
            algorithm=ALGORITHM,
            method=training.method,
            phase=training.phase,
            rounds=fit.choice.rounds,
            calibration=fit.ensemble.calibration,
            window_start=start,
            window_end=until,
            n_matches=len(training),
            newest_kickoff=training.newest_kickoff,
            bookmakers=pool_of(fit.ensemble),
            rounds_grid=tuple(fit.choice.grid),
            validation=fit_report(report, fit, options),
            project_version=package.__version__[:32],
            fit_seconds=fit_seconds,
        )
        session.add(version)
        session.flush()
        refusal = promotion_refusal(fit.ensemble, report, active, settings.promotion_tolerance)
        if refusal is None:
            moment = clock()
            activate(session, version, by=ActivatedBy.REFIT, run_id=run_id, at=moment)
            record_upcoming_flags(session, moment, FlagTerms.of(settings))
            status = RunStatus.SUCCEEDED
            message = (
                f"version {version.id} is active: {counted(fit.choice.rounds, 'round')} "
                f"over {counted(len(training), 'match')}, validation log loss "
                f"{report.model.log_loss:.4f} (consensus {report.consensus.log_loss:.4f})"
            )
        else:
            version.rejected_reason = (
                f"{refusal}; activate it with `oddsboost models activate {version.id}` if that "
                "is what you want"
            )
            status = RunStatus.REJECTED
            message = f"version {version.id} rejected: {version.rejected_reason}"
        message += targets_note(training) + left_out_note(training.left_out)
        finish_run(session, run_id, status, message, version.id)
        return RefitOutcome(run_id, status, message, version.id)


def _refitted_alike(current: ModelVersion, fit: Fit) -> bool:
    """Whether the fit is the active version computed again (same matches, same mix)."""
    return (
        current.n_matches == len(fit.training)
        and current.newest_kickoff == fit.training.newest_kickoff
        and ensemble_of(current).same_mix_as(fit.ensemble)
    )


def targets_note(training: TrainingSet) -> str:
    """Toward the close, how many matches had one, as part of a run's message."""
    counts = TargetCounts.of(training)
    if counts is None:
        return ""
    return (
        f". Fitted toward the close on {counted(counts.closes, 'match')}, toward the result "
        f"on {counts.results} without one"
    )


def left_out_note(left_out: dict[str, str]) -> str:
    """The bookmakers left out of the pool, and why, as the end of a run's message."""
    if not left_out:
        return ""
    each = "; ".join(f"{code} ({reason})" for code, reason in left_out.items())
    return f". Left out of the pool: {each}"


def fit_options(settings: Settings) -> FitOptions:
    return FitOptions(
        rounds_grid=tuple(settings.refit_rounds_grid),
        validation_fraction=settings.refit_validation_fraction,
        phase=settings.refit_phase,
        methods=methods_to_try(settings.demargin_method, choose=settings.refit_choose_method),
        min_quotes=settings.refit_min_quotes,
        recent_days=settings.refit_pool_recent_days,
        recent_share=settings.refit_pool_recent_share,
        min_matches=settings.refit_min_matches,
        half_life_days=settings.refit_half_life_days,
        calibrate=settings.refit_calibrate,
        fit_target=settings.refit_fit_target,
        closing_window_minutes=settings.closing_window_minutes,
    )


def _check(should_stop: Callable[[], bool]) -> None:
    if should_stop():
        raise RefitCancelledError


def refit_job(
    engine: Engine, settings: Settings, *, clock: Clock = utcnow, stop: Stop | None = None
) -> None:
    """The scheduler's refit (``stop`` ends it at a checkpoint), logging how it ended; the
    scheduler's own "executed successfully" line would say nothing true about it."""
    log.info("scheduled refit starting")
    try:
        outcome = run_refit(
            engine,
            settings,
            trigger=RunTrigger.SCHEDULER,
            should_stop=(stop or Stop()).is_set,
            clock=clock,
        )
    except Exception:
        # The run could not even be recorded (the database is down, say).
        log.exception("scheduled refit failed before it was recorded; the next one is on schedule")
        return
    level = logging.ERROR if outcome.status == RunStatus.FAILED else logging.INFO
    log.log(level, "scheduled refit run %s %s: %s", outcome.run_id, outcome.status, outcome.message)
