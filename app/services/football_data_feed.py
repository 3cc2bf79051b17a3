"""The Football-Data.co.uk feed: the files of some leagues downloaded only when they changed
(the ETag and Last-Modified last imported, asked back), each imported in its own
transaction with its validators, so a file whose import failed is downloaded again.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from enum import StrEnum

import httpx
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import session_scope
from app.db.orm import Clock, FetchedDocument, utcnow
from app.domain.football_data import FileFormatError, parse_football_data
from app.domain.football_data_feed import (
    FeedDocument,
    check_leagues,
    documents,
    keep_competitions,
    season_folder,
)
from app.domain.records import TooManyBookmakersError
from app.domain.vocabulary import FetchSource, FetchStatus, RunTrigger
from app.services.busy import DatabaseBusyError
from app.services.downloads import (
    Download,
    Downloader,
    DownloadLimits,
    describe,
    open_downloader,
)
from app.services.fetch_runs import (
    FetchCounts,
    RecordedFetch,
    ended_early,
    recorded_fetch,
    scheduled_fetch,
)
from app.services.fetched_documents import document_row, remember_fetch
from app.services.flags import FlagTerms
from app.services.http_retry import GaveUpError, RetryPolicy, send_with_retries
from app.services.ingest import IngestReport, ingest_batch
from app.services.run_bounds import RunBounds, RunEndedEarlyError, Stop
from app.settings import Settings

log = logging.getLogger(__name__)

SOURCE = FetchSource.FOOTBALL_DATA
USER_AGENT = "oddsboost (football-data feed)"
# Skipped rows named in the log, per document: enough to see what is wrong with a file.
SKIPPED_LOGGED = 20


@dataclass(frozen=True, slots=True)
class FeedRequest:
    """What one run fetches; ``folder``: the main leagues' season folder (``2526``)."""

    base_url: str
    leagues: tuple[str, ...]
    folder: str

    @classmethod
    def of(
        cls, settings: Settings, *, leagues: str | None, season: str, today: dt.date
    ) -> FeedRequest:
        """``leagues`` comma-separated (None: the setting's), ``season`` ``current`` or
        ``2025/26``; ValueError says what is wrong with either."""
        chosen = settings.football_data_leagues if leagues is None else leagues
        return cls(
            base_url=settings.football_data_url.rstrip("/"),
            leagues=check_leagues(chosen.split(",")),
            folder=season_folder(season, today),
        )

    def url(self, document: FeedDocument) -> str:
        return f"{self.base_url}/{document.path}"


# The longest Retry-After a download waits for; a site asking for more is tried next run.
MAX_WAIT_SECONDS = 600.0


class DownloadError(Exception):
    """A document could not be downloaded whole; ``requests`` were sent trying."""

    def __init__(self, reason: str, requests: int) -> None:
        super().__init__(reason)
        self.requests = requests


def get_with_retries(
    downloader: Downloader, policy: RetryPolicy, url: str, headers: dict[str, str]
) -> tuple[Download, int]:
    """The answer to a GET (any status but 429 and 5xx) and the requests it took;
    DownloadError when no usable answer came (tried again on the next run)."""
    sent = 0

    def once() -> Download:
        nonlocal sent
        sent += 1
        return downloader.get(url, headers=headers)

    try:
        return send_with_retries(once, policy), sent
    except GaveUpError as error:
        raise DownloadError(str(error), sent) from None
    except httpx.RequestError as error:
        # Too many redirects too: this file fails, not the run.
        raise DownloadError(describe(error), sent) from None


class DocumentStatus(StrEnum):
    IMPORTED = "imported"
    UNCHANGED = "unchanged"  # answered 304 Not Modified: nothing downloaded or imported
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """What a run did with one document; ``url``: where it was read from in the end (after
    any redirects), None when it was not read."""

    path: str
    status: DocumentStatus
    counts: FetchCounts
    error: str | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class FeedOutcome:
    """A finished run; why it ended before its last document, or why it did nothing."""

    run_id: int
    documents: tuple[DocumentOutcome, ...]
    counts: FetchCounts = field(default_factory=FetchCounts)
    ended_early: str | None = None
    skipped: str | None = None

    @property
    def error(self) -> str | None:
        failed = [f"{d.path}: {d.error}" for d in self.documents if d.error is not None]
        if self.ended_early is not None:
            failed.append(self.ended_early)
        return "; ".join(failed) or None

    @property
    def status(self) -> FetchStatus:
        if self.skipped is not None:
            return FetchStatus.SKIPPED
        return FetchStatus.SUCCEEDED if self.error is None else FetchStatus.FAILED


def fetch_football_data(
    factory: sessionmaker[Session],
    settings: Settings,
    request: FeedRequest,
    *,
    trigger: RunTrigger,
    clock: Clock = utcnow,
    stop: Stop | None = None,
) -> FeedOutcome:
    """One recorded run: each document of ``request`` downloaded if it changed and imported
    (received at ``clock``'s present), within the settings' bounds and until ``stop``."""
    with recorded_fetch(factory, SOURCE, trigger, fault=_fault) as run:
        if run.skipped is not None:
            return FeedOutcome(run.run_id, (), skipped=run.skipped)
        bounds = RunBounds(
            settings.football_data_run_seconds, "ODDSBOOST_FOOTBALL_DATA_RUN_SECONDS", stop
        )
        outcome = _run(factory, settings, request, run, bounds, clock)
        run.error = outcome.error
    return outcome


def _fault(error: BaseException) -> str:
    return f"stopped: {type(error).__name__}"


