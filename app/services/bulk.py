"""Set-based statements every writer shares: chunks, conflict retries, idempotent inserts."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, cast

from sqlalchemy import Insert, SQLColumnExpression, Table, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.bulk import Row
from app.db.orm import Bookmaker, Competition, Match, OddsQuote, PredictionLogEntry, Team

# Keeps IN lists and multi-row statements well below every backend's parameter limit.
CHUNK = 5_000
CONFLICT_RETRIES = 3

T = TypeVar("T")
Key = TypeVar("Key")

COMPETITIONS = cast(Table, Competition.__table__)
BOOKMAKERS = cast(Table, Bookmaker.__table__)
TEAMS = cast(Table, Team.__table__)
MATCHES = cast(Table, Match.__table__)
QUOTES = cast(Table, OddsQuote.__table__)


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def retry_on_conflict(session: Session, work: Callable[[Session], T]) -> T:
    """Run ``work`` in a savepoint, again if a concurrent writer inserted the same rows first."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            with session.begin_nested():
                return work(session)
        except IntegrityError:
            if attempt == CONFLICT_RETRIES - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def insert_new(session: Session, table: Table | type[PredictionLogEntry]) -> Insert:
    """An insert that leaves a row already stored (a concurrent writer's included) as it
    is: never an update."""
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


def insert_ignoring_duplicates(session: Session, table: Table, rows: Sequence[Row]) -> None:
    statement = insert_new(session, table)
    for part in chunks(rows):
        session.execute(statement, list(part))


def update_by_id(session: Session, table: Table, rows: Sequence[Row]) -> None:
    """Update each row ``b_id`` names with the row's other values (the same columns in every
    row, as one executemany needs), in id order: writers that lock the same rows in id order
    (the bets' writers lock their matches so) then queue instead of deadlocking."""
    if not rows:
        return
    rows = sorted(rows, key=lambda row: cast(int, row["b_id"]))  # stable: a repeated id's last wins
    columns = [name for name in rows[0] if name != "b_id"]
    statement = (
        update(table)
        .where(table.c.id == bindparam("b_id"))
        .values({name: bindparam(name) for name in columns})
    )
    for part in chunks(rows):
        session.execute(statement, list(part))


def ids_by(
    session: Session,
    key_column: SQLColumnExpression[Key],
    id_column: SQLColumnExpression[int],
    keys: Sequence[Key],
) -> dict[Key, int]:
    """The id of each key found, chunk by chunk."""
    found: dict[Key, int] = {}
    for part in chunks(keys):
        for key, row_id in session.execute(
            select(key_column, id_column).where(key_column.in_(part))
        ):
            found[key] = row_id
    return found
