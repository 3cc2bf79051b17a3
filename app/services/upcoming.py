"""Every upcoming match in one call: its prediction, the value of each outcome, its value
bets and how fresh its quotes are, for a dashboard that polls.

What an answer depends on in the database is, for each upcoming match of the window: the
match's last change (its teams, kickoff or result; a team merge) and the number and latest
receipt of its quotes (a new quote adds one; a changed price is received again). With the
active model's version it is the board's stamp: a board is kept per query and served again
while its stamp is the same, so a new quote, a result, a reschedule, a team merge, a deleted
match or a model activation shows in the next answer (but see below), and a match that kicks off
leaves the window (and the stamp) at once. Only the ages of the quotes are worked out anew
for every answer.

Reading the stamp reads every quote of the window, so a poll first reads less: the ids of
the window's matches (by the kickoff index) and the watermark of the whole database, the
newest quote receipt and the newest match change (each one index entry). Every write of a
quote or a match moves the watermark (ingest, results and corrections stamp their rows;
a team merge stamps the matches it changes and the twin its quotes move to), and a deleted
match leaves the window's ids. While both are what the board's last reading of its stamp
saw, the stamp is unchanged and the board is served; else the stamp is read again, and
only the matches whose own part of it changed are made again.

A write stamps its rows before it commits, so one that commits after a later-stamped one
can land below a watermark already seen. The watermark is therefore trusted only once the
newest change it holds is ``SETTLED_AFTER`` older than the stamp read that saw it (every
write of the service commits well within that), and the stamp is read again at least every
``VERIFIED_FOR`` whatever the watermark says: a write that takes longer, or stamps by a
clock that far behind, shows at most ``VERIFIED_FOR`` late. Polls of one query that arrive while its
check runs share the next check, which starts after they all arrived.

The board is made as the prediction service answers a match by id (the same stored quotes,
the same prediction of the same snapshot of the model), but from the database every time
it is made: the prediction service's answers are kept for a time, and a board must not
show a quote older than its stamp. Value is judged by ``match_value`` and the value bets
are the value-bets list's (``value_bets_of``): one definition of each.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import ScalarSelect, func, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from app.db.engine import session_scope
from app.db.orm import Match, OddsQuote, utcnow
from app.domain.ensemble import Ensemble
from app.domain.prediction import MatchInfo, QuotedOdds, predict_matches
from app.domain.value import MatchValue, ValueTerms, match_value
from app.domain.vocabulary import Basis, Method, Phase
from app.services import queries
from app.services.busy import unavailable_as_service_error
from app.services.pagination import PageWindow
from app.services.prediction import AnswerCache, PredictionAnswer, Unanswerable
from app.services.serving import ModelCache, stored_matches
from app.services.value_bets import DEFAULT_HORIZON, AppliedTerms, ValueBet, value_bets_of

NO_USABLE_QUOTE = (
    f"{Unanswerable.NO_USABLE_QUOTE.value}: no quote of any phase captured before kickoff"
)
# Boards kept per process: one per distinct query (filters and terms) polled.
BOARDS_KEPT = 256
# How much older than the stamp read that saw it the newest change must be before the
# watermark alone is trusted (longer than any write takes from stamping its rows to its
# commit), and how long a stamp read is trusted at most.
SETTLED_AFTER = dt.timedelta(seconds=30)
VERIFIED_FOR = dt.timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class UpcomingQuery:
    """Which upcoming matches (kickoffs within the window, one competition or all), and the
    terms their value is judged and staked by."""

    terms: ValueTerms
    daily_exposure_cap: float
    kickoff_from: dt.datetime | None = None
    kickoff_to: dt.datetime | None = None
    competition: str | None = None
    # How far ahead of the moment of each answer the window ends, when ``kickoff_to`` is
    # not given: a window that moves with time is one query, answered by one board.
    horizon: dt.timedelta = DEFAULT_HORIZON


@dataclass(frozen=True, slots=True)
class Outcomes:
    """One number per outcome."""

    home: float
    draw: float
    away: float


@dataclass(frozen=True, slots=True)
class UpcomingPrediction:
    """The served prediction of a match: as POST /predict gives it by match id."""

    probabilities: Outcomes
    fair_odds: Outcomes
    basis: Basis
    outcome: str


@dataclass(frozen=True, slots=True)
class UpcomingMatchInfo:
    id: int
    competition: str
    season: str
    home_team: str
    away_team: str
    kickoff: dt.datetime


@dataclass(frozen=True, slots=True)
class Freshness:
    """The quotes a prediction read: how many bookmakers, when the newest and the oldest
    were captured (None when no quote said), and the newest's age when answered."""

    bookmakers: int
    newest_captured_at: dt.datetime | None
    oldest_captured_at: dt.datetime | None
    age_seconds: float | None


