"""The latest quotes table (``LatestQuote``): per match, bookmaker and phase, the quote an
answer serves. Whatever writes quotes or moves a kickoff brings the rows of its matches up to
date here, in its own transaction; a deleted match or quote takes its rows with it.

Two ways: ``refresh_latest_quotes`` ranks the whole history of its matches again (a kickoff
moved, quotes deleted or merged); ``advance_latest_quotes`` compares only the quotes a write
just stored with the row held for their key, as a plain write can only move a row up. Its
cost follows the batch, not the length of the history."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any, cast

from sqlalchemy import Select, Table, bindparam, case, delete, func, or_, select, update
from sqlalchemy.orm import Session

from app.db.bulk import Row, insert_rows
from app.db.orm import LatestQuote, Match, OddsQuote
from app.domain.records import credible_capture
from app.domain.vocabulary import Phase
from app.services.ingest.bulk import chunks

LATEST_QUOTES = cast(Table, LatestQuote.__table__)

# (match id, bookmaker id, phase): one row of the table.
_Key = tuple[int, int, Phase]
# (quote id, the quote's receipt) chosen for a key.
_Choice = tuple[int, dt.datetime]


def latest_valid_quotes(
    match_ids: Sequence[int],
) -> Select[tuple[int, int, Phase, int, dt.datetime]]:
    """Per (match, bookmaker, phase) of ``match_ids``, the latest quote valid before kickoff,
    by the rule of ``select_latest_valid``: an undated quote is valid and older than any
    dated one; then the credible capture time, the receipt, and the id (the order stored)."""
    credible = OddsQuote.credible_captured_at
    rank = (
        func.row_number()
        .over(
            partition_by=(OddsQuote.match_id, OddsQuote.bookmaker_id, OddsQuote.phase),
            order_by=(
                case((OddsQuote.captured_at.is_(None), 0), else_=1).desc(),
                credible.desc(),
                OddsQuote.received_at.desc(),
                OddsQuote.id.desc(),
            ),
        )
        .label("rank")
    )
    ranked = (
        select(
            OddsQuote.match_id,
            OddsQuote.bookmaker_id,
            OddsQuote.phase,
            OddsQuote.id,
            OddsQuote.received_at,
            rank,
        )
        .join(Match, OddsQuote.match_id == Match.id)
        .where(
            OddsQuote.match_id.in_(match_ids),
            or_(OddsQuote.captured_at.is_(None), credible < Match.kickoff),
        )
        .subquery()
    )
    return select(
        ranked.c.match_id,
        ranked.c.bookmaker_id,
        ranked.c.phase,
        ranked.c.id,
        ranked.c.received_at,
    ).where(ranked.c.rank == 1)


def refresh_latest_quotes(session: Session, match_ids: Collection[int], now: dt.datetime) -> None:
    """Bring the rows of ``match_ids`` up to date with their quotes and kickoffs; a row whose
    choice changed is stamped ``now`` (a row that still holds is left as it is)."""
    for part in chunks(sorted(set(match_ids))):
        _refresh(session, part, now)


def _refresh(session: Session, match_ids: Sequence[int], now: dt.datetime) -> None:
    # A kickoff moved by a writer not yet committed would go unseen: the matches are locked
    # first, as an update of the row locks it (PostgreSQL; SQLite's writers take turns), and
    # their quotes read after. Not against the key share of a quote inserted for them.
    _lock_matches(session, match_ids)
    wanted = _choices(session.execute(latest_valid_quotes(match_ids)).all())
    held = _choices(session.execute(_HELD, {"ids": list(match_ids)}).all())
    _write_changes(session, wanted, held, now)


def _lock_matches(session: Session, match_ids: Sequence[int]) -> dict[int, dt.datetime]:
    """Lock the matches ``match_ids`` in id order; their kickoffs."""
    rows = session.execute(
        select(Match.id, Match.kickoff)
        .where(Match.id.in_(match_ids))
        .order_by(Match.id)
        .with_for_update(key_share=True)
    )
    return {row.id: row.kickoff for row in rows}


def _write_changes(
    session: Session,
    wanted: dict[_Key, _Choice],
    held: dict[_Key, _Choice],
    now: dt.datetime,
) -> None:
    """Delete, update and insert the rows so that ``held`` becomes ``wanted``."""
    gone = [_key_row(key) for key in held if key not in wanted]
    if gone:
        session.execute(_DELETE_KEY, gone)
    changed = [
        _key_row(key) | {"quote_id": choice[0], "received_at": choice[1], "chosen_at": now}
        for key, choice in wanted.items()
        if key in held and held[key] != choice
    ]
    if changed:
        session.execute(_UPDATE_KEY, changed)
    insert_rows(
        session.connection(),
        LATEST_QUOTES,
        [_row(key, choice, now) for key, choice in wanted.items() if key not in held],
    )


def keep_latest_quotes(
    session: Session, *, written: Collection[int], rescheduled: Collection[int], now: dt.datetime
) -> None:
    """After a write received ``now``: the rows of the matches whose kickoff it moved ranked
    again in full, those of the other matches whose quotes it wrote advanced."""
    refresh_latest_quotes(session, rescheduled, now)
    advance_latest_quotes(session, set(written) - set(rescheduled), now)


def advance_latest_quotes(session: Session, match_ids: Collection[int], now: dt.datetime) -> None:
    """Bring the rows of ``match_ids`` up to date after a write received ``now`` that inserted
    quotes or updated them in place, and moved no kickoff. Such a write only adds candidates
    (an update in place moves a receipt later, so its quote ranks higher): each key keeps the
    best of its row and its quotes received ``now``. A row whose own quote was updated past
    kickoff (its capture capped at a later receipt) may fall back to an older quote: those
    matches are ranked again in full."""
    for part in chunks(sorted(set(match_ids))):
        _advance(session, part, now)


# Per candidate: the rank of ``latest_valid_quotes`` (undated below dated, then the credible
# capture, the receipt and the id), and the (quote id, receipt) the row would hold.
_Ranked = tuple[tuple[bool, dt.datetime, dt.datetime, int], _Choice]
_UNDATED = dt.datetime.min.replace(tzinfo=dt.UTC)


def _advance(session: Session, match_ids: Sequence[int], now: dt.datetime) -> None:
    # Locked first and read after, as in ``_refresh``.
    kickoffs = _lock_matches(session, match_ids)
    held: dict[_Key, _Choice] = {}
    best: dict[_Key, _Ranked] = {}
    for row in session.execute(_HELD_RANKED, {"ids": list(match_ids)}):
        key = (row.match_id, row.bookmaker_id, Phase(row.phase))
        held[key] = (row.quote_id, row.held_received_at)
        best[key] = (_rank(row), held[key])
    fallen: set[int] = set()
    for quote in session.execute(_RECEIVED_NOW, {"ids": list(match_ids), "now": now}):
        key = (quote.match_id, quote.bookmaker_id, Phase(quote.phase))
        if not _valid_before(quote.captured_at, quote.received_at, kickoffs[quote.match_id]):
            if key in held and held[key][0] == quote.id:
                fallen.add(quote.match_id)
            continue
        ranked = (_rank(quote), (quote.id, quote.received_at))
        if key not in best or ranked[0] >= best[key][0]:
            best[key] = ranked
    wanted = {key: ranked[1] for key, ranked in best.items() if key[0] not in fallen}
    _write_changes(session, wanted, {k: v for k, v in held.items() if k[0] not in fallen}, now)
    if fallen:
        _refresh(session, sorted(fallen), now)


def _rank(row: Any) -> tuple[bool, dt.datetime, dt.datetime, int]:
    credible = credible_capture(row.captured_at, row.received_at)
    return (credible is not None, credible or _UNDATED, row.received_at, row.id)


def _valid_before(
    captured_at: dt.datetime | None, received_at: dt.datetime, kickoff: dt.datetime
) -> bool:
    credible = credible_capture(captured_at, received_at)
    return credible is None or credible < kickoff


# The row held for each key, with the rank of its quote as stored now.
_HELD_RANKED = (
    select(
        LatestQuote.match_id,
        LatestQuote.bookmaker_id,
        LatestQuote.phase,
        LatestQuote.quote_id,
        LatestQuote.received_at.label("held_received_at"),
        OddsQuote.id,
        OddsQuote.captured_at,
        OddsQuote.received_at,
    )
    .join(OddsQuote, OddsQuote.id == LatestQuote.quote_id)
    .where(LatestQuote.match_id.in_(bindparam("ids", expanding=True)))
)
# The quotes a write received at its moment stored (new, or updated in place).
_RECEIVED_NOW = select(
    OddsQuote.id,
    OddsQuote.match_id,
    OddsQuote.bookmaker_id,
    OddsQuote.phase,
    OddsQuote.captured_at,
    OddsQuote.received_at,
).where(
    OddsQuote.received_at == bindparam("now"),
    OddsQuote.match_id.in_(bindparam("ids", expanding=True)),
)


_HELD = select(
    LatestQuote.match_id,
    LatestQuote.bookmaker_id,
    LatestQuote.phase,
    LatestQuote.quote_id,
    LatestQuote.received_at,
).where(LatestQuote.match_id.in_(bindparam("ids", expanding=True)))


def _choices(rows: Sequence[Sequence[Any]]) -> dict[_Key, _Choice]:
    return {(row[0], row[1], Phase(row[2])): (row[3], row[4]) for row in rows}


# One row by its key, many rows in one executemany (a statement per row is sent at once).
_IS_KEY = (
    (LATEST_QUOTES.c.match_id == bindparam("key_match"))
    & (LATEST_QUOTES.c.bookmaker_id == bindparam("key_bookmaker"))
    & (LATEST_QUOTES.c.phase == bindparam("key_phase"))
)
_DELETE_KEY = delete(LATEST_QUOTES).where(_IS_KEY)
_UPDATE_KEY = update(LATEST_QUOTES).where(_IS_KEY)


def _key_row(key: _Key) -> dict[str, object]:
    return {"key_match": key[0], "key_bookmaker": key[1], "key_phase": key[2]}


def _row(key: _Key, choice: _Choice, now: dt.datetime) -> Row:
    return {
        "match_id": key[0],
        "bookmaker_id": key[1],
        "phase": key[2],
        "quote_id": choice[0],
        "received_at": choice[1],
        "chosen_at": now,
    }
