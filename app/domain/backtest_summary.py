"""The figures of a walk-forward backtest: every forecast's scores and the paired differences
that matter, per test season and over all of them, as typed records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.domain.backtest.algorithms import OTHER_ALGORITHMS
from app.domain.backtest.config import BacktestConfig, Variant
from app.domain.backtest.folds import BEST, CONSENSUS, ENSEMBLE, PINNACLE_CLOSING, Fold
from app.domain.evaluation import PairedDifference, paired_difference
from app.domain.scoring import Scores, scores
from app.domain.vocabulary import Method
from boosting import log_loss_rows


@dataclass(frozen=True, slots=True)
class ScoredForecast:
    scores: Scores
    rows: int

    def to_json(self) -> dict[str, float]:
        # The report has always written these row counts as floats.
        return {**asdict(self.scores), "rows": float(self.rows)}


def score_table(
    y: NDArray[np.intp], forecasts: dict[str, NDArray[np.float64]]
) -> dict[str, ScoredForecast]:
    return {name: ScoredForecast(scores(y, proba), len(y)) for name, proba in forecasts.items()}


def paired(y: NDArray[np.intp], a: NDArray[np.float64], b: NDArray[np.float64]) -> PairedDifference:
    """Log loss of a minus b on the same rows: mean, standard error, two-sided p-value."""
    return paired_difference(log_loss_rows(y, a), log_loss_rows(y, b))


def report_json(value: Any) -> object:
    """``json.dumps``'s ``default`` for report.json: a record as its fields by name, or as
    its own ``to_json`` says."""
    if isinstance(value, PairedDifference):
        return {
            "mean": value.mean,
            "standard_error": value.standard_error,
            "p_value": value.p_value,
            "rows": float(value.n),  # as the report has always written it
        }
    if hasattr(value, "to_json"):
        return value.to_json()
    return {field.name: getattr(value, field.name) for field in fields(value)}


@dataclass(frozen=True)
class ClosingComparison:
    """Scores on the rows whose file has Pinnacle's closing odds (none before 2012/13)."""

    rows: int
    scores: dict[str, ScoredForecast]  # empty when no row has them


def closing_comparison(folds: Sequence[Fold]) -> ClosingComparison:
    y = np.concatenate([fold.y[fold.closing_rows] for fold in folds])
    forecasts = {
        name: np.concatenate([fold.forecasts[name][fold.closing_rows] for fold in folds])
        for name in (ENSEMBLE, CONSENSUS)
    }
    forecasts[PINNACLE_CLOSING] = np.concatenate([fold.closing for fold in folds])
    return ClosingComparison(len(y), score_table(y, forecasts) if len(y) else {})


@dataclass(frozen=True)
class AlgorithmSeason:
    """Another boosting algorithm in one test season."""

    rounds: dict[str, int]  # by competition ("" when one pool for all)
    ensemble_vs: PairedDifference  # M2 minus the algorithm


@dataclass(frozen=True)
class SeasonSummary:
    """One test season: what was fitted, on what, and how every forecast scored."""

    season: str
    train_seasons: dict[str, tuple[str, ...]]  # by competition
    train_matches: int
    rows: int
    dropped: dict[str, int]
    notes: tuple[str, ...]
    compared: tuple[str, ...]
    best_bookmaker: str
    best_used: dict[str, int]
    base_rates: tuple[float, float, float]
    rounds: dict[str, int]  # by competition, as are the next three
    methods: dict[str, Method]
    calibration: dict[str, float]
    weights: dict[str, dict[str, float]]
    scores: dict[str, ScoredForecast]
    ensemble_vs_consensus: PairedDifference
    ensemble_vs_best: PairedDifference
    algorithms: dict[str, AlgorithmSeason]
    closing: ClosingComparison


@dataclass(frozen=True)
class OverallSummary:
    """All test seasons' shared rows together."""

    rows: int
    scores: dict[str, ScoredForecast]
    ensemble_vs_consensus: PairedDifference
    ensemble_vs_best: PairedDifference
    algorithms: dict[str, PairedDifference]  # M2 minus each algorithm fitted every season
    closing: ClosingComparison