@dataclass(frozen=True, slots=True)
class UpcomingMatch:
    """One match of the board. With no usable quote, ``prediction`` and ``value`` are None
    and ``reason`` says why."""

    match: UpcomingMatchInfo
    prediction: UpcomingPrediction | None
    reason: str | None
    value: MatchValue | None
    value_bets: Sequence[ValueBet]
    freshness: Freshness
    model_version: int | None


# Compared and hashed by identity: the same page is handed out to every poll it answers,
# and its body written once (the API keeps it, weakly, by the page).
@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class UpcomingPage:
    """One page of the board (``items`` of ``total``), with the window, the terms and the
    model version it was answered with."""

    items: Sequence[UpcomingMatch]
    total: int
    limit: int
    offset: int
    kickoff_from: dt.datetime
    kickoff_to: dt.datetime
    terms: AppliedTerms
    model_version: int | None
    answered_at: dt.datetime
    unfitted: bool  # no model has been fitted: the predictions are the consensus
    # A digest of what the page shows but its ages and window start: the board's stamp, the
    # query as asked and the page's place. Equal tags, equal pages (as of their answers).
    tag: str


# What a board's answers depend on in the database, per match: its id, its season, its
# last change, its number of quotes and the latest receipt of one.
_MatchStamp = tuple[int, str, dt.datetime, int, dt.datetime | None]


# A check's reading, and the board it found its stamp unchanged for (else the board kept).
_Checked = tuple["_Read", "_Board | None"]


# A match as a board made it (value bets aside), and the answer it was made from.
_Made = tuple[UpcomingMatch, PredictionAnswer | None]


@dataclass(frozen=True, slots=True)
class _Stamp:
    model_version: int | None
    matches: tuple[_MatchStamp, ...]


# The newest quote receipt and the newest match change of the whole database (None for an
# empty window: its board depends on nothing but which matches enter it).
_Watermark = tuple[dt.datetime | None, dt.datetime | None]


@dataclass(frozen=True, slots=True)
class _Read:
    """What one check of a query read at ``at``: the ids of the window's matches and the
    watermark, and the stamp's matches when they were read too (else None: unchanged)."""

    at: dt.datetime
    ids: tuple[int, ...]
    watermark: _Watermark
    matches: tuple[_MatchStamp, ...] | None

    def trusted_at(self, moment: dt.datetime) -> bool:
        """Whether a stamp read by this check can stand at ``moment`` while the window's ids
        and the watermark are the same (see the module)."""
        changes = [change for change in self.watermark if change is not None]
        settled = not changes or self.at - max(changes) >= SETTLED_AFTER
        return settled and moment - self.at < VERIFIED_FOR


# The pages of a board handed out within one second, kept per window up to this many.
PAGES_KEPT = 32


@dataclass(slots=True, eq=False)
class _Board:
    """Every match of a query's window as last made, the stamp it was made at, and the
    pages last handed out of it (per window: each answers every poll of its second)."""

    stamp: _Stamp
    matches: Sequence[UpcomingMatch]
    unfitted: bool
    made: dict[_MatchStamp, _Made]
    digest: str
    pages: dict[tuple[int, int], UpcomingPage] = field(default_factory=dict)
    # The latest reading of the stamp that found this board's: what a check compares with.
    verified: _Read | None = None

    def verified_by(self, read: _Read) -> None:
        if self.verified is None or self.verified.at < read.at:
            self.verified = read

    def trusted(self, model_version: int | None, moment: dt.datetime) -> _Read | None:
        """The stamp reading a check at ``moment`` can compare with, if any."""
        last = self.verified
        if model_version != self.stamp.model_version or last is None:
            return None
        return last if last.trusted_at(moment) else None

    def kept_for(self, stamp: _Stamp) -> dict[_MatchStamp, _Made]:
        """What a board at ``stamp`` can take from this one: the matches as made, by their
        own part of the stamp, if the model is the same."""
        return self.made if stamp.model_version == self.stamp.model_version else {}

    def page(
        self,
        query: UpcomingQuery,
        window: PageWindow,
        start: dt.datetime,
        end: dt.datetime,
        now: dt.datetime,
    ) -> UpcomingPage:
        """The page of ``window`` at ``now``: the one handed out earlier in the same second
        if any (its ages and window start are that answer's, less than a second old)."""
        key = (window.offset, window.limit)
        kept = self.pages.get(key)
        if kept is not None and _same_second(kept.answered_at, now):
            return kept
        if len(self.pages) >= PAGES_KEPT:
            self.pages.clear()
        made = self.pages[key] = self._made_page(query, window, start, end, now)
        return made

    def _made_page(
        self,
        query: UpcomingQuery,
        window: PageWindow,
        start: dt.datetime,
        end: dt.datetime,
        now: dt.datetime,
    ) -> UpcomingPage:
        shown = self.matches[window.offset : window.offset + window.limit]
        terms = AppliedTerms.of(query.terms, query.daily_exposure_cap)
        return UpcomingPage(
            items=[_aged(match, now) for match in shown],
            total=len(self.matches),
            limit=window.limit,
            offset=window.offset,
            kickoff_from=start,
            kickoff_to=end,
            terms=terms,
            model_version=self.stamp.model_version,
            answered_at=now,
            unfitted=self.unfitted,
            tag=_digest(
                self.digest,
                terms,
                query.kickoff_from,
                query.kickoff_to,
                query.competition,
                window.offset,
                window.limit,
            ),
        )


