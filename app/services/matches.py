"""Deleting a stored match with its quotes; one a stored model version was trained on only
when the caller insists, as the version's figures would describe data that is gone."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.db.engine import on_commit
from app.db.orm import ModelVersion, OddsQuote
from app.domain.wording import counted
from app.services import track_record_aggregates
from app.services.bets import bet_ids_of_match
from app.services.locks import serialise_match_rewrites
from app.services.queries import match_with_names

log = logging.getLogger(__name__)


class MatchNotFoundError(LookupError):
    pass


class MatchTrainedOnError(ValueError):
    """The match lies in the data window of stored model versions (``versions``)."""

    def __init__(self, match_id: int, versions: list[ModelVersion]) -> None:
        self.versions = [version.id for version in versions]
        windows = ", ".join(
            f"{version.id} ({version.window_start:%Y-%m-%d} to {version.window_end:%Y-%m-%d})"
            for version in versions
        )
        what = "model version" if len(versions) == 1 else "model versions"
        super().__init__(
            f"match {match_id} is inside the data window of {what} {windows}, "
            "trained on it: deleting it would leave the version describing data that is gone"
        )


class MatchHasBetsError(ValueError):
    """Bets were placed on the match (``bets``): it is not deleted from under them."""

    def __init__(self, match_id: int, bets: list[int]) -> None:
        self.bets = bets
        shown = ", ".join(str(bet) for bet in bets[:BETS_NAMED])
        more = f" and {len(bets) - BETS_NAMED} more" if len(bets) > BETS_NAMED else ""
        super().__init__(
            f"match {match_id} has {counted(len(bets), 'bet')} ({shown}{more}); "
            "it is not deleted from under them: delete the bets first"
        )


# A refusal names this many bets, then says how many more.
BETS_NAMED = 20


@dataclass(frozen=True, slots=True)
class DeletedMatch:
    """What a deletion removed, and the versions trained on it (a forced deletion)."""

    id: int
    competition: str
    season: str
    kickoff: dt.datetime
    home_team: str
    away_team: str
    quotes_deleted: int
    model_versions: list[int]


def delete_match(session: Session, match_id: int, *, force: bool = False) -> DeletedMatch:
    """Delete a match and its quotes, in the caller's transaction; never one with bets
    (:class:`MatchHasBetsError`, whatever ``force`` says)."""
    # A deletion of the same match, or a team merge, at the same time waits, then finds
    # what that one left (PostgreSQL; SQLite's write sessions take turns already).
    serialise_match_rewrites(session)
    match = match_with_names(session, match_id)
    if match is None:
        raise MatchNotFoundError(f"no match with id {match_id}")
    placed = bet_ids_of_match(session, match_id)
    if placed:
        raise MatchHasBetsError(match_id, placed)
    kickoff = match.kickoff
    trained_on = (ModelVersion.window_start <= kickoff) & (ModelVersion.window_end > kickoff)
    statement = select(ModelVersion).where(trained_on).order_by(ModelVersion.id)
    versions = list(session.scalars(statement))
    if versions and not force:
        raise MatchTrainedOnError(match_id, versions)
    quotes = session.scalar(
        select(func.count()).select_from(OddsQuote).where(OddsQuote.match_id == match_id)
    )
    deleted = DeletedMatch(
        id=match.id,
        competition=match.competition.code,
        season=match.season,
        kickoff=match.kickoff,
        home_team=match.home_team.name,
        away_team=match.away_team.name,
        quotes_deleted=quotes or 0,
        model_versions=[version.id for version in versions],
    )
    logged_days = track_record_aggregates.entry_days(session, [match_id])
    session.execute(delete(OddsQuote).where(OddsQuote.match_id == match_id))
    session.delete(match)
    session.flush()
    # Its logged prediction went with it (the foreign key cascades): so do its sums.
    track_record_aggregates.recompute_days(session, logged_days)
    on_commit(session, lambda: _log_deletion(deleted))
    return deleted


def _log_deletion(deleted: DeletedMatch) -> None:
    log.info(
        "deleted match %d (%s %s, %s v %s, %s) with %s%s",
        deleted.id,
        deleted.competition,
        deleted.season,
        deleted.home_team,
        deleted.away_team,
        f"{deleted.kickoff:%Y-%m-%d}",
        counted(deleted.quotes_deleted, "quote"),
        f"; forced: model versions {deleted.model_versions} were trained on it"
        if deleted.model_versions
        else "",
    )
