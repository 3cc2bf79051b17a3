"""Model versions: reading the active one, listing, and what the refit reads from the database."""

from __future__ import annotations

import datetime as dt

import numpy as np
from sqlalchemy import ColumnExpressionArgument, select, update
from sqlalchemy.orm import Session

from app.db.orm import Bookmaker, Competition, Match, ModelVersion, OddsQuote, utcnow
from app.domain.ensemble import Ensemble
from app.domain.tables import MatchTable, QuoteTable, tables_from_rows
from app.services.pagination import Paged, PageWindow, paginate


def ensemble_of(version: ModelVersion) -> Ensemble:
    pool = version.bookmakers
    return Ensemble(
        bookmakers=tuple(bookmaker.code for bookmaker in pool),
        weights=np.array([bookmaker.weight for bookmaker in pool], dtype=np.float64),
        method=version.method,
        phase=version.phase,
        rounds=version.rounds,
        version=version.id,
        fitted_at=version.created_at,
        algorithm=version.algorithm,
        selection_counts=tuple(bookmaker.selection_count for bookmaker in pool),
        calibration=version.calibration,
    )


def active_version(session: Session) -> ModelVersion | None:
    return session.scalar(select(ModelVersion).where(ModelVersion.is_active))


def active_version_id(session: Session) -> int | None:
    return session.scalar(select(ModelVersion.id).where(ModelVersion.is_active))


def activate(session: Session, version: ModelVersion) -> None:
    """Make ``version`` the only active one, inside the caller's transaction.

    Both statements run in one transaction, so every reader sees either the old active
    version or the new one, never none and never two (the partial unique index would
    refuse two).
    """
    session.execute(update(ModelVersion).where(ModelVersion.is_active).values(is_active=False))
    session.flush()
    version.is_active = True
    version.activated_at = utcnow()
    session.flush()


def get_version(session: Session, version_id: int) -> ModelVersion | None:
    return session.get(ModelVersion, version_id)


def list_versions(session: Session, window: PageWindow) -> Paged[ModelVersion]:
    """Model versions, newest first."""
    return paginate(session, select(ModelVersion).order_by(ModelVersion.id.desc()), window)


# A quote row as :func:`app.domain.tables.tables_from_rows` reads it.
QUOTE_COLUMNS = (
    OddsQuote.match_id,
    Bookmaker.code,
    OddsQuote.phase,
    OddsQuote.captured_at,
    OddsQuote.received_at,
    OddsQuote.home,
    OddsQuote.draw,
    OddsQuote.away,
)


def load_tables(
    session: Session, *, start: dt.datetime, end: dt.datetime, settled_only: bool = True
) -> tuple[MatchTable, QuoteTable]:
    """Matches with kickoff in [start, end) and all their quotes, as column tables."""
    conditions: list[ColumnExpressionArgument[bool]] = [Match.kickoff >= start, Match.kickoff < end]
    if settled_only:
        conditions.append(Match.is_settled)
    match_rows = session.execute(
        select(Match.id, Match.kickoff, Match.result, Competition.code, Match.season)
        .join(Competition, Match.competition_id == Competition.id)
        .where(*conditions)
        .order_by(Match.id)
    ).all()
    quote_rows = session.execute(
        select(*QUOTE_COLUMNS)
        .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
        .join(Match, OddsQuote.match_id == Match.id)
        .where(*conditions)
    ).all()
    return tables_from_rows(match_rows, quote_rows)