def _digest(*parts: object) -> str:
    """A digest of values whose ``repr`` is the same in every process (no sets)."""
    return hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()


class UpcomingBoards:
    """The boards of one process: reads with sessions of ``sessions``, predicts with the
    model ``models`` holds (``default_method`` and ``default_phase`` before the first
    fit), keeps a board per query for as long as its stamp holds (see the module)."""

    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        models: ModelCache,
        default_method: Method,
        default_phase: Phase,
    ) -> None:
        self._sessions = sessions
        self._models = models
        self._default_method = default_method
        self._default_phase = default_phase
        # Kept until replaced: a board is valid as long as its stamp, whatever the time.
        self._boards: AnswerCache[_Board] = AnswerCache(float("inf"), max_entries=BOARDS_KEPT)
        # Used from the event loop only, as the cache is.
        self._making: dict[tuple[UpcomingQuery, _Stamp], asyncio.Future[_Board]] = {}
        # Per query and model version: the check running, and the one waiting to start.
        self._running: dict[tuple[UpcomingQuery, int | None], asyncio.Future[_Checked]] = {}
        self._waiting: dict[tuple[UpcomingQuery, int | None], asyncio.Future[_Checked]] = {}

    async def page(
        self, query: UpcomingQuery, window: PageWindow, *, now: dt.datetime | None = None
    ) -> UpcomingPage:
        """One page of the upcoming matches ``query`` selects, by kickoff (then id)."""
        ensemble = self._models.ensemble  # read once: the board is made with this one
        version = None if ensemble is None else ensemble.version
        if now is None:
            read, board = await self._checked(query, version)
        else:
            kept = self._boards.get(query)
            read, board = await asyncio.to_thread(self._check, query, version, now, kept)
        if read.matches is not None:
            stamp = _Stamp(version, read.matches)
            if board is None or board.stamp != stamp:
                board = await self._made_once(query, stamp, ensemble)
            board.verified_by(read)
        assert board is not None  # a check that read no stamp compared with a board's
        start, end = _window(query, read.at)
        return board.page(query, window, start, end, read.at)

    async def _checked(
        self, query: UpcomingQuery, version: int | None
    ) -> tuple[_Read, _Board | None]:
        """A check of ``query`` that starts after this call: the one waiting to start if
        another poll asked first, else a new one, started when the running one ends."""
        key = (query, version)
        waiting = self._waiting.get(key)
        if waiting is None:
            waiting = asyncio.ensure_future(self._check_after(key, self._running.get(key)))
            self._waiting[key] = waiting
        # Shielded: a poll that goes away does not cancel the others' check.
        return await asyncio.shield(waiting)

    async def _check_after(
        self,
        key: tuple[UpcomingQuery, int | None],
        running: asyncio.Future[tuple[_Read, _Board | None]] | None,
    ) -> tuple[_Read, _Board | None]:
        if running is not None:
            await asyncio.wait([running])
        # From here on a poll that arrives waits for the next check.
        this = self._waiting.pop(key)
        self._running[key] = this
        try:
            kept = self._boards.get(key[0])
            return await asyncio.to_thread(self._check, *key, utcnow(), kept)
        finally:
            if self._running.get(key) is this:
                del self._running[key]

    def _check(
        self,
        query: UpcomingQuery,
        version: int | None,
        moment: dt.datetime,
        board: _Board | None,
    ) -> tuple[_Read, _Board | None]:
        """What the database holds for ``query`` at ``moment``: the window's ids and the
        watermark alone when they are what the kept ``board``'s trusted reading saw (the
        board stands), else its stamp too. Runs in a worker thread: the board was looked up
        on the event loop, which alone uses the cache."""
        start, end = _window(query, moment)
        filters = queries.MatchFilter(
            competition=query.competition, kickoff_from=start, kickoff_to=end
        )
        last = None if board is None else board.trusted(version, moment)
        with unavailable_as_service_error(), session_scope(self._sessions) as session:
            if last is not None:
                ids, watermark = window_watermark(session, filters, moment)
                if (ids, watermark) == (last.ids, last.watermark):
                    return _Read(moment, ids, watermark, None), board
            matches, watermark = match_stamps(session, filters, moment)
        return _Read(moment, tuple(match[0] for match in matches), watermark, matches), board

    async def _made_once(
        self, query: UpcomingQuery, stamp: _Stamp, ensemble: Ensemble | None
    ) -> _Board:
        """The board of ``query`` at ``stamp``, sharing the making already under way if any."""
        key = (query, stamp)
        making = self._making.get(key)
        if making is None:
            previous = self._boards.get(query)
            making = asyncio.ensure_future(
                asyncio.to_thread(self._make, query, stamp, ensemble, previous)
            )
            self._making[key] = making
            making.add_done_callback(lambda _: self._making.pop(key, None))
        # Shielded: a request that goes away does not cancel the others' board.
        board = await asyncio.shield(making)
        self._boards.put(query, board)
        return board

    def _make(
        self,
        query: UpcomingQuery,
        stamp: _Stamp,
        ensemble: Ensemble | None,
        previous: _Board | None,
    ) -> _Board:
        """The board of ``query`` at ``stamp``. The answers of the matches whose own part of
        the stamp is unchanged since the last board (by the same model) are taken from it;
        only the others are read and predicted again, all in one batch. The value bets are
        worked out again over them all: each day's exposure cap ties a day's matches."""
        phase = self._default_phase if ensemble is None else ensemble.phase
        method = self._default_method if ensemble is None else ensemble.method
        judging = _Judging(query.terms, method, stamp.model_version)
        kept = {} if previous is None else previous.kept_for(stamp)
        wanted = [match for match in stamp.matches if match not in kept]
        made = self._made(wanted, phase, method, ensemble, judging)
        made.update((match[0], kept[match]) for match in stamp.matches if match in kept)
        answers = [answer for _, answer in made.values() if answer is not None]
        bets, _ = value_bets_of(
            answers, query.terms, query.daily_exposure_cap, self._default_method
        )
        bets_of: dict[int | None, list[ValueBet]] = {}
        for bet in bets:
            bets_of.setdefault(bet.match.id, []).append(bet)
        board = [
            replace(made[match[0]][0], value_bets=bets_of.get(match[0], []))
            # A match deleted between the stamp and its read is left out.
            for match in stamp.matches
            if match[0] in made
        ]
        made_by_stamp = {match: made[match[0]] for match in stamp.matches if match[0] in made}
        unfitted = ensemble is None and bool(answers)
        return _Board(stamp, board, unfitted, made_by_stamp, _digest(stamp, unfitted))

    def _made(
        self,
        matches: Sequence[_MatchStamp],
        phase: Phase,
        method: Method,
        ensemble: Ensemble | None,
        judging: _Judging,
    ) -> dict[int, _Made]:
        """The given matches as the board shows them (without their value bets), read and
        predicted in one batch."""
        if not matches:
            return {}
        seasons = {match[0]: match[1] for match in matches}
        with unavailable_as_service_error(), session_scope(self._sessions) as session:
            stored = stored_matches(session, list(seasons), phase=phase)
        usable = [match for match in stored.values() if match.odds]
        predictions = predict_matches([match.odds for match in usable], ensemble, method)
        answers = {
            match.info.id: PredictionAnswer(
                match.info,
                prediction,
                ensemble,
                judging.terms,
                match_value(prediction.probabilities, match.odds, judging.terms, method),
                match.stored,
                match.odds,
            )
            for match, prediction in zip(usable, predictions, strict=True)
        }
        return {
            match_id: (
                _upcoming(match.info, seasons[match_id], answers.get(match_id), judging),
                answers.get(match_id),
            )
            for match_id, match in stored.items()
        }


