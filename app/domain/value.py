"""Value bets: where a price pays more than a probability says it is worth, and the stake.

``EV = p × o − 1``; the Kelly stake ``EV / (o − 1)`` is scaled down and capped, because
``p`` is an estimate and full Kelly on an overstated edge ruins a bankroll. CLV is the same
formula with the closing line's fair probability. The functions on numbers take floats or
numpy arrays, so the service and the backtest share one definition.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.bookmakers import bookmaker_key
from app.domain.odds import Triple
from app.domain.prediction import QuotedOdds, demargined
from app.domain.records import OUTCOMES
from app.domain.vocabulary import Method

# The probability source that is the served prediction itself.
ENSEMBLE_SOURCE = defaults.VALUE_SOURCE

Number = TypeVar("Number", float, NDArray[np.float64])


def expected_value(probability: Number, price: Number) -> Number:
    """``p × price − 1``: the mean return of a stake of 1."""
    return probability * price - 1.0


def closing_line_value(price: Number, closing_probability: Number) -> Number:
    """The return of ``price`` against the closing line's de-margined probability."""
    return expected_value(closing_probability, price)


def kelly_stake(ev: Number, price: Number, fraction: float, cap: float) -> Number:
    """``fraction × EV / (price − 1)`` within [0, ``cap``]."""
    full = fraction * ev / (price - 1.0)
    if isinstance(full, np.ndarray):
        return np.clip(full, 0.0, cap)
    # One bet: plain floats, as numpy's cost per call would be most of the work.
    return min(max(full, 0.0), cap)


def money_stake(fraction: float, bankroll: float) -> float:
    """A stake in money, rounded down to the cent (the nudge keeps 0.07 × 100 at 7.00)."""
    return math.floor(fraction * bankroll * 100 + 1e-6) / 100


@dataclass(frozen=True, slots=True)
class ValueTerms:
    """How value is judged and staked. ``source``: the served prediction (``ensemble``) or a
    bookmaker's de-margined line, falling back to the former where it did not quote;
    ``bookmakers``: those the bettor can bet with (None: any)."""

    kelly_fraction: float = defaults.KELLY_FRACTION
    stake_cap: float = defaults.STAKE_CAP
    min_ev: float = defaults.MIN_EV
    source: str = ENSEMBLE_SOURCE
    bookmakers: frozenset[str] | None = None  # keys, as bookmaker_key gives them
    bankroll: float | None = None

    def allows(self, bookmaker: str) -> bool:
        return self.bookmakers is None or bookmaker_key(bookmaker) in self.bookmakers


class OutcomeValue(NamedTuple):
    """One outcome at the best price the bettor can take (None: none quoted), and its worth;
    flagged, and staked, when its EV is above the terms' ``min_ev``."""

    outcome: str
    probability: float
    price: float | None
    bookmaker: str | None
    captured_at: dt.datetime | None
    expected_value: float | None
    stake_fraction: float
    stake: float | None  # in money, when the terms give a bankroll
    flagged: bool


@dataclass(frozen=True, slots=True)
class MatchValue:
    """The value of a match's three outcomes, and the probability source that priced them."""

    source: str
    outcomes: tuple[OutcomeValue, OutcomeValue, OutcomeValue]

    @property
    def flagged(self) -> list[OutcomeValue]:
        return [outcome for outcome in self.outcomes if outcome.flagged]


def match_value(
    served: Triple, odds: Sequence[QuotedOdds], terms: ValueTerms, method: Method
) -> MatchValue:
    """The value of each outcome at the best price of the allowed bookmakers in ``odds``."""
    source, probabilities = _probabilities(served, odds, terms, method)
    allowed = [quote for quote in odds if terms.allows(quote.bookmaker)]
    values = tuple(
        _outcome_value(index, probabilities[index], allowed, terms)
        for index in range(len(OUTCOMES))
    )
    return MatchValue(source, values)  # type: ignore[arg-type]


def _probabilities(
    served: Triple, odds: Sequence[QuotedOdds], terms: ValueTerms, method: Method
) -> tuple[str, Triple]:
    if terms.source == ENSEMBLE_SOURCE:
        return ENSEMBLE_SOURCE, served
    wanted = bookmaker_key(terms.source)
    for quote in odds:
        if bookmaker_key(quote.bookmaker) == wanted:
            return terms.source, demargined([quote], method)[0]
    return ENSEMBLE_SOURCE, served


# Each outcome's price in a quote.
_PRICE_OF = (attrgetter("home"), attrgetter("draw"), attrgetter("away"))


def _outcome_value(
    index: int, probability: float, allowed: Sequence[QuotedOdds], terms: ValueTerms
) -> OutcomeValue:
    if not allowed:
        return OutcomeValue(OUTCOMES[index], probability, None, None, None, None, 0.0, None, False)
    price_of = _PRICE_OF[index]
    best = max(allowed, key=price_of)  # the first of equal best prices
    best_price: float = price_of(best)
    ev = expected_value(probability, best_price)
    flagged = ev > terms.min_ev
    fraction = (
        kelly_stake(ev, best_price, terms.kelly_fraction, terms.stake_cap) if flagged else 0.0
    )
    stake = None if terms.bankroll is None else money_stake(fraction, terms.bankroll)
    return OutcomeValue(
        OUTCOMES[index],
        probability,
        best_price,
        best.bookmaker,
        best.captured_at,
        ev,
        fraction,
        stake,
        flagged,
    )


def exposure_scale(exposure: Number, cap: float) -> Number:
    """The factor that brings a day's stakes, summing to ``exposure``, to at most ``cap``: a
    day's bets are not independent edges (one mistaken belief can price them all)."""
    scale = np.minimum(1.0, cap / np.maximum(exposure, cap))
    if isinstance(exposure, np.ndarray):
        return scale
    return float(scale)
