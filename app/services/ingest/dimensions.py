"""The rows other rows refer to: competitions, bookmakers and teams (through aliases)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import Table
from sqlalchemy.orm import Session

from app.db.bulk import Row
from app.db.orm import Team, TeamAlias
from app.services.bulk import (
    BOOKMAKERS,
    COMPETITIONS,
    TEAMS,
    ids_by,
    insert_ignoring_duplicates,
)


def ensure_competitions(session: Session, codes: Iterable[str]) -> dict[str, int]:
    rows = {code: {"code": code, "name": None} for code in codes}
    return _ensure_rows(session, COMPETITIONS, "code", rows)


def ensure_bookmakers(session: Session, names: dict[str, str]) -> dict[str, int]:
    """Ids of bookmaker codes, creating missing ones with the given display names."""
    rows = {code: {"code": code, "name": name or code} for code, name in names.items()}
    return _ensure_rows(session, BOOKMAKERS, "code", rows)


def resolve_teams(session: Session, names: Iterable[str], *, create: bool) -> dict[str, int]:
    """Team id of each name, through aliases; unknown names are created when ``create``."""
    wanted = sorted(set(names))
    found = ids_by(session, Team.name, Team.id, wanted)
    unknown = [name for name in wanted if name not in found]
    found.update(ids_by(session, TeamAlias.alias, TeamAlias.team_id, unknown))
    missing = {name: {"name": name} for name in unknown if name not in found}
    if missing and create:
        found.update(_ensure_rows(session, TEAMS, "name", missing))
    return found


def _ensure_rows(
    session: Session, table: Table, key: str, rows: Mapping[str, Row]
) -> dict[str, int]:
    """Ids of rows by a unique key column, inserting the missing ones (race-safe)."""
    key_column, id_column = table.c[key], table.c.id
    found = ids_by(session, key_column, id_column, sorted(rows))
    missing = [row for value, row in rows.items() if value not in found]
    if missing:
        insert_ignoring_duplicates(session, table, missing)
        found.update(ids_by(session, key_column, id_column, [str(row[key]) for row in missing]))
    return found
