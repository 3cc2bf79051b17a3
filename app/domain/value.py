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
from typing import NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.bookmakers import bookmaker_key
from app.domain.odds import Triple, consensus_of
from app.domain.prediction import QuotedOdds, demargined
from app.domain.records import OUTCOMES
from app.domain.value_sources import CONSENSUS, ENSEMBLE, chain_links
from app.domain.vocabulary import Method

# The probability source that is the served prediction itself.
ENSEMBLE_SOURCE = ENSEMBLE

Number = TypeVar("Number", float, NDArray[np.float64])


def expected_value(probability: Number, price: Number) -> Number:
    """``p × price − 1``: the mean return of a stake of 1."""
    return probability * price - 1.0


def net_price(price: Number, commission: Number | float) -> Number:
    """What ``price`` pays after a commission on net winnings: ``1 + (price − 1)(1 − c)``
    (an exchange's 2.10 at 5 % pays 2.045). Without commission, the price itself."""
    return 1.0 + (price - 1.0) * (1.0 - commission)


def closing_line_value(price: Number, closing_probability: Number) -> Number:
    """The return of ``price`` against the closing line's de-margined probability."""
    return expected_value(closing_probability, price)


def kelly_stake(ev: Number, price: Number, fraction: float, cap: float) -> Number:
    """``fraction × EV / (price − 1)`` within [0, ``cap``]."""
    full = fraction * ev / (price - 1.0)
    if isinstance(full, np.ndarray):
        return np.clip(full, 0.0, cap)
    # A float (the track record stakes its bets one at a time) stays a float. The value of
    # a request is priced and staked with arrays even for one match (:func:`match_values`),
    # so it is decided by the very code the backtest runs.
    return min(max(full, 0.0), cap)


def money_stake(fraction: float, bankroll: float) -> float:
    """A stake in money, rounded down to the cent (the nudge keeps 0.07 × 100 at 7.00)."""
    return math.floor(fraction * bankroll * 100 + 1e-6) / 100


@dataclass(frozen=True, slots=True)
class ValueTerms:
    """How value is judged and staked. ``source``: a chain of probability sources, normalised
    (:mod:`app.domain.value_sources`): for each match the first of them with a line prices
    it; ``bookmakers``: those the bettor can bet with (None: any); ``commissions``: each
    exchange's commission on net winnings, by bookmaker key (its prices are taken net)."""

    kelly_fraction: float = defaults.KELLY_FRACTION
    stake_cap: float = defaults.STAKE_CAP
    min_ev: float = defaults.MIN_EV
    source: str = defaults.VALUE_SOURCE  # normalised, as value_sources writes it
    bookmakers: frozenset[str] | None = None  # keys, as bookmaker_key gives them
    bankroll: float | None = None
    commissions: tuple[tuple[str, float], ...] = defaults.EXCHANGE_COMMISSION

    def allows(self, bookmaker: str) -> bool:
        return self.bookmakers is None or bookmaker_key(bookmaker) in self.bookmakers


class OutcomeValue(NamedTuple):
    """One outcome at the best price the bettor can take (None: none quoted), and its worth;
    flagged, and staked, when it is its match's bet (:func:`choose_outcomes`). ``price`` is
    as quoted; ``net_price``, what it pays after the bookmaker's commission, is the one EV
    and the stake are computed from (and the best is chosen by). ``probability`` is None,
    and so is the EV, when no link of the source chain had a line for the match."""

    outcome: str
    probability: float | None
    price: float | None
    net_price: float | None
    bookmaker: str | None
    captured_at: dt.datetime | None
    expected_value: float | None
    stake_fraction: float
    stake: float | None  # in money, when the terms give a bankroll
    flagged: bool


@dataclass(frozen=True, slots=True)
class MatchValue:
    """The value of a match's three outcomes, and the link of the source chain that priced
    them (None: no link had a line for the match, which gets no value)."""

    source: str | None
    outcomes: tuple[OutcomeValue, OutcomeValue, OutcomeValue]

    @property
    def flagged(self) -> list[OutcomeValue]:
        return [outcome for outcome in self.outcomes if outcome.flagged]


class Decision(NamedTuple):
    """Per match (rows): whether it gets a bet, which outcome, and every outcome's EV (NaN
    where a price or probability is missing)."""

    placed: NDArray[np.bool_]  # (m,)
    outcome: NDArray[np.intp]  # (m,) meaningful where placed
    expected_value: NDArray[np.float64]  # (m, 3)

    def flags(self) -> NDArray[np.bool_]:
        """``(m, 3)``: True at each placed match's chosen outcome."""
        flagged = np.zeros(self.expected_value.shape, dtype=np.bool_)
        rows = np.flatnonzero(self.placed)
        flagged[rows, self.outcome[rows]] = True
        return flagged


