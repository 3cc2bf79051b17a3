"""The figures of value bets in a walk-forward backtest, as typed records: per test season
and pooled, for each probability source and EV threshold, how many bets, their mean
closing-line value and flat-stake return with 95 % intervals, a fractional-Kelly bankroll
with its largest drawdown, and how much of the claimed edge was real (the slope of CLV on
claimed EV)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from app.domain.backtest.folds import Fold
from app.domain.backtest.value_bets import (
    Bets,
    PricedFold,
    ValueBetConfig,
    bankroll_curve,
    bets_of,
    every_outcome_returns,
    joined,
    max_drawdown,
    priced_fold,
)
from app.domain.evaluation import (
    MeanInterval,
    PairedDifference,
    least_squares_slope,
    mean_interval,
    paired_difference,
)
from app.domain.tables import MatchTable, QuoteTable

# Claimed EV bins of the calibration of value: lower edges, the last open above.
EV_BIN_EDGES = (0.0, 0.02, 0.05, 0.10, 0.20)
CURVE_DIGITS = 6


@dataclass(frozen=True)
class Bankroll:
    """A fractional-Kelly bankroll from 1: its value after each kickoff time with bets,
    its end, and its largest peak-to-trough fall (a share of the peak)."""

    curve: tuple[float, ...]
    final: float
    max_drawdown: float

    def to_json(self) -> dict[str, object]:
        return {
            "final": self.final,
            "max_drawdown": self.max_drawdown,
            "curve": [round(value, CURVE_DIGITS) for value in self.curve],
        }


@dataclass(frozen=True)
class ValueRule:
    """One source at one threshold: its bets and what they were worth. ``clv`` and ``slope``
    (of CLV on claimed EV; 1: every claimed edge real) are over the bets with a closing line."""

    source: str
    threshold: float
    bets: int
    clv: MeanInterval
    roi: MeanInterval
    slope: float | None
    bankroll: Bankroll


@dataclass(frozen=True)
class RuleComparison:
    """Two sources at one threshold, on the matches with a closing line: where both bet, how
    often they chose the same outcome and the paired difference of their CLV (first minus
    second); where one bet alone, its CLV against the mean EV it claimed."""

    first: str
    second: str
    threshold: float
    matches: int
    same_outcome: int
    clv_difference: PairedDifference | None
    first_only: MeanInterval
    second_only: MeanInterval
    first_only_claimed_ev: float | None
    second_only_claimed_ev: float | None

    def to_json(self) -> dict[str, object]:
        # Unlike the scores' paired differences, written with its own field names.
        difference = self.clv_difference
        clv_difference = None if difference is None else asdict(difference)
        return {**vars(self), "clv_difference": clv_difference}


@dataclass(frozen=True)
class ClosingDistance:
    """How far a source's probabilities were from the reference's closing line: the mean
    absolute difference per outcome, and the mean signed difference of 1, X and 2."""

    source: str
    matches: int
    mean_absolute: float | None
    bias: tuple[float, float, float] | None


@dataclass(frozen=True)
class ValuePeriod:
    """One test season's value bets, or all of them pooled (``season`` None).
    ``every_outcome`` is the mean return of a stake on each outcome at the best price."""

    season: str | None
    matches: int
    closing_matches: int
    rules: tuple[ValueRule, ...]
    every_outcome: MeanInterval
    comparisons: tuple[RuleComparison, ...]
    closing_distances: tuple[ClosingDistance, ...]

    def rule(self, source: str, threshold: float) -> ValueRule:
        return next(r for r in self.rules if r.source == source and r.threshold == threshold)


@dataclass(frozen=True)
class EvBin:
    """Pooled bets of one source whose claimed EV is in ``[low, high)`` (high None: open)."""

    source: str
    low: float
    high: float | None
    claimed_ev: float
    clv: MeanInterval


@dataclass(frozen=True)
class ValueSummary:
    config: ValueBetConfig
    seasons: tuple[ValuePeriod, ...]
    overall: ValuePeriod
    ev_bins: tuple[EvBin, ...]  # of each source's bets at the lowest threshold


def summarise_value(
    folds: Sequence[Fold], matches: MatchTable, quotes: QuoteTable, config: ValueBetConfig
) -> ValueSummary:
    """Every value-bet figure of the folds, their prices read from the tables they ran on."""
    priced = [priced_fold(fold, matches, quotes, config) for fold in folds]
    rules = [(source, t) for source in config.sources for t in config.thresholds]
    bets = {rule: [bets_of(fold, *rule) for fold in priced] for rule in rules}
    seasons = tuple(
        _period(fold.season, [fold], {rule: bets[rule][index] for rule in rules}, config)
        for index, fold in enumerate(priced)
    )
    pooled = {rule: joined(bets[rule]) for rule in rules}
    lowest = min(config.thresholds)
    ev_bins = tuple(
        ev_bin for source in config.sources for ev_bin in _ev_bins(source, pooled[source, lowest])
    )
    return ValueSummary(config, seasons, _period(None, priced, pooled, config), ev_bins)


def _period(
    season: str | None,
    priced: Sequence[PricedFold],
    bets: dict[tuple[str, float], Bets],
    config: ValueBetConfig,
) -> ValuePeriod:
    rules = tuple(_rule(source, threshold, b, config) for (source, threshold), b in bets.items())
    first, *others = config.sources
    comparisons = tuple(
        _comparison(first, other, threshold, bets[first, threshold], bets[other, threshold])
        for other in others
        for threshold in config.thresholds
    )
    return ValuePeriod(
        season=season,
        matches=sum(len(fold.y) for fold in priced),
        closing_matches=sum(int((~np.isnan(fold.closing[:, 0])).sum()) for fold in priced),
        rules=rules,
        every_outcome=mean_interval(np.concatenate([every_outcome_returns(f) for f in priced])),
        comparisons=comparisons,
        closing_distances=tuple(_distance(source, priced) for source in config.sources),
    )


def _distance(source: str, priced: Sequence[PricedFold]) -> ClosingDistance:
    closing = np.concatenate([fold.closing for fold in priced])
    probabilities = np.concatenate([fold.probabilities[source] for fold in priced])
    both = ~np.isnan(closing[:, 0]) & ~np.isnan(probabilities[:, 0])
    if not both.any():
        return ClosingDistance(source, 0, None, None)
    difference = probabilities[both] - closing[both]
    home, draw, away = difference.mean(axis=0).tolist()
    return ClosingDistance(
        source, int(both.sum()), float(np.abs(difference).mean()), (home, draw, away)
    )


def _rule(source: str, threshold: float, bets: Bets, config: ValueBetConfig) -> ValueRule:
    curve = bankroll_curve(bets, config.kelly_fraction, config.stake_cap)
    closing = bets.has_closing
    return ValueRule(
        source=source,
        threshold=threshold,
        bets=len(bets),
        clv=mean_interval(bets.clv[closing]),
        roi=mean_interval(bets.returns),
        slope=least_squares_slope(bets.claimed_ev[closing], bets.clv[closing]),
        bankroll=Bankroll(
            curve=tuple(curve.tolist()),
            final=float(curve[-1]) if len(curve) else 1.0,
            max_drawdown=max_drawdown(curve),
        ),
    )


def _comparison(first: str, second: str, threshold: float, a: Bets, b: Bets) -> RuleComparison:
    _, a_at, b_at = np.intersect1d(a.match_id, b.match_id, return_indices=True)
    both = a.has_closing[a_at] & b.has_closing[b_at]
    a_at, b_at = a_at[both], b_at[both]
    difference = paired_difference(a.clv[a_at], b.clv[b_at]) if len(a_at) >= 2 else None
    a_only = ~np.isin(a.match_id, b.match_id) & a.has_closing
    b_only = ~np.isin(b.match_id, a.match_id) & b.has_closing
    return RuleComparison(
        first=first,
        second=second,
        threshold=threshold,
        matches=len(a_at),
        same_outcome=int((a.outcome[a_at] == b.outcome[b_at]).sum()),
        clv_difference=difference,
        first_only=mean_interval(a.clv[a_only]),
        second_only=mean_interval(b.clv[b_only]),
        first_only_claimed_ev=mean_interval(a.claimed_ev[a_only]).mean,
        second_only_claimed_ev=mean_interval(b.claimed_ev[b_only]).mean,
    )


def _ev_bins(source: str, bets: Bets) -> list[EvBin]:
    closing = bets.has_closing
    claimed, clv = bets.claimed_ev[closing], bets.clv[closing]
    edges = np.r_[EV_BIN_EDGES, np.inf]
    which = np.digitize(claimed, edges) - 1
    bins = []
    for index in np.unique(which[(which >= 0) & (which < len(EV_BIN_EDGES))]).tolist():
        inside = which == index
        high = float(edges[index + 1])
        bins.append(
            EvBin(
                source=source,
                low=float(edges[index]),
                high=high if np.isfinite(high) else None,
                claimed_ev=float(claimed[inside].mean()),
                clv=mean_interval(clv[inside]),
            )
        )
    return bins