@dataclass(frozen=True)
class BacktestSummary:
    seasons: tuple[SeasonSummary, ...]
    overall: OverallSummary


def overall(folds: Sequence[Fold]) -> tuple[NDArray[np.intp], dict[str, NDArray[np.float64]]]:
    """All folds' shared rows together, for the forecasts every fold has."""
    names = [name for name in folds[0].forecasts if all(name in fold.forecasts for fold in folds)]
    y = np.concatenate([fold.y for fold in folds])
    return y, {name: np.concatenate([fold.forecasts[name] for fold in folds]) for name in names}


def summarise(folds: Sequence[Fold]) -> BacktestSummary:
    """Every figure of the evaluation."""
    return BacktestSummary(tuple(_season(fold) for fold in folds), _overall(folds))


def _season(fold: Fold) -> SeasonSummary:
    y, forecasts = fold.y, fold.forecasts
    ensembles = fold.ensembles
    return SeasonSummary(
        season=fold.season,
        train_seasons=fold.train_seasons,
        train_matches=len(fold.train_match_ids),
        rows=len(y),
        dropped=fold.dropped,
        notes=tuple(fold.notes),
        compared=fold.compared,
        best_bookmaker=fold.best_bookmaker,
        best_used=fold.best_used,
        base_rates=fold.base_rates,
        rounds={c: e.rounds for c, e in ensembles.items()},
        methods={c: e.method for c, e in ensembles.items()},
        calibration={c: e.calibration for c, e in ensembles.items()},
        weights={
            c: dict(zip(e.bookmakers, e.weights.tolist(), strict=True))
            for c, e in ensembles.items()
        },
        scores=score_table(y, forecasts),
        ensemble_vs_consensus=paired(y, forecasts[ENSEMBLE], forecasts[CONSENSUS]),
        ensemble_vs_best=paired(y, forecasts[ENSEMBLE], forecasts[BEST]),
        algorithms={
            name: AlgorithmSeason(rounds, paired(y, forecasts[ENSEMBLE], forecasts[name]))
            for name, rounds in fold.algorithm_rounds.items()
        },
        closing=closing_comparison([fold]),
    )


def _overall(folds: Sequence[Fold]) -> OverallSummary:
    y, forecasts = overall(folds)
    return OverallSummary(
        rows=len(y),
        scores=score_table(y, forecasts),
        ensemble_vs_consensus=paired(y, forecasts[ENSEMBLE], forecasts[CONSENSUS]),
        ensemble_vs_best=paired(y, forecasts[ENSEMBLE], forecasts[BEST]),
        algorithms={
            name: paired(y, forecasts[ENSEMBLE], forecasts[name])
            for name in OTHER_ALGORITHMS
            if name in forecasts
        },
        closing=closing_comparison(folds),
    )


@dataclass(frozen=True)
class VariantSummary:
    """An option beyond plain M2 against the baseline and the consensus, on the same rows."""

    options: dict[str, float | bool | str | list[str]]  # what the variant changed
    overall: ScoredForecast  # of its ensemble
    seasons: dict[str, float]  # its ensemble's log loss by test season
    versus_baseline: PairedDifference  # the variant minus plain M2
    versus_consensus: PairedDifference


def variant_summary(
    variant: Variant, config: BacktestConfig, baseline: Sequence[Fold], folds: Sequence[Fold]
) -> VariantSummary:
    """The variant's folds against the baseline's; both were scored on the same rows."""
    y, baseline_forecasts = overall(baseline)
    variant_y, forecasts = overall(folds)
    if not np.array_equal(variant_y, y):  # pragma: no cover - the rows do not depend on it
        raise AssertionError("a variant was scored on other rows than the baseline")
    return VariantSummary(
        options=variant.changes(config),
        overall=ScoredForecast(scores(y, forecasts[ENSEMBLE]), len(y)),
        seasons={f.season: scores(f.y, f.forecasts[ENSEMBLE]).log_loss for f in folds},
        versus_baseline=paired(y, forecasts[ENSEMBLE], baseline_forecasts[ENSEMBLE]),
        versus_consensus=paired(y, forecasts[ENSEMBLE], baseline_forecasts[CONSENSUS]),
    )
