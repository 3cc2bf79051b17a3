"""A parsed batch written as one unit: its matches, then its quotes."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from app.db.orm import utcnow
from app.domain.football_data import parse_football_data
from app.domain.odds_api import Event, parse_events
from app.domain.records import (
    CAPTURE_SKEW,
    CapturedInFutureError,
    CaptureLimit,
    IngestBatch,
    check_bookmaker_count,
)

# A module, not its names: the ledger reads through this package's helpers.
from app.services import flags
from app.services.bulk import retry_on_conflict
from app.services.ingest.latest import keep_latest_quotes
from app.services.ingest.matches import write_matches
from app.services.ingest.quotes import write_quotes
from app.services.ingest.report import IngestReport, record_on_commit
from app.services.ingest.revisions import bump_quotes_revisions


def ingest_batch(
    session: Session,
    batch: IngestBatch,
    *,
    source: str,
    now: dt.datetime | None = None,
    capture_skew: dt.timedelta = CAPTURE_SKEW,
    refuse_future_captures: bool = False,
    flag_terms: flags.FlagTerms | None = None,
) -> IngestReport:
    """Write a parsed batch received ``now``, idempotently; counted under ``source`` once
    the caller commits. A quote captured later than ``now`` plus ``capture_skew`` is skipped,
    or with ``refuse_future_captures`` refuses the batch (``CapturedInFutureError``); too
    many bookmakers raise ``TooManyBookmakersError``. Nothing is written when it raises.
    The flag ledger of the matches the batch changed is brought up to date by
    ``flag_terms`` (None: the defaults) in the same transaction, so it commits with the
    batch or not at all."""
    check_bookmaker_count(quote.bookmaker for quote in batch.quotes)
    moment = now or utcnow()
    limit = CaptureLimit(moment, capture_skew)
    if refuse_future_captures:
        refused = batch.captured_beyond(limit)
        if refused:
            raise CapturedInFutureError(refused, limit)
    else:
        batch.skip_captured_beyond(limit)
    report, match_ids = _write_batch(session, batch, moment)
    flags.after_ingest(session, match_ids, moment, flag_terms or flags.DEFAULT_FLAG_TERMS)
    record_on_commit(session, report, source=source)
    return report


def _write_batch(
    session: Session, batch: IngestBatch, moment: dt.datetime
) -> tuple[IngestReport, set[int]]:
    """In a savepoint tried again if a concurrent writer inserted the same rows first; what
    it wrote, and the ids of the matches it created or changed, or whose quotes it wrote."""

    def work(session: Session) -> tuple[IngestReport, set[int]]:
        report = IngestReport(rows_read=batch.rows_read, skipped=list(batch.skipped))
        match_ids, created, changed, rescheduled = write_matches(session, batch, report, moment)
        quoted = write_quotes(session, batch, match_ids, created, report, moment)
        keep_latest_quotes(session, written=quoted, rescheduled=rescheduled, now=moment)
        bump_quotes_revisions(session, quoted | rescheduled)
        return report, changed | quoted

    return retry_on_conflict(session, work)


def import_football_data(
    session: Session,
    content: bytes,
    *,
    season: str | None = None,
    source: str = "a football-data.co.uk file",
    flag_terms: flags.FlagTerms | None = None,
) -> IngestReport:
    """Parse and store one football-data.co.uk file; FileFormatError if it is not one."""
    return ingest_batch(
        session, parse_football_data(content, season=season), source=source, flag_terms=flag_terms
    )


def import_odds_api(
    session: Session,
    events: list[Event],
    *,
    source: str = "The Odds API",
    now: dt.datetime | None = None,
    capture_skew: dt.timedelta = CAPTURE_SKEW,
    refuse_future_captures: bool = False,
    flag_terms: flags.FlagTerms | None = None,
) -> IngestReport:
    """Store a validated The Odds API v4 ``/odds`` response (see :func:`ingest_batch`)."""
    return ingest_batch(
        session,
        parse_events(events),
        source=source,
        now=now,
        capture_skew=capture_skew,
        refuse_future_captures=refuse_future_captures,
        flag_terms=flag_terms,
    )
