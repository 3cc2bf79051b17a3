"""Write ingest batches: matches, results and odds quotes, idempotently and in bulk.

Every function takes the caller's session and never commits: the caller's transaction is
the batch (the API's session dependency, the CLI's ``session_scope``). Work is done with
set-based statements (one SELECT per table and chunk, one executemany per kind of write),
never one ORM round trip per row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.orm import Bookmaker, Competition, Match, OddsQuote, Team, TeamAlias, utcnow
from app.domain.football_data import parse_football_data
from app.domain.odds_api import Event, parse_events
from app.domain.records import (
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    Skipped,
    result_of,
    season_of,
    settled_result,
)
from app.domain.vocabulary import Phase

# Keeps IN lists and multi-row statements well below every backend's parameter limit.
CHUNK = 5_000
CONFLICT_RETRIES = 3

T = TypeVar("T")

COMPETITIONS = cast(Table, Competition.__table__)
BOOKMAKERS = cast(Table, Bookmaker.__table__)
TEAMS = cast(Table, Team.__table__)
MATCHES = cast(Table, Match.__table__)
QUOTES = cast(Table, OddsQuote.__table__)
MatchKey = tuple[int, int, int, dt.date]
QuoteKey = tuple[int, int, Phase, dt.datetime | None]


@dataclass
class IngestReport:
    """What one batch changed. Each match counts once as created, updated or unchanged."""

    matches_created: int = 0
    matches_updated: int = 0
    matches_unchanged: int = 0
    quotes_inserted: int = 0
    quotes_updated: int = 0
    quotes_unchanged: int = 0
    results_set: int = 0
    rows_read: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, other: IngestReport) -> None:
        for name in (
            "matches_created",
            "matches_updated",
            "matches_unchanged",
            "quotes_inserted",
            "quotes_updated",
            "quotes_unchanged",
            "results_set",
            "rows_read",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.extend(other.skipped)


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


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def retry_on_conflict(session: Session, work: Any, *args: Any) -> Any:
    """Run ``work`` in a savepoint, again if a concurrent writer inserted the same rows first."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            with session.begin_nested():
                return work(session, *args)
        except IntegrityError:
            if attempt == CONFLICT_RETRIES - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


# --- dimensions -----------------------------------------------------------------------


