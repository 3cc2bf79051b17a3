"""Teams and their aliases (other sources' names for the same team).

Adding an alias under which a team is already stored merges that team into the other one;
two teams that in some season both played in no common competition look like two, and
their merge needs confirming. A merge is recorded so that removing the alias undoes what it
can (a match merged into a twin stays merged).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session, joinedload, selectinload

from app.db.orm import (
    Competition,
    Match,
    OddsQuote,
    PredictionLogEntry,
    Team,
    TeamAlias,
    TeamMerge,
    TeamMergeMatch,
    utcnow,
)
from app.domain.flags import CLOSING_WINDOW
from app.domain.records import check_team_name, normalised
from app.domain.vocabulary import MergeChange
from app.domain.wording import counted
from app.services import track_record_aggregates
from app.services.bets import move_bets
from app.services.ingest.dimensions import resolve_teams
from app.services.ingest.latest import refresh_latest_quotes
from app.services.ingest.revisions import bump_quotes_revisions
from app.services.locks import serialise_match_rewrites
from app.services.pagination import Paged, PageWindow, paginate


class TeamNotFoundError(LookupError):
    pass


class AliasConflictError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class CompetitionSeason:
    """How many of a team's matches are in one competition and season."""

    competition: str
    season: str
    matches: int


@dataclass(frozen=True, slots=True)
class SeasonClash:
    """A season in which both teams played and shared no competition."""

    season: str
    merged_team: list[str]  # competition codes
    team: list[str]


@dataclass(frozen=True, slots=True)
class MergePreview:
    """What merging the team stored as ``merged_team`` into ``team`` changes."""

    merged_team: str
    team: str
    matches_moved: int  # matches that move over to the team
    matches_merged: int  # matches the team already has (same competition, teams and date)
    quotes_moved_with_matches: int  # the quotes of the matches that move over
    quotes_moved: int  # quotes of a merged match that go to the team's match
    quotes_dropped: int  # quotes of a merged match the team's match already has
    competitions: list[CompetitionSeason]  # the merged team's matches
    clashes: list[SeasonClash]

    @property
    def needs_confirmation(self) -> bool:
        return bool(self.clashes)


class MergeNeedsConfirmationError(AliasConflictError):
    """The two teams look like two: the merge waits for the caller's confirmation."""

    def __init__(self, preview: MergePreview) -> None:
        self.preview = preview
        seasons = "; ".join(
            f"{clash.season}: {preview.merged_team!r} in {'/'.join(clash.merged_team)}, "
            f"{preview.team!r} in {'/'.join(clash.team)}"
            for clash in preview.clashes
        )
        super().__init__(
            f"{preview.merged_team!r} and {preview.team!r} look like two teams: they played in "
            f"different competitions in the same season ({seasons}); merging would move "
            f"{counted(preview.matches_moved, 'match')} with "
            f"{counted(preview.quotes_moved_with_matches, 'quote')} "
            f"and merge {preview.matches_merged}"
        )


@dataclass(frozen=True, slots=True)
class AliasReport:
    alias: str
    team: str
    created: bool  # False when the alias already pointed at this team, or on a dry run
    merged_team: bool  # a team stored under the alias name was folded into the target
    matches_moved: int = 0
    matches_merged: int = 0
    quotes_moved: int = 0
    preview: MergePreview | None = None  # what the merge changes (would change, on a dry run)
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class NotMovedBack:
    """A match a merge had moved that its undo leaves where it is, and why."""

    match_id: int | None  # None: the match is no longer stored
    reason: str


@dataclass(frozen=True, slots=True)
class UnaliasReport:
    """What removing an alias undid of the merge it had made, and what it could not."""

    alias: str
    team: str
    restored_team: bool  # the merged team is back under its name
    matches_moved_back: int = 0
    not_moved_back: list[NotMovedBack] = field(default_factory=list)
    # Matches the merged team's were merged into: they keep the quotes of both.
    merged_matches: list[int] = field(default_factory=list)
    aliases_moved_back: list[str] = field(default_factory=list)


def list_teams(session: Session, window: PageWindow, *, search: str | None = None) -> Paged[Team]:
    """One page of teams by name (then id, so pages never overlap), with their aliases."""
    statement = select(Team).options(selectinload(Team.aliases)).order_by(Team.name, Team.id)
    if search:
        # The search text is literal: LIKE's wildcards in it are escaped.
        literal = normalised(search).lower().replace("\\", "\\\\")
        literal = literal.replace("%", "\\%").replace("_", "\\_")
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
    return paginate(session, statement, window)


