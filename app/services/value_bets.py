"""The value-bets list: every flagged outcome of the upcoming matches, best first, with its
stakes capped per bet (by the terms) and per day (by the daily exposure cap).

One query finds the upcoming matches; one call of the prediction service answers them all
(in a batch, reusing its recent answers); value is judged by ``match_value``, the one
definition of it. The day cap is applied over the whole list before it is cut into pages,
so every page shows the same stakes.

A dashboard polls the same list over and over: each process keeps a list it made for as
long as the prediction service keeps its answers, and makes a list asked for by several
requests at once only once. A kept list is made again as soon as one of its matches has
kicked off, so a started match is never listed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import session_scope
from app.db.orm import utcnow
from app.domain.prediction import MatchInfo
from app.domain.records import OUTCOME_INDEX
from app.domain.value import (
    OutcomeValue,
    ValueTerms,
    exposure_scale,
    match_value,
    money_stake,
)
from app.domain.vocabulary import Basis, Method
from app.services import queries
from app.services.busy import unavailable_as_service_error
from app.services.pagination import PageWindow
from app.services.prediction import AnswerCache, PredictionAnswer, PredictionService, Refusal

# The window of kickoffs a list covers when it is not given: the week ahead.
DEFAULT_HORIZON = dt.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class ValueBetQuery:
    """Which upcoming matches to look at (kickoffs within the window, one competition or
    all), and the terms value is judged and staked by."""

    terms: ValueTerms
    daily_exposure_cap: float
    kickoff_from: dt.datetime | None = None
    kickoff_to: dt.datetime | None = None
    competition: str | None = None


@dataclass(frozen=True, slots=True)
class ValueBet:
    """One flagged outcome: the price to take, what it is worth, and what to stake on it.

    ``unscaled_stake_fraction`` is the capped Kelly stake of the bet alone; ``day_scale``
    is what its kickoff day's exposure cap multiplies it by, giving ``stake_fraction`` (and
    ``stake``, in money, when the terms give a bankroll).
    """

    match: MatchInfo
    outcome: str
    probability: float
    source: str
    basis: Basis
    model_version: int | None
    price: float
    bookmaker: str
    captured_at: dt.datetime | None
    expected_value: float
    unscaled_stake_fraction: float
    day_scale: float
    stake_fraction: float
    stake: float | None


@dataclass(frozen=True, slots=True)
class DayExposure:
    """The stakes of one UTC kickoff day: their sum before and after the day's scale."""

    day: dt.date
    bets: int
    unscaled_exposure: float
    scale: float
    exposure: float
    stake: float | None  # in money, when the terms give a bankroll


@dataclass(frozen=True, slots=True)
class AppliedTerms:
    """The terms a list was made with, as its answer states them."""

    min_ev: float
    kelly_fraction: float
    stake_cap: float
    daily_exposure_cap: float
    source: str
    bookmakers: tuple[str, ...] | None
    bankroll: float | None

    @classmethod
    def of(cls, terms: ValueTerms, daily_exposure_cap: float) -> AppliedTerms:
        """``terms`` with the day's cap, the bookmakers in order."""
        return cls(
            min_ev=terms.min_ev,
            kelly_fraction=terms.kelly_fraction,
            stake_cap=terms.stake_cap,
            daily_exposure_cap=daily_exposure_cap,
            source=terms.source,
            bookmakers=None if terms.bookmakers is None else tuple(sorted(terms.bookmakers)),
            bankroll=terms.bankroll,
        )


@dataclass(frozen=True, slots=True)
class ValueBets:
    """One page of the list (``items`` of ``total``), the window and terms it was made
    with, the exposure of every day of the whole list, and the model version that answered
    (None before the first fit, when probabilities are the bookmakers' consensus, or when
    no match was answered)."""

    items: Sequence[ValueBet]
    total: int
    limit: int
    offset: int
    kickoff_from: dt.datetime
    kickoff_to: dt.datetime
    terms: AppliedTerms
    days: Sequence[DayExposure]
    model_version: int | None
    unfitted: bool  # some match was answered before any model was fitted


