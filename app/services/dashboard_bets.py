"""The dashboard's page of the user's bets: the book's summary (:mod:`app.services.bet_book`),
its bankroll curve, each settled bet's CLV in the order of their kickoffs, and one page of the bets,
newest first (:func:`app.services.bets.list_bets`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import Bet, Match
from app.domain.bet_book import BookSummary
from app.domain.bets import BetStatus
from app.services import bet_book, bets
from app.services.pagination import Paged, PageWindow

# The settled bets whose CLV the page draws, the latest ones (the summary covers them all).
CLV_POINTS_MAX = 500


@dataclass(frozen=True, slots=True)
class BetClv:
    """One settled bet's CLV, at its match's kickoff (the bankroll curve's order)."""

    bet_id: int
    kickoff: dt.datetime
    clv: float


@dataclass(frozen=True, slots=True)
class BetsView:
    """What the bets page shows: the summary (the bankroll curve from ``starting_bankroll``),
    the settled bets' CLVs (the latest :data:`CLV_POINTS_MAX`), and one page of the bets."""

    summary: BookSummary
    clv: list[BetClv]
    bets: Paged[bets.BookBet]


def bets_view(
    session: Session, window: PageWindow, *, starting_bankroll: float, time_zone: str
) -> BetsView:
    """The whole book summed up as GET /bets/summary sums it, its CLVs, and ``window`` of the
    bets, latest placed first."""
    summary = bet_book.summarise_bets(
        session, bets.BetFilter(), starting_bankroll=starting_bankroll, time_zone=time_zone
    )
    listed = bets.list_bets(session, bets.BetFilter(), window)
    return BetsView(summary, _clv_points(session), listed)


def _clv_points(session: Session) -> list[BetClv]:
    statement = (
        select(Bet.id, Match.kickoff, Bet.clv)
        .join(Match, Bet.match_id == Match.id)
        .where(Bet.status.in_((BetStatus.WON, BetStatus.LOST)), Bet.clv.is_not(None))
        # As the bankroll curve: an imported history is settled all at one moment.
        .order_by(Match.kickoff.desc(), Bet.placed_at.desc(), Bet.id.desc())
        .limit(CLV_POINTS_MAX)
    )
    rows = session.execute(statement).all()
    return [
        BetClv(bet_id, kickoff, clv)
        for bet_id, kickoff, clv in reversed(rows)
        if clv is not None  # as selected; said again for the types
    ]