def match_stamps(
    session: Session, filters: queries.MatchFilter, now: dt.datetime
) -> tuple[tuple[_MatchStamp, ...], _Watermark]:
    """Per upcoming match that fits ``filters``, by kickoff then id: what its answer depends
    on in the database (see the module); and the watermark, read with it. One query, which
    finds the matches by the kickoff index and reads only their quotes (a join with GROUP
    BY would scan every match)."""
    of_match = OddsQuote.match_id == Match.id
    statement = select(
        Match.id,
        Match.season,
        Match.updated_at,
        select(func.count()).where(of_match).scalar_subquery(),
        select(func.max(OddsQuote.received_at)).where(of_match).scalar_subquery(),
        *_watermark_columns(),
    ).order_by(Match.kickoff, Match.id)
    rows = session.execute(queries.upcoming_only(statement, filters, now)).all()
    matches = tuple((row[0], row[1], row[2], int(row[3]), row[4]) for row in rows)
    return matches, _watermark_of(rows)


def window_watermark(
    session: Session, filters: queries.MatchFilter, now: dt.datetime
) -> tuple[tuple[int, ...], _Watermark]:
    """The ids of the upcoming matches that fit ``filters``, by kickoff then id, and the
    watermark: one query that reads no quote (the window's matches found by the kickoff
    index, and one entry of each watermark's index)."""
    statement = select(Match.id, *_watermark_columns()).order_by(Match.kickoff, Match.id)
    rows = session.execute(queries.upcoming_only(statement, filters, now)).all()
    return tuple(row[0] for row in rows), _watermark_of(rows)


