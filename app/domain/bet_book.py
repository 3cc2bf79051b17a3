"""The bettor's book summed up: staked, returned, ROI and CLV with 95 % intervals, the same
by bookmaker, competition, month and source, and the bankroll after each settled bet.

Which bets count where:

- *settled* bets (won or lost) make the money figures: staked, returned, profit, ROI and the
  bankroll curve. *Void* bets returned their stake: they are counted, and left out of every
  figure (they would add a stake and its return, nothing else). *Open* bets are counted, and
  their stakes summed apart (``open_stake``: at risk, not yet staked and settled).
- CLV is the mean of the settled bets' CLVs that had a closing line (``clv.n`` of them).
- A stored bet outside the bounds a bet is recorded within (a stake above
  :data:`app.domain.bets.STAKE_MAX`, a return or CLV that is not a finite number: only a bet
  stored before the bound can be one) is counted and left out of every figure, so that one
  such bet cannot make every sum infinite.

The bankroll curve follows the matches: a bet's point is at its match's kickoff (then the
time placed, then its id), not at the moment it was settled, which for an imported history
is one moment for every bet, and which a late close or a corrected result moves.

ROI is a ratio, ``R = Σ profit / Σ stake``; its interval is the delta method's:
``R ± t(0.975, n − 1) · sd(z) / √n`` with ``z_i = (profit_i − R · stake_i) / mean(stake)``,
which is the t interval of the mean of ``R + z_i`` (whose mean is R), so it is computed by
the project's one t interval, :func:`app.domain.evaluation.mean_interval`. With equal stakes
it is the plain t interval of the per-bet return ``profit_i / stake``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
from numpy.typing import ArrayLike

from app.domain.bets import STAKE_MAX, BetStatus
from app.domain.evaluation import MeanInterval, mean_interval

# The source of a bet that followed no flag.
NO_SOURCE = "none"


@dataclass(frozen=True, slots=True)
class BookedBet:
    """What the summary reads of one bet."""

    id: int
    placed_at: dt.datetime
    bookmaker: str
    competition: str
    source: str | None
    status: BetStatus
    stake: float
    profit: float | None
    clv: float | None
    settled_at: dt.datetime | None
    kickoff: dt.datetime


@dataclass(frozen=True, slots=True)
class BookFigures:
    """The figures of some bets (see the module's docstring for which bets count where)."""

    bets: int
    open: int
    settled: int
    void: int
    open_stake: float
    staked: float
    returned: float
    profit: float
    roi: MeanInterval
    clv: MeanInterval


@dataclass(frozen=True, slots=True)
class BookGroup:
    """The figures of the bets sharing one bookmaker, competition, month or source."""

    key: str
    figures: BookFigures


@dataclass(frozen=True, slots=True)
class BankrollPoint:
    """The bankroll just after one settled bet, at its match's kickoff; ``settled_at`` is
    when the bet was settled (last)."""

    bet_id: int
    kickoff: dt.datetime
    settled_at: dt.datetime
    bankroll: float


@dataclass(frozen=True, slots=True)
class BookSummary:
    """The whole book's figures, by bookmaker, competition, month and source, and the
    bankroll curve from ``starting_bankroll``."""

    overall: BookFigures
    by_bookmaker: list[BookGroup]
    by_competition: list[BookGroup]
    by_month: list[BookGroup]
    by_source: list[BookGroup]
    starting_bankroll: float
    bankroll: list[BankrollPoint]
    time_zone: str


def roi_interval(stakes: ArrayLike, profits: ArrayLike) -> MeanInterval:
    """ROI (Σ profit / Σ stake) with its 95 % interval by the delta method (module docstring);
    ``n`` is the number of bets, the bounds None with fewer than 2."""
    stake = np.asarray(stakes, dtype=np.float64)
    profit = np.asarray(profits, dtype=np.float64)
    if stake.shape != profit.shape or stake.ndim != 1:
        raise ValueError("stakes and profits must be 1-D and of equal length")
    if stake.size == 0:
        return MeanInterval(0, None, None, None)
    if not np.all(stake > 0):
        raise ValueError("every stake must be above 0")
    ratio = float(profit.sum() / stake.sum())
    linearised = ratio + (profit - ratio * stake) / stake.mean()
    interval = mean_interval(linearised)
    # The mean of the linearised values is the ratio up to rounding: report the ratio itself.
    return MeanInterval(interval.n, ratio, interval.low, interval.high)


def book_figures(bets: Sequence[BookedBet]) -> BookFigures:
    """The figures of ``bets``."""
    settled = [bet for bet in bets if _is_settled(bet)]
    at_risk = [bet for bet in bets if bet.status is BetStatus.OPEN and _is_in_bounds(bet)]
    stakes = [bet.stake for bet in settled]
    profits = [bet.profit or 0.0 for bet in settled]
    staked, profit = float(sum(stakes)), float(sum(profits))
    return BookFigures(
        bets=len(bets),
        open=sum(1 for bet in bets if bet.status is BetStatus.OPEN),
        settled=len(settled),
        void=sum(1 for bet in bets if bet.status is BetStatus.VOID),
        open_stake=float(sum(bet.stake for bet in at_risk)),
        staked=staked,
        returned=staked + profit,
        profit=profit,
        roi=roi_interval(stakes, profits),
        clv=mean_interval([bet.clv for bet in settled if bet.clv is not None]),
    )


def _is_settled(bet: BookedBet) -> bool:
    return (
        bet.status in (BetStatus.WON, BetStatus.LOST)
        and bet.profit is not None
        and _is_in_bounds(bet)
    )


def _is_in_bounds(bet: BookedBet) -> bool:
    """Whether the bet's stake, profit and CLV are within what a bet is recorded with."""
    return (
        math.isfinite(bet.stake)
        and 0 < bet.stake <= STAKE_MAX
        and all(math.isfinite(value) for value in (bet.profit, bet.clv) if value is not None)
    )


def out_of_bounds(bets: Sequence[BookedBet]) -> list[int]:
    """The ids of the bets left out of every figure (module docstring)."""
    return [bet.id for bet in bets if not _is_in_bounds(bet)]


def month_of(moment: dt.datetime, zone: ZoneInfo) -> str:
    """``YYYY-MM`` of ``moment`` in ``zone``."""
    return moment.astimezone(zone).strftime("%Y-%m")


def groups(bets: Sequence[BookedBet], key: Callable[[BookedBet], str]) -> list[BookGroup]:
    """The figures of each group of ``bets`` sharing ``key``, by key."""
    grouped: dict[str, list[BookedBet]] = defaultdict(list)
    for bet in bets:
        grouped[key(bet)].append(bet)
    return [BookGroup(name, book_figures(grouped[name])) for name in sorted(grouped)]


def bankroll_curve(bets: Sequence[BookedBet], starting_bankroll: float) -> list[BankrollPoint]:
    """The bankroll after each settled bet, in the order of their matches' kickoffs (then
    the time placed, then id)."""
    settled = sorted(
        (bet for bet in bets if _is_settled(bet) and bet.settled_at is not None),
        key=lambda bet: (bet.kickoff, bet.placed_at, bet.id),
    )
    bankroll = np.cumsum([bet.profit or 0.0 for bet in settled]) + starting_bankroll
    return [
        BankrollPoint(bet.id, bet.kickoff, bet.settled_at, float(value))  # type: ignore[arg-type]
        for bet, value in zip(settled, bankroll.tolist(), strict=True)
    ]


def summarise_book(
    bets: Sequence[BookedBet], *, starting_bankroll: float = 0.0, time_zone: str = "UTC"
) -> BookSummary:
    """The book's summary; months are of the time placed, in ``time_zone``."""
    zone = ZoneInfo(time_zone)
    return BookSummary(
        overall=book_figures(bets),
        by_bookmaker=groups(bets, lambda bet: bet.bookmaker),
        by_competition=groups(bets, lambda bet: bet.competition),
        by_month=groups(bets, lambda bet: month_of(bet.placed_at, zone)),
        by_source=groups(bets, lambda bet: bet.source or NO_SOURCE),
        starting_bankroll=starting_bankroll,
        bankroll=bankroll_curve(bets, starting_bankroll),
        time_zone=time_zone,
    )