@dataclass(frozen=True, slots=True)
class _WholeList:
    """Every bet of a list, ranked, with what its answer states besides its pages."""

    bets: Sequence[ValueBet]
    kickoff_from: dt.datetime
    kickoff_to: dt.datetime
    days: Sequence[DayExposure]
    model_version: int | None
    unfitted: bool

    def started(self, now: dt.datetime) -> bool:
        """Whether one of its matches has kicked off by ``now``."""
        return any(bet.match.kickoff is not None and bet.match.kickoff <= now for bet in self.bets)

    def page(self, query: ValueBetQuery, window: PageWindow) -> ValueBets:
        return ValueBets(
            items=self.bets[window.offset : window.offset + window.limit],
            total=len(self.bets),
            limit=window.limit,
            offset=window.offset,
            kickoff_from=self.kickoff_from,
            kickoff_to=self.kickoff_to,
            terms=AppliedTerms.of(query.terms, query.daily_exposure_cap),
            days=self.days,
            model_version=self.model_version,
            unfitted=self.unfitted,
        )


class ValueBetLists:
    """Makes the value-bets lists of one process: reads the upcoming matches with sessions
    of ``sessions``, has ``predictions`` answer them, and keeps each list for
    ``list_ttl_seconds`` (see the module).

    ``default_method`` de-margines a bookmaker's line before any model is fitted (after,
    the model's own method does).
    """

    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        predictions: PredictionService,
        list_ttl_seconds: float,
        default_method: Method,
    ) -> None:
        self._sessions = sessions
        self._predictions = predictions
        self._default_method = default_method
        self._lists: AnswerCache[_WholeList] = AnswerCache(list_ttl_seconds, max_entries=256)
        # Used from the event loop only, as the cache is.
        self._making: dict[ValueBetQuery, asyncio.Future[_WholeList]] = {}

    async def page(
        self, query: ValueBetQuery, window: PageWindow, *, now: dt.datetime | None = None
    ) -> ValueBets:
        """One page of the value bets of the upcoming matches ``query`` selects, highest
        expected value first. Matches the prediction service cannot answer (no usable
        quote) have no value to offer and are left out."""
        moment = now or utcnow()
        whole = self._lists.get(query)
        if whole is None or whole.started(moment):
            whole = await self._made_once(query, moment)
        return whole.page(query, window)

    async def _made_once(self, query: ValueBetQuery, now: dt.datetime) -> _WholeList:
        """The list made for ``query``, sharing the making already under way if any."""
        making = self._making.get(query)
        if making is None:
            making = asyncio.ensure_future(self._make(query, now))
            self._making[query] = making
            making.add_done_callback(lambda _: self._making.pop(query, None))
        # Shielded: a request that goes away does not cancel the others' list.
        return await asyncio.shield(making)

    async def _make(self, query: ValueBetQuery, now: dt.datetime) -> _WholeList:
        start = query.kickoff_from or now
        end = query.kickoff_to or now + DEFAULT_HORIZON
        filters = queries.MatchFilter(
            competition=query.competition, kickoff_from=start, kickoff_to=end
        )
        match_ids = await asyncio.to_thread(self._upcoming, filters, now)
        answers = await self._predictions.answer(match_ids)
        answered = [answer for answer in answers if not isinstance(answer, Refusal)]
        bets, days = value_bets_of(
            answered, query.terms, query.daily_exposure_cap, self._default_method
        )
        # One call answers from one snapshot of the model: every answer has the same version.
        version = next((a.model.version for a in answered if a.model is not None), None)
        whole = _WholeList(bets, start, end, days, version, any(a.model is None for a in answered))
        self._lists.put(query, whole)
        return whole

    def _upcoming(self, filters: queries.MatchFilter, now: dt.datetime) -> list[int]:
        with unavailable_as_service_error(), session_scope(self._sessions) as session:
            return queries.upcoming_match_ids(session, filters, now=now)


