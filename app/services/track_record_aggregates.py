"""The track record's daily aggregates: kept by its writers, read by its answers.

Per UTC day of kickoff, competition and model version, the sums of the scored entries
(:mod:`app.domain.track_record_aggregates`). A day's rows are replaced as a whole
(:func:`recompute_days`) by every writer of the days it changes; :func:`refresh` also
recomputes the days whose matches changed since the last pass (``matches.updated_at``). A
log kept before the aggregates, or staked by other Kelly terms, is filled in chunks
(:func:`fill`). :func:`window_sums` adds up the stored rows of a window's whole days and
computes from the entries the days it cannot take from them (a day the window cuts, one
whose matches changed, one not filled yet), so an answer scores the results as they are now.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from sqlalchemy import (
    ColumnElement,
    ScalarSelect,
    Select,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import session_scope
from app.db.orm import (
    Competition,
    Match,
    PredictionLogEntry,
    TrackRecordBankroll,
    TrackRecordBookmaker,
    TrackRecordDay,
    TrackRecordReliability,
    TrackRecordState,
    ValueFlag,
)
from app.domain.track_record import ServedPrediction
from app.domain.track_record_aggregates import (
    BinSums,
    BookmakerSums,
    DaySums,
    GroupKey,
    Sums,
    Tally,
    TallyTerms,
    WindowSums,
    added_up,
    best_bookmaker_of,
    tally,
    utc_day,
)
from app.domain.track_record_scores import SettledEntry
from app.services.bulk import chunks
from app.services.locks import serialise_track_record_writes

STATE_ID = 1
# How far before its watermark a pass looks again for changed matches: longer than a write
# of results takes to commit, so one that committed after a later one is still found.
CHANGE_LAG = dt.timedelta(minutes=2)
# Entries a chunk of the fill reads (whole days: a day is never split): SQLite's write lock
# is held about a second for each.
FILL_ENTRIES = 2_000
# The pause after a chunk of a long write: longer than the longest sleep of SQLite's busy
# handler, so a writer waiting for the lock takes it before the next chunk does.
WRITER_PAUSE_SECONDS = 0.1
# Days named in one statement: well under SQLite's limit of bound values.
DAYS_PER_STATEMENT = 400
ONE_DAY = dt.timedelta(days=1)
EARLIEST_CHANGE = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

TABLES_BY_DAY = (TrackRecordDay, TrackRecordBookmaker, TrackRecordBankroll, TrackRecordReliability)


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), dt.UTC)


# Reading the entries.


@dataclass(frozen=True, slots=True)
class PerformanceQuery:
    """Kickoffs in [from, to) (either end open), of one competition or all."""

    kickoff_from: dt.datetime | None = None
    kickoff_to: dt.datetime | None = None
    competition: str | None = None


def scored_entries(
    session: Session,
    window: PerformanceQuery,
    ranges: Sequence[tuple[dt.datetime, dt.datetime]] | None = None,
) -> list[tuple[SettledEntry, int]]:
    """The scored entries of ``window`` (with kickoffs in ``ranges``, if given), by
    kickoff, each with its competition's id."""
    statement = _scored_statement(window)
    statements = (
        [statement]
        if ranges is None
        else [
            statement.where(or_(*(_kickoff_between(low, high) for low, high in part)))
            for part in chunks(ranges, DAYS_PER_STATEMENT)
        ]
    )
    return [
        (SettledEntry(match_id, kickoff, result, served), competition)
        for part in statements
        for match_id, kickoff, result, served, competition in session.execute(part)
        if result is not None
    ]


def _kickoff_between(low: dt.datetime, high: dt.datetime) -> ColumnElement[bool]:
    return (PredictionLogEntry.kickoff >= low) & (PredictionLogEntry.kickoff < high)


