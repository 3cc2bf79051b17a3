"""Results of stored matches, named by id or by competition, teams and kickoff date (another
date moves the match, by the rule of :mod:`app.services.ingest.matches`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.db.bulk import Row
from app.db.orm import Competition, utcnow
from app.domain.leagues import season_for
from app.domain.records import Skipped, result_of

# A module, not its names: the ledger reads through this package's helpers.
from app.services import bets, flags
from app.services.ingest.bulk import MATCHES, ids_by, update_by_id
from app.services.ingest.dimensions import resolve_teams
from app.services.ingest.latest import refresh_latest_quotes
from app.services.ingest.matches import (
    MatchKey,
    NamedMatch,
    StoredMatch,
    StoredMatches,
    load_matches_by_id,
)
from app.services.ingest.report import IngestReport, record_on_commit
from app.services.ingest.revisions import bump_quotes_revisions


@dataclass(frozen=True, slots=True)
class MatchIdentity:
    """How a client names a match that may already be stored."""

    competition: str
    home_team: str
    away_team: str
    kickoff: dt.datetime
    external_id: str | None = None
    season: str | None = None  # None: the one its league names the kickoff in

    @property
    def season_or_derived(self) -> str:
        return self.season or season_for(self.competition, self.kickoff.astimezone(dt.UTC).date())


@dataclass(frozen=True, slots=True)
class ResultItem:
    home_goals: int
    away_goals: int
    match_id: int | None = None
    match: MatchIdentity | None = None


@dataclass(frozen=True, slots=True)
class _Target:
    """The stored match a result item names, and the kickoff it moves the match to."""

    index: int
    match_id: int
    item: ResultItem
    moved_to: dt.datetime | None = None


def settle_results(
    session: Session,
    items: Sequence[ResultItem],
    *,
    source: str,
    now: dt.datetime | None = None,
    flag_terms: flags.FlagTerms | None = None,
) -> IngestReport:
    """Set the goals (and so the result) of stored matches; unknown matches are skipped.
    What it wrote is counted under ``source`` once the caller commits; the flags of the
    matches it settled are scored by ``flag_terms`` in the same transaction."""
    now = now or utcnow()
    report = IngestReport(rows_read=len(items))
    named = [(index, item.match) for index, item in enumerate(items) if item.match is not None]
    found = _find_named_matches(session, named, report)
    targets: list[_Target] = []
    for index, item in enumerate(items):
        if item.match_id is not None:
            targets.append(_Target(index, item.match_id, item))
        elif index in found:
            match_id, moved_to = found[index]
            targets.append(_Target(index, match_id, item, moved_to))

    stored = load_matches_by_id(session, sorted({t.match_id for t in targets}))
    updates: dict[int, Row] = {}
    for target in targets:
        match = stored.get(target.match_id)
        row = _settled_row(target, match, report, now)
        if match is None or row is None:
            continue
        if target.match_id not in updates:
            report.matches_updated += 1
            report.results_set += (row["home_goals"], row["away_goals"]) != (
                match.home_goals,
                match.away_goals,
            )
            report.matches_rescheduled += row["kickoff_date"] != match.kickoff_date
        updates[target.match_id] = row
    update_by_id(session, MATCHES, list(updates.values()))
    moved = [
        match_id for match_id, row in updates.items() if row["kickoff"] != stored[match_id].kickoff
    ]
    refresh_latest_quotes(session, moved, now)
    bump_quotes_revisions(session, moved)
    terms = flag_terms or flags.DEFAULT_FLAG_TERMS
    flags.score_settled_flags(session, list(updates), now, terms)
    bets.settle_match_bets(session, list(updates), now, terms.closing_window)
    record_on_commit(session, report, source=source)
    return report


def _settled_row(
    target: _Target, match: StoredMatch | None, report: IngestReport, now: dt.datetime
) -> Row | None:
    """The update a result item makes to its match; None where it is skipped or changes
    nothing (counted)."""
    where = f"results[{target.index}]"
    if match is None:
        report.skipped.append(Skipped(where, f"no match with id {target.match_id}", "match_id"))
        return None
    kickoff = target.moved_to or match.kickoff
    if kickoff > now:
        report.skipped.append(
            Skipped(
                where, f"match {target.match_id} kicks off in the future ({kickoff.isoformat()})"
            )
        )
        return None
    goals = (target.item.home_goals, target.item.away_goals)
    if goals == (match.home_goals, match.away_goals) and kickoff == match.kickoff:
        report.matches_unchanged += 1
        return None
    moved = target.moved_to is not None
    return {
        "b_id": target.match_id,
        "home_goals": goals[0],
        "away_goals": goals[1],
        "result": result_of(*goals),
        "kickoff": kickoff,
        "kickoff_date": kickoff.date(),
        "kickoff_time_known": True if moved else match.kickoff_time_known,
        "updated_at": now,
    }


def _find_named_matches(
    session: Session, named: list[tuple[int, MatchIdentity]], report: IngestReport
) -> dict[int, tuple[int, dt.datetime | None]]:
    """Stored match id of each result item that names its match instead of giving its id,
    and the kickoff it moves the match to when it names another date."""
    keys = _keys_of(session, named, report)
    identities = dict(named)
    stored = StoredMatches.load(
        session,
        {
            index: NamedMatch(
                key, identities[index].season_or_derived, identities[index].external_id
            )
            for index, key in keys.items()
        },
        (identity.external_id for _, identity in named if identity.external_id),
    )
    found: dict[int, tuple[int, dt.datetime | None]] = {}
    for index, identity in named:
        where = f"results[{index}].match"
        key = keys.get(index)
        match = stored.named(index, key, identity.external_id or None)
        if match is None:
            if key is not None or identity.external_id:
                report.skipped.append(
                    Skipped(where, "no stored match with these teams on that date")
                )
            continue
        moved_to = _moved_to(key, identity, match)
        if moved_to is not None and key is not None and stored.taken(key, match):
            report.skipped.append(
                Skipped(
                    where,
                    f"match {match.id} cannot move to {key[3].isoformat()}: another stored "
                    "match has that date",
                    "kickoff",
                )
            )
            continue
        found[index] = (match.id, moved_to)
    return found


def _keys_of(
    session: Session, named: list[tuple[int, MatchIdentity]], report: IngestReport
) -> dict[int, MatchKey]:
    """The key of each identity whose competition and teams are stored; the others are
    reported unless their external id may still name a match."""
    team_ids = resolve_teams(
        session,
        (name for _, identity in named for name in (identity.home_team, identity.away_team)),
        create=False,
    )
    codes = {identity.competition for _, identity in named}
    competition_ids = ids_by(session, Competition.code, Competition.id, sorted(codes))
    keys: dict[int, MatchKey] = {}
    for index, identity in named:
        competition_id = competition_ids.get(identity.competition)
        unknown = [n for n in (identity.home_team, identity.away_team) if n not in team_ids]
        if competition_id is None or unknown:
            if not identity.external_id:
                what = (
                    f"unknown competition {identity.competition!r}"
                    if competition_id is None
                    else "unknown team " + ", ".join(repr(n) for n in unknown)
                )
                report.skipped.append(Skipped(f"results[{index}].match", f"no such match: {what}"))
            continue
        keys[index] = (
            competition_id,
            team_ids[identity.home_team],
            team_ids[identity.away_team],
            identity.kickoff.astimezone(dt.UTC).date(),
        )
    return keys


def _moved_to(
    key: MatchKey | None, identity: MatchIdentity, match: StoredMatch
) -> dt.datetime | None:
    """The kickoff an item moves its match to: the one it names, when it names the match's
    teams on another date; None when the match stays where it is."""
    if key is None or key[:3] != match.teams or key[3] == match.kickoff_date:
        return None
    return identity.kickoff.astimezone(dt.UTC)
