"""The track record's daily aggregates: kept by its writers, read by its answers.

Per UTC day of kickoff, competition and model version, the sums of the scored entries
(:mod:`app.domain.track_record_aggregates`), so that ``GET /performance`` and the
dashboard's track record and model pages read a few rows per day, not every entry.

**Kept.** A day's rows are replaced as a whole by :func:`recompute_days`, from its entries
and the results as they are then. The writers call it for the days they change:

- the logging of entries (the job, ``oddsboost track-record rebuild``) through
  :func:`refresh`, which also recomputes the days whose matches changed since the last
  pass (``matches.updated_at`` after the watermark, which every writer of results and
  kickoffs moves), and the days of entries written by other means (ids above the one
  followed);
- a match's deletion and a team merge that drops a logged entry, for that entry's day.

**Filled.** A database that held a track record before the aggregates has them filled by
:func:`fill` (``oddsboost migrate``, the rebuild and the job run it) in chunks of at most
``FILL_ENTRIES`` entries, each its own transaction, oldest days first. Until it ends, the
days not yet filled are computed from the entries when asked (right, only slower). A
change of the Kelly terms the bankroll is staked by refills them the same way; until then
the answers keep the terms they were made with (and say so).

**Read.** :func:`window_sums` adds up the stored rows of the window's whole days, and
computes from the entries the days it cannot take from them: a day the window cuts, a day
whose matches changed after the aggregates' watermark, a day not filled yet. So an answer
always scores the entries by the results as they are now. On PostgreSQL a result written
by a transaction that commits after a later one was seen by a pass can be missed until the
next pass, which looks ``CHANGE_LAG`` further back.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, ScalarSelect, Select, delete, func, insert, or_, select
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
)
from app.domain.track_record import ServedPrediction
from app.domain.track_record_aggregates import (
    BinSums,
    BookmakerSums,
    DaySums,
    GroupKey,
    Tally,
    TallyTerms,
    WindowSums,
    added_up,
    best_bookmaker_of,
    tally,
    utc_day,
)
from app.domain.track_record_scores import SettledEntry
from app.services.ingest.bulk import chunks
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

DAY_COLUMNS = tuple(getattr(TrackRecordDay, name) for name in DaySums().values())
BOOKMAKER_COLUMNS = tuple(getattr(TrackRecordBookmaker, name) for name in BookmakerSums().values())
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
    ranges: Sequence[tuple[dt.datetime, dt.datetime]],
    window: PerformanceQuery = PerformanceQuery(),
) -> list[tuple[SettledEntry, int]]:
    """The scored entries (a settled match, logged at the kickoff it still has) of
    ``window`` with kickoffs in ``ranges``, each with its competition's id."""
    found: list[tuple[SettledEntry, int]] = []
    for part in chunks(ranges, DAYS_PER_STATEMENT):
        statement = scored_statement(window).where(
            or_(*(_kickoff_between(low, high) for low, high in part))
        )
        found.extend(
            (SettledEntry(match_id, kickoff, result, served), competition)
            for match_id, kickoff, result, served, competition in session.execute(statement)
            if result is not None
        )
    return found


def _kickoff_between(low: dt.datetime, high: dt.datetime) -> ColumnElement[bool]:
    return (PredictionLogEntry.kickoff >= low) & (PredictionLogEntry.kickoff < high)


def scored_statement(
    window: PerformanceQuery,
) -> Select[int, dt.datetime, str | None, ServedPrediction, int]:
    """The scored entries of ``window``, each with its match's result and competition's
    id, by kickoff."""
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


def _state(session: Session, *, lock: bool = False) -> TrackRecordState:
    """The aggregates' state (made if missing); ``lock``: wait for any other writer of the
    aggregates first."""
    if lock:
        serialise_track_record_writes(session)
    state = session.get(TrackRecordState, STATE_ID, populate_existing=lock)
    if state is None:
        state = TrackRecordState(
            id=STATE_ID, complete=not _has_entries(session), entries_through=0, revision=0
        )
        session.add(state)
        session.flush()
    return state


def _has_entries(session: Session) -> bool:
    return session.scalar(select(PredictionLogEntry.id).limit(1)) is not None


def terms_of(state: TrackRecordState) -> TallyTerms | None:
    """The terms the aggregates were made with; None before any were."""
    if state.kelly_fraction is None or state.stake_cap is None or state.reliability_bins is None:
        return None
    return TallyTerms(state.kelly_fraction, state.stake_cap, state.reliability_bins)