def _scored_statement(
    window: PerformanceQuery,
) -> Select[int, dt.datetime, str | None, ServedPrediction, int]:
    statement = (
        select(
            PredictionLogEntry.match_id,
            PredictionLogEntry.kickoff,
            Match.result,
            PredictionLogEntry.served,
            Match.competition_id,
        )
        .join(Match, PredictionLogEntry.match_id == Match.id)
        # An entry logged at a kickoff the match no longer has (it was postponed) served
        # a match that was not played then: it is not scored.
        .where(Match.is_settled, PredictionLogEntry.kickoff == Match.kickoff)
        .order_by(PredictionLogEntry.kickoff, PredictionLogEntry.match_id)
    )
    if window.kickoff_from is not None:
        statement = statement.where(PredictionLogEntry.kickoff >= window.kickoff_from)
    if window.kickoff_to is not None:
        statement = statement.where(PredictionLogEntry.kickoff < window.kickoff_to)
    if window.competition is not None:
        statement = statement.where(Match.competition_id == _competition_id(window.competition))
    return statement


def _competition_id(code: str) -> ScalarSelect[int]:
    return select(Competition.id).where(Competition.code == code).scalar_subquery()


def day_ranges(days: Iterable[dt.date]) -> list[tuple[dt.datetime, dt.datetime]]:
    """Kickoff ranges covering ``days``, consecutive days in one range."""
    ranges: list[tuple[dt.datetime, dt.datetime]] = []
    for day in sorted(set(days)):
        start, end = _midnight(day), _midnight(day + ONE_DAY)
        if ranges and ranges[-1][1] == start:
            ranges[-1] = (ranges[-1][0], end)
        else:
            ranges.append((start, end))
    return ranges


# Writing the aggregates.


def _locked_state(session: Session) -> TrackRecordState:
    """The aggregates' state, stored if missing, once any other writer of them is done."""
    serialise_track_record_writes(session)
    state = session.get(TrackRecordState, STATE_ID, populate_existing=True)
    if state is None:
        state = coverage(session)
        session.add(state)
        session.flush()
    return state


def coverage(session: Session) -> TrackRecordState:
    """What the stored aggregates hold (a new state, not stored, before any were made)."""
    state = session.get(TrackRecordState, STATE_ID)
    if state is not None:
        return state
    has_entries = session.scalar(select(PredictionLogEntry.id).limit(1)) is not None
    return TrackRecordState(id=STATE_ID, complete=not has_entries, entries_through=0, revision=0)


def terms_of(state: TrackRecordState) -> TallyTerms | None:
    """The terms the aggregates were made with; None before any were."""
    if state.kelly_fraction is None or state.stake_cap is None or state.reliability_bins is None:
        return None
    return TallyTerms(state.kelly_fraction, state.stake_cap, state.reliability_bins)


def recompute_days(session: Session, days: Collection[dt.date]) -> None:
    """Replace the aggregates of ``days`` by the sums of their scored entries as they are
    now, in the caller's transaction (nothing to do before any aggregates were made)."""
    state = _locked_state(session)
    terms = terms_of(state)
    if terms is None or not days:
        return
    _write_days(session, sorted(days), terms)
    state.revision += 1
    session.flush()


def _write_days(session: Session, days: Sequence[dt.date], terms: TallyTerms) -> None:
    for chunk in chunks(days, DAYS_PER_STATEMENT):
        for table in TABLES_BY_DAY:
            session.execute(delete(table).where(table.day.in_(chunk)))
        found = scored_entries(session, PerformanceQuery(), day_ranges(chunk))
        _insert(session, tally(found, terms))


def _insert(session: Session, sums: Tally) -> None:
    def keyed(key: GroupKey) -> dict[str, object]:
        return {
            "day": key.day,
            "competition_id": key.competition,
            "model_version": key.model_version,
        }

    rows = {
        TrackRecordDay: [keyed(key) | day.values() for key, day in sums.days.items()],
        TrackRecordBookmaker: [
            keyed(key) | {"bookmaker": code} | bookmaker.values()
            for (key, code), bookmaker in sums.bookmakers.items()
        ],
        TrackRecordBankroll: [
            keyed(key) | {"kickoff": kickoff, "bets": bets, "growth": growth}
            for (kickoff, key), (bets, growth) in sums.bankroll.items()
        ],
        TrackRecordReliability: [
            {"day": day, "outcome": outcome, "bin": index} | bins.values()
            for (day, outcome, index), bins in sums.reliability.items()
        ],
    }
    for table, values in rows.items():
        if values:
            session.execute(insert(table), values)


