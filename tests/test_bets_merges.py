"""A team merge folds a duplicate match into its twin: the bets on it move, and a bet that
followed the duplicate's flag (deleted with it) follows the twin's flag of the same outcome,
or none, the trail saying which.

Books from tests/alert_books.py (PS 2, 4, 4 and B365 2.5, 5, 2.5) flag one outcome, the same
on both matches as the books are the same; PS alone flags nothing (the reference's own
prices are worth their fair value: no value)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import Bet, Match, Team, ValueFlag
from app.domain.bets import BetChangeKind, BetChannel, BetDraft
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.vocabulary import Phase
from app.services.bets import record_bets, trail_of
from app.services.ingest import ingest_batch
from app.services.teams import add_alias
from tests.alert_books import KICKOFF, away_flag_batch

RAISED = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def _pinnacle_only(home: str) -> IngestBatch:
    match = MatchRecord(competition="E0", home_team=home, away_team="Chelsea", kickoff=KICKOFF)
    return IngestBatch(
        matches=[match], quotes=[QuoteRecord(0, "PS", Phase.PRE, 2.0, 4.0, 4.0, RAISED)]
    )


def _match_of(session: Session, home: str) -> int:
    return session.scalars(
        select(Match.id).join(Team, Match.home_team_id == Team.id).where(Team.name == home)
    ).one()


def _flag_of(session: Session, match_id: int) -> ValueFlag | None:
    return session.scalars(select(ValueFlag).where(ValueFlag.match_id == match_id)).one_or_none()


def _bet_on_duplicate_flag(session: Session) -> tuple[int, ValueFlag]:
    """A bet on Manchester United v Chelsea following its one flag."""
    ingest_batch(
        session, away_flag_batch(RAISED, home="Manchester United"), source="test", now=RAISED
    )
    duplicate = _match_of(session, "Manchester United")
    flag = _flag_of(session, duplicate)
    assert flag is not None
    draft = BetDraft(duplicate, flag.outcome, "B365", "2.5", 10.0, RAISED, flag_id=flag.id)
    (bet,) = record_bets(session, [draft], BetChannel.API, RAISED)
    assert bet.source == flag.value_source
    return bet.id, flag


def _merge(session: Session) -> None:
    add_alias(session, alias="Manchester United", team="Man United", confirm=True)
    session.flush()
    session.expire_all()  # read what the database holds after its cascades


def test_a_bet_that_followed_the_folded_match_s_flag_follows_the_twin_s(
    session: Session,
) -> None:
    ingest_batch(session, away_flag_batch(RAISED, home="Man United"), source="test", now=RAISED)
    twin = _match_of(session, "Man United")
    twin_flag = _flag_of(session, twin)
    bet_id, flag = _bet_on_duplicate_flag(session)
    assert twin_flag is not None
    assert twin_flag.outcome == flag.outcome
    flag_id, twin_flag_id = flag.id, twin_flag.id

    _merge(session)

    bet = session.get_one(Bet, bet_id)
    assert (bet.match_id, bet.flag_id, bet.source) == (twin, twin_flag_id, "PS")
    moved = trail_of(session, bet_id)[-1]
    assert (moved.change, moved.channel) == (BetChangeKind.CORRECTED, BetChannel.MERGE)
    assert moved.before is not None
    assert moved.after is not None
    assert (moved.before["flag_id"], moved.after["flag_id"]) == (flag_id, twin_flag_id)
    assert moved.after["match_id"] == twin


def test_a_bet_whose_twin_has_no_flag_of_its_outcome_follows_none_on_its_trail(
    session: Session,
) -> None:
    ingest_batch(session, _pinnacle_only("Man United"), source="test", now=RAISED)
    twin = _match_of(session, "Man United")
    assert _flag_of(session, twin) is None
    bet_id, flag = _bet_on_duplicate_flag(session)
    flag_id = flag.id

    _merge(session)

    bet = session.get_one(Bet, bet_id)
    assert (bet.match_id, bet.flag_id, bet.source) == (twin, None, None)
    moved = trail_of(session, bet_id)[-1]
    assert moved.channel == BetChannel.MERGE
    assert moved.before is not None
    assert moved.after is not None
    # The link's end is the trail's, not the database's cascade behind it.
    assert (moved.before["flag_id"], moved.after["flag_id"]) == (flag_id, None)
    assert (moved.before["source"], moved.after["source"]) == ("PS", None)
