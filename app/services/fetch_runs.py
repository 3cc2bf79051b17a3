"""Runs of the feeds, each recorded when it starts and when it ends (``GET /admin/fetches``).

One fetch of a source runs at a time, across processes: a run holds its source's lock, a
fetch that finds it taken is recorded as skipped, and a run still marked running when a new
one holds the lock was left by a process that died, so the new run closes it as abandoned.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_session_factory
from app.db.orm import FetchRun, utcnow
from app.domain.vocabulary import FetchSource, FetchStatus, RunTrigger
from app.domain.wording import counted
from app.metrics import count_fetch_run
from app.services.locks import run_lock
from app.services.pagination import Paged, PageWindow, paginate
from app.services.run_bounds import ABANDONED, RunEndedEarlyError

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


@dataclass
class RecordedFetch:
    """A run as it goes: what it did so far and why it failed (None: it did not), recorded
    when it ends; ``skipped`` says why it did nothing."""

    run_id: int
    counts: FetchCounts = field(default_factory=FetchCounts)
    error: str | None = None
    skipped: str | None = None

    @property
    def status(self) -> FetchStatus:
        if self.skipped is not None:
            return FetchStatus.SKIPPED
        return FetchStatus.SUCCEEDED if self.error is None else FetchStatus.FAILED


@contextmanager
def recorded_fetch(
    factory: sessionmaker[Session],
    source: FetchSource,
    trigger: RunTrigger,
    *,
    fault: Callable[[BaseException], str],
) -> Iterator[RecordedFetch]:
    """A run of ``source`` holding its lock, recorded as running, then as finished with its
    counts and error (``fault``'s for an exception, which goes on); recorded as skipped,
    and the block must do nothing, while another fetch of ``source`` runs."""
    with factory() as session:
        bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    with run_lock(engine, f"fetch-{source}") as lock:  # never waits
        if not lock.taken:
            run_id, why = skip_fetch(factory, source, trigger)
            yield RecordedFetch(run_id, skipped=why)
            return
        run = RecordedFetch(start_fetch(factory, source, trigger))
        try:
            yield run
        except BaseException as error:
            finish_fetch(factory, run.run_id, run.counts, fault(error))
            raise
        finish_fetch(factory, run.run_id, run.counts, run.error)


def ended_early(error: RunEndedEarlyError, done: int, of: int, noun: str) -> str:
    """Why a run ended before its last item, and how far it came."""
    return f"{error}, with {done} of {counted(of, noun)} done"


def scheduled_fetch(
    engine: Engine, fetch: Callable[[sessionmaker[Session]], object], failed: str
) -> None:
    """A fetch on the schedule, with write sessions of ``engine``; a failure is logged
    (``failed``), never raised, so the scheduler's other jobs go on."""
    try:
        fetch(make_session_factory(engine, for_writes=True))
    except Exception:
        log.exception(failed)


def start_fetch(factory: sessionmaker[Session], source: FetchSource, trigger: RunTrigger) -> int:
    """Record (committed at once) a fetch as running, and return its id; called holding
    the source's lock, it closes any other run of the source still marked running."""
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
    """Record (and log) a fetch skipped while another holds the lock; its id, and why."""
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
