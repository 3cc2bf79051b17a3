"""The value bets of the upcoming board: every flagged outcome, best first, its stake capped
per bet and per day; the day cap applies to the whole list, so every page shows the same
stakes."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from app.domain.prediction import MatchInfo
from app.domain.records import OUTCOME_INDEX
from app.domain.value import OutcomeValue, ValueTerms, exposure_scale, money_stake
from app.domain.vocabulary import Basis
from app.services.prediction import PredictionAnswer

# The window of kickoffs a list covers when it is not given: the week ahead.
DEFAULT_HORIZON = dt.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class ValueBet:
    """One flagged outcome: the price to take, its worth, and its stake before and after its
    day's ``day_scale``."""

    match: MatchInfo
    outcome: str
    probability: float
    source: str
    basis: Basis
    model_version: int | None
    price: float
    net_price: float
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
    """One page of the list, what it was made with, and every day's exposure."""

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


def value_bets_of(
    answers: Sequence[PredictionAnswer], bankroll: float | None, daily_exposure_cap: float
) -> tuple[list[ValueBet], list[DayExposure]]:
    """The flagged outcomes of ``answers`` as ranked bets, scaled by their days' cap; and
    each day's exposure."""
    flagged = [_Flag(answer, outcome) for answer in answers for outcome in answer.value.flagged]
    bets, days = _capped(flagged, bankroll, daily_exposure_cap)
    bets.sort(key=_rank)
    return bets, days


@dataclass(frozen=True, slots=True)
class _Flag:
    answer: PredictionAnswer
    value: OutcomeValue


def _kickoff_day(flag: _Flag) -> dt.date:
    kickoff = flag.answer.match.kickoff
    assert kickoff is not None, "a stored match has a kickoff"
    return kickoff.astimezone(dt.UTC).date()


def _capped(
    flags: list[_Flag], bankroll: float | None, cap: float
) -> tuple[list[ValueBet], list[DayExposure]]:
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
    assert value.net_price is not None
    assert value.bookmaker is not None
    assert value.expected_value is not None
    # ... and was priced by a link of the source chain.
    assert value.probability is not None
    assert answer.value.source is not None
    fraction = value.stake_fraction * scale
    return ValueBet(
        match=answer.match,
        outcome=value.outcome,
        probability=value.probability,
        source=answer.value.source,
        basis=answer.prediction.basis,
        model_version=None if answer.model is None else answer.model.version,
        price=value.price,
        net_price=value.net_price,
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
