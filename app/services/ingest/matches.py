"""Matches of a batch: merged within the batch, found among the stored ones (by external id,
by competition, teams and kickoff date, or as a fixture moved to a new date), then created
or updated in bulk.

A fixture (competition, season, home and away team) meets once in a league season, so a
record of it on a date no stored match has moves its only stored match there, unless that
match is settled or has another external id. A fixture with two matches (a cup's second
leg, Scotland's extra rounds) never moves.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.bulk import Row, insert_rows
from app.db.orm import Match
from app.domain.leagues import season_for
from app.domain.records import IngestBatch, MatchRecord, Skipped, settled_result
from app.services.bulk import MATCHES, chunks, update_by_id
from app.services.ingest.dimensions import ensure_competitions, resolve_teams
from app.services.ingest.report import IngestReport

# (competition id, home team id, away team id, kickoff date): a match's identity.
MatchKey = tuple[int, int, int, dt.date]
# (competition id, season, home team id, away team id): a fixture, played once in a league
# season (see the module's docstring).
FixtureKey = tuple[int, str, int, int]
# Whatever a caller numbers what it names by: a record's key, a request's item index.
T = TypeVar("T")


class StoredMatch(NamedTuple):
    """A stored match as the writers read it: these columns of ``Match``."""

    id: int
    competition_id: int
    home_team_id: int
    away_team_id: int
    kickoff_date: dt.date
    kickoff: dt.datetime
    kickoff_time_known: bool
    season: str
    home_goals: int | None
    away_goals: int | None
    external_id: str | None

    @property
    def teams(self) -> tuple[int, int, int]:
        return (self.competition_id, self.home_team_id, self.away_team_id)

    @property
    def fixture(self) -> FixtureKey:
        return (self.competition_id, self.season, self.home_team_id, self.away_team_id)

    @property
    def is_settled(self) -> bool:
        return settled_result(self.home_goals, self.away_goals) is not None


MATCH_COLUMNS = tuple(getattr(Match, name) for name in StoredMatch._fields)


def date_ranges(keys: Iterable[MatchKey]) -> dict[int, tuple[dt.date, dt.date]]:
    """First and last kickoff date of each competition among match keys."""
    ranges: dict[int, tuple[dt.date, dt.date]] = {}
    for competition_id, _home, _away, day in keys:
        first, last = ranges.get(competition_id, (day, day))
        ranges[competition_id] = (min(first, day), max(last, day))
    return ranges


def load_matches_by_key(
    session: Session, wanted: dict[int, tuple[dt.date, dt.date]]
) -> dict[MatchKey, StoredMatch]:
    """Stored matches of each competition between two kickoff dates (inclusive)."""
    found: dict[MatchKey, StoredMatch] = {}
    for competition_id, (first, last) in wanted.items():
        start = dt.datetime(first.year, first.month, first.day, tzinfo=dt.UTC)
        end = dt.datetime(last.year, last.month, last.day, tzinfo=dt.UTC) + dt.timedelta(days=1)
        rows = session.execute(
            select(*MATCH_COLUMNS).where(
                Match.competition_id == competition_id, Match.kickoff >= start, Match.kickoff < end
            )
        )
        for row in rows:
            match = StoredMatch(*row)
            found[(*match.teams, match.kickoff_date)] = match
    return found


def load_matches_by_external_id(
    session: Session, external_ids: Sequence[str]
) -> dict[str, StoredMatch]:
    found: dict[str, StoredMatch] = {}
    for part in chunks(external_ids):
        for row in session.execute(select(*MATCH_COLUMNS).where(Match.external_id.in_(part))):
            found[row.external_id] = StoredMatch(*row)
    return found


def load_matches_by_fixture(
    session: Session, fixtures: Iterable[FixtureKey]
) -> dict[FixtureKey, list[StoredMatch]]:
    """The stored matches of each fixture (one query per competition and season)."""
    homes: dict[tuple[int, str], set[int]] = defaultdict(set)
    for competition_id, season, home, _away in fixtures:
        homes[(competition_id, season)].add(home)
    found: dict[FixtureKey, list[StoredMatch]] = defaultdict(list)
    for (competition_id, season), home_ids in homes.items():
        for part in chunks(sorted(home_ids)):
            rows = session.execute(
                select(*MATCH_COLUMNS).where(
                    Match.competition_id == competition_id,
                    Match.season == season,
                    Match.home_team_id.in_(part),
                )
            )
            for row in rows:
                match = StoredMatch(*row)
                found[match.fixture].append(match)
    return found


@dataclass(frozen=True, slots=True)
class NamedMatch:
    """How a record of a batch, or an item of a request, names a match."""

    key: MatchKey
    season: str
    external_id: str | None

    @property
    def fixture(self) -> FixtureKey:
        return (self.key[0], self.season, self.key[1], self.key[2])


@dataclass(frozen=True)
class StoredMatches(Generic[T]):
    """The stored matches some records or items (``T`` numbers them) name: by key, by
    external id, and those they move to a new date."""

    by_key: dict[MatchKey, StoredMatch]
    by_external_id: dict[str, StoredMatch]
    rescheduled: dict[T, StoredMatch]

    @classmethod
    def load(
        cls, session: Session, named: Mapping[T, NamedMatch], external_ids: Iterable[str]
    ) -> StoredMatches[T]:
        by_key = load_matches_by_key(session, date_ranges(n.key for n in named.values()))
        by_external_id = load_matches_by_external_id(session, sorted(set(external_ids)))
        moves = _rescheduled(session, named, by_key, by_external_id)
        return cls(by_key, by_external_id, moves)

    def named(self, which: T, key: MatchKey | None, external_id: str | None) -> StoredMatch | None:
        """The stored match named by its external id, else by its key, else as moved."""
        if external_id is not None and external_id in self.by_external_id:
            return self.by_external_id[external_id]
        if key is None:
            return None
        return self.by_key.get(key) or self.rescheduled.get(which)

    def taken(self, key: MatchKey, match: StoredMatch) -> bool:
        """Another stored match of the same teams has the date ``key`` would move ``match`` to."""
        occupant = self.by_key.get(key)
        return occupant is not None and occupant.id != match.id


def _rescheduled(
    session: Session,
    named: Mapping[T, NamedMatch],
    by_key: Mapping[MatchKey, StoredMatch],
    by_external_id: Mapping[str, StoredMatch],
) -> dict[T, StoredMatch]:
    """The stored match each of ``named`` moves to its date (see the module's docstring):
    where it names no stored match by its key or its external id, its fixture's only stored
    match, not yet played, not another event of the source and not named by another of
    ``named``, which must not name the fixture on another date."""
    dates_of: dict[FixtureKey, set[MatchKey]] = defaultdict(set)
    for name in named.values():
        dates_of[name.fixture].add(name.key)
    taken = {by_key[n.key].id for n in named.values() if n.key in by_key} | {
        by_external_id[n.external_id].id
        for n in named.values()
        if n.external_id is not None and n.external_id in by_external_id
    }
    unnamed = {
        which: name
        for which, name in named.items()
        if name.key not in by_key
        and name.external_id not in by_external_id
        and len(dates_of[name.fixture]) == 1
    }
    candidates = load_matches_by_fixture(session, {name.fixture for name in unnamed.values()})
    moves: dict[T, StoredMatch] = {}
    for which, name in unnamed.items():
        match = _fixture_to_move(candidates.get(name.fixture, ()), name.external_id)
        if match is not None and match.id not in taken:
            moves[which] = match
    return moves


def _fixture_to_move(
    candidates: Sequence[StoredMatch], external_id: str | None
) -> StoredMatch | None:
    if len(candidates) != 1:
        return None
    (match,) = candidates
    another_event = external_id is not None and match.external_id not in (None, external_id)
    return None if match.is_settled or another_event else match


def load_matches_by_id(session: Session, ids: Sequence[int]) -> dict[int, StoredMatch]:
    return {
        row.id: StoredMatch(*row)
        for part in chunks(ids)
        for row in session.execute(select(*MATCH_COLUMNS).where(Match.id.in_(part)))
    }


def write_matches(
    session: Session, batch: IngestBatch, report: IngestReport, now: dt.datetime
) -> tuple[list[int | None], set[int], set[int], set[int]]:
    """Create or update the batch's matches: the stored id of each record (None where it
    was skipped), the ids of the matches created, of those created or changed, and of the
    stored ones whose kickoff moved."""
    competition_ids = ensure_competitions(session, (m.competition for m in batch.matches))
    team_ids = resolve_teams(
        session, (n for m in batch.matches for n in (m.home_team, m.away_team)), create=True
    )
    incoming, record_keys = _distinct_matches(batch.matches, competition_ids, team_ids, report)
    stored = StoredMatches.load(
        session,
        {key: NamedMatch(key, _season(r), r.external_id) for key, r in incoming.items()},
        (r.external_id for r in incoming.values() if r.external_id),
    )
    writes = _MatchWrites()
    for key, record in incoming.items():
        _plan(key, record, stored, writes, report, now)
    created = _insert(session, writes, report)
    lock_in_order(session, {i for i in writes.match_ids.values() if i is not None} - created)
    update_by_id(session, MATCHES, writes.updates)
    changed = created | {cast(int, row["b_id"]) for row in writes.updates}
    ids = [None if key is None else writes.match_ids.get(key) for key in record_keys]
    return ids, created, changed, writes.rescheduled


def lock_in_order(session: Session, match_ids: Collection[int]) -> None:
    """Lock the stored matches a batch writes (their rows, their quotes) at once, in id
    order, before it changes any: every writer of several matches, a bet import among them,
    then takes them in one order, and none waits for another in a circle (PostgreSQL;
    SQLite's writers take turns, so there it reads nothing)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for part in chunks(sorted(match_ids)):
        statement = select(Match.id).where(Match.id.in_(part)).order_by(Match.id)
        session.execute(statement.with_for_update(key_share=True))


def _distinct_matches(
    records: Iterable[MatchRecord],
    competition_ids: dict[str, int],
    team_ids: dict[str, int],
    report: IngestReport,
) -> tuple[dict[MatchKey, MatchRecord], list[MatchKey | None]]:
    """One record per match of the batch (later copies merged into the first), and the key
    of each record (None where it was skipped)."""
    incoming: dict[MatchKey, MatchRecord] = {}
    external_owner: dict[str, tuple[MatchKey, str]] = {}
    record_keys: list[MatchKey | None] = []
    for record in records:
        home, away = team_ids[record.home_team], team_ids[record.away_team]
        if home == away:
            report.skipped.append(
                Skipped(record.where, f"{record.home_team!r} and {record.away_team!r} are one team")
            )
            record_keys.append(None)
            continue
        key = (competition_ids[record.competition], home, away, record.kickoff_date)
        conflict = _external_id_conflict(record, key, incoming, external_owner)
        if conflict is not None:
            report.skipped.append(Skipped(record.where, conflict, "external_id"))
            record_keys.append(None)
            continue
        if key in incoming:
            _merge_into(incoming[key], record)
        else:
            incoming[key] = record
        if record.external_id is not None:
            external_owner.setdefault(record.external_id, (key, record.where))
        record_keys.append(key)
    return incoming, record_keys


def _external_id_conflict(
    record: MatchRecord,
    key: MatchKey,
    incoming: dict[MatchKey, MatchRecord],
    external_owner: dict[str, tuple[MatchKey, str]],
) -> str | None:
    """Why a record's external id contradicts an earlier record of the batch, if it does."""
    external_id = record.external_id
    if external_id is None:
        return None
    owner = external_owner.get(external_id)
    if owner is not None and owner[0] != key:
        return f"external id {external_id!r} is also given to a different match ({owner[1]})"
    earlier = incoming.get(key)
    if earlier is not None and earlier.external_id not in (None, external_id):
        return f"{earlier.where} gives this match the external id {earlier.external_id!r}"
    return None


def _merge_into(first: MatchRecord, later: MatchRecord) -> None:
    """Two records of one batch name the same match: later non-empty fields win."""
    if later.kickoff_time_known or not first.kickoff_time_known:
        first.kickoff, first.kickoff_time_known = later.kickoff, later.kickoff_time_known
    for name in ("season", "external_id", "home_goals", "away_goals"):
        value = getattr(later, name)
        if value is not None:
            setattr(first, name, value)


@dataclass
class _MatchWrites:
    """What writing a batch's matches comes to: rows to insert, rows to update, and the
    stored id of each match (None where it is skipped; new ones once inserted)."""

    new_rows: list[Row] = field(default_factory=list)
    new_keys: list[MatchKey] = field(default_factory=list)
    updates: list[Row] = field(default_factory=list)
    match_ids: dict[MatchKey, int | None] = field(default_factory=dict)
    # Stored matches whose kickoff moves: which of their quotes are valid may change.
    rescheduled: set[int] = field(default_factory=set)


def _plan(
    key: MatchKey,
    record: MatchRecord,
    stored: StoredMatches[MatchKey],
    writes: _MatchWrites,
    report: IngestReport,
    now: dt.datetime,
) -> None:
    """Decide what writing one match of the batch does, and count it."""
    if _external_id_taken(key, record, stored, report):
        writes.match_ids[key] = None
        return
    match = _stored_match(key, record, stored, report)
    if match is None:
        writes.new_rows.append(_new_match_row(key, record, now))
        writes.new_keys.append(key)
        if record.is_settled:
            report.results_set += 1
        return
    writes.match_ids[key] = match.id
    updated = _updated(match, record)
    moved = updated.kickoff_date != match.kickoff_date
    if moved and stored.taken(key, match):
        report.skipped.append(
            Skipped(
                record.where,
                f"match with external id {record.external_id!r} cannot move to "
                f"{key[3].isoformat()}: another stored match has that date",
                "kickoff",
            )
        )
        writes.match_ids[key] = None
        return
    if updated == match:
        report.matches_unchanged += 1
        return
    report.matches_updated += 1
    report.matches_rescheduled += moved
    if updated.kickoff != match.kickoff:
        writes.rescheduled.add(match.id)
    if (updated.home_goals, updated.away_goals) != (match.home_goals, match.away_goals):
        report.results_set += 1
    writes.updates.append(_update_row(updated, now))


def _external_id_taken(
    key: MatchKey, record: MatchRecord, stored: StoredMatches[MatchKey], report: IngestReport
) -> bool:
    """The record's external id belongs to a stored match of other teams (reported)."""
    if record.external_id is None:
        return False
    match = stored.by_external_id.get(record.external_id)
    if match is None or match.teams == key[:3]:
        return False
    report.skipped.append(
        Skipped(
            record.where,
            f"external id {record.external_id!r} belongs to stored match "
            f"{match.id}, which has other teams or another competition",
            "external_id",
        )
    )
    return True


def _stored_match(
    key: MatchKey, record: MatchRecord, stored: StoredMatches[MatchKey], report: IngestReport
) -> StoredMatch | None:
    """The stored match the record names. A stored match that already has another external
    id keeps it (reported)."""
    match = stored.named(key, key, record.external_id)
    if (
        match is not None
        and record.external_id is not None
        and match.external_id not in (None, record.external_id)
    ):
        report.skipped.append(
            Skipped(
                record.where,
                f"match {match.id} already has external id {match.external_id!r}; "
                f"{record.external_id!r} was not stored",
                "external_id",
            )
        )
    return match


def _new_match_row(key: MatchKey, record: MatchRecord, now: dt.datetime) -> Row:
    settled = record.is_settled
    return {
        "competition_id": key[0],
        "home_team_id": key[1],
        "away_team_id": key[2],
        "kickoff_date": key[3],
        "kickoff": record.kickoff,
        "kickoff_time_known": record.kickoff_time_known,
        "season": _season(record),
        "home_goals": record.home_goals if settled else None,
        "away_goals": record.away_goals if settled else None,
        "result": record.result,
        "external_id": record.external_id,
        "created_at": now,
        "updated_at": now,
    }


def _season(record: MatchRecord) -> str:
    """The record's season, else the one its league names the kickoff in."""
    return record.season or season_for(record.competition, record.kickoff_date)


def _updated(match: StoredMatch, record: MatchRecord) -> StoredMatch:
    """The stored match with what the record adds or corrects."""
    updated = match
    # A source that gives only the date must not erase a kickoff time another source gave.
    if record.kickoff_time_known or record.kickoff_date != match.kickoff_date:
        if record.kickoff != match.kickoff:
            updated = updated._replace(kickoff=record.kickoff, kickoff_date=record.kickoff_date)
        updated = updated._replace(kickoff_time_known=record.kickoff_time_known)
    if record.season is not None:
        updated = updated._replace(season=record.season)
    if record.external_id is not None and match.external_id is None:
        updated = updated._replace(external_id=record.external_id)
    if record.is_settled:
        updated = updated._replace(home_goals=record.home_goals, away_goals=record.away_goals)
    return updated


def _update_row(match: StoredMatch, now: dt.datetime) -> Row:
    """One executemany needs the same columns in every row: every updatable one."""
    return {
        "b_id": match.id,
        "kickoff": match.kickoff,
        "kickoff_date": match.kickoff_date,
        "kickoff_time_known": match.kickoff_time_known,
        "season": match.season,
        "home_goals": match.home_goals,
        "away_goals": match.away_goals,
        "external_id": match.external_id,
        "updated_at": now,
        "result": settled_result(match.home_goals, match.away_goals),
    }


def _insert(session: Session, writes: _MatchWrites, report: IngestReport) -> set[int]:
    """Insert the new matches; their ids go to ``writes.match_ids``. Returns those ids."""
    if not writes.new_rows:
        return set()
    # The rows, then their new ids by key: multi-row RETURNING cannot promise parameter
    # order on SQLite and would fall back to one statement per row.
    insert_rows(session.connection(), MATCHES, writes.new_rows)
    stored_now = load_matches_by_key(session, date_ranges(writes.new_keys))
    created: set[int] = set()
    for key in writes.new_keys:
        writes.match_ids[key] = stored_now[key].id
        created.add(stored_now[key].id)
    report.matches_created += len(writes.new_rows)
    return created
