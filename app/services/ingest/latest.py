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

from sqlalchemy import (
    ColumnElement,
    Insert,
    Select,
    SQLColumnExpression,
    Table,
    bindparam,
    case,
    delete,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.base import ReadOnlyColumnCollection
from sqlalchemy.sql.elements import KeyedColumnElement

from app.db.bulk import Row, insert_rows
from app.db.orm import LatestQuote, Match, OddsQuote
from app.domain.vocabulary import Phase
from app.services.bulk import chunks

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
    rank = (
        func.row_number()
        .over(
            partition_by=(OddsQuote.match_id, OddsQuote.bookmaker_id, OddsQuote.phase),
            order_by=[term.desc() for term in _rank(OddsQuote)],
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
            _valid_before_kickoff(OddsQuote),
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


def _rank(quote: type[OddsQuote]) -> tuple[SQLColumnExpression[Any], ...]:
    """The rank of ``select_latest_valid``, highest first: an undated quote below any dated
    one, then the credible capture, the receipt and the id (the order stored). Undated
    quotes rank by their receipt twice, which orders them as the receipt alone does."""
    return (
        case((quote.captured_at.is_(None), 0), else_=1),
        func.coalesce(quote.credible_captured_at, quote.received_at),
        quote.received_at,
        quote.id,
    )


def _valid_before_kickoff(quote: type[OddsQuote]) -> ColumnElement[bool]:
    """Undated, or captured (credibly) before the kickoff of ``Match``."""
    return or_(quote.captured_at.is_(None), quote.credible_captured_at < Match.kickoff)


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


def _lock_matches(session: Session, match_ids: Sequence[int]) -> None:
    """Lock the matches ``match_ids``, in id order."""
    session.execute(
        select(Match.id)
        .where(Match.id.in_(match_ids))
        .order_by(Match.id)
        .with_for_update(key_share=True)
    )


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
    (an update in place moves a receipt later, so its quote ranks no lower): each key keeps the
    best of its row and its quotes received ``now``. A row whose own quote was updated past
    kickoff (its capture capped at a later receipt) may fall back to an older quote: those
    matches are ranked again in full."""
    for part in chunks(sorted(set(match_ids))):
        _advance(session, part, now)


def _advance(session: Session, match_ids: Sequence[int], now: dt.datetime) -> None:
    # Locked first and written after, as in ``_refresh``.
    _lock_matches(session, match_ids)
    fallen = session.scalars(_FALLEN, {"ids": list(match_ids), "now": now}).all()
    session.execute(_upsert_best(session, now), {"ids": list(match_ids), "now": now})
    if fallen:
        _refresh(session, sorted(set(fallen)), now)


_FRESH = aliased(OddsQuote, name="fresh")
_HELD_QUOTE = aliased(OddsQuote, name="held_quote")
# The matches whose row holds a quote updated now to a capture at or after kickoff.
_FALLEN = (
    select(LatestQuote.match_id)
    .join(OddsQuote, OddsQuote.id == LatestQuote.quote_id)
    .join(Match, Match.id == LatestQuote.match_id)
    .where(
        LatestQuote.match_id.in_(bindparam("ids", expanding=True)),
        OddsQuote.received_at == bindparam("now"),
        ~_valid_before_kickoff(OddsQuote),
    )
)


def _upsert_best(session: Session, now: dt.datetime) -> Insert:
    """Per key of the matches ``ids``, the best quote received ``now`` and valid, inserted
    as the key's row, or replacing the row held when it ranks above the row's quote (or is
    that quote, updated in place)."""
    ranked = (
        select(
            _FRESH.match_id,
            _FRESH.bookmaker_id,
            _FRESH.phase,
            _FRESH.id.label("quote_id"),
            _FRESH.received_at,
            func.row_number()
            .over(
                partition_by=(_FRESH.match_id, _FRESH.bookmaker_id, _FRESH.phase),
                order_by=[term.desc() for term in _rank(_FRESH)],
            )
            .label("rank"),
        )
        .join(Match, Match.id == _FRESH.match_id)
        .where(
            _FRESH.received_at == bindparam("now"),
            _FRESH.match_id.in_(bindparam("ids", expanding=True)),
            _valid_before_kickoff(_FRESH),
        )
        .subquery()
    )
    chosen_at = literal(now, LATEST_QUOTES.c.chosen_at.type)
    best = select(
        ranked.c.match_id,
        ranked.c.bookmaker_id,
        ranked.c.phase,
        ranked.c.quote_id,
        ranked.c.received_at,
        chosen_at,
    ).where(ranked.c.rank == 1)
    columns = ["match_id", "bookmaker_id", "phase", "quote_id", "received_at", "chosen_at"]
    if session.get_bind().dialect.name == "postgresql":
        on_postgresql = postgresql.insert(LATEST_QUOTES).from_select(columns, best)
        return on_postgresql.on_conflict_do_update(**_replace_below(on_postgresql.excluded))
    on_sqlite = sqlite.insert(LATEST_QUOTES).from_select(columns, best)
    return on_sqlite.on_conflict_do_update(**_replace_below(on_sqlite.excluded))


def _replace_below(new: ReadOnlyColumnCollection[str, KeyedColumnElement[Any]]) -> dict[str, Any]:
    """The conflict clause of ``_upsert_best``: the held row is replaced by the ``new`` one
    when the new quote ranks above the held one, or is that quote with a later receipt."""
    held = LATEST_QUOTES.c
    above_held = (
        select(_FRESH.id)
        .join(_HELD_QUOTE, _HELD_QUOTE.id == held.quote_id)
        .where(
            # By name: a column of ``excluded`` would put that table in the subquery's FROM.
            _FRESH.id == literal_column("excluded.quote_id"),
            tuple_(*_rank(_FRESH)) > tuple_(*_rank(_HELD_QUOTE)),
        )
    )
    return {
        "index_elements": ["match_id", "bookmaker_id", "phase"],
        "set_": {
            "quote_id": new.quote_id,
            "received_at": new.received_at,
            "chosen_at": new.chosen_at,
        },
        "where": or_(
            (new.quote_id == held.quote_id) & (new.received_at != held.received_at),
            above_held.exists(),
        ),
    }


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