def recompute_days(session: Session, days: Collection[dt.date]) -> None:
    """Replace the aggregates of ``days`` by the sums of their scored entries as they are
    now, in the caller's transaction (nothing to do before any aggregates were made)."""
    state = _state(session, lock=True)
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
        found = scored_entries(session, day_ranges(chunk))
        _insert(session, tally([e for e, _ in found], [c for _, c in found], terms))


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
    """In the caller's transaction, bring the aggregates of the days already filled up to
    date: the days of entries written since the last pass, and of matches changed since
    (looking ``CHANGE_LAG`` back). Aggregates made with other terms are marked to be
    filled again (:func:`fill`)."""
    state = _state(session, lock=True)
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
    """Days of entries the aggregates do not hold yet (ids above the one followed), and of
    entries whose match changed after ``since`` (None: no change to look for)."""
    kickoffs = set(
        session.scalars(
            select(PredictionLogEntry.kickoff)
            .where(PredictionLogEntry.id > entries_through)
            .distinct()
        )
    )
    if since is not None:
        kickoffs.update(
            session.scalars(
                select(PredictionLogEntry.kickoff)
                .join(Match, PredictionLogEntry.match_id == Match.id)
                .where(Match.updated_at > since)
                .distinct()
            )
        )
    return {utc_day(kickoff) for kickoff in kickoffs}


def entry_days(session: Session, match_ids: Collection[int]) -> set[dt.date]:
    """The days of the entries of ``match_ids`` (for a writer about to delete them)."""
    kickoffs = session.scalars(
        select(PredictionLogEntry.kickoff).where(PredictionLogEntry.match_id.in_(match_ids))
    )
    return {utc_day(kickoff) for kickoff in kickoffs}


@dataclass(frozen=True, slots=True)
class FillStep:
    """What one chunk of the fill did: the days it covered."""

    first_day: dt.date
    last_day: dt.date


def fill_chunk(session: Session, terms: TallyTerms, *, now: dt.datetime) -> FillStep | None:
    """Fill the next days not covered yet, up to about ``FILL_ENTRIES`` entries, in the
    caller's transaction; None when every day is covered."""
    state = _state(session, lock=True)
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
    """The days with entries from ``start`` on, as many whole ones as hold about
    ``FILL_ENTRIES`` entries (at least one day)."""
    statement = select(PredictionLogEntry.kickoff).order_by(PredictionLogEntry.kickoff)
    if start is not None:
        statement = statement.where(PredictionLogEntry.kickoff >= _midnight(start))
    kickoffs = session.scalars(statement.limit(FILL_ENTRIES)).all()
    if not kickoffs:
        return []
    last = utc_day(kickoffs[-1])
    days = sorted({utc_day(kickoff) for kickoff in kickoffs})
    # The last day may go on past the limit: it is left whole to the next chunk, unless it
    # is the only one.
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
    """Fill every day not covered yet, each chunk in a write transaction of its own from
    ``sessions`` (``between_chunks`` runs after each commit, by default
    :func:`let_writers_in`); returns the number of chunks.
    Resumable: a fill stopped half-way goes on from its last committed chunk."""
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
    """:func:`fill`, then bring up to date the days of the matches changed since the last
    pass, oldest changes first, in chunks of about ``FILL_ENTRIES`` entries, each its own
    transaction (the last few are left to the next :func:`refresh`); returns the number of
    chunks."""
    return fill(sessions, terms, now=now, between_chunks=between_chunks) + _in_chunks(
        sessions, lambda session: _catch_up_chunk(session, terms, now=now), between_chunks
    )


def _in_chunks(
    sessions: sessionmaker[Session],
    chunk: Callable[[Session], bool],
    between_chunks: Callable[[], None] | None,
) -> int:
    """``chunk`` in a write transaction of its own, again until it did nothing; how many
    times it did something."""
    done = 0
    while True:
        with session_scope(sessions) as session:
            if not chunk(session):
                return done
        done += 1
        (between_chunks or let_writers_in)()