def add_alias(
    session: Session,
    *,
    alias: str,
    team: str,
    confirm: bool = False,
    dry_run: bool = False,
    window: dt.timedelta = CLOSING_WINDOW,
) -> AliasReport:
    """Make ``alias`` another name of ``team``; a team stored under ``alias`` is folded into
    ``team`` (its matches move, a match now there twice is merged, its bets settled again
    with the twin's close read with ``window``, the operator's closing window). ``dry_run``
    changes nothing; a merge that needs confirming (see the module) needs ``confirm``."""
    alias, team = check_team_name(alias), check_team_name(team)
    if alias == team:
        raise AliasConflictError(f"{alias!r} is already the team's own name")
    serialise_match_rewrites(session)
    target = _team_named(session, team)
    existing = session.scalar(select(TeamAlias).where(TeamAlias.alias == alias))
    if existing is not None:
        if existing.team_id == target.id:
            return AliasReport(
                alias, target.name, created=False, merged_team=False, dry_run=dry_run
            )
        raise AliasConflictError(
            f"{alias!r} is already an alias of {existing.team.name!r}; remove it first"
        )
    duplicate = session.scalar(select(Team).where(Team.name == alias))
    if duplicate is not None and duplicate.id == target.id:
        raise AliasConflictError(
            f"{team!r} is an alias of {alias!r}; {alias!r} cannot also be an alias of it"
        )
    plan = None if duplicate is None else _plan_merge(session, duplicate, target)
    preview = None if plan is None else plan.preview
    if dry_run:
        return AliasReport(
            alias, target.name, created=False, merged_team=False, preview=preview, dry_run=True
        )
    if preview is not None and preview.needs_confirmation and not confirm:
        raise MergeNeedsConfirmationError(preview)
    added = TeamAlias(alias=alias, team_id=target.id)
    session.add(added)
    session.flush()
    if plan is None:
        return AliasReport(alias, target.name, created=True, merged_team=False)
    _merge(session, plan, added, window)
    return AliasReport(
        alias,
        target.name,
        created=True,
        merged_team=True,
        matches_moved=plan.preview.matches_moved,
        matches_merged=plan.preview.matches_merged,
        quotes_moved=plan.preview.quotes_moved,
        preview=plan.preview,
    )


def _team_named(session: Session, name: str) -> Team:
    """The team stored under ``name``, or under the name an alias ``name`` points at."""
    team_id = resolve_teams(session, [name], create=False).get(name)
    if team_id is None:
        raise TeamNotFoundError(f"no team named {name!r}")
    return session.get_one(Team, team_id)


def remove_alias(session: Session, alias: str) -> UnaliasReport:
    """Remove an alias, undoing what can be undone of the merge it made."""
    serialise_match_rewrites(session)
    found = session.scalar(select(TeamAlias).where(TeamAlias.alias == normalised(alias)))
    if found is None:
        raise TeamNotFoundError(f"no alias {alias!r}")
    # Read afresh: a match deleted since has its id set to NULL by the database.
    merge = session.scalar(
        select(TeamMerge)
        .where(TeamMerge.alias_id == found.id)
        .options(selectinload(TeamMerge.matches))
        .execution_options(populate_existing=True)
    )
    report = UnaliasReport(found.alias, found.team.name, restored_team=False)
    if merge is not None:
        report = _undo_merge(session, merge, found)
        # Before the alias, whose deletion would cascade to the record in the database.
        session.delete(merge)
        session.flush()
    session.delete(found)
    session.flush()
    return report


@dataclass(frozen=True, slots=True)
class _MatchStep:
    """What a merge does to one of the merged team's matches."""

    match: Match
    home: int
    away: int
    change: MergeChange  # the side the merged team played on, or MERGED into ``twin``
    twin: Match | None = None
    movable_quotes: tuple[int, ...] = ()  # quote ids that go to the twin


@dataclass(frozen=True, slots=True)
class _MergePlan:
    duplicate: Team
    target: Team
    steps: list[_MatchStep]
    preview: MergePreview


