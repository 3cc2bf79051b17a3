"""Quotes of a batch: one per (match, bookmaker, phase, capture time), inserted or updated;
one met again with the same prices is marked seen at the batch's moment."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.bulk import Row, insert_rows
from app.db.orm import OddsQuote
from app.domain.records import IngestBatch, QuoteRecord, Skipped
from app.domain.vocabulary import Phase
from app.services.bulk import QUOTES, chunks, update_by_id
from app.services.ingest.dimensions import ensure_bookmakers
from app.services.ingest.report import IngestReport

# (match id, bookmaker id, phase, capture time or None): a quote's identity.
QuoteKey = tuple[int, int, Phase, dt.datetime | None]
# (quote id, home, draw, away) of a stored quote.
StoredQuote = tuple[int, float, float, float]


def write_quotes(
    session: Session,
    batch: IngestBatch,
    match_ids: list[int | None],
    created_matches: set[int],
    report: IngestReport,
    now: dt.datetime,
) -> set[int]:
    """Insert the batch's new quotes, update those whose prices changed and mark those met
    again unchanged as seen at ``now``; the ids of the matches whose quotes were written (a
    quote seen again changes no price, so it is not counted)."""
    names = {quote.bookmaker: quote.bookmaker for quote in batch.quotes}
    names.update({code: name for code, name in batch.bookmaker_names.items() if code in names})
    bookmaker_ids = ensure_bookmakers(session, names)
    incoming = _distinct_quotes(batch.quotes, match_ids, bookmaker_ids, report)
    # A match created by this batch has no stored quotes yet.
    stored = _load_quotes(session, sorted({key[0] for key in incoming} - created_matches))
    new_rows: list[Row] = []
    updates: list[Row] = []
    seen_again: list[int] = []
    written: set[int] = set()
    for key, quote in incoming.items():
        prices = (quote.home, quote.draw, quote.away)
        existing = stored.get(key)
        if existing is None:
            written.add(key[0])
            new_rows.append(
                {
                    "match_id": key[0],
                    "bookmaker_id": key[1],
                    "phase": key[2],
                    "captured_at": key[3],
                    "home": prices[0],
                    "draw": prices[1],
                    "away": prices[2],
                    "received_at": now,
                    "seen_at": now,
                }
            )
        elif existing[1:] == prices:
            seen_again.append(existing[0])
            report.quotes_unchanged += 1
        else:
            written.add(key[0])
            updates.append(
                {
                    "b_id": existing[0],
                    "home": prices[0],
                    "draw": prices[1],
                    "away": prices[2],
                    "received_at": now,
                    "seen_at": now,
                }
            )
    insert_rows(session.connection(), QUOTES, new_rows)
    report.quotes_inserted += len(new_rows)
    update_by_id(session, QUOTES, updates)
    report.quotes_updated += len(updates)
    _mark_seen(session, seen_again, now)
    return written


def _mark_seen(session: Session, quote_ids: Sequence[int], now: dt.datetime) -> None:
    """Move the last sighting of the quotes ``quote_ids`` forward to ``now``, never back (a
    batch received earlier and committed later leaves a later sighting as it is): one
    statement per chunk."""
    for part in chunks(sorted(quote_ids)):
        session.execute(
            update(QUOTES).where(QUOTES.c.id.in_(part), QUOTES.c.seen_at < now).values(seen_at=now)
        )


def _distinct_quotes(
    quotes: Sequence[QuoteRecord],
    match_ids: list[int | None],
    bookmaker_ids: dict[str, int],
    report: IngestReport,
) -> dict[QuoteKey, QuoteRecord]:
    """The first of the batch's quotes with each identity (the others are reported)."""
    incoming: dict[QuoteKey, QuoteRecord] = {}
    for quote in quotes:
        match_id = match_ids[quote.match]
        if match_id is None:
            continue  # its match was skipped, and reported
        key = (match_id, bookmaker_ids[quote.bookmaker], quote.phase, quote.captured_at)
        first = incoming.get(key)
        if first is not None:
            report.skipped.append(
                Skipped(
                    quote.where,
                    f"the same quote (match, bookmaker, phase, captured_at) as {first.where}; "
                    "the first one was kept",
                )
            )
            continue
        incoming[key] = quote
    return incoming


def _load_quotes(session: Session, match_ids: Sequence[int]) -> dict[QuoteKey, StoredQuote]:
    found: dict[QuoteKey, StoredQuote] = {}
    columns = (
        OddsQuote.id,
        OddsQuote.match_id,
        OddsQuote.bookmaker_id,
        OddsQuote.phase,
        OddsQuote.captured_at,
        OddsQuote.home,
        OddsQuote.draw,
        OddsQuote.away,
    )
    for part in chunks(match_ids):
        for row in session.execute(select(*columns).where(OddsQuote.match_id.in_(part))):
            key = (row.match_id, row.bookmaker_id, row.phase, row.captured_at)
            found[key] = (row.id, row.home, row.draw, row.away)
    return found