def refresh(session: Session, terms: TallyTerms, *, now: dt.datetime) -> None:
    """Bring the days already filled up to date (their entries written, or matches changed,
    since the last pass), in the caller's transaction. Aggregates made with other terms are
    marked to be filled again (:func:`fill`)."""
    state = _locked_state(session)
    _adopt(state, terms)
    newest_change = session.scalar(select(func.max(Match.updated_at)))
    newest_entry = session.scalar(select(func.max(PredictionLogEntry.id))) or 0
    days = _stale_days(session, state.entries_through, since=_looked_back(state))
    if not state.complete:
        days = {day for day in days if state.filled_until is not None and day < state.filled_until}
    if days:
        _write_days(session, sorted(days), terms)
        # Answers kept by the stamp are made again only when the aggregates changed.
        state.revision += 1
    state.entries_through = newest_entry
    state.matches_through = newest_change
    state.checked_at = now
    session.flush()


def _adopt(state: TrackRecordState, terms: TallyTerms) -> None:
    """Take ``terms``: at once if none were taken, else by filling every day again."""
    if terms_of(state) == terms:
        return
    if terms_of(state) is not None:
        state.complete = False
        state.filled_until = None
    state.kelly_fraction = terms.kelly_fraction
    state.stake_cap = terms.stake_cap
    state.reliability_bins = terms.reliability_bins


def _looked_back(state: TrackRecordState) -> dt.datetime | None:
    if state.matches_through is None:
        return None
    if state.checked_at is None:
        return state.matches_through
    return min(state.matches_through, state.checked_at - CHANGE_LAG)


def _stale_days(
    session: Session, entries_through: int, *, since: dt.datetime | None
) -> set[dt.date]:
    """Days of entries above ``entries_through``, and of those whose match changed after
    ``since`` (None: no change to look for)."""
    days = _days_of(session, PredictionLogEntry.id > entries_through)
    if since is not None:
        days |= _days_of(session, Match.updated_at > since)
    return days


def entry_days(session: Session, match_ids: Collection[int]) -> set[dt.date]:
    """The days of the entries of ``match_ids`` (for a writer about to delete them)."""
    return _days_of(session, PredictionLogEntry.match_id.in_(match_ids))


def _days_of(session: Session, *where: ColumnElement[bool]) -> set[dt.date]:
    statement = (
        select(PredictionLogEntry.kickoff)
        .join(Match, PredictionLogEntry.match_id == Match.id)
        .where(*where)
        .distinct()
    )
    return {utc_day(kickoff) for kickoff in session.scalars(statement)}


@dataclass(frozen=True, slots=True)
class FillStep:
    first_day: dt.date
    last_day: dt.date


def fill_chunk(session: Session, terms: TallyTerms, *, now: dt.datetime) -> FillStep | None:
    """Fill the next days not covered, about ``FILL_ENTRIES`` entries (whole days); None
    when every day is covered."""
    state = _locked_state(session)
    _adopt(state, terms)
    if state.complete:
        return None
    if state.filled_until is None:
        # From scratch: changes from now on are found by the next pass.
        state.matches_through = session.scalar(select(func.max(Match.updated_at)))
        state.entries_through = session.scalar(select(func.max(PredictionLogEntry.id))) or 0
        state.checked_at = now
    days = _next_days(session, state.filled_until)
    if not days:
        state.complete = True
        state.filled_until = None
        state.revision += 1
        session.flush()
        return None
    _write_days(session, days, terms)
    state.filled_until = days[-1] + ONE_DAY
    state.revision += 1
    session.flush()
    return FillStep(days[0], days[-1])


def _next_days(session: Session, start: dt.date | None) -> list[dt.date]:
    statement = select(PredictionLogEntry.kickoff).order_by(PredictionLogEntry.kickoff)
    if start is not None:
        statement = statement.where(PredictionLogEntry.kickoff >= _midnight(start))
    kickoffs = session.scalars(statement.limit(FILL_ENTRIES)).all()
    if not kickoffs:
        return []
    last = utc_day(kickoffs[-1])
    days = sorted({utc_day(kickoff) for kickoff in kickoffs})
    # The last day may go on past the limit: it is left whole to the next chunk.
    if len(kickoffs) == FILL_ENTRIES and len(days) > 1:
        days = [day for day in days if day != last]
    return days