def choose_outcomes(
    probabilities: NDArray[np.float64], prices: NDArray[np.float64], min_ev: float
) -> Decision:
    """The one decision rule, live and in the backtest: at most one bet a match, on the
    outcome of highest EV above ``min_ev`` (the first in 1, X, 2 order on a tie).

    ``probabilities`` and ``prices`` are ``(m, 3)``, one row a match; a missing price is NaN.
    One bet a match because a match's outcomes exclude each other: backing two of them
    pays two margins to win at most once."""
    ev = expected_value(probabilities, prices)
    candidate = np.where(ev > min_ev, ev, -np.inf)  # NaN > min_ev is False
    outcome = np.argmax(candidate, axis=1).astype(np.intp)
    placed = np.isfinite(candidate.max(axis=1, initial=-np.inf))
    return Decision(placed, outcome, ev)


def match_value(
    served: Triple, odds: Sequence[QuotedOdds], terms: ValueTerms, method: Method
) -> MatchValue:
    """The value of each outcome at the best price of the allowed bookmakers in ``odds``."""
    return match_values([served], [odds], terms, method)[0]


def match_values(
    served: Sequence[Triple],
    odds: Sequence[Sequence[QuotedOdds]],
    terms: ValueTerms,
    method: Method,
) -> list[MatchValue]:
    """:func:`match_value` of many matches, priced by :func:`best_prices` and decided by
    :func:`choose_outcomes` together, as the backtest prices and decides its matches."""
    if not served:
        return []
    links = chain_links(terms.source)
    sourced = first_lines(_link_lines(links, served, odds, method))
    allowed = [[quote for quote in quotes if terms.allows(quote.bookmaker)] for quotes in odds]
    best = best_prices(_quote_array(allowed), _commission_array(allowed, terms.commissions))
    decision = choose_outcomes(sourced.probabilities, best.price, terms.min_ev)
    flagged = decision.flags()
    fraction = np.where(
        flagged,
        kelly_stake(
            np.where(flagged, decision.expected_value, 0.0),
            np.where(flagged, best.price, 2.0),  # any price > 1 where not staked
            terms.kelly_fraction,
            terms.stake_cap,
        ),
        0.0,
    )
    columns = best.bookmaker.tolist()
    return [
        MatchValue(
            None if link < 0 else links[link],
            _outcome_values(
                [None if math.isnan(p) else p for p in line],
                [None if column < 0 else quotes[column] for column in row_columns],
                (net, [None if math.isnan(e) else e for e in ev], stake, marks),
                terms,
            ),
        )
        for link, line, quotes, row_columns, net, ev, stake, marks in zip(
            sourced.link.tolist(),
            sourced.probabilities.tolist(),
            allowed,
            columns,
            best.price.tolist(),
            decision.expected_value.tolist(),
            fraction.tolist(),
            flagged.tolist(),
            strict=True,
        )
    ]


class SourcedLines(NamedTuple):
    """Per match, the line of the first link of a source chain that had one, and that
    link's position in the chain (-1: none had one; the line is NaN)."""

    probabilities: NDArray[np.float64]  # (m, 3)
    link: NDArray[np.intp]  # (m,)


def first_lines(lines: Sequence[NDArray[np.float64]]) -> SourcedLines:
    """A source chain's fallback, live and in the backtest: per match, the line of the first
    of ``lines`` (one ``(m, 3)`` array a link, in the chain's order; a NaN row: that link
    has no line for the match) that has one."""
    stacked = np.stack(lines)  # (links, m, 3)
    has_line = np.asarray(~np.isnan(stacked).any(axis=2), dtype=np.bool_)
    first = np.argmax(has_line, axis=0)
    found = np.asarray(has_line.any(axis=0), dtype=np.bool_)
    chosen = stacked[first, np.arange(stacked.shape[1])]
    return SourcedLines(
        probabilities=np.where(found[:, None], chosen, np.nan),
        link=np.where(found, first, -1).astype(np.intp),
    )


def _link_lines(
    links: Sequence[str],
    served: Sequence[Triple],
    odds: Sequence[Sequence[QuotedOdds]],
    method: Method,
) -> list[NDArray[np.float64]]:
    """Each link's ``(m, 3)`` line: the served prediction, the consensus of every quote of
    the match, or one bookmaker's quote de-margined by ``method`` (NaN rows: it did not
    quote the match)."""
    if links == (ENSEMBLE,):  # the served prediction alone: nothing to de-margin
        return [np.array(served, dtype=np.float64)]
    quoted = _quote_array(odds)
    flat = [quote for quotes in odds for quote in quotes]
    lines = np.full(quoted.shape, np.nan)
    if flat:  # no match quoted: every bookmaker line and the consensus are NaN
        lines[~np.isnan(quoted[:, :, 0])] = demargined(flat, method)
    keys = np.array(
        [
            [bookmaker_key(q.bookmaker) for q in quotes] + [""] * (quoted.shape[1] - len(quotes))
            for quotes in odds
        ],
        dtype=str,
    ).reshape(quoted.shape[:2])
    by_link = {
        ENSEMBLE: lambda: np.array(served, dtype=np.float64),
        CONSENSUS: lambda: consensus_of(lines),
    }
    return [
        by_link[link]() if link in by_link else _bookmaker_line(lines, np.equal(keys, link))
        for link in links
    ]