def _insert_ignoring_duplicates(session: Session, table: Table, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        statement: Any = postgresql.insert(table).on_conflict_do_nothing()
    elif dialect == "sqlite":
        statement = sqlite.insert(table).on_conflict_do_nothing()
    else:  # pragma: no cover - only the two supported backends reach here
        statement = insert(table)
    for part in chunks(rows):
        session.execute(statement, list(part))


def _ensure_rows(
    session: Session, table: Table, key: str, rows: dict[str, dict[str, Any]]
) -> dict[str, int]:
    """Ids of rows by a unique key column, inserting the missing ones (race-safe)."""
    key_column, id_column = table.c[key], table.c.id
    found = _ids_by(session, key_column, id_column, sorted(rows))
    missing = [row for value, row in rows.items() if value not in found]
    if missing:
        _insert_ignoring_duplicates(session, table, missing)
        found.update(_ids_by(session, key_column, id_column, [row[key] for row in missing]))
    return found


def ensure_competitions(session: Session, codes: Iterable[str]) -> dict[str, int]:
    rows = {code: {"code": code, "name": None} for code in codes}
    return _ensure_rows(session, COMPETITIONS, "code", rows)


def ensure_bookmakers(session: Session, names: dict[str, str]) -> dict[str, int]:
    """Ids of bookmaker codes, creating missing ones with the given display names."""
    rows = {code: {"code": code, "name": name or code} for code, name in names.items()}
    return _ensure_rows(session, BOOKMAKERS, "code", rows)


def resolve_teams(session: Session, names: Iterable[str], *, create: bool) -> dict[str, int]:
    """Team id of each name, through aliases; unknown names are created when ``create``."""
    wanted = sorted(set(names))
    found = _ids_by(session, Team.name, Team.id, wanted)
    unknown = [name for name in wanted if name not in found]
    found.update(_ids_by(session, TeamAlias.alias, TeamAlias.team_id, unknown))
    missing = {name: {"name": name} for name in unknown if name not in found}
    if missing and create:
        found.update(_ensure_rows(session, TEAMS, "name", missing))
    return found


def _ids_by(
    session: Session, key_column: Any, id_column: Any, keys: Sequence[str]
) -> dict[str, int]:
    found: dict[str, int] = {}
    for part in chunks(keys):
        for key, row_id in session.execute(
            select(key_column, id_column).where(key_column.in_(part))
        ):
            found[key] = row_id
    return found


# --- matches ----------------------------------------------------------------------------


MATCH_COLUMNS = (
    Match.id,
    Match.competition_id,
    Match.home_team_id,
    Match.away_team_id,
    Match.kickoff_date,
    Match.kickoff,
    Match.kickoff_time_known,
    Match.season,
    Match.home_goals,
    Match.away_goals,
    Match.external_id,
)


def _date_ranges(keys: Iterable[MatchKey]) -> dict[int, tuple[dt.date, dt.date]]:
    """First and last kickoff date of each competition among match keys."""
    ranges: dict[int, tuple[dt.date, dt.date]] = {}
    for competition_id, _home, _away, day in keys:
        first, last = ranges.get(competition_id, (day, day))
        ranges[competition_id] = (min(first, day), max(last, day))
    return ranges


def _load_matches_by_key(
    session: Session, wanted: dict[int, tuple[dt.date, dt.date]]
) -> dict[MatchKey, Any]:
    """Stored matches of each competition between two kickoff dates (inclusive)."""
    found: dict[MatchKey, Any] = {}
    for competition_id, (first, last) in wanted.items():
        start = dt.datetime(first.year, first.month, first.day, tzinfo=dt.UTC)
        end = dt.datetime(last.year, last.month, last.day, tzinfo=dt.UTC) + dt.timedelta(days=1)
        rows = session.execute(
            select(*MATCH_COLUMNS).where(
                Match.competition_id == competition_id, Match.kickoff >= start, Match.kickoff < end
            )
        )
        for row in rows:
            found[(row.competition_id, row.home_team_id, row.away_team_id, row.kickoff_date)] = row
    return found


def _load_matches_by_external_id(session: Session, external_ids: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for part in chunks(external_ids):
        for row in session.execute(select(*MATCH_COLUMNS).where(Match.external_id.in_(part))):
            found[row.external_id] = row
    return found


@dataclass(slots=True)
class _Incoming:
    """One distinct match of a batch, after alias resolution and merging duplicates."""

    key: MatchKey
    record: MatchRecord


def _write_matches(
    session: Session, batch: IngestBatch, report: IngestReport, now: dt.datetime
) -> tuple[list[int | None], set[int]]:
    """Create or update the batch's matches.

    Returns the stored id of each record (None where the record was skipped) and the ids of
    the matches this batch created.
    """
    competition_ids = ensure_competitions(session, (m.competition for m in batch.matches))
    team_ids = resolve_teams(
        session, (n for m in batch.matches for n in (m.home_team, m.away_team)), create=True
    )

    incoming: dict[MatchKey, _Incoming] = {}
    external_owner: dict[str, tuple[MatchKey, str]] = {}
    record_keys: list[MatchKey | None] = []
    for record in batch.matches:
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
            _merge_into(incoming[key].record, record)
        else:
            incoming[key] = _Incoming(key, record)
        if record.external_id is not None:
            external_owner.setdefault(record.external_id, (key, record.where))
        record_keys.append(key)

    stored_by_key = _load_matches_by_key(session, _date_ranges(incoming))
    stored_by_external = _load_matches_by_external_id(
        session, sorted({i.record.external_id for i in incoming.values() if i.record.external_id})
    )

    new_rows: list[dict[str, Any]] = []
    new_keys: list[MatchKey] = []
    updates: list[dict[str, Any]] = []
    match_ids: dict[MatchKey, int | None] = {}
    for key, item in incoming.items():
        record = item.record
        stored = None
        if record.external_id is not None:
            stored = stored_by_external.get(record.external_id)
            if stored is not None and _teams_of(stored) != key[:3]:
                report.skipped.append(
                    Skipped(
                        record.where,
                        f"external id {record.external_id!r} belongs to stored match "
                        f"{stored.id}, which has other teams or another competition",
                        "external_id",
                    )
                )
                match_ids[key] = None
                continue
        if stored is None:
            stored = stored_by_key.get(key)
            if (
                stored is not None
                and record.external_id is not None
                and stored.external_id not in (None, record.external_id)
            ):
                report.skipped.append(
                    Skipped(
                        record.where,
                        f"match {stored.id} already has external id {stored.external_id!r}; "
                        f"{record.external_id!r} was not stored",
                        "external_id",
                    )
                )
        if stored is None:
            new_rows.append(_new_match_row(key, record, now))
            new_keys.append(key)
            if record.result is not None:
                report.results_set += 1
            continue
        match_ids[key] = stored.id
        changes = _match_changes(stored, key, record)
        occupant = stored_by_key.get(key)
        if "kickoff_date" in changes and occupant is not None and occupant.id != stored.id:
            report.skipped.append(
                Skipped(
                    record.where,
                    f"match with external id {record.external_id!r} cannot move to "
                    f"{key[3].isoformat()}: another stored match has that date",
                    "kickoff",
                )
            )
            match_ids[key] = None
            continue
        if not changes:
            report.matches_unchanged += 1
            continue
        report.matches_updated += 1
        if "home_goals" in changes or "away_goals" in changes:
            report.results_set += 1
        updates.append({"b_id": stored.id, **_full_update_row(stored, changes, now)})

    created: set[int] = set()
    if new_rows:
        # A plain executemany, then the new ids by key: multi-row RETURNING cannot promise
        # parameter order on SQLite and would fall back to one statement per row.
        for part in chunks(new_rows):
            session.execute(insert(MATCHES), list(part))
        stored_now = _load_matches_by_key(session, _date_ranges(new_keys))
        for key in new_keys:
            match_ids[key] = stored_now[key].id
            created.add(stored_now[key].id)
        report.matches_created += len(new_rows)
    if updates:
        statement = (
            update(MATCHES)
            .where(MATCHES.c.id == bindparam("b_id"))
            .values({name: bindparam(name) for name in UPDATABLE_MATCH_FIELDS})
        )
        for part in chunks(updates):
            session.execute(statement, list(part))
    return [None if key is None else match_ids.get(key) for key in record_keys], created


UPDATABLE_MATCH_FIELDS = (
    "kickoff",
    "kickoff_date",
    "kickoff_time_known",
    "season",
    "home_goals",
    "away_goals",
    "result",
    "external_id",
    "updated_at",
)


def _teams_of(stored: Any) -> tuple[int, int, int]:
    return (stored.competition_id, stored.home_team_id, stored.away_team_id)


def _external_id_conflict(
    record: MatchRecord,
    key: MatchKey,
    incoming: dict[MatchKey, _Incoming],
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
    if earlier is not None and earlier.record.external_id not in (None, external_id):
        return (
            f"{earlier.record.where} gives this match the external id "
            f"{earlier.record.external_id!r}"
        )
    return None


def _merge_into(first: MatchRecord, later: MatchRecord) -> None:
    """Two records of one batch name the same match: later non-empty fields win."""
    if later.kickoff_time_known or not first.kickoff_time_known:
        first.kickoff, first.kickoff_time_known = later.kickoff, later.kickoff_time_known
    for name in ("season", "external_id", "home_goals", "away_goals"):
        value = getattr(later, name)
        if value is not None:
            setattr(first, name, value)


def _new_match_row(key: MatchKey, record: MatchRecord, now: dt.datetime) -> dict[str, Any]:
    result = record.result
    settled = result is not None
    return {
        "competition_id": key[0],
        "home_team_id": key[1],
        "away_team_id": key[2],
        "kickoff_date": key[3],
        "kickoff": record.kickoff,
        "kickoff_time_known": record.kickoff_time_known,
        "season": record.season or season_of(record.kickoff_date),
        "home_goals": record.home_goals if settled else None,
        "away_goals": record.away_goals if settled else None,
        "result": result,
        "external_id": record.external_id,
        "created_at": now,
        "updated_at": now,
    }


def _match_changes(stored: Any, key: MatchKey, record: MatchRecord) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    # A source that gives only the date must not erase a kickoff time another source gave.
    if record.kickoff_time_known or record.kickoff_date != stored.kickoff_date:
        if record.kickoff != stored.kickoff:
            changes["kickoff"] = record.kickoff
            changes["kickoff_date"] = record.kickoff_date
        if record.kickoff_time_known != stored.kickoff_time_known:
            changes["kickoff_time_known"] = record.kickoff_time_known
    if record.season is not None and record.season != stored.season:
        changes["season"] = record.season
    if record.external_id is not None and stored.external_id is None:
        changes["external_id"] = record.external_id
    goals = (record.home_goals, record.away_goals)
    if None not in goals and goals != (stored.home_goals, stored.away_goals):
        changes["home_goals"], changes["away_goals"] = goals
    return changes


def _full_update_row(stored: Any, changes: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """One executemany needs the same columns in every row: fill unchanged ones from storage."""
    row = {
        "kickoff": stored.kickoff,
        "kickoff_date": stored.kickoff_date,
        "kickoff_time_known": stored.kickoff_time_known,
        "season": stored.season,
        "home_goals": stored.home_goals,
        "away_goals": stored.away_goals,
        "external_id": stored.external_id,
        **changes,
        "updated_at": now,
    }
    row["result"] = settled_result(row["home_goals"], row["away_goals"])
    return row


# --- quotes -------------------------------------------------------------------------------


def _write_quotes(
    session: Session,
    batch: IngestBatch,
    match_ids: list[int | None],
    created_matches: set[int],
    report: IngestReport,
    now: dt.datetime,
) -> None:
    names = {quote.bookmaker: quote.bookmaker for quote in batch.quotes}
    names.update({code: name for code, name in batch.bookmaker_names.items() if code in names})
    bookmaker_ids = ensure_bookmakers(session, names)

    incoming: dict[QuoteKey, QuoteRecord] = {}
    for quote in batch.quotes:
        match_id = match_ids[quote.match]
        if match_id is None:
            continue  # its match was skipped, and reported
        key = (match_id, bookmaker_ids[quote.bookmaker], quote.phase, quote.captured_at)
        first = incoming.get(key)
        if first is not None:
            report.skipped.append(
                Skipped(
                    quote.where,
                    f"the same quote (match, bookmaker, phase, captured_at) as {first.where}; "
                    "the first one was kept",
                )
            )
            continue
        incoming[key] = quote

    # A match created by this batch has no stored quotes yet.
    stored = _load_quotes(session, sorted({key[0] for key in incoming} - created_matches))
    new_rows: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    for key, quote in incoming.items():
        prices = (quote.home, quote.draw, quote.away)
        existing = stored.get(key)
        if existing is None:
            new_rows.append(
                {
                    "match_id": key[0],
                    "bookmaker_id": key[1],
                    "phase": key[2],
                    "captured_at": key[3],
                    "home": prices[0],
                    "draw": prices[1],
                    "away": prices[2],
                    "received_at": now,
                }
            )
        elif existing[1:] == prices:
            report.quotes_unchanged += 1
        else:
            updates.append(
                {
                    "b_id": existing[0],
                    "home": prices[0],
                    "draw": prices[1],
                    "away": prices[2],
                    "received_at": now,
                }
            )
    for part in chunks(new_rows):
        session.execute(insert(QUOTES), list(part))
    report.quotes_inserted += len(new_rows)
    if updates:
        statement = (
            update(QUOTES)
            .where(QUOTES.c.id == bindparam("b_id"))
            .values(
                home=bindparam("home"),
                draw=bindparam("draw"),
                away=bindparam("away"),
                received_at=bindparam("received_at"),
            )
        )
        for part in chunks(updates):
            session.execute(statement, list(part))
    report.quotes_updated += len(updates)


def _load_quotes(
    session: Session, match_ids: Sequence[int]
) -> dict[QuoteKey, tuple[int, float, float, float]]:
    found: dict[QuoteKey, tuple[int, float, float, float]] = {}
    columns = (
        OddsQuote.id,
        OddsQuote.match_id,
        OddsQuote.bookmaker_id,
        OddsQuote.phase,
        OddsQuote.captured_at,
        OddsQuote.home,
        OddsQuote.draw,
        OddsQuote.away,
    )
    for part in chunks(match_ids):
        for row in session.execute(select(*columns).where(OddsQuote.match_id.in_(part))):
            key = (row.match_id, row.bookmaker_id, row.phase, row.captured_at)
            found[key] = (row.id, row.home, row.draw, row.away)
    return found


# --- entry points -------------------------------------------------------------------------


def ingest_batch(
    session: Session, batch: IngestBatch, *, now: dt.datetime | None = None
) -> IngestReport:
    """Write a parsed batch (matches, their results, quotes); idempotent."""
    now = now or utcnow()

    def work(session: Session) -> IngestReport:
        report = IngestReport(rows_read=batch.rows_read, skipped=list(batch.skipped))
        match_ids, created = _write_matches(session, batch, report, now)
        _write_quotes(session, batch, match_ids, created, report, now)
        return report

    report: IngestReport = retry_on_conflict(session, work)
    return report


def settle_results(
    session: Session, items: Sequence[ResultItem], *, now: dt.datetime | None = None
) -> IngestReport:
    """Set the goals (and so the result) of stored matches; unknown matches are skipped."""
    now = now or utcnow()
    report = IngestReport(rows_read=len(items))
    named = [(index, item) for index, item in enumerate(items) if item.match is not None]
    team_ids = resolve_teams(
        session,
        (n for _, item in named for n in (item.match.home_team, item.match.away_team)),  # type: ignore[union-attr]
        create=False,
    )
    ids_of_named = _find_named_matches(session, named, team_ids, report)
    targets: list[tuple[int, int, ResultItem]] = []  # (item index, match id, item)
    for index, item in enumerate(items):
        match_id = item.match_id if item.match_id is not None else ids_of_named.get(index)
        if match_id is not None:
            targets.append((index, match_id, item))

    stored = {
        row.id: row
        for part in chunks(sorted({t[1] for t in targets}))
        for row in session.execute(select(*MATCH_COLUMNS).where(Match.id.in_(part)))
    }
    updates: dict[int, dict[str, Any]] = {}
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
    return report


def _find_named_matches(
    session: Session,
    named: list[tuple[int, ResultItem]],
    team_ids: dict[str, int],
    report: IngestReport,
) -> dict[int, int]:
    """Stored match id of each result item that names its match instead of giving its id."""
    codes = {item.match.competition for _, item in named if item.match is not None}
    competition_ids = _ids_by(session, Competition.code, Competition.id, sorted(codes))
    wanted: dict[int, tuple[dt.date, dt.date]] = {}
    keys: dict[int, MatchKey] = {}
    external_ids: dict[int, str] = {}
    for index, item in named:
        identity = item.match
        assert identity is not None
        where = f"results[{index}].match"
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
                report.skipped.append(Skipped(where, f"no such match: {what}"))
            continue
        day = identity.kickoff.astimezone(dt.UTC).date()
        keys[index] = (
            competition_id,
            team_ids[identity.home_team],
            team_ids[identity.away_team],
            day,
        )
        first, last = wanted.get(competition_id, (day, day))
        wanted[competition_id] = (min(first, day), max(last, day))
    by_key = _load_matches_by_key(session, wanted)
    by_external = _load_matches_by_external_id(session, sorted(set(external_ids.values())))
    found: dict[int, int] = {}
    for index, _item in named:
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


def import_football_data(
    session: Session, content: bytes, *, season: str | None = None
) -> IngestReport:
    """Parse and store one football-data.co.uk file; FileFormatError if it is not one."""
    return ingest_batch(session, parse_football_data(content, season=season))


def import_odds_api(session: Session, events: list[Event]) -> IngestReport:
    """Store a validated The Odds API v4 ``/odds`` response."""
    return ingest_batch(session, parse_events(events))
