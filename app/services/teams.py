"""Teams and their aliases (other sources' names for the same team)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session, selectinload

from app.db.orm import Match, OddsQuote, Team, TeamAlias, utcnow
from app.domain.records import check_team_name, normalised


class TeamNotFoundError(LookupError):
    pass


class AliasConflictError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class AliasReport:
    alias: str
    team: str
    created: bool  # False when the alias already pointed at this team
    merged_team: bool  # a team stored under the alias name was folded into the target
    matches_moved: int = 0
    matches_merged: int = 0
    quotes_moved: int = 0


def list_teams(session: Session, *, search: str | None = None) -> list[Team]:
    statement = select(Team).options(selectinload(Team.aliases)).order_by(Team.name)
    if search:
        # The search text is literal: LIKE's wildcards in it are escaped.
        literal = (
            normalised(search).lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        )
        pattern = f"%{literal}%"
        statement = statement.where(
            or_(
                func.lower(Team.name).like(pattern, escape="\\"),
                Team.id.in_(
                    select(TeamAlias.team_id).where(
                        func.lower(TeamAlias.alias).like(pattern, escape="\\")
                    )
                ),
            )
        )
    return list(session.scalars(statement))


def add_alias(session: Session, *, alias: str, team: str) -> AliasReport:
    """Make ``alias`` another name of ``team`` for every future ingest.

    If matches were already stored under a team called ``alias`` (imported from a source
    before the alias existed), that team is folded into ``team``: its matches move over, a
    match that now exists twice is merged (quotes kept from both, result and external id
    filled where missing), and the duplicate team is removed.
    """
    alias, team = check_team_name(alias), check_team_name(team)
    if alias == team:
        raise AliasConflictError(f"{alias!r} is already the team's own name")
    target = session.scalar(select(Team).where(Team.name == team))
    if target is None:
        via_alias = session.scalar(select(TeamAlias).where(TeamAlias.alias == team))
        if via_alias is None:
            raise TeamNotFoundError(f"no team named {team!r}")
        target = via_alias.team
    existing = session.scalar(select(TeamAlias).where(TeamAlias.alias == alias))
    if existing is not None:
        if existing.team_id == target.id:
            return AliasReport(alias, target.name, created=False, merged_team=False)
        raise AliasConflictError(
            f"{alias!r} is already an alias of {existing.team.name!r}; remove it first"
        )

    duplicate = session.scalar(select(Team).where(Team.name == alias))
    if duplicate is not None and duplicate.id == target.id:
        raise AliasConflictError(
            f"{team!r} is an alias of {alias!r}; {alias!r} cannot also be an alias of it"
        )
    report = AliasReport(alias, target.name, created=True, merged_team=False)
    if duplicate is not None:
        report = _merge_team(session, duplicate, target, alias)
        session.execute(
            update(TeamAlias).where(TeamAlias.team_id == duplicate.id).values(team_id=target.id)
        )
        # The aliases now belong to the target; the delete must not cascade to them.
        session.expire(duplicate, ["aliases"])
        session.delete(duplicate)
        session.flush()
    session.add(TeamAlias(alias=alias, team_id=target.id))
    session.flush()
    return report


def remove_alias(session: Session, alias: str) -> None:
    found = session.scalar(select(TeamAlias).where(TeamAlias.alias == normalised(alias)))
    if found is None:
        raise TeamNotFoundError(f"no alias {alias!r}")
    session.delete(found)
    session.flush()


def _merge_team(session: Session, duplicate: Team, target: Team, alias: str) -> AliasReport:
    moved = merged = quotes_moved = 0
    now = utcnow()
    matches = session.scalars(
        select(Match)
        .where(or_(Match.home_team_id == duplicate.id, Match.away_team_id == duplicate.id))
        .order_by(Match.kickoff, Match.id)
    ).all()
    for match in matches:
        home = target.id if match.home_team_id == duplicate.id else match.home_team_id
        away = target.id if match.away_team_id == duplicate.id else match.away_team_id
        if home == away:
            raise AliasConflictError(
                f"{alias!r} and {target.name!r} play each other in match {match.id}; "
                "they cannot be the same team"
            )
        twin = session.scalar(
            select(Match).where(
                Match.competition_id == match.competition_id,
                Match.home_team_id == home,
                Match.away_team_id == away,
                Match.kickoff_date == match.kickoff_date,
            )
        )
        if twin is None:
            match.home_team_id, match.away_team_id, match.updated_at = home, away, now
            moved += 1
            continue
        quotes_moved += _move_quotes(session, source=match, target=twin)
        if not twin.is_settled and match.is_settled:
            twin.home_goals, twin.away_goals, twin.result = (
                match.home_goals,
                match.away_goals,
                match.result,
            )
        if not twin.kickoff_time_known and match.kickoff_time_known:
            twin.kickoff, twin.kickoff_time_known = match.kickoff, True
        external_id = match.external_id
        session.delete(match)
        session.flush()
        if twin.external_id is None and external_id is not None:
            twin.external_id = external_id
        twin.updated_at = now
        merged += 1
    session.flush()
    return AliasReport(
        alias,
        target.name,
        created=True,
        merged_team=True,
        matches_moved=moved,
        matches_merged=merged,
        quotes_moved=quotes_moved,
    )


def _move_quotes(session: Session, *, source: Match, target: Match) -> int:
    """Move the quotes of ``source`` that ``target`` lacks; drop the ones it already has."""
    have = {
        (q.bookmaker_id, q.phase, q.captured_at)
        for q in session.scalars(select(OddsQuote).where(OddsQuote.match_id == target.id))
    }
    movable = [
        q.id
        for q in session.scalars(select(OddsQuote).where(OddsQuote.match_id == source.id))
        if (q.bookmaker_id, q.phase, q.captured_at) not in have
    ]
    if movable:
        session.execute(
            update(OddsQuote).where(OddsQuote.id.in_(movable)).values(match_id=target.id)
        )
    session.execute(delete(OddsQuote).where(OddsQuote.match_id == source.id))
    return len(movable)
