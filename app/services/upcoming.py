"""The board: every upcoming match of a query with its prediction, value, value bets and
quote freshness, for a dashboard that polls (GET /upcoming, GET /value-bets).

Any change (quote, price, result, reschedule, team merge, deletion, model activation) shows
at the next poll; an unchanged poll gets the board already made. A board is kept per query
while its stamp holds: per upcoming match its last change and its quotes' count and latest
receipt, with the active model's version. When the stamp changes, only the matches whose
part of it changed are predicted again (by ``predict_stored``, from the database: the
prediction service's cached answers could be older than the stamp).

Reading the stamp reads every served quote of the window (``LatestQuote``: per bookmaker and
phase, the one an answer reads; a quote met again with the same prices changes none), so a
poll first reads the window's ids and quotes revisions (``Match.quotes_revision``, raised by
every write of a match's quotes in its transaction) and the database's watermark (newest
change of a served quote, newest match change). A write stamps its rows before it commits,
so it can land below a watermark already seen: the watermark is trusted only once its newest
change is ``SETTLED_AFTER`` old, and the stamp is read again at least every ``VERIFIED_FOR``.
A change of quotes needs no such wait: its match's revision moves when it commits.

With a shared store (Redis, :mod:`app.services.shared_store`), a board this process does not
hold at the stamp it read is looked up there by its query and stamp, and built once for
every worker and replica; the database still says which stamp is current.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from app.db.engine import session_scope
from app.db.orm import LatestQuote, Match, utcnow
from app.domain.digests import digest
from app.domain.prediction import MatchInfo, MatchPrediction, QuotedOdds
from app.domain.value import MatchValue, ValueTerms
from app.metrics import count_board_build, count_model_weight
from app.services import queries
from app.services.busy import unavailable_as_service_error
from app.services.caching import AnswerCache
from app.services.pagination import PageWindow
from app.services.prediction import PredictionAnswer, Unanswerable, predict_stored
from app.services.serving import ModelCache, ServingSnapshot
from app.services.shared_store import SharedBoards
from app.services.single_flight import SingleFlight
from app.services.value_bets import (
    DEFAULT_HORIZON,
    AppliedTerms,
    DayExposure,
    ValueBet,
    ValueBets,
    value_bets_of,
)
from app.settings import Settings

NO_USABLE_QUOTE = (
    f"{Unanswerable.NO_USABLE_QUOTE.value}: no quote of any phase captured before kickoff"
)
# One board per distinct query (filters and terms) polled.
BOARDS_KEPT = 256
# Longer than any write takes from stamping its rows to its commit.
SETTLED_AFTER = dt.timedelta(seconds=30)
VERIFIED_FOR = dt.timedelta(seconds=60)
# What a kept board is taken to hold in memory, in all, per match and per quote read: about
# twice what the objects a board reaches take (tests/test_shared_boards.py).
BOARD_BYTES_BASE = 4 * 1024
BOARD_BYTES_PER_MATCH = 8 * 1024
BOARD_BYTES_PER_QUOTE = 512


@dataclass(frozen=True, slots=True)
class UpcomingQuery:
    """Which upcoming matches, and the terms their value is judged and staked by."""

    terms: ValueTerms
    daily_exposure_cap: float
    kickoff_from: dt.datetime | None = None
    kickoff_to: dt.datetime | None = None
    competition: str | None = None
    # Without ``kickoff_to``: a window that moves with time is one query, one board.
    horizon: dt.timedelta = DEFAULT_HORIZON

    def window(self, moment: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        return self.kickoff_from or moment, self.kickoff_to or moment + self.horizon

    @property
    def applied_terms(self) -> AppliedTerms:
        return AppliedTerms.of(self.terms, self.daily_exposure_cap)


@dataclass(frozen=True, slots=True)
class Freshness:
    """The quotes a prediction read: how many, their capture times, the newest's age."""

    bookmakers: int
    newest_captured_at: dt.datetime | None
    oldest_captured_at: dt.datetime | None
    age_seconds: float | None


@dataclass(frozen=True, slots=True)
class UpcomingMatch:
    """One match of the board. With no usable quote, ``prediction`` and ``value`` are None
    and ``reason`` says why."""

    match: MatchInfo
    prediction: MatchPrediction | None
    reason: str | None
    value: MatchValue | None
    value_bets: Sequence[ValueBet]
    freshness: Freshness
    model_version: int | None


@dataclass(frozen=True)
class UpcomingPage:
    """One page of the board; ``revision`` digests all it shows but the ages."""

    shown: Sequence[UpcomingMatch]  # as the board holds them: no age yet
    total: int
    limit: int
    offset: int
    kickoff_from: dt.datetime
    kickoff_to: dt.datetime
    terms: AppliedTerms
    model_version: int | None
    answered_at: dt.datetime
    unfitted: bool  # no model has been fitted: the predictions are the consensus
    revision: str

    @cached_property
    def items(self) -> list[UpcomingMatch]:
        """The matches shown, their ages at ``answered_at``: worked out when first read, as
        a 304 or a body already written never reads them."""
        return [_aged(match, self.answered_at) for match in self.shown]