def _catch_up_chunk(session: Session, terms: TallyTerms, *, now: dt.datetime) -> bool:
    """Recompute the days of the oldest changes after the watermark, whole moments of
    change at a time, and move the watermark past them; False (nothing done) when fewer
    than ``FILL_ENTRIES`` entries are left to a pass."""
    state = _state(session, lock=True)
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
    """The entries' kickoffs of the matches changed at ``moment`` (one write's)."""
    rows = session.execute(
        select(Match.updated_at, PredictionLogEntry.kickoff)
        .join(PredictionLogEntry, PredictionLogEntry.match_id == Match.id)
        .where(Match.updated_at == moment)
    )
    return [(changed, kickoff) for changed, kickoff in rows]


def let_writers_in() -> None:
    """Pause between two chunks of a long write, for the writers waiting for the lock."""
    time.sleep(WRITER_PAUSE_SECONDS)


# Reading the aggregates.


@dataclass(frozen=True, slots=True)
class Coverage:
    """What the stored aggregates hold: their terms (None: none made), the days filled
    (all, or those before ``filled_until``), and the entries and match changes followed."""

    terms: TallyTerms | None
    complete: bool
    filled_until: dt.date | None
    entries_through: int
    matches_through: dt.datetime | None


def coverage(session: Session) -> Coverage:
    state = session.get(TrackRecordState, STATE_ID)
    if state is None:
        return Coverage(None, not _has_entries(session), None, 0, None)
    return Coverage(
        terms_of(state),
        state.complete,
        state.filled_until,
        state.entries_through,
        state.matches_through,
    )


@dataclass(frozen=True, slots=True)
class Stamp:
    """What answers read: the aggregates' revision, the newest change of a match, the
    newest entry. An answer kept for a stamp is right while the stamp is the same."""

    revision: int | None
    newest_change: dt.datetime | None
    newest_entry: int | None


