"""Results of stored matches, named by id or by competition, teams and kickoff date."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, update
from sqlalchemy.orm import Session

from app.db.orm import Competition, utcnow
from app.domain.records import Skipped, result_of
from app.services.ingest.bulk import MATCHES, Row, ids_by
from app.services.ingest.dimensions import resolve_teams
from app.services.ingest.matches import (
    MatchKey,
    date_ranges,
    load_matches_by_external_id,
    load_matches_by_id,
    load_matches_by_key,
)
from app.services.ingest.report import IngestReport, record_on_commit


@dataclass(frozen=True, slots=True)
class MatchIdentity:
    """How a client names a match that may already be stored."""

    competition: str
    home_team: str
    away_team: str
    kickoff: dt.datetime
    external_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResultItem:
    home_goals: int
    away_goals: int
    match_id: int | None = None
    match: MatchIdentity | None = None


def settle_results(
    session: Session,
    items: Sequence[ResultItem],
    *,
    source: str,
    now: dt.datetime | None = None,
) -> IngestReport:
    """Set the goals (and so the result) of stored matches; unknown matches are skipped.
    What it wrote is counted under ``source`` once the caller commits."""
    now = now or utcnow()
    report = IngestReport(rows_read=len(items))
    named = [(index, item.match) for index, item in enumerate(items) if item.match is not None]
    ids_of_named = _find_named_matches(session, named, report)
    targets: list[tuple[int, int, ResultItem]] = []  # (item index, match id, item)
    for index, item in enumerate(items):
        match_id = item.match_id if item.match_id is not None else ids_of_named.get(index)
        if match_id is not None:
            targets.append((index, match_id, item))

    stored = load_matches_by_id(session, sorted({t[1] for t in targets}))
    updates: dict[int, Row] = {}
    for index, match_id, item in targets:
        row = stored.get(match_id)
        where = f"results[{index}]"
        if row is None:
            report.skipped.append(Skipped(where, f"no match with id {match_id}", "match_id"))
            continue
        if row.kickoff > now:
            report.skipped.append(
                Skipped(
                    where, f"match {match_id} kicks off in the future ({row.kickoff.isoformat()})"
                )
            )
            continue
        goals = (item.home_goals, item.away_goals)
        if goals == (row.home_goals, row.away_goals) and match_id not in updates:
            report.matches_unchanged += 1
            continue
        if match_id not in updates:
            report.matches_updated += 1
            report.results_set += 1
        updates[match_id] = {
            "b_id": match_id,
            "home_goals": goals[0],
            "away_goals": goals[1],
            "result": result_of(*goals),
            "updated_at": now,
        }
    if updates:
        statement = (
            update(MATCHES)
            .where(MATCHES.c.id == bindparam("b_id"))
            .values(
                home_goals=bindparam("home_goals"),
                away_goals=bindparam("away_goals"),
                result=bindparam("result"),
                updated_at=bindparam("updated_at"),
            )
        )
        session.execute(statement, list(updates.values()))
    record_on_commit(session, report, source=source)
    return report


def _find_named_matches(
    session: Session, named: list[tuple[int, MatchIdentity]], report: IngestReport
) -> dict[int, int]:
    """Stored match id of each result item that names its match instead of giving its id."""
    team_ids = resolve_teams(
        session,
        (name for _, identity in named for name in (identity.home_team, identity.away_team)),
        create=False,
    )
    codes = {identity.competition for _, identity in named}
    competition_ids = ids_by(session, Competition.code, Competition.id, sorted(codes))
    keys: dict[int, MatchKey] = {}
    external_ids: dict[int, str] = {}
    for index, identity in named:
        if identity.external_id:
            external_ids[index] = identity.external_id
        competition_id = competition_ids.get(identity.competition)
        unknown = [n for n in (identity.home_team, identity.away_team) if n not in team_ids]
        if competition_id is None or unknown:
            if index not in external_ids:
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
    by_key = load_matches_by_key(session, date_ranges(keys.values()))
    by_external = load_matches_by_external_id(session, sorted(set(external_ids.values())))
    found: dict[int, int] = {}
    for index, _identity in named:
        row = None
        if index in external_ids:
            row = by_external.get(external_ids[index])
        if row is None and index in keys:
            row = by_key.get(keys[index])
        if row is not None:
            found[index] = row.id
        elif index in keys or index in external_ids:
            report.skipped.append(
                Skipped(f"results[{index}].match", "no stored match with these teams on that date")
            )
    return found
