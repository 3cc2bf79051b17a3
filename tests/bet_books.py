"""A bettor's book on real matches, shared by the tests of the CSV import and export, the
summary and their commands.

The matches are the first rows of real football-data.co.uk season files (E0 and SP1
2017/18), imported by the real ingest path. Bets are recorded by the one path,
``record_bets``; they are settled here by setting their settlement columns, as the
settlement would (see :func:`settle_book`), so that these tests do not depend on it: what
the settlement wrote when a bet was recorded on a played match is cleared first
(:func:`unsettle`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from app.db.orm import Bet, Competition, Match, Team
from app.domain.bets import BetStatus
from app.domain.flags import CloseOrigin
from app.services.ingest import import_football_data
from app.services.teams import add_alias

# Enough rows of each season file for the matches the tests name (E0 up to 26 August 2017,
# SP1 up to 27 August 2017).
SEASON_ROWS = 30
SEASONS = ("E0_1718", "SP1_1718")
# Other sources' spellings of stored teams, mapped as a user would.
ALIASES = {"Manchester United": "Man United", "Atlético Madrid": "Ath Madrid"}


def season_head(path: Path, rows: int = SEASON_ROWS) -> bytes:
    """The header and the first ``rows`` rows of a season file, byte for byte."""
    lines = path.read_bytes().splitlines(keepends=True)
    return b"".join(lines[: rows + 1])


def store_book_matches(session: Session, season_file: Callable[[str], Path]) -> None:
    """The first rows of E0 and SP1 2017/18, and the aliases of :data:`ALIASES`."""
    for name in SEASONS:
        import_football_data(session, season_head(season_file(name)))
    for alias, team in ALIASES.items():
        add_alias(session, alias=alias, team=team)
    session.flush()


def match_id(
    session: Session, competition: str, home: str, away: str, *, day: dt.date | None = None
) -> int:
    """The stored match of two teams (their stored names) in a competition (on ``day``)."""
    home_team, away_team = aliased(Team), aliased(Team)
    statement = (
        select(Match.id)
        .join(Competition, Match.competition_id == Competition.id)
        .join(home_team, Match.home_team_id == home_team.id)
        .join(away_team, Match.away_team_id == away_team.id)
        .where(Competition.code == competition, home_team.name == home, away_team.name == away)
    )
    if day is not None:
        statement = statement.where(Match.kickoff_date == day)
    return session.execute(statement).scalar_one()


def csv_bytes(header: str, *rows: str, newline: str = "\n") -> bytes:
    return newline.join((header, *rows, "")).encode()


def settle_book(
    session: Session,
    closing_probabilities: Mapping[tuple[int, str], float],
    settled_at: Mapping[int, dt.datetime] | None = None,
) -> None:
    """Settle each open bet of a match with a result as the settlement rule does: won if its
    outcome is the result (returned stake × price), else lost (nothing returned); with a
    closing probability of its (match, outcome), CLV = price × p − 1. Settled at its match's
    kickoff plus two hours, unless ``settled_at`` gives its match another moment."""
    bets = session.scalars(select(Bet).where(Bet.status != BetStatus.VOID)).all()
    for bet in bets:
        unsettle(bet)
        match = session.get_one(Match, bet.match_id)
        if match.result is None:
            continue
        won = bet.outcome == match.result
        bet.status = BetStatus.WON if won else BetStatus.LOST
        bet.result = match.result
        bet.returned = bet.stake * bet.price if won else 0.0
        bet.profit = bet.returned - bet.stake
        probability = closing_probabilities.get((bet.match_id, bet.outcome))
        if probability is not None:
            bet.closing_probability = probability
            bet.close_price = round(1.0 / probability, 2)
            bet.clv = bet.price * probability - 1.0
            bet.close_origin = CloseOrigin.SEASON_FILE
        moments = settled_at or {}
        bet.settled_at = moments.get(match.id, match.kickoff + dt.timedelta(hours=2))
    session.flush()


def unsettle(bet: Bet) -> None:
    """Clear what the settlement wrote on ``bet``: open again, or void with nothing else."""
    if bet.status is not BetStatus.VOID:
        bet.status = BetStatus.OPEN
    bet.result = bet.returned = bet.profit = None
    bet.close_price = bet.closing_probability = bet.clv = None
    bet.close_origin = bet.close_captured_at = bet.settled_at = None