def stamp(session: Session) -> Stamp:
    revision = select(TrackRecordState.revision).where(TrackRecordState.id == STATE_ID)
    return Stamp(
        *session.execute(
            select(
                revision.scalar_subquery(),
                select(func.max(Match.updated_at)).scalar_subquery(),
                select(func.max(PredictionLogEntry.id)).scalar_subquery(),
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


def _split(session: Session, window: PerformanceQuery, held: Coverage) -> _Split:
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


def _computed(
    session: Session, window: PerformanceQuery, split: _Split, terms: TallyTerms
) -> Tally:
    found = scored_entries(session, split.ranges(), window)
    return tally([e for e, _ in found], [c for _, c in found], terms)


_ByDay = (
    type[TrackRecordDay]
    | type[TrackRecordBookmaker]
    | type[TrackRecordBankroll]
    | type[TrackRecordReliability]
)


def _stored(table: _ByDay, window: PerformanceQuery, split: _Split) -> list[ColumnElement[bool]]:
    """Which stored rows of ``table`` the window takes."""
    conditions: list[ColumnElement[bool]] = []
    day = table.day
    if split.first is not None:
        conditions.append(day >= split.first)
    if split.end is not None:
        conditions.append(day < split.end)
    if split.computed_from is not None:
        conditions.append(day < split.computed_from)
    if split.computed:
        conditions.append(day.not_in(sorted(split.computed)))
    if window.competition is not None:
        if table is TrackRecordReliability:
            raise ValueError("the reliability bins are kept for every competition together")
        conditions.append(table.competition_id == _competition_id(window.competition))  # type: ignore[union-attr]
    return conditions


def window_sums(
    session: Session, window: PerformanceQuery, terms: TallyTerms, *, days_max: int
) -> WindowSums:
    """The sums of the scored entries of ``window`` (see the module): over the whole
    window, and per day for its latest ``days_max`` days with a scored entry."""
    held = coverage(session)
    split = _split(session, window, held)
    computed = _computed(session, window, split, terms)
    total = _total(session, window, split, computed)
    days = _latest_days(session, window, split, computed, days_max)
    bookmakers = _bookmaker_totals(session, window, split, computed)
    best = best_bookmaker_of(bookmakers, total.matches)
    first_day = days[0][0] if days else None
    return WindowSums(
        total=total,
        days=days,
        bookmakers=bookmakers,
        best=best,
        best_days={}
        if best is None or first_day is None
        else _best_days(session, window, split, computed, best, first_day),
        bankroll=_bankroll(session, window, split, computed),
    )


def _total(session: Session, window: PerformanceQuery, split: _Split, computed: Tally) -> DaySums:
    statement = select(*(func.coalesce(func.sum(column), 0) for column in DAY_COLUMNS)).where(
        *_stored(TrackRecordDay, window, split)
    )
    total = DaySums(*session.execute(statement).one())
    for sums in computed.days.values():
        total = total.plus(sums)
    return total


def _latest_days(
    session: Session, window: PerformanceQuery, split: _Split, computed: Tally, days_max: int
) -> list[tuple[dt.date, DaySums]]:
    statement = (
        select(TrackRecordDay.day, *(func.sum(column) for column in DAY_COLUMNS))
        .where(*_stored(TrackRecordDay, window, split))
        .group_by(TrackRecordDay.day)
        .order_by(TrackRecordDay.day.desc())
        .limit(days_max)
    )
    stored = ((day, DaySums(*sums)) for day, *sums in session.execute(statement))
    fresh = ((key.day, sums) for key, sums in computed.days.items())
    return sorted(added_up([*stored, *fresh]).items())[-days_max:]


def _bookmaker_totals(
    session: Session, window: PerformanceQuery, split: _Split, computed: Tally
) -> dict[str, BookmakerSums]:
    statement = (
        select(TrackRecordBookmaker.bookmaker, *(func.sum(column) for column in BOOKMAKER_COLUMNS))
        .where(*_stored(TrackRecordBookmaker, window, split))
        .group_by(TrackRecordBookmaker.bookmaker)
    )
    stored = ((key, BookmakerSums(*sums)) for key, *sums in session.execute(statement))
    fresh = ((code, sums) for (_, code), sums in computed.bookmakers.items())
    return added_up([*stored, *fresh])


def _best_days(
    session: Session,
    window: PerformanceQuery,
    split: _Split,
    computed: Tally,
    best: str,
    first_day: dt.date,
) -> dict[dt.date, BookmakerSums]:
    statement = (
        select(TrackRecordBookmaker.day, *(func.sum(column) for column in BOOKMAKER_COLUMNS))
        .where(
            TrackRecordBookmaker.bookmaker == best,
            TrackRecordBookmaker.day >= first_day,
            *_stored(TrackRecordBookmaker, window, split),
        )
        .group_by(TrackRecordBookmaker.day)
    )
    stored = ((key, BookmakerSums(*sums)) for key, *sums in session.execute(statement))
    fresh = (
        (key.day, sums)
        for (key, code), sums in computed.bookmakers.items()
        if code == best and key.day >= first_day
    )
    return added_up([*stored, *fresh])


def _bankroll(
    session: Session, window: PerformanceQuery, split: _Split, computed: Tally
) -> list[tuple[dt.datetime, float]]:
    statement = (
        select(TrackRecordBankroll.kickoff, func.sum(TrackRecordBankroll.growth))
        .where(*_stored(TrackRecordBankroll, window, split))
        .group_by(TrackRecordBankroll.kickoff)
    )
    growth: dict[dt.datetime, float] = {}
    for kickoff, total in session.execute(statement):
        growth[kickoff] = growth.get(kickoff, 0.0) + total
    for (kickoff, _), (_, total) in computed.bankroll.items():
        growth[kickoff] = growth.get(kickoff, 0.0) + total
    return sorted(growth.items())


@dataclass(frozen=True, slots=True)
class ReliabilitySums:
    matches: int
    bins: dict[tuple[int, int], BinSums]


def reliability_sums(session: Session, terms: TallyTerms) -> ReliabilitySums:
    """The bins of every scored entry, and their number."""
    held = coverage(session)
    split = _split(session, PerformanceQuery(), held)
    computed = _computed(session, PerformanceQuery(), split, terms)
    conditions = _stored(TrackRecordReliability, PerformanceQuery(), split)
    statement = (
        select(
            TrackRecordReliability.outcome,
            TrackRecordReliability.bin,
            func.sum(TrackRecordReliability.count),
            func.sum(TrackRecordReliability.predicted),
            func.sum(TrackRecordReliability.observed),
        )
        .where(*conditions)
        .group_by(TrackRecordReliability.outcome, TrackRecordReliability.bin)
    )
    stored = (
        ((outcome, index), BinSums(count, predicted, observed))
        for outcome, index, count, predicted, observed in session.execute(statement)
    )
    fresh = (((outcome, index), sums) for (_, outcome, index), sums in computed.reliability.items())
    matches = _total(session, PerformanceQuery(), split, computed).matches
    return ReliabilitySums(matches, added_up([*stored, *fresh]))
