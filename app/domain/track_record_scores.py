"""How the track record's served predictions and their value bets fared: the figures of
``GET /performance``, made from sums by :mod:`app.domain.track_record_aggregates`.

The best bookmaker is, among those that quoted ``BEST_COVERAGE`` of the window's matches,
the one of lowest log loss on them, chosen on the window it is scored on (a strong bar).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from app.domain.backtest.folds import CLOSING_CODE
from app.domain.evaluation import MeanInterval
from app.domain.track_record import ServedPrediction
from app.domain.vocabulary import Method

# A bookmaker must have quoted this share of the window's matches to be the best one.
BEST_COVERAGE = 0.9
# The closing line CLV is measured against: this bookmaker's, de-margined by power.
CLOSING_REFERENCE = CLOSING_CODE
CLOSING_METHOD = Method.POWER


@dataclass(frozen=True, slots=True)
class SettledEntry:
    """A logged prediction of a settled match, with the match's current result."""

    match_id: int
    kickoff: dt.datetime
    result: str  # 1, X or 2
    served: ServedPrediction


@dataclass(frozen=True, slots=True)
class ForecastScores:
    """Mean scores of a forecast on ``matches`` matches (None without any)."""

    matches: int
    log_loss: float | None
    brier: float | None
    rps: float | None
    accuracy: float | None


@dataclass(frozen=True, slots=True)
class Difference:
    """The mean log loss of the served prediction minus another forecast's on the same
    matches, its 95 % t interval (from 2 matches) and the paired t-test's p-value."""

    matches: int
    mean: float | None
    low: float | None
    high: float | None
    p_value: float | None


@dataclass(frozen=True, slots=True)
class BestBookmaker:
    """The window's best bookmaker, and the served prediction on the matches it quoted."""

    code: str | None
    coverage: float | None  # the share of the window's matches it quoted
    scores: ForecastScores
    served: ForecastScores
    served_minus_best: Difference


@dataclass(frozen=True, slots=True)
class BankrollPoint:
    kickoff: dt.datetime
    bankroll: float


@dataclass(frozen=True, slots=True)
class ValueBetRecord:
    """The logged value bets: their CLV (where the reference bookmaker quoted), the flat
    return of a stake of 1 on each, and the bankroll from 1 staked by Kelly's terms."""

    bets: int
    bets_with_closing: int
    clv: MeanInterval
    roi: MeanInterval
    profit: float
    bankroll: tuple[BankrollPoint, ...]


@dataclass(frozen=True, slots=True)
class DayBucket:
    """One UTC day of kickoffs; the window's best bookmaker on the day's matches it quoted
    (None: none of them, or no best)."""

    day: dt.date
    matches: int
    served_log_loss: float
    consensus_log_loss: float
    best_bookmaker_matches: int
    best_bookmaker_log_loss: float | None
    bets: int
    profit: float  # of a stake of 1 on each bet


@dataclass(frozen=True, slots=True)
class Performance:
    matches: int
    served: ForecastScores
    consensus: ForecastScores
    served_minus_consensus: Difference
    best_bookmaker: BestBookmaker
    value_bets: ValueBetRecord
    days: tuple[DayBucket, ...]
