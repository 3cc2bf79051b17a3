"""The latest quotes table (``LatestQuote``): per match, bookmaker and phase, the quote an
answer serves. Whatever writes quotes or moves a kickoff brings the rows of its matches up to
date here, in its own transaction; a deleted match or quote takes its rows with it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any, cast

from sqlalchemy import Select, Table, bindparam, case, delete, func, or_, select, update
from sqlalchemy.orm import Session

from app.db.bulk import Row, insert_rows
from app.db.orm import LatestQuote, Match, OddsQuote
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
    session.execute(
        select(Match.id)
        .where(Match.id.in_(match_ids))
        .order_by(Match.id)
        .with_for_update(key_share=True)
    )
    wanted = _choices(session.execute(latest_valid_quotes(match_ids)).all())
    held = _choices(session.execute(_HELD, {"ids": list(match_ids)}).all())
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