# Per match: id, season, last change, number of served quotes, their latest change, and the
# revision of its quotes (the latest change alone misses a write stamped with an older moment
# that commits after a newer one).
_MatchStamp = tuple[int, str, dt.datetime, int, dt.datetime | None, int]
# Per match of a window: its id and quotes revision.
_Revisions = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class _Stamp:
    model_version: int | None
    matches: tuple[_MatchStamp, ...]


# The newest change of a served quote and of a match (None: an empty window).
_Watermark = tuple[dt.datetime | None, dt.datetime | None]


@dataclass(frozen=True, slots=True)
class _Verified:
    """The latest reading of the stamp that found a board's, and what it saw."""

    at: dt.datetime
    revisions: _Revisions
    watermark: _Watermark


# A match as a board shows it (value bets aside), and the answer it was made from.
_Row = tuple["UpcomingMatch", PredictionAnswer | None]


@dataclass(frozen=True, slots=True)
class _Board:
    """A query's matches as made at ``stamp``, its ranked value bets and days' exposure."""

    stamp: _Stamp
    rows: dict[_MatchStamp, _Row]
    matches: Sequence[UpcomingMatch]
    bets: Sequence[ValueBet]
    days: Sequence[DayExposure]
    answered: bool  # some match has a prediction
    unfitted: bool
    revision: str
    verified: _Verified | None = None

    def trusted(self, model_version: int | None, moment: dt.datetime) -> _Verified | None:
        """The reading of the stamp a check at ``moment`` may trust (see the module)."""
        last = self.verified
        if model_version != self.stamp.model_version or last is None:
            return None
        changes = [change for change in last.watermark if change is not None]
        settled = not changes or last.at - max(changes) >= SETTLED_AFTER
        return last if settled and moment - last.at < VERIFIED_FOR else None


def board_bytes(board: _Board) -> int:
    """The memory a kept board is taken to hold (see ``BOARD_BYTES_PER_MATCH``)."""
    quotes = sum(len(answer.odds) for _, answer in board.rows.values() if answer is not None)
    return (
        BOARD_BYTES_BASE + BOARD_BYTES_PER_MATCH * len(board.rows) + BOARD_BYTES_PER_QUOTE * quotes
    )


def default_query(settings: Settings) -> UpcomingQuery:
    """The query of ``/upcoming`` and of the dashboard's board when nothing is asked for."""
    return UpcomingQuery(
        terms=settings.value_terms(), daily_exposure_cap=settings.value_daily_exposure_cap
    )


def shared_boards(settings: Settings) -> SharedBoards[_Board] | None:
    """The store of boards shared by every process that ``settings`` ask for (None: no
    Redis), its keys naming the shape of a board."""
    return SharedBoards.from_settings(settings, _Board)