def _bookmaker_line(
    lines: NDArray[np.float64], quoted_by: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """Per match, the line of its first quote ``quoted_by`` marks; NaN where none is."""
    first = np.argmax(quoted_by, axis=1)
    line = lines[np.arange(len(lines)), first]
    found = np.asarray(quoted_by.any(axis=1), dtype=np.bool_)
    return np.where(found[:, None], line, np.nan)


def _quote_array(allowed: Sequence[Sequence[QuotedOdds]]) -> NDArray[np.float64]:
    """``prices[match, quote, outcome]`` of each match's quotes, NaN-padded to the longest."""
    width = max(1, *(len(quotes) for quotes in allowed))
    return np.array(
        [
            [(q.home, q.draw, q.away) for q in quotes] + [_NOT_QUOTED] * (width - len(quotes))
            for quotes in allowed
        ],
        dtype=np.float64,
    )


_NOT_QUOTED = (math.nan, math.nan, math.nan)


def _commission_array(
    allowed: Sequence[Sequence[QuotedOdds]], commissions: tuple[tuple[str, float], ...]
) -> NDArray[np.float64] | None:
    """``commission[match, quote]`` laid out as :func:`_quote_array`; None: none applies."""
    if not commissions:
        return None
    rate = dict(commissions)
    width = max(1, *(len(quotes) for quotes in allowed))
    return np.array(
        [
            [rate.get(bookmaker_key(q.bookmaker), 0.0) for q in quotes]
            + [0.0] * (width - len(quotes))
            for quotes in allowed
        ],
        dtype=np.float64,
    )


def _outcome_values(
    probabilities: Sequence[float | None],
    quotes: Sequence[QuotedOdds | None],
    decided: tuple[list[float], list[float | None], list[float], list[bool]],
    terms: ValueTerms,
) -> tuple[OutcomeValue, OutcomeValue, OutcomeValue]:
    """Each outcome at its best ``quotes`` (None: none), with ``decided``'s net price, EV,
    stake fraction and flag."""
    net, ev, fraction, flagged = decided
    values = []
    for index, quote in enumerate(quotes):
        outcome = OUTCOMES[index]
        if quote is None:
            values.append(OutcomeValue(outcome, probabilities[index], *_UNPRICED))
            continue
        stake = None if terms.bankroll is None else money_stake(fraction[index], terms.bankroll)
        price = (quote.home, quote.draw, quote.away)[index]
        values.append(
            OutcomeValue(
                outcome,
                probabilities[index],
                price,
                net[index],
                quote.bookmaker,
                quote.captured_at,
                ev[index],
                fraction[index],
                stake,
                flagged[index],
            )
        )
    return (values[0], values[1], values[2])


# An outcome no allowed bookmaker quoted: no price, nothing staked.
_UNPRICED = (None, None, None, None, None, 0.0, None, False)


@dataclass(frozen=True)
class BestPrices:
    """Per match and outcome, the highest price net of commission and the column of its
    bookmaker (the first on a tie); NaN and -1 where nobody quoted."""

    price: NDArray[np.float64]  # (m, 3), net
    bookmaker: NDArray[np.intp]  # (m, 3)


def best_prices(
    prices: NDArray[np.float64], commission: NDArray[np.float64] | None = None
) -> BestPrices:
    """The best of ``prices[match, bookmaker, outcome]`` (NaN: not quoted), each taken net
    of its bookmaker's ``commission`` (``(m, B)`` or ``(B,)``; None: none), live and in the
    backtest: the one place a commission counts, in the choice, the EV and the stake."""
    if commission is not None:
        prices = net_price(prices, np.asarray(commission)[..., None])
    offered = np.where(np.isnan(prices), -np.inf, prices)
    price = offered.max(axis=1)
    quoted = price > -np.inf
    return BestPrices(
        price=np.where(quoted, price, np.nan),
        bookmaker=np.where(quoted, offered.argmax(axis=1), -1).astype(np.intp),
    )


def exposure_scale(exposure: Number, cap: float) -> Number:
    """The factor that brings a day's stakes, summing to ``exposure``, to at most ``cap``: a
    day's bets are not independent edges (one mistaken belief can price them all)."""
    scale = np.minimum(1.0, cap / np.maximum(exposure, cap))
    if isinstance(exposure, np.ndarray):
        return scale
    return float(scale)
