"""Model versions: reading the active one, activating one (and the history of activations),
listing, and what the refit reads from the database."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.orm import (
    Bookmaker,
    Competition,
    Match,
    ModelActivation,
    ModelVersion,
    OddsQuote,
    utcnow,
)
from app.domain.ensemble import Ensemble
from app.domain.fitting import methods_to_try
from app.domain.tables import MatchTable, QuoteTable, tables_from_rows
from app.domain.vocabulary import ActivatedBy
from app.services.locks import serialise_promotions
from app.services.pagination import Paged, PageWindow, paginate
from app.settings import Settings


class VersionNotFoundError(LookupError):
    """No model version has that id."""


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


def activate(
    session: Session,
    version: ModelVersion,
    *,
    by: ActivatedBy,
    reason: str | None = None,
    run_id: int | None = None,
    at: dt.datetime | None = None,
) -> ModelActivation:
    """Make ``version`` the only active one and record the activation, in the caller's
    transaction, so readers never see none or two; concurrent activations take turns."""
    serialise_promotions(session)
    previous = active_version_id(session)
    session.execute(update(ModelVersion).where(ModelVersion.is_active).values(is_active=False))
    session.flush()
    moment = at or utcnow()
    version.is_active = True
    version.activated_at = moment
    activation = ModelActivation(
        version_id=version.id,
        previous_version_id=previous,
        activated_at=moment,
        activated_by=by,
        reason=reason,
        run_id=run_id,
    )
    session.add(activation)
    session.flush()
    return activation


@dataclass(frozen=True)
class Activation:
    """What activating a version by hand did (no activation: it was active already)."""

    version: ModelVersion
    activation: ModelActivation | None
    warnings: tuple[str, ...]


def activate_version(
    session: Session,
    version_id: int,
    *,
    by: ActivatedBy,
    reason: str | None,
    settings: Settings,
) -> Activation:
    """Roll back or forward to a stored version, whatever its status."""
    # Before reading whether it is active: another activation may be about to commit.
    serialise_promotions(session)
    version = session.get(ModelVersion, version_id)
    if version is None:
        raise VersionNotFoundError(f"no model version {version_id}")
    warnings = unlike_the_settings(version, settings)
    if version.is_active:
        return Activation(version, None, warnings)
    activation = activate(session, version, by=by, reason=reason)
    # Imported here: the ledger reads the active version through this module.
    from app.services.flags import FlagTerms, record_upcoming_flags

    record_upcoming_flags(session, activation.activated_at, FlagTerms.of(settings))
    return Activation(version, activation, warnings)


def unlike_the_settings(version: ModelVersion, settings: Settings) -> tuple[str, ...]:
    """How the version differs from what refits fit with these settings."""
    warnings: list[str] = []
    if version.phase != settings.refit_phase:
        warnings.append(
            f"version {version.id} was fitted on {version.phase.quotes} while "
            f"ODDSBOOST_REFIT_PHASE is {settings.refit_phase}: while it is active, predictions "
            f"by match_id read {version.phase.quotes}, and refits, fitted on "
            f"{settings.refit_phase.quotes}, will not replace it automatically"
        )
    methods = methods_to_try(settings.demargin_method, choose=settings.refit_choose_method)
    if version.method not in methods:
        warnings.append(
            f"version {version.id} de-margins odds with {version.method} while "
            f"ODDSBOOST_DEMARGIN_METHOD is {settings.demargin_method}: while it is active, "
            "refits will not replace it automatically"
        )
    return tuple(warnings)


def list_activations(session: Session, window: PageWindow) -> Paged[ModelActivation]:
    """Activations of model versions, newest first."""
    return paginate(session, select(ModelActivation).order_by(ModelActivation.id.desc()), window)


def get_version(session: Session, version_id: int) -> ModelVersion | None:
    return session.get(ModelVersion, version_id)


def list_versions(session: Session, window: PageWindow) -> Paged[ModelVersion]:
    """Model versions, newest first."""
    return paginate(session, select(ModelVersion).order_by(ModelVersion.id.desc()), window)


def newest_settled_kickoff(session: Session, *, before: dt.datetime) -> dt.datetime | None:
    return session.scalar(
        select(Match.kickoff)
        .where(Match.is_settled, Match.kickoff < before)
        .order_by(Match.kickoff.desc())
        .limit(1)
    )


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
    OddsQuote.seen_at,
)


def load_tables(
    session: Session, *, start: dt.datetime, end: dt.datetime
) -> tuple[MatchTable, QuoteTable]:
    """Settled matches with kickoff in [start, end) and all their quotes, as column tables."""
    conditions = (Match.kickoff >= start, Match.kickoff < end, Match.is_settled)
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