class UpcomingBoards:
    """The boards of one process (see the module); with ``shared``, a board this process
    does not hold is read from (or built once for) every process."""

    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        models: ModelCache,
        shared: SharedBoards[_Board] | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self._sessions = sessions
        self._models = models
        self._shared = shared
        self._boards: AnswerCache[_Board] = AnswerCache(
            None, max_entries=BOARDS_KEPT, max_bytes=max_bytes, size_of=board_bytes
        )
        self._checks: SingleFlight[
            tuple[UpcomingQuery, dt.datetime | None], tuple[_Board, dt.datetime]
        ] = SingleFlight()

    async def page(
        self, query: UpcomingQuery, window: PageWindow, *, now: dt.datetime | None = None
    ) -> UpcomingPage:
        board, moment = await self._board(query, now)
        start, end = query.window(moment)
        shown = board.matches[window.offset : window.offset + window.limit]
        return UpcomingPage(
            shown=shown,
            total=len(board.matches),
            limit=window.limit,
            offset=window.offset,
            kickoff_from=start,
            kickoff_to=end,
            terms=query.applied_terms,
            model_version=board.stamp.model_version,
            answered_at=moment,
            unfitted=board.unfitted,
            revision=board.revision,
        )

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()

    async def warm(self, query: UpcomingQuery) -> None:
        """Brings the board of ``query`` up to date, so that no viewer waits for its build
        (with Redis, built only if no process has it yet)."""
        await self._board(query, None)

    async def value_bets(
        self, query: UpcomingQuery, window: PageWindow, *, now: dt.datetime | None = None
    ) -> ValueBets:
        board, moment = await self._board(query, now)
        start, end = query.window(moment)
        return ValueBets(
            items=board.bets[window.offset : window.offset + window.limit],
            total=len(board.bets),
            limit=window.limit,
            offset=window.offset,
            kickoff_from=start,
            kickoff_to=end,
            terms=query.applied_terms,
            days=board.days,
            model_version=board.stamp.model_version if board.answered else None,
            unfitted=board.unfitted,
        )

    async def _board(
        self, query: UpcomingQuery, now: dt.datetime | None
    ) -> tuple[_Board, dt.datetime]:
        """The board of ``query`` as of a check that starts after this call, and its moment;
        polls that come while a check runs share the next one."""

        async def checked() -> tuple[_Board, dt.datetime]:
            moment = now or utcnow()
            snapshot = self._models.snapshot()  # read once: the board is made with this one
            kept = self._boards.get(query)
            board = await asyncio.to_thread(self._checked, query, moment, snapshot, kept)
            self._boards.put(query, board)
            return board, moment

        return await self._checks.run_after((query, now), checked)

    def _checked(
        self,
        query: UpcomingQuery,
        moment: dt.datetime,
        snapshot: ServingSnapshot,
        kept: _Board | None,
    ) -> _Board:
        """The ``kept`` board if the database still holds its stamp, else one made anew."""
        start, end = query.window(moment)
        filters = queries.MatchFilter(
            competition=query.competition, kickoff_from=start, kickoff_to=end
        )
        last = kept.trusted(snapshot.version, moment) if kept is not None else None
        with unavailable_as_service_error(), session_scope(self._sessions) as session:
            if kept is not None and last is not None:
                seen = (last.revisions, last.watermark)
                unchanged = window_watermark(session, filters, moment) == seen
                if unchanged:
                    return kept
            matches, watermark = match_stamps(session, filters, moment)
        stamp = _Stamp(snapshot.version, matches)
        board = kept
        if board is None or board.stamp != stamp:
            board = self._made_or_read(query, stamp, snapshot, kept)
        revisions = tuple((match[0], match[5]) for match in matches)
        return replace(board, verified=_Verified(moment, revisions, watermark))

    def _made_or_read(
        self,
        query: UpcomingQuery,
        stamp: _Stamp,
        snapshot: ServingSnapshot,
        previous: _Board | None,
    ) -> _Board:
        """The board of ``query`` at ``stamp``: made here, or, with a shared store, read from
        it or made by whichever process holds its lock."""

        def made() -> _Board:
            return self._new_board(query, stamp, snapshot, previous)

        if self._shared is None:
            return made()
        # Phase and method come with the version, or from settings while none is active.
        key = digest(_query_key(query), snapshot.phase, snapshot.method, stamp)
        return self._shared.fetch_or_build(key, made)

    def _new_board(
        self,
        query: UpcomingQuery,
        stamp: _Stamp,
        snapshot: ServingSnapshot,
        previous: _Board | None,
    ) -> _Board:
        """The board of ``query`` at ``stamp``, predicting only the matches whose part of it
        changed; the value bets are redone over all, as a day's cap ties its matches."""
        same_model = previous is not None and previous.stamp.model_version == stamp.model_version
        kept = previous.rows if previous is not None and same_model else {}
        wanted = [match for match in stamp.matches if match not in kept]
        made = self._rows(wanted, query.terms, snapshot)
        rows = {
            match: kept[match] if match in kept else made[match[0]]
            for match in stamp.matches
            # A match deleted between the stamp and its read is left out.
            if match in kept or match[0] in made
        }
        answers = [answer for _, answer in rows.values() if answer is not None]
        bets, days = value_bets_of(answers, query.terms.bankroll, query.daily_exposure_cap)
        bets_of: dict[int | None, list[ValueBet]] = {}
        for bet in bets:
            bets_of.setdefault(bet.match.id, []).append(bet)
        matches = [
            replace(row, value_bets=bets_of.get(row.match.id, [])) for row, _ in rows.values()
        ]
        unfitted = snapshot.ensemble is None and bool(answers)
        # Phase and method too: replicas whose settings differ and have no model to say them
        # show different boards under the same stamp.
        revision = digest(stamp, unfitted, snapshot.phase, snapshot.method)
        count_board_build()
        return _Board(stamp, rows, matches, bets, days, bool(answers), unfitted, revision)

    def _rows(
        self, matches: Sequence[_MatchStamp], terms: ValueTerms, snapshot: ServingSnapshot
    ) -> dict[int, _Row]:
        if not matches:
            return {}
        ids = [match[0] for match in matches]
        with unavailable_as_service_error(), session_scope(self._sessions) as session:
            answers = predict_stored(session, ids, snapshot, terms)
        rows: dict[int, _Row] = {}
        for match_id, answer in answers.items():
            if isinstance(answer, PredictionAnswer):
                # Counted when made: a kept row served again to the next poll is not.
                count_model_weight("board", answer.prediction.model_weight_present)
                rows[match_id] = (_upcoming(answer.match, answer), answer)
            elif answer.match is not None:  # no usable quote
                rows[match_id] = (_upcoming(answer.match, None), None)
        return rows