def fill(
    sessions: sessionmaker[Session],
    terms: TallyTerms,
    *,
    now: dt.datetime,
    between_chunks: Callable[[], None] | None = None,
) -> int:
    """Fill every day not covered yet, each chunk its own transaction (resumable);
    ``between_chunks`` runs after each commit. Returns the number of chunks."""
    return _in_chunks(
        sessions, lambda session: fill_chunk(session, terms, now=now) is not None, between_chunks
    )


def catch_up(
    sessions: sessionmaker[Session],
    terms: TallyTerms,
    *,
    now: dt.datetime,
    between_chunks: Callable[[], None] | None = None,
) -> int:
    """:func:`fill`, then the days of the matches changed since the last pass, oldest first,
    in chunks like the fill's (the last few are left to :func:`refresh`)."""
    return fill(sessions, terms, now=now, between_chunks=between_chunks) + _in_chunks(
        sessions, lambda session: _catch_up_chunk(session, terms, now=now), between_chunks
    )


def _in_chunks(
    sessions: sessionmaker[Session],
    chunk: Callable[[Session], bool],
    between_chunks: Callable[[], None] | None,
) -> int:
    done = 0
    while True:
        with session_scope(sessions) as session:
            if not chunk(session):
                return done
        done += 1
        (between_chunks or let_writers_in)()


def _catch_up_chunk(session: Session, terms: TallyTerms, *, now: dt.datetime) -> bool:
    """Recompute the days of the oldest changes after the watermark and move it past them;
    False when fewer than ``FILL_ENTRIES`` entries are left to a pass."""
    state = _locked_state(session)
    if terms_of(state) != terms or not state.complete or state.matches_through is None:
        return False
    changes = session.execute(
        select(Match.updated_at, PredictionLogEntry.kickoff)
        .join(PredictionLogEntry, PredictionLogEntry.match_id == Match.id)
        .where(Match.updated_at > state.matches_through)
        .order_by(Match.updated_at)
        .limit(FILL_ENTRIES)
    ).all()
    if len(changes) < FILL_ENTRIES:
        return False
    last = changes[-1][0]
    # The matches of one write share its moment: they are taken together, all of them.
    whole = [change for change in changes if change[0] < last] or _changed_at(session, last)
    _write_days(session, sorted({utc_day(kickoff) for _, kickoff in whole}), terms)
    state.matches_through = whole[-1][0]
    # A pass at ``now``: the next refresh looks back from here, not over the chunks done.
    state.checked_at = now
    state.revision += 1
    session.flush()
    return True


