"""Read-side queries of the public API: matches, their latest quotes, bookmakers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVarTuple

import numpy as np
from sqlalchemy import ColumnElement, ColumnExpressionArgument, Select, func, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session, joinedload

from app.db.orm import Bookmaker, Competition, Match, OddsQuote, Team, TeamAlias, utcnow
from app.domain.records import normalised
from app.domain.training import latest_of_groups
from app.domain.vocabulary import MatchStatus, Phase
from app.services.pagination import Paged, PageWindow, paginate

ColumnsT = TypeVarTuple("ColumnsT")


@dataclass(frozen=True, slots=True)
class MatchFilter:
    competition: str | None = None
    season: str | None = None
    kickoff_from: dt.datetime | None = None
    kickoff_to: dt.datetime | None = None
    status: MatchStatus | None = None
    descending: bool = False
    # A team by its name or one of its aliases, in any letter case.
    home_team: str | None = None
    away_team: str | None = None
    kickoff_day: dt.date | None = None  # a UTC calendar day


def status_of(match: Match, now: dt.datetime) -> MatchStatus:
    """``settled`` once the result is in; before that ``upcoming``, then ``unsettled``."""
    if match.is_settled:
        return MatchStatus.SETTLED
    return MatchStatus.UPCOMING if match.kickoff > now else MatchStatus.UNSETTLED


@dataclass(frozen=True, slots=True)
class MatchView:
    """A stored match and its status when it was read."""

    match: Match
    status: MatchStatus


@dataclass(frozen=True, slots=True)
class MatchDetail(MatchView):
    """A match with the latest quote of each bookmaker in each phase (pre-match first)."""

    quotes: list[OddsQuote]


@dataclass(frozen=True, slots=True)
class BookmakerSummary:
    """A bookmaker and the number of quotes stored for it, in all and in each phase."""

    bookmaker: Bookmaker
    quotes_by_phase: dict[Phase, int]

    @property
    def quotes(self) -> int:
        return sum(self.quotes_by_phase.values())


@dataclass(frozen=True, slots=True)
class CompetitionSummary:
    """A competition and the number of matches stored in it."""

    competition: Competition
    matches: int


def list_matches(
    session: Session,
    filters: MatchFilter,
    window: PageWindow,
    *,
    now: dt.datetime | None = None,
) -> Paged[MatchView]:
    moment = now or utcnow()
    order = (
        (Match.kickoff.desc(), Match.id.desc()) if filters.descending else (Match.kickoff, Match.id)
    )
    statement = _filtered(select(Match), filters, moment).options(*WITH_NAMES).order_by(*order)
    return paginate(session, statement, window).map(
        lambda match: MatchView(match, status_of(match, moment))
    )


def upcoming_only(
    statement: Select[*ColumnsT], filters: MatchFilter, now: dt.datetime
) -> Select[*ColumnsT]:
    """``statement``, of matches, kept to the upcoming ones that fit ``filters``."""
    return _filtered(statement, replace(filters, status=MatchStatus.UPCOMING), now)


def _filtered(
    statement: Select[*ColumnsT], filters: MatchFilter, now: dt.datetime
) -> Select[*ColumnsT]:
    if filters.competition is not None:
        statement = statement.join(Competition, Match.competition_id == Competition.id).where(
            Competition.code == filters.competition
        )
    if filters.season is not None:
        statement = statement.where(Match.season == filters.season)
    if filters.home_team is not None:
        statement = statement.where(_played_by(Match.home_team_id, filters.home_team))
    if filters.away_team is not None:
        statement = statement.where(_played_by(Match.away_team_id, filters.away_team))
    return statement.where(*_kickoff_conditions(filters, now))


def _kickoff_conditions(
    filters: MatchFilter, now: dt.datetime
) -> list[ColumnExpressionArgument[bool]]:
    conditions: list[ColumnExpressionArgument[bool]] = []
    if filters.kickoff_from is not None:
        conditions.append(Match.kickoff >= filters.kickoff_from)
    if filters.kickoff_to is not None:
        conditions.append(Match.kickoff <= filters.kickoff_to)
    if filters.kickoff_day is not None:
        start = dt.datetime.combine(filters.kickoff_day, dt.time(), dt.UTC)
        conditions += [Match.kickoff >= start, Match.kickoff < start + dt.timedelta(days=1)]
    if filters.status == MatchStatus.SETTLED:
        conditions.append(Match.is_settled)
    elif filters.status == MatchStatus.UPCOMING:
        conditions += [~Match.is_settled, Match.kickoff > now]
    elif filters.status == MatchStatus.UNSETTLED:
        conditions += [~Match.is_settled, Match.kickoff <= now]
    return conditions


def _played_by(side: InstrumentedAttribute[int], name: str) -> ColumnElement[bool]:
    """The team on ``side`` has ``name`` or an alias ``name``, in any letter case."""
    folded = normalised(name).lower()
    return side.in_(
        select(Team.id).where(
            or_(
                func.lower(Team.name) == folded,
                Team.id.in_(select(TeamAlias.team_id).where(func.lower(TeamAlias.alias) == folded)),
            )
        )
    )


# A match's competition and teams, loaded with it.
WITH_NAMES = (
    joinedload(Match.competition),
    joinedload(Match.home_team),
    joinedload(Match.away_team),
)


def match_with_names(session: Session, match_id: int) -> Match | None:
    return session.scalar(select(Match).where(Match.id == match_id).options(*WITH_NAMES))


def match_detail(
    session: Session, match_id: int, *, now: dt.datetime | None = None
) -> MatchDetail | None:
    """One match, its status and the latest quote of each bookmaker in each phase."""
    match = match_with_names(session, match_id)
    if match is None:
        return None
    return MatchDetail(match, status_of(match, now or utcnow()), latest_quotes(session, match.id))


def latest_by_bookmaker_and_phase(quotes: Sequence[OddsQuote]) -> list[OddsQuote]:
    """The latest quote of each bookmaker in each phase, by the recency rule of training."""
    if not quotes:
        return []
    groups: dict[tuple[int, str], int] = {}
    group = np.array(
        [groups.setdefault((q.bookmaker_id, q.phase), len(groups)) for q in quotes], dtype=np.intp
    )
    captured_at = np.array(
        [
            np.nan if captured is None else captured.timestamp()
            for captured in (q.credible_captured_at for q in quotes)
        ]
    )
    received_at = np.array([q.received_at.timestamp() for q in quotes])
    latest = [quotes[int(i)] for i in latest_of_groups(group, captured_at, received_at)]
    return sorted(latest, key=lambda q: (q.phase != Phase.PRE, q.bookmaker.code))


def latest_quotes(session: Session, match_id: int) -> list[OddsQuote]:
    """The latest quote of each bookmaker in each phase, pre-match first, by bookmaker code."""
    quotes = session.scalars(
        select(OddsQuote)
        .where(OddsQuote.match_id == match_id)
        .options(joinedload(OddsQuote.bookmaker))
    ).all()
    return latest_by_bookmaker_and_phase(quotes)


# Quotes stored per bookmaker id and phase; matches stored per competition id.
QuoteCounts = dict[int, dict[Phase, int]]
MatchCounts = dict[int, int]


def quote_counts(session: Session) -> QuoteCounts:
    """Every bookmaker's quotes counted by phase (a read of the whole history)."""
    counts: QuoteCounts = {}
    rows = session.execute(
        select(OddsQuote.bookmaker_id, OddsQuote.phase, func.count()).group_by(
            OddsQuote.bookmaker_id, OddsQuote.phase
        )
    ).all()
    for bookmaker_id, phase, count in rows:
        counts.setdefault(bookmaker_id, {})[Phase(phase)] = int(count)
    return counts


def match_counts(session: Session) -> MatchCounts:
    """Every competition's matches counted (a read of every match)."""
    rows = session.execute(
        select(Match.competition_id, func.count()).group_by(Match.competition_id)
    ).all()
    return {competition_id: int(count) for competition_id, count in rows}


def list_bookmakers(
    session: Session, window: PageWindow, counts: QuoteCounts
) -> Paged[BookmakerSummary]:
    """One page of bookmakers, with their quotes by phase as ``counts`` has them."""
    page = paginate(session, select(Bookmaker).order_by(Bookmaker.code), window)
    return page.map(
        lambda bookmaker: BookmakerSummary(
            bookmaker, {phase: counts.get(bookmaker.id, {}).get(phase, 0) for phase in Phase}
        )
    )


def list_competitions(session: Session, counts: MatchCounts) -> list[CompetitionSummary]:
    """Every competition by code, with its matches as ``counts`` has them."""
    competitions = session.scalars(select(Competition).order_by(Competition.code))
    return [CompetitionSummary(c, counts.get(c.id, 0)) for c in competitions]