def match_stamps(
    session: Session, filters: queries.MatchFilter, now: dt.datetime
) -> tuple[tuple[_MatchStamp, ...], _Watermark]:
    """The stamp of each upcoming match of ``filters``: its served quotes' count and latest
    change, and its quotes revision (any change of what an answer reads moves the revision or
    the match's own ``updated_at``), and the watermark. Subqueries per match: a join with
    GROUP BY would scan every match."""
    of_match = LatestQuote.match_id == Match.id
    statement = select(
        Match.id,
        Match.season,
        Match.updated_at,
        select(func.count()).where(of_match).scalar_subquery(),
        select(func.max(LatestQuote.chosen_at)).where(of_match).scalar_subquery(),
        Match.quotes_revision,
        *_WATERMARK_COLUMNS,
    ).order_by(*_BY_KICKOFF)
    rows = session.execute(queries.upcoming_only(statement, filters, now)).all()
    matches = tuple((row[0], row[1], row[2], int(row[3]), row[4], int(row[5])) for row in rows)
    return matches, _watermark_of(rows)


def window_watermark(
    session: Session, filters: queries.MatchFilter, now: dt.datetime
) -> tuple[_Revisions, _Watermark]:
    """The ids and quotes revisions of the upcoming matches of ``filters`` and the
    watermark, reading no quote. The revisions are compared match by match: a sum or a
    maximum over the window could come back to a value already seen (a match leaving it)."""
    statement = select(Match.id, Match.quotes_revision, *_WATERMARK_COLUMNS).order_by(*_BY_KICKOFF)
    rows = session.execute(queries.upcoming_only(statement, filters, now)).all()
    return tuple((row[0], int(row[1])) for row in rows), _watermark_of(rows)


_BY_KICKOFF = (Match.kickoff, Match.id)
# Uncorrelated, one index entry each; built once, as an unchanged poll runs little else.
# On the first row only: on every row, each match would have them read into datetimes again.
_CHANGED = aliased(Match)
_FIRST_ROW = func.row_number().over(order_by=_BY_KICKOFF) == 1
_WATERMARK_COLUMNS = tuple(
    case((_FIRST_ROW, newest), else_=None)
    for newest in (
        select(func.max(LatestQuote.chosen_at)).correlate(None).scalar_subquery(),
        select(func.max(_CHANGED.updated_at)).correlate(None).scalar_subquery(),
    )
)


def _watermark_of(rows: Sequence[Sequence[Any]]) -> _Watermark:
    return (None, None) if not rows else (rows[0][-2], rows[0][-1])


def _query_key(query: UpcomingQuery) -> tuple[object, ...]:
    """``query`` as values whose ``repr`` is the same in every process: its terms' set of
    bookmakers sorted (a set's order changes with each process's string hashing)."""
    terms = query.terms
    bookmakers = None if terms.bookmakers is None else tuple(sorted(terms.bookmakers))
    return (
        replace(terms, bookmakers=None),
        bookmakers,
        query.daily_exposure_cap,
        query.kickoff_from,
        query.kickoff_to,
        query.competition,
        query.horizon,
    )


def _upcoming(info: MatchInfo, answer: PredictionAnswer | None) -> UpcomingMatch:
    if answer is None:
        return UpcomingMatch(info, None, NO_USABLE_QUOTE, None, (), _freshness(()), None)
    version = None if answer.model is None else answer.model.version
    return UpcomingMatch(
        info, answer.prediction, None, answer.value, (), _freshness(answer.odds), version
    )


def _freshness(odds: Sequence[QuotedOdds]) -> Freshness:
    captured = [quote.captured_at for quote in odds if quote.captured_at is not None]
    if not captured:
        return Freshness(len(odds), None, None, None)
    return Freshness(len(odds), max(captured), min(captured), None)


def _aged(match: UpcomingMatch, now: dt.datetime) -> UpcomingMatch:
    """The match with its newest quote's age at ``now``, never below zero (a clock ahead)."""
    fresh = match.freshness
    if fresh.newest_captured_at is None:
        return match
    age = max((now - fresh.newest_captured_at).total_seconds(), 0.0)
    # Built field by field: ``dataclasses.replace`` costs several times more, for every
    # match of every body written.
    aged = Freshness(fresh.bookmakers, fresh.newest_captured_at, fresh.oldest_captured_at, age)
    return UpcomingMatch(
        match.match,
        match.prediction,
        match.reason,
        match.value,
        match.value_bets,
        aged,
        match.model_version,
    )