def _plan_merge(session: Session, duplicate: Team, target: Team) -> _MergePlan:
    """Every change merging ``duplicate`` into ``target`` makes, and its preview."""
    matches = session.scalars(
        select(Match)
        .where(or_(Match.home_team_id == duplicate.id, Match.away_team_id == duplicate.id))
        .options(joinedload(Match.competition))
        .order_by(Match.kickoff, Match.id)
    ).all()
    steps = [_step(session, match, duplicate, target) for match in matches]
    moved = [step.match.id for step in steps if step.twin is None]
    quotes_with_matches = session.scalar(
        select(func.count()).select_from(OddsQuote).where(OddsQuote.match_id.in_(moved))
    )
    merged = [step for step in steps if step.twin is not None]
    merged_quotes = session.scalar(
        select(func.count())
        .select_from(OddsQuote)
        .where(OddsQuote.match_id.in_([step.match.id for step in merged]))
    )
    quotes_moved = sum(len(step.movable_quotes) for step in merged)
    competitions = Counter((match.season, match.competition.code) for match in matches)
    preview = MergePreview(
        merged_team=duplicate.name,
        team=target.name,
        matches_moved=len(moved),
        matches_merged=len(merged),
        quotes_moved_with_matches=quotes_with_matches or 0,
        quotes_moved=quotes_moved,
        quotes_dropped=(merged_quotes or 0) - quotes_moved,
        competitions=[
            CompetitionSeason(code, season, count)
            for (season, code), count in sorted(competitions.items())
        ],
        clashes=_clashes(session, competitions, target),
    )
    return _MergePlan(duplicate, target, steps, preview)


