"""Runs of the feeds: each fetch recorded when it starts and when it ends, with what it
stored and the quota the source said was left, so an operator can follow them
(``GET /admin/fetches``) and a failed fetch is visible rather than silent.

One fetch of a source runs at a time, across processes and machines: a run holds its
source's lock (``app/services/locks.py``) while it lasts, and a fetch that finds the lock
taken is recorded as skipped. A run still marked running when a new one holds the lock was
left by a process that died (killed, out of memory); the new run closes it as abandoned, as
the refit does its own.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.orm import FetchRun, utcnow
from app.domain.vocabulary import FetchSource, FetchStatus, RunTrigger
from app.domain.wording import counted
from app.metrics import count_fetch_run
from app.services.locks import run_lock
from app.services.pagination import Paged, PageWindow, paginate
from app.services.run_bounds import ABANDONED

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FetchCounts:
    """What a fetch did: requests sent, documents that had changed, what they stored, and
    The Odds API's quota after its last request (None: the source does not say)."""

    requests: int = 0
    changed: int = 0
    matches: int = 0
    quotes: int = 0
    results: int = 0
    skipped: int = 0
    quota_remaining: int | None = None
    quota_used: int | None = None

    def plus(self, other: FetchCounts) -> FetchCounts:
        """Both counts together; the quota is the later one's, where it says."""
        return FetchCounts(
            requests=self.requests + other.requests,
            changed=self.changed + other.changed,
            matches=self.matches + other.matches,
            quotes=self.quotes + other.quotes,
            results=self.results + other.results,
            skipped=self.skipped + other.skipped,
            quota_remaining=_later(self.quota_remaining, other.quota_remaining),
            quota_used=_later(self.quota_used, other.quota_used),
        )


def _later(earlier: int | None, later: int | None) -> int | None:
    return earlier if later is None else later


@contextmanager
def fetch_lock(factory: sessionmaker[Session], source: FetchSource) -> Iterator[bool]:
    """Whether this process holds ``source``'s lock, taken (if free) for as long as the
    block runs. Never waits."""
    with factory() as session:
        bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    with run_lock(engine, f"fetch-{source}") as lock:
        yield lock.taken


def start_fetch(factory: sessionmaker[Session], source: FetchSource, trigger: RunTrigger) -> int:
    """Record a fetch as running; returns its id. Committed at once, so the run is visible
    while it lasts and stays recorded if its process dies. Called holding the source's
    lock (:func:`fetch_lock`): any other run of the source still marked running is then
    closed as abandoned, in the same transaction."""
    now = utcnow()
    with factory.begin() as session:
        session.execute(
            update(FetchRun)
            .where(FetchRun.source == source, FetchRun.status == FetchStatus.RUNNING)
            .values(status=FetchStatus.FAILED, error=ABANDONED, finished_at=now)
        )
        run = FetchRun(source=source, trigger=trigger, status=FetchStatus.RUNNING, started_at=now)
        session.add(run)
        session.flush()
        return run.id


def skip_fetch(
    factory: sessionmaker[Session], source: FetchSource, trigger: RunTrigger
) -> tuple[int, str]:
    """Record (and log) a fetch that did nothing because another fetch of ``source`` holds
    its lock; its id, and why it was skipped."""
    now = utcnow()
    with factory.begin() as session:
        running = session.scalar(
            select(FetchRun.id)
            .where(FetchRun.source == source, FetchRun.status == FetchStatus.RUNNING)
            .order_by(FetchRun.id.desc())
            .limit(1)
        )
        which = "" if running is None else f" (run {running})"
        why = f"another fetch of {source} is running{which}; this one did nothing"
        run = FetchRun(
            source=source,
            trigger=trigger,
            status=FetchStatus.SKIPPED,
            started_at=now,
            finished_at=now,
            error=why,
        )
        session.add(run)
        session.flush()
        run_id = run.id
    log.warning("%s fetch run %d skipped: %s", source, run_id, why)
    count_fetch_run(source, FetchStatus.SKIPPED, None)
    return run_id, why


def finish_fetch(
    factory: sessionmaker[Session],
    run_id: int,
    counts: FetchCounts,
    error: str | None = None,
) -> FetchStatus:
    """Record (and log) how a fetch ended: failed when ``error`` says why, else succeeded."""
    status = FetchStatus.SUCCEEDED if error is None else FetchStatus.FAILED
    with factory.begin() as session:
        source = session.scalar(
            update(FetchRun)
            .where(FetchRun.id == run_id)
            .values(status=status, error=error, finished_at=utcnow(), **dataclasses.asdict(counts))
            .returning(FetchRun.source)
        )
    count_fetch_run(str(source), status, counts.quota_remaining)
    quota = counts.quota_remaining
    log.log(
        logging.INFO if error is None else logging.ERROR,
        "%s fetch run %d %s: %s, %s changed, %s, %s, %s stored%s%s",
        source,
        run_id,
        status,
        counted(counts.requests, "request"),
        counted(counts.changed, "document"),
        counted(counts.matches, "match"),
        counted(counts.quotes, "quote"),
        counted(counts.results, "result"),
        "" if quota is None else f"; {counted(quota, 'credit')} left",
        "" if error is None else f"; {error}",
    )
    return status


def latest_fetches(
    session: Session, window: PageWindow, source: FetchSource | None = None
) -> Paged[FetchRun]:
    """Fetch runs, newest first; of one source if given."""
    statement = select(FetchRun).order_by(FetchRun.id.desc())
    if source is not None:
        statement = statement.where(FetchRun.source == source)
    return paginate(session, statement, window)


def get_fetch(session: Session, run_id: int) -> FetchRun | None:
    return session.get(FetchRun, run_id)