def _changed_at(session: Session, moment: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
    rows = session.execute(
        select(Match.updated_at, PredictionLogEntry.kickoff)
        .join(PredictionLogEntry, PredictionLogEntry.match_id == Match.id)
        .where(Match.updated_at == moment)
    )
    return [(changed, kickoff) for changed, kickoff in rows]


def let_writers_in() -> None:
    time.sleep(WRITER_PAUSE_SECONDS)


# Reading the aggregates.


@dataclass(frozen=True, slots=True)
class Stamp:
    """What answers read: an answer kept for a stamp is right while the stamp is the same."""

    revision: int | None
    # The newest change of a logged match the stored rows do not hold yet (one after the
    # aggregates' watermark): a match with no entry (an upcoming fixture, its kickoff moved)
    # changes no answer.
    newest_change: dt.datetime | None
    newest_entry: int | None
    # A flag is scored again when a close arrives after its result, which moves no match.
    newest_flag_score: dt.datetime | None
    # The competitions a page's filter offers.
    newest_competition: int | None
    # Scored flags go with their match, deleted or folded into its twin, which may have no
    # entry: the newest score does not move, their number does.
    scored_flags: int


def stamp(session: Session) -> Stamp:
    """Read in one statement, each part from an index: the changes it looks at are those
    after the watermark, so its cost follows what changed since the last pass, not the log."""
    state = TrackRecordState.id == STATE_ID
    # Before any pass every change counts: the answers read every day from the entries.
    since = func.coalesce(
        select(TrackRecordState.matches_through).where(state).scalar_subquery(),
        literal(EARLIEST_CHANGE, Match.updated_at.type),
    )
    # The newest first down the index of changes, stopping at the first logged match: a
    # join and max() let PostgreSQL walk every match when it cannot see ``since``'s value.
    changed = (
        select(Match.updated_at)
        .where(
            Match.updated_at > since,
            select(PredictionLogEntry.id).where(PredictionLogEntry.match_id == Match.id).exists(),
        )
        .order_by(Match.updated_at.desc())
        .limit(1)
    )
    return Stamp(
        *session.execute(
            select(
                select(TrackRecordState.revision).where(state).scalar_subquery(),
                changed.scalar_subquery(),
                select(func.max(PredictionLogEntry.id)).scalar_subquery(),
                select(func.max(ValueFlag.settled_at)).scalar_subquery(),
                select(func.max(Competition.id)).scalar_subquery(),
                select(func.count())
                .select_from(ValueFlag)
                .where(ValueFlag.settled_at.is_not(None))
                .scalar_subquery(),
            )
        ).one()
    )


@dataclass(frozen=True, slots=True)
class _Split:
    """A window's days: those read from the stored rows (whole days from ``first`` to
    before ``end``, but the ``computed`` ones and every one from ``computed_from`` on), and
    those computed from the entries."""

    first: dt.date | None
    end: dt.date | None
    computed: frozenset[dt.date]
    computed_from: dt.date | None

    def ranges(self) -> list[tuple[dt.datetime, dt.datetime]]:
        """The kickoffs the computed days span (each day once)."""
        if self.computed_from is None:
            return day_ranges(self.computed)
        start = max(self.computed_from, self.first or dt.date.min)
        ranges = day_ranges(
            day
            for day in self.computed
            if day < start or (self.end is not None and day >= self.end)
        )
        if self.end is None or start < self.end:
            end = NO_END if self.end is None else _midnight(self.end)
            ranges.append((_midnight(start), end))
        return ranges


NO_END = dt.datetime.max.replace(tzinfo=dt.UTC)


def _split(session: Session, window: PerformanceQuery, held: TrackRecordState) -> _Split:
    first = end = None
    edges: set[dt.date] = set()
    if window.kickoff_from is not None:
        first = utc_day(window.kickoff_from)
        if window.kickoff_from != _midnight(first):
            edges.add(first)
            first += ONE_DAY
    if window.kickoff_to is not None:
        end = utc_day(window.kickoff_to)
        if window.kickoff_to != _midnight(end):
            edges.add(end)
    stale = _stale_days(session, held.entries_through, since=held.matches_through)
    earliest = None if window.kickoff_from is None else utc_day(window.kickoff_from)
    computed = {
        day
        for day in edges | stale
        if (earliest is None or day >= earliest) and (end is None or day <= end)
    }
    computed_from = None if held.complete else (held.filled_until or dt.date.min)
    return _Split(first, end, frozenset(computed), computed_from)


_ByDay = type[TrackRecordDay | TrackRecordBookmaker | TrackRecordBankroll | TrackRecordReliability]


@dataclass(frozen=True, slots=True)
class _Reading:
    """A window being read: the stored rows its split takes, and the sums of the days it
    computes from the entries."""

    session: Session
    window: PerformanceQuery
    split: _Split
    computed: Tally

    @classmethod
    def of(cls, session: Session, window: PerformanceQuery, terms: TallyTerms) -> _Reading:
        split = _split(session, window, coverage(session))
        return cls(
            session, window, split, tally(scored_entries(session, window, split.ranges()), terms)
        )

    def summed(self, table: _ByDay, sums: type[Sums], *keys: Any) -> Select[Any]:
        """``table``'s rows the window takes, ``sums``' columns summed per ``keys``."""
        columns = (func.coalesce(func.sum(getattr(table, name)), 0) for name in sums.names())
        return select(*keys, *columns).where(*self.taken(table)).group_by(*keys)

    def taken(self, table: _ByDay) -> list[ColumnElement[bool]]:
        split, day = self.split, table.day
        conditions: list[ColumnElement[bool]] = []
        if split.first is not None:
            conditions.append(day >= split.first)
        if split.end is not None:
            conditions.append(day < split.end)
        if split.computed_from is not None:
            conditions.append(day < split.computed_from)
        if split.computed:
            conditions.append(day.not_in(sorted(split.computed)))
        if self.window.competition is not None:
            if table is TrackRecordReliability:
                raise ValueError("the reliability bins are kept for every competition together")
            competition = _competition_id(self.window.competition)
            conditions.append(table.competition_id == competition)  # type: ignore[union-attr]
        return conditions

    def total(self) -> DaySums:
        stored = DaySums(*self.session.execute(self.summed(TrackRecordDay, DaySums)).one())
        return reduce(DaySums.plus, self.computed.days.values(), stored)


def window_sums(
    session: Session, window: PerformanceQuery, terms: TallyTerms, *, days_max: int
) -> WindowSums:
    """The sums of the scored entries of ``window``: over the whole window, and per day for
    its latest ``days_max`` days with a scored entry."""
    reading = _Reading.of(session, window, terms)
    total = reading.total()
    days = _latest_days(reading, days_max)
    bookmakers = _bookmaker_totals(reading)
    best = best_bookmaker_of(bookmakers, total.matches)
    return WindowSums(
        total=total,
        days=days,
        bookmakers=bookmakers,
        best=best,
        best_days={} if best is None or not days else _best_days(reading, best, days[0][0]),
        bankroll=_bankroll(reading),
    )


def _latest_days(reading: _Reading, days_max: int) -> list[tuple[dt.date, DaySums]]:
    column = TrackRecordDay.day
    statement = reading.summed(TrackRecordDay, DaySums, column).order_by(column.desc())
    statement = statement.limit(days_max)
    stored = ((day, DaySums(*sums)) for day, *sums in reading.session.execute(statement))
    fresh = ((key.day, sums) for key, sums in reading.computed.days.items())
    return sorted(added_up([*stored, *fresh]).items())[-days_max:]


def _bookmaker_totals(reading: _Reading) -> dict[str, BookmakerSums]:
    statement = reading.summed(TrackRecordBookmaker, BookmakerSums, TrackRecordBookmaker.bookmaker)
    stored = ((code, BookmakerSums(*sums)) for code, *sums in reading.session.execute(statement))
    fresh = ((code, sums) for (_, code), sums in reading.computed.bookmakers.items())
    return added_up([*stored, *fresh])


def _best_days(reading: _Reading, best: str, first_day: dt.date) -> dict[dt.date, BookmakerSums]:
    table = TrackRecordBookmaker
    statement = reading.summed(table, BookmakerSums, table.day).where(
        table.bookmaker == best, table.day >= first_day
    )
    stored = ((day, BookmakerSums(*sums)) for day, *sums in reading.session.execute(statement))
    fresh = (
        (key.day, sums)
        for (key, code), sums in reading.computed.bookmakers.items()
        if code == best and key.day >= first_day
    )
    return added_up([*stored, *fresh])


def _bankroll(reading: _Reading) -> list[tuple[dt.datetime, float]]:
    table = TrackRecordBankroll
    statement = select(table.kickoff, func.sum(table.growth)).where(*reading.taken(table))
    growth: dict[dt.datetime, float] = {}
    for kickoff, total in reading.session.execute(statement.group_by(table.kickoff)):
        growth[kickoff] = growth.get(kickoff, 0.0) + total
    for (kickoff, _), (_, total) in reading.computed.bankroll.items():
        growth[kickoff] = growth.get(kickoff, 0.0) + total
    return sorted(growth.items())


@dataclass(frozen=True, slots=True)
class ReliabilitySums:
    matches: int
    bins: dict[tuple[int, int], BinSums]


def reliability_sums(session: Session, terms: TallyTerms) -> ReliabilitySums:
    """The bins of every scored entry, and their number."""
    reading = _Reading.of(session, PerformanceQuery(), terms)
    table = TrackRecordReliability
    statement = reading.summed(table, BinSums, table.outcome, table.bin)
    stored = (
        ((outcome, index), BinSums(*sums)) for outcome, index, *sums in session.execute(statement)
    )
    fresh = (
        ((outcome, index), sums)
        for (_, outcome, index), sums in reading.computed.reliability.items()
    )
    return ReliabilitySums(reading.total().matches, added_up([*stored, *fresh]))