def _step(session: Session, match: Match, duplicate: Team, target: Team) -> _MatchStep:
    home = target.id if match.home_team_id == duplicate.id else match.home_team_id
    away = target.id if match.away_team_id == duplicate.id else match.away_team_id
    if home == away:
        raise AliasConflictError(
            f"{duplicate.name!r} and {target.name!r} play each other in match {match.id}; "
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
    side = MergeChange.HOME if match.home_team_id == duplicate.id else MergeChange.AWAY
    if twin is None:
        return _MatchStep(match, home, away, side)
    return _MatchStep(
        match, home, away, MergeChange.MERGED, twin, _movable_quotes(session, match, twin)
    )


def _clashes(
    session: Session, competitions: dict[tuple[str, str], int], target: Team
) -> list[SeasonClash]:
    """The seasons in which the merged team (its ``competitions``) and ``target`` both
    played, with no competition in common."""
    merged_team: dict[str, set[str]] = defaultdict(set)
    for season, code in competitions:
        merged_team[season].add(code)
    team: dict[str, set[str]] = defaultdict(set)
    rows = session.execute(
        select(Match.season, Competition.code)
        .join(Competition, Match.competition_id == Competition.id)
        .where(
            or_(Match.home_team_id == target.id, Match.away_team_id == target.id),
            Match.season.in_(sorted(merged_team)),
        )
        .distinct()
    )
    for season, code in rows:
        team[season].add(code)
    return [
        SeasonClash(season, sorted(codes), sorted(team[season]))
        for season, codes in sorted(merged_team.items())
        if team[season] and not codes & team[season]
    ]


def _merge(session: Session, plan: _MergePlan, alias: TeamAlias, window: dt.timedelta) -> None:
    now = utcnow()
    record = TeamMerge(alias_id=alias.id, team_name=plan.duplicate.name, aliases=[])
    for step in plan.steps:
        if step.twin is None:
            step.match.home_team_id, step.match.away_team_id = step.home, step.away
            step.match.updated_at = now
            record.matches.append(TeamMergeMatch(match_id=step.match.id, change=step.change))
        else:
            _fold_into(session, step.match, step.twin, step.movable_quotes, now, window)
            record.matches.append(TeamMergeMatch(match_id=step.twin.id, change=step.change))
    session.flush()
    record.aliases = list(
        session.scalars(
            select(TeamAlias.alias)
            .where(TeamAlias.team_id == plan.duplicate.id)
            .order_by(TeamAlias.alias)
        )
    )
    session.execute(
        update(TeamAlias)
        .where(TeamAlias.team_id == plan.duplicate.id)
        .values(team_id=plan.target.id)
    )
    # The aliases now belong to the target; the delete must not cascade to them.
    session.expire(plan.duplicate, ["aliases"])
    session.delete(plan.duplicate)
    session.add(record)
    session.flush()


def _fold_into(
    session: Session,
    match: Match,
    twin: Match,
    movable_quotes: tuple[int, ...],
    now: dt.datetime,
    window: dt.timedelta,
) -> None:
    """Fold a match into the target's twin, which takes the quotes, result, kickoff time and
    external id it lacks."""
    if movable_quotes:
        session.execute(
            update(OddsQuote).where(OddsQuote.id.in_(movable_quotes)).values(match_id=twin.id)
        )
    session.execute(delete(OddsQuote).where(OddsQuote.match_id == match.id))
    _keep_logged_prediction(session, match, twin)
    if not twin.is_settled and match.is_settled:
        twin.home_goals, twin.away_goals, twin.result = (
            match.home_goals,
            match.away_goals,
            match.result,
        )
    if not twin.kickoff_time_known and match.kickoff_time_known:
        twin.kickoff, twin.kickoff_time_known = match.kickoff, True
    external_id = match.external_id
    # The bets placed on it follow it to its twin (and are settled by the twin's result).
    move_bets(session, match.id, twin.id, now, window)
    # An entry the folded match keeps (the twin had its own) goes with it: so do its sums.
    dropped_days = track_record_aggregates.entry_days(session, [match.id])
    session.delete(match)
    session.flush()
    # The twin's quotes and maybe its kickoff changed: so may the quotes it serves.
    refresh_latest_quotes(session, [twin.id], now)
    bump_quotes_revisions(session, [twin.id])
    track_record_aggregates.recompute_days(session, dropped_days)
    if twin.external_id is None and external_id is not None:
        twin.external_id = external_id
    twin.updated_at = now


def _keep_logged_prediction(session: Session, match: Match, twin: Match) -> None:
    """The folded match's track-record entry moves to the twin unless it has its own."""
    twin_logged = select(PredictionLogEntry.id).where(PredictionLogEntry.match_id == twin.id)
    if session.scalar(twin_logged) is None:
        session.execute(
            update(PredictionLogEntry)
            .where(PredictionLogEntry.match_id == match.id)
            .values(match_id=twin.id)
        )


def _movable_quotes(session: Session, source: Match, target: Match) -> tuple[int, ...]:
    """The quotes of ``source`` that ``target`` lacks."""
    have = {
        (q.bookmaker_id, q.phase, q.captured_at)
        for q in session.scalars(select(OddsQuote).where(OddsQuote.match_id == target.id))
    }
    return tuple(
        q.id
        for q in session.scalars(
            select(OddsQuote).where(OddsQuote.match_id == source.id).order_by(OddsQuote.id)
        )
        if (q.bookmaker_id, q.phase, q.captured_at) not in have
    )


def _undo_merge(session: Session, merge: TeamMerge, alias: TeamAlias) -> UnaliasReport:
    if session.scalar(select(Team.id).where(Team.name == merge.team_name)) is not None:
        raise AliasConflictError(
            f"a team named {merge.team_name!r} is stored again; the merge cannot be undone"
        )
    team = alias.team
    restored = Team(name=merge.team_name)
    session.add(restored)
    session.flush()
    now = utcnow()
    moved = [item for item in merge.matches if item.change != MergeChange.MERGED]
    refusals = [_move_back(session, item, team, restored, now) for item in moved]
    not_moved_back = [refusal for refusal in refusals if refusal is not None]
    aliases_back = list(
        session.scalars(
            select(TeamAlias.alias)
            .where(TeamAlias.alias.in_(merge.aliases), TeamAlias.team_id == team.id)
            .order_by(TeamAlias.alias)
        )
    )
    session.execute(
        update(TeamAlias).where(TeamAlias.alias.in_(aliases_back)).values(team_id=restored.id)
    )
    session.expire(team, ["aliases"])
    return UnaliasReport(
        alias.alias,
        team.name,
        restored_team=True,
        matches_moved_back=len(moved) - len(not_moved_back),
        not_moved_back=not_moved_back,
        merged_matches=[
            item.match_id
            for item in merge.matches
            if item.change == MergeChange.MERGED and item.match_id is not None
        ],
        aliases_moved_back=aliases_back,
    )


def _move_back(
    session: Session, item: TeamMergeMatch, team: Team, restored: Team, now: dt.datetime
) -> NotMovedBack | None:
    match = None if item.match_id is None else session.get(Match, item.match_id)
    if match is None:
        return NotMovedBack(
            None, "no longer stored: deleted, or merged into another match, since the merge"
        )
    side = "home_team_id" if item.change == MergeChange.HOME else "away_team_id"
    if getattr(match, side) != team.id:
        return NotMovedBack(match.id, f"its {item.change} team is no longer {team.name!r}")
    setattr(match, side, restored.id)
    match.updated_at = now
    return None
