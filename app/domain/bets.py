"""The bettor's book: the bets a user placed, the prices they typed, and how a bet is settled.

A bet is one outcome of one stored match, at one bookmaker, at the decimal price the user
got, for the stake the bookmaker accepted. It is settled when its match's result is stored:
its return (``stake × price`` if its outcome won, else nothing; a void bet returns its stake)
and its closing-line value against the reference bookmaker's close (the flag ledger's rule,
:func:`app.domain.flags.closing_line`), from the price it was placed at.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from app.domain.defaults import CLOSING_METHOD
from app.domain.flags import ClosingLine
from app.domain.odds import demargin
from app.domain.records import OUTCOME_INDEX
from app.domain.value import closing_line_value

BET_NOTE_MAX_LENGTH = 500
# As typed: "2.5", "5/2", "+150", "-200", "evens".
PRICE_TEXT_MAX_LENGTH = 16
# The lowest price a bookmaker quotes (1/1000; a price at or below 1 pays nothing back, and
# one within a rounding error of 1 would be written back as 1); above the highest, a slip.
MIN_DECIMAL_PRICE = 1.001
MAX_DECIMAL_PRICE = 1001.0
# More than any bettor stakes on one bet; the bound keeps a typing slip (a bankroll's worth of
# zeros) out of the book's sums: at most STAKE_MAX × MAX_DECIMAL_PRICE (about 1e12) comes back
# from one bet, so no sum of stored bets overflows.
STAKE_MAX = 1e9


def stake_problem(stake: float) -> str | None:
    """What is wrong with ``stake``, or None: a stake is a finite amount above 0 and at most
    :data:`STAKE_MAX` (the one rule of the API, the command line and a CSV import)."""
    if not (math.isfinite(stake) and 0 < stake <= STAKE_MAX):
        return f"stake {stake:.10g} must be above 0 and at most {STAKE_MAX:.10g}"
    return None


class BetStatus(StrEnum):
    """Where a bet stands: waiting for its result, won, lost, or void (its stake returned,
    left out of the ROI and CLV)."""

    OPEN = "open"
    WON = "won"
    LOST = "lost"
    VOID = "void"


class BetChangeKind(StrEnum):
    """What happened to a bet in its audit trail: every change is appended, never edited."""

    CREATED = "created"
    CORRECTED = "corrected"
    DELETED = "deleted"


class BetChannel(StrEnum):
    """How a change reached the book."""

    API = "api"
    CLI = "cli"
    IMPORT = "import"
    MERGE = "merge"  # a team merge folded its match into the twin it moved to


class PriceFormatError(ValueError):
    """A price typed in no format we read, or outside the prices a bookmaker offers."""


_FRACTIONAL = re.compile(r"^(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)$")
_AMERICAN = re.compile(r"^([+-])(\d+(?:\.\d+)?)$")
_DECIMAL = re.compile(r"^\d+(?:\.\d+)?$")
_EVENS = frozenset({"evens", "evs", "even"})


def decimal_price(text: str) -> float:
    """The decimal price of ``text``: decimal (``2.5``), fractional (``5/2`` → 3.5), American
    (``+150`` → 2.5, ``-200`` → 1.5) or ``evens`` (2.0). A bare number is decimal; an
    American price always carries its sign."""
    typed = text.strip().lower()
    price = _parsed(typed)
    if not (math.isfinite(price) and MIN_DECIMAL_PRICE <= price <= MAX_DECIMAL_PRICE):
        raise PriceFormatError(
            f"price {text.strip()!r} is {price:g} as a decimal; it must be from "
            f"{MIN_DECIMAL_PRICE:g} to {MAX_DECIMAL_PRICE:g}"
        )
    return price


def _parsed(typed: str) -> float:
    if typed in _EVENS:
        return 2.0
    if _DECIMAL.match(typed):
        return float(typed)
    if fraction := _FRACTIONAL.match(typed):
        numerator, denominator = (float(part) for part in fraction.groups())
        if denominator == 0:
            raise PriceFormatError(f"price {typed!r} divides by zero")
        return 1.0 + numerator / denominator
    if american := _AMERICAN.match(typed):
        sign, amount = american.group(1), float(american.group(2))
        if amount < 100:
            raise PriceFormatError(f"American price {typed!r} must be at least 100 either way")
        return 1.0 + (amount / 100.0 if sign == "+" else 100.0 / amount)
    raise PriceFormatError(
        f"price {typed!r} is not decimal (2.5), fractional (5/2), American (+150, -200) or evens"
    )


@dataclass(frozen=True, slots=True)
class BetToSettle:
    """An open or settled bet of a match whose result is stored (void bets are not settled)."""

    id: int
    outcome: str
    price: float
    stake: float


@dataclass(frozen=True, slots=True)
class BetSettlement:
    """How a bet fared: won or lost, what it returned (stake included) and its profit; with
    a closing line, the close's probability of its outcome and its CLV."""

    id: int
    status: BetStatus
    result: str
    returned: float
    profit: float
    close_price: float | None
    closing_probability: float | None
    clv: float | None


def settle_bets(
    bets: Sequence[BetToSettle], result: str, close: ClosingLine | None
) -> list[BetSettlement]:
    """Each bet of one match settled against ``result`` and the reference's ``close``:
    ``CLV = price × p_close(outcome) − 1``, the close de-margined by the closing method, as
    the flag ledger and the track record measure it."""
    if not bets:
        return []
    price = np.array([bet.price for bet in bets], dtype=np.float64)
    stake = np.array([bet.stake for bet in bets], dtype=np.float64)
    won = np.array([bet.outcome == result for bet in bets])
    returned = np.where(won, stake * price, 0.0)
    index = [OUTCOME_INDEX[bet.outcome] for bet in bets]
    if close is None:
        close_prices: list[float | None] = [None] * len(bets)
        probabilities: list[float | None] = [None] * len(bets)
        clvs: list[float | None] = [None] * len(bets)
    else:
        line = demargin([close.prices], CLOSING_METHOD).probabilities[0][index]
        close_prices = [close.prices[i] for i in index]
        probabilities = line.tolist()
        clvs = closing_line_value(price, line).tolist()
    return [
        BetSettlement(
            id=bet.id,
            status=BetStatus.WON if is_won else BetStatus.LOST,
            result=result,
            returned=back,
            profit=back - bet.stake,
            close_price=close_price,
            closing_probability=probability,
            clv=clv,
        )
        for bet, is_won, back, close_price, probability, clv in zip(
            bets, won.tolist(), returned.tolist(), close_prices, probabilities, clvs, strict=True
        )
    ]


@dataclass(frozen=True, slots=True)
class BetDraft:
    """A bet as the user gave it (from the API, the command line or a CSV row), before it is
    checked against the stored matches and flags. ``price_text`` is kept as typed; its
    decimal value comes from :func:`decimal_price`."""

    match_id: int
    outcome: str
    bookmaker: str
    price_text: str
    stake: float
    placed_at: dt.datetime
    flag_id: int | None = None
    note: str | None = None
    void: bool = False
