"""The Football-Data.co.uk feed: download the files of some leagues, only those that changed
since they were last imported (the ETag and Last-Modified the site sent, asked back with
If-None-Match and If-Modified-Since), and import each changed one in its own transaction.

A document's validators are saved in the transaction that imports it, so a file whose
import failed is downloaded and imported again by the next run. Every run is recorded
(``app/services/fetch_runs.py``): a document that fails (an error status after the retries,
a timeout, a body cut short, a file that is not a season file) fails the run, and the
others are still imported.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from enum import StrEnum

import httpx
from sqlalchemy import Engine, Select, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_session_factory, session_scope
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
from app.domain.wording import counted
from app.metrics import FETCH_RUNS
from app.services.busy import DatabaseBusyError
from app.services.fetch_runs import FetchCounts, finish_fetch, start_fetch
from app.services.http_retry import GaveUpError, RetryPolicy, describe, send_with_retries
from app.services.ingest import IngestReport, ingest_batch
from app.settings import Settings

log = logging.getLogger(__name__)

USER_AGENT = "oddsboost (football-data feed)"
# Skipped rows named in the log, per document: enough to see what is wrong with a file.
SKIPPED_LOGGED = 20


@dataclass(frozen=True, slots=True)
class FeedRequest:
    """What one run fetches: the site's address, the leagues, the main leagues' season
    folder (``2526``)."""

    base_url: str
    leagues: tuple[str, ...]
    folder: str

    @classmethod
    def of(
        cls, settings: Settings, *, leagues: str | None, season: str, today: dt.date
    ) -> FeedRequest:
        """The request of a run: ``leagues`` comma-separated (None: the setting's), ``season``
        ``current`` or ``2025/26``. ValueError says what is wrong with either."""
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


def retry_policy(settings: Settings) -> RetryPolicy:
    """The settings' retries of a download: 5xx, 429, a timeout or a broken connection."""
    return RetryPolicy(
        attempts=settings.football_data_retries + 1,
        backoff=settings.football_data_retry_wait_seconds,
        max_wait=MAX_WAIT_SECONDS,
    )


class DownloadError(Exception):
    """A document could not be downloaded whole; ``requests`` were sent trying."""

    def __init__(self, reason: str, requests: int) -> None:
        super().__init__(reason)
        self.requests = requests


def get_with_retries(
    client: httpx.Client, url: str, headers: dict[str, str], policy: RetryPolicy
) -> tuple[httpx.Response, int]:
    """The answer to a GET (any status but 429 and 5xx) and the requests it took;
    DownloadError once the attempts are spent, or for a body shorter than its
    Content-Length (fetched whole on the next run)."""
    sent = 0

    def once() -> httpx.Response:
        nonlocal sent
        sent += 1
        response = client.get(url, headers=headers)
        check_complete(response)
        return response

    try:
        return send_with_retries(once, policy), sent
    except GaveUpError as error:
        raise DownloadError(str(error), sent) from None
    except httpx.TransportError as error:
        raise DownloadError(describe(error), sent) from None
    except httpx.RequestError as error:
        # Too many redirects, a body that cannot be decoded: this file fails, not the run.
        raise DownloadError(
            f"{type(error).__name__}: {' '.join(str(error).split())}", sent
        ) from None


def check_complete(response: httpx.Response) -> None:
    """A body shorter or longer than its Content-Length was cut or garbled on the way.

    (The HTTP client notices a connection closed early itself; this also catches a length
    it let through. A compressed body's length is that of the compressed bytes.)
    """
    declared = response.headers.get("Content-Length")
    if declared is None or response.headers.get("Content-Encoding"):
        return
    if declared.isdigit() and int(declared) != len(response.content):
        raise httpx.RemoteProtocolError(
            f"body of {counted(len(response.content), 'byte')}, but Content-Length {declared}"
        )


class DocumentStatus(StrEnum):
    """What a run did with one document."""

    IMPORTED = "imported"
    UNCHANGED = "unchanged"  # answered 304 Not Modified: nothing downloaded or imported
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    path: str
    status: DocumentStatus
    counts: FetchCounts
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FeedOutcome:
    """A finished run: its id, each document's outcome and the counts of them all."""

    run_id: int
    documents: tuple[DocumentOutcome, ...]
    counts: FetchCounts = field(default_factory=FetchCounts)

    @property
    def error(self) -> str | None:
        failed = [f"{d.path}: {d.error}" for d in self.documents if d.error is not None]
        return "; ".join(failed) or None


def fetch_football_data(
    factory: sessionmaker[Session],
    request: FeedRequest,
    *,
    timeout_seconds: float,
    policy: RetryPolicy,
    trigger: RunTrigger,
    clock: Clock = utcnow,
) -> FeedOutcome:
    """One recorded run: each document of ``request`` downloaded if it changed and imported.
    ``factory`` makes write sessions; each import is its own transaction, its quotes
    received at ``clock``'s present."""
    run_id = start_fetch(factory, FetchSource.FOOTBALL_DATA, trigger)
    outcomes: list[DocumentOutcome] = []
    try:
        with httpx.Client(
            timeout=timeout_seconds, follow_redirects=True, headers={"User-Agent": USER_AGENT}
        ) as client:
            for document in documents(request.leagues, request.folder):
                outcomes.append(_fetch_document(factory, client, request, document, policy, clock))
    except BaseException as error:
        # Not one document's failure (those are in the outcomes): a stop, or a fault here.
        partial = FeedOutcome(run_id, tuple(outcomes), _total(outcomes))
        _finish(factory, partial, f"stopped: {type(error).__name__}")
        raise
    outcome = FeedOutcome(run_id, tuple(outcomes), _total(outcomes))
    _finish(factory, outcome, outcome.error)
    return outcome


def _total(outcomes: list[DocumentOutcome]) -> FetchCounts:
    total = FetchCounts()
    for outcome in outcomes:
        total = total.plus(outcome.counts)
    return total


def _finish(factory: sessionmaker[Session], outcome: FeedOutcome, error: str | None) -> None:
    finish_fetch(factory, outcome.run_id, outcome.counts, error)
    status = FetchStatus.SUCCEEDED if error is None else FetchStatus.FAILED
    FETCH_RUNS.labels(FetchSource.FOOTBALL_DATA, status).inc()
    counts = outcome.counts
    log.log(
        logging.INFO if error is None else logging.ERROR,
        "football-data fetch run %d %s: %s, %s changed, %s, %s, %s stored%s",
        outcome.run_id,
        status,
        counted(counts.requests, "request"),
        counted(counts.changed, "document"),
        counted(counts.matches, "match"),
        counted(counts.quotes, "quote"),
        counted(counts.results, "result"),
        f"; {error}" if error else "",
    )


def _fetch_document(
    factory: sessionmaker[Session],
    client: httpx.Client,
    request: FeedRequest,
    document: FeedDocument,
    policy: RetryPolicy,
    clock: Clock,
) -> DocumentOutcome:
    url = request.url(document)
    imported_as = _imported_as(url, document)
    requests = 0
    try:
        with session_scope(factory) as session:
            headers = _conditional_headers(session.scalar(_document_row(imported_as)))
        response, requests = get_with_retries(client, url, headers, policy)
        if response.status_code == 304:
            with session_scope(factory) as session:
                _checked(session, imported_as)
            return DocumentOutcome(
                document.path, DocumentStatus.UNCHANGED, FetchCounts(requests=requests)
            )
        if response.status_code != 200:
            reason = f"HTTP {response.status_code} {response.reason_phrase}"
            raise DownloadError(reason, requests)
        report = _import(factory, document, imported_as, response, clock())
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
        reason = f"{type(error).__name__}: {' '.join(str(error).split())}"
        return DocumentOutcome(document.path, DocumentStatus.FAILED, counts, reason)
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
    return DocumentOutcome(document.path, DocumentStatus.IMPORTED, counts)


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
    response: httpx.Response,
    now: dt.datetime,
) -> IngestReport:
    """Import a downloaded document and remember its validators, in one transaction."""
    batch = parse_football_data(response.content)
    if document.keep is not None:
        batch = keep_competitions(batch, document.keep)
    with session_scope(factory) as session:
        report = ingest_batch(
            session, batch, source=f"Football-Data.co.uk {document.path}", now=now
        )
        _remember(session, imported_as, response)
    return report