def _run(
    factory: sessionmaker[Session],
    settings: Settings,
    request: FeedRequest,
    run: RecordedFetch,
    bounds: RunBounds,
    clock: Clock,
) -> FeedOutcome:
    outcomes: list[DocumentOutcome] = []
    wanted = documents(request.leagues, request.folder)
    timeout = settings.football_data_timeout_seconds
    limits = DownloadLimits.of(settings, "football_data", read_timeout_seconds=timeout)
    policy = RetryPolicy(
        attempts=settings.football_data_retries + 1,
        backoff=settings.football_data_retry_wait_seconds,
        max_wait=MAX_WAIT_SECONDS,
        sleep=bounds.sleep,
    )
    headers = {"User-Agent": USER_AGENT}
    try:
        site = httpx.URL(request.base_url)
        with open_downloader(limits, bounds, site=site, headers=headers) as downloader:
            for document in wanted:
                bounds.check()
                outcome = _fetch_document(
                    factory, downloader, policy, request, document, clock, FlagTerms.of(settings)
                )
                outcomes.append(outcome)
                run.counts = run.counts.plus(outcome.counts)
    except RunEndedEarlyError as error:
        ended = ended_early(error, len(outcomes), len(wanted), "file")
        return FeedOutcome(run.run_id, tuple(outcomes), run.counts, ended_early=ended)
    return FeedOutcome(run.run_id, tuple(outcomes), run.counts)


def _fetch_document(
    factory: sessionmaker[Session],
    downloader: Downloader,
    policy: RetryPolicy,
    request: FeedRequest,
    document: FeedDocument,
    clock: Clock,
    flag_terms: FlagTerms,
) -> DocumentOutcome:
    url = request.url(document)
    imported_as = _imported_as(url, document)
    requests = 0
    try:
        with session_scope(factory) as session:
            headers = _conditional_headers(session.scalar(document_row(imported_as)))
        response, requests = get_with_retries(downloader, policy, url, headers)
        if response.url != url:
            log.info("football-data %s was read from %s", document.path, response.url)
        if response.status_code == 304:
            with session_scope(factory) as session:
                _remember(session, imported_as, response, changed=False)
            return DocumentOutcome(
                document.path,
                DocumentStatus.UNCHANGED,
                FetchCounts(requests=requests),
                url=response.url,
            )
        if response.status_code != 200:
            reason = f"HTTP {response.status_code} {response.reason_phrase}"
            raise DownloadError(reason, requests)
        report = _import(factory, document, imported_as, response, clock(), flag_terms)
    except DownloadError as error:
        counts = FetchCounts(requests=error.requests)
        return DocumentOutcome(document.path, DocumentStatus.FAILED, counts, str(error))
    except (
        FileFormatError,
        TooManyBookmakersError,
        DatabaseBusyError,
        SQLAlchemyError,
    ) as error:
        counts = FetchCounts(requests=requests)
        return DocumentOutcome(document.path, DocumentStatus.FAILED, counts, describe(error))
    for item in report.skipped[:SKIPPED_LOGGED]:
        field_name = f" {item.field}" if item.field else ""
        log.warning(
            "football-data %s %s%s skipped: %s", document.path, item.where, field_name, item.reason
        )
    counts = FetchCounts(
        requests=requests,
        changed=1,
        matches=report.matches_created,
        quotes=report.quotes_inserted + report.quotes_updated,
        results=report.results_set,
        skipped=len(report.skipped),
    )
    return DocumentOutcome(document.path, DocumentStatus.IMPORTED, counts, url=response.url)


def _imported_as(url: str, document: FeedDocument) -> str:
    """What the validators of a document are kept under: its URL, and for a shared file
    (the fixtures) the leagues imported from it, since a run for other leagues must import
    the same unchanged file again."""
    if document.keep is None:
        return url
    return f"{url}#{','.join(sorted(document.keep))}"


def _import(
    factory: sessionmaker[Session],
    document: FeedDocument,
    imported_as: str,
    response: Download,
    now: dt.datetime,
    flag_terms: FlagTerms,
) -> IngestReport:
    """Import a downloaded document and remember its validators, in one transaction."""
    batch = parse_football_data(response.content)
    if document.keep is not None:
        batch = keep_competitions(batch, document.keep)
    with session_scope(factory) as session:
        report = ingest_batch(
            session,
            batch,
            source=f"Football-Data.co.uk {document.path}",
            now=now,
            flag_terms=flag_terms,
        )
        _remember(session, imported_as, response, changed=True)
    return report


def _conditional_headers(row: FetchedDocument | None) -> dict[str, str]:
    """Ask for the document only if it changed since the version last imported."""
    headers: dict[str, str] = {}
    if row is not None and row.etag:
        headers["If-None-Match"] = row.etag
    if row is not None and row.last_modified:
        headers["If-Modified-Since"] = row.last_modified
    return headers


def _remember(session: Session, url: str, response: Download, *, changed: bool) -> None:
    """When a document was checked and where it was read from; a changed one's validators."""
    remember_fetch(
        session,
        url,
        at=utcnow(),
        changed=changed,
        final_url=response.url,
        etag=response.headers.get("ETag"),
        last_modified=response.headers.get("Last-Modified"),
    )


def football_data_job(
    engine: Engine, settings: Settings, *, clock: Clock = utcnow, stop: Stop | None = None
) -> None:
    """The scheduler's run over the configured leagues' current season (the one holding
    ``clock``'s date), which ``stop`` ends at once; it never raises."""

    def fetch(factory: sessionmaker[Session]) -> None:
        today = clock().date()
        request = FeedRequest.of(settings, leagues=None, season="current", today=today)
        trigger = RunTrigger.SCHEDULER
        fetch_football_data(factory, settings, request, trigger=trigger, clock=clock, stop=stop)

    scheduled_fetch(
        engine, fetch, "scheduled football-data fetch failed; the next one is on schedule"
    )