def value_bets_of(
    answers: Sequence[PredictionAnswer],
    terms: ValueTerms,
    daily_exposure_cap: float,
    default_method: Method,
) -> tuple[list[ValueBet], list[DayExposure]]:
    """The value bets of ``answers``, ranked (highest expected value first), each stake
    scaled by its kickoff day's exposure cap; and each day's exposure, in the order of the
    days. ``default_method`` de-margines a bookmaker's line of an answer made with no model."""
    flagged = [bet for answer in answers for bet in _flagged(answer, terms, default_method)]
    bets, days = _capped(flagged, terms.bankroll, daily_exposure_cap)
    bets.sort(key=_rank)
    return bets, days


@dataclass(frozen=True, slots=True)
class _Flag:
    """A flagged outcome of an answer, before the day cap."""

    answer: PredictionAnswer
    source: str
    value: OutcomeValue


def _flagged(answer: PredictionAnswer, terms: ValueTerms, default_method: Method) -> list[_Flag]:
    value = answer.value
    if answer.terms != terms:
        ensemble = answer.model
        method = default_method if ensemble is None else ensemble.method
        value = match_value(answer.prediction.probabilities, answer.odds, terms, method)
    return [_Flag(answer, value.source, outcome) for outcome in value.flagged]


def _kickoff_day(flag: _Flag) -> dt.date:
    kickoff = flag.answer.match.kickoff
    assert kickoff is not None, "a stored match has a kickoff"
    return kickoff.astimezone(dt.UTC).date()


def _capped(
    flags: list[_Flag], bankroll: float | None, cap: float
) -> tuple[list[ValueBet], list[DayExposure]]:
    """Every flag as a bet, its stake scaled by its day's exposure cap; and each day's
    exposure, in the order of the days."""
    by_day: dict[dt.date, list[_Flag]] = defaultdict(list)
    for flag in flags:
        by_day[_kickoff_day(flag)].append(flag)
    bets: list[ValueBet] = []
    days: list[DayExposure] = []
    for day in sorted(by_day):
        day_flags = by_day[day]
        unscaled = math.fsum(flag.value.stake_fraction for flag in day_flags)
        scale = exposure_scale(unscaled, cap)
        day_bets = [_bet(flag, scale, bankroll) for flag in day_flags]
        bets.extend(day_bets)
        money = None if bankroll is None else math.fsum(bet.stake or 0.0 for bet in day_bets)
        exposure = math.fsum(bet.stake_fraction for bet in day_bets)
        days.append(DayExposure(day, len(day_bets), unscaled, scale, exposure, money))
    return bets, days


def _bet(flag: _Flag, scale: float, bankroll: float | None) -> ValueBet:
    answer, value = flag.answer, flag.value
    # A flagged outcome always has a price, its bookmaker and its EV.
    assert value.price is not None
    assert value.bookmaker is not None
    assert value.expected_value is not None
    fraction = value.stake_fraction * scale
    return ValueBet(
        match=answer.match,
        outcome=value.outcome,
        probability=value.probability,
        source=flag.source,
        basis=answer.prediction.basis,
        model_version=None if answer.model is None else answer.model.version,
        price=value.price,
        bookmaker=value.bookmaker,
        captured_at=value.captured_at,
        expected_value=value.expected_value,
        unscaled_stake_fraction=value.stake_fraction,
        day_scale=scale,
        stake_fraction=fraction,
        stake=None if bankroll is None else money_stake(fraction, bankroll),
    )


def _rank(bet: ValueBet) -> tuple[float, dt.datetime, int, int]:
    """Highest EV first; equal ones by kickoff, match and outcome, so pages never shuffle."""
    assert bet.match.kickoff is not None
    assert bet.match.id is not None
    return (-bet.expected_value, bet.match.kickoff, bet.match.id, OUTCOME_INDEX[bet.outcome])