def _watermark_columns() -> tuple[ScalarSelect[dt.datetime], ScalarSelect[dt.datetime]]:
    return _WATERMARK_COLUMNS


# Uncorrelated: the newest of the whole tables, each one entry of its index. Built once: an
# unchanged poll runs little more than this.
_CHANGED = aliased(Match)
_WATERMARK_COLUMNS = (
    select(func.max(OddsQuote.received_at)).correlate(None).scalar_subquery(),
    select(func.max(_CHANGED.updated_at)).correlate(None).scalar_subquery(),
)


def _watermark_of(rows: Sequence[Sequence[Any]]) -> _Watermark:
    """The watermark read as the last two columns of every row."""
    return (None, None) if not rows else (rows[0][-2], rows[0][-1])


def _window(query: UpcomingQuery, moment: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The kickoffs ``query`` looks at, at ``moment``."""
    return query.kickoff_from or moment, query.kickoff_to or moment + query.horizon


@dataclass(frozen=True, slots=True)
class _Judging:
    """How a board judges its matches: the terms, the method that de-margines a
    bookmaker's line, the model version that answered."""

    terms: ValueTerms
    method: Method
    model_version: int | None


def _upcoming(
    info: MatchInfo, season: str, answer: PredictionAnswer | None, judging: _Judging
) -> UpcomingMatch:
    """The match as the board shows it, its value bets left to the board (see ``_make``)."""
    # A stored match has them all.
    assert info.id is not None
    assert info.kickoff is not None
    assert info.competition is not None
    assert info.home_team is not None
    assert info.away_team is not None
    match = UpcomingMatchInfo(
        info.id, info.competition, season, info.home_team, info.away_team, info.kickoff
    )
    if answer is None:
        return UpcomingMatch(match, None, NO_USABLE_QUOTE, None, (), _freshness(()), None)
    prediction = answer.prediction
    home, draw, away = prediction.probabilities
    served = UpcomingPrediction(
        Outcomes(home, draw, away),
        Outcomes(1 / home, 1 / draw, 1 / away),
        prediction.basis,
        prediction.outcome,
    )
    return UpcomingMatch(
        match, served, None, answer.value, (), _freshness(answer.odds), judging.model_version
    )


def _freshness(odds: Sequence[QuotedOdds]) -> Freshness:
    captured = [quote.captured_at for quote in odds if quote.captured_at is not None]
    if not captured:
        return Freshness(len(odds), None, None, None)
    return Freshness(len(odds), max(captured), min(captured), None)


def _aged(match: UpcomingMatch, now: dt.datetime) -> UpcomingMatch:
    """The match with the age of its newest quote at ``now``; never below zero (a quote
    received from a host whose clock runs ahead is as new as can be, not from the future)."""
    newest = match.freshness.newest_captured_at
    if newest is None:
        return match
    age = max((now - newest).total_seconds(), 0.0)
    return replace(match, freshness=replace(match.freshness, age_seconds=age))


def _same_second(one: dt.datetime, other: dt.datetime) -> bool:
    return one.replace(microsecond=0) == other.replace(microsecond=0)