def _document_row(url: str) -> Select[FetchedDocument]:
    return select(FetchedDocument).where(FetchedDocument.url == url)


def _conditional_headers(row: FetchedDocument | None) -> dict[str, str]:
    """Ask for the document only if it changed since the version last imported."""
    headers: dict[str, str] = {}
    if row is not None and row.etag:
        headers["If-None-Match"] = row.etag
    if row is not None and row.last_modified:
        headers["If-Modified-Since"] = row.last_modified
    return headers


def _remember(session: Session, url: str, response: httpx.Response) -> None:
    now = utcnow()
    row = session.scalar(_document_row(url))
    if row is None:
        row = FetchedDocument(url=url)
        session.add(row)
    row.etag = response.headers.get("ETag")
    row.last_modified = response.headers.get("Last-Modified")
    row.checked_at = now
    row.changed_at = now


def _checked(session: Session, url: str) -> None:
    row = session.scalar(_document_row(url))
    if row is not None:
        row.checked_at = utcnow()


def scheduled_football_data_fetch(
    engine: Engine, settings: Settings, *, clock: Clock = utcnow
) -> None:
    """The scheduler's run over the configured leagues' current season (the one holding
    ``clock``'s date). It never raises: a failure is logged (and recorded, when the
    database could record it), and the next run is on schedule."""
    try:
        request = FeedRequest.of(settings, leagues=None, season="current", today=clock().date())
        fetch_football_data(
            make_session_factory(engine, for_writes=True),
            request,
            timeout_seconds=settings.football_data_timeout_seconds,
            policy=retry_policy(settings),
            trigger=RunTrigger.SCHEDULER,
            clock=clock,
        )
    except Exception:
        log.exception("scheduled football-data fetch failed; the next one is on schedule")
