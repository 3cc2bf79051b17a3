"""Boosting algorithms other than M2, fitted on an M2 fit's window and pool to compare them
with it (``oddsboost backtest --compare-algorithms``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.domain.fitting import Fit, FitError, FitOptions, decay_weights
from app.domain.records import OUTCOMES
from app.domain.rounds import best_rounds, split_by_kickoff
from boosting import (
    SAMME,
    AdaBoostM1,
    AdaBoostMH,
    FixedPool,
    label_scores,
    most_probable_class,
)

# M1 and SAMME see each bookmaker as its most probable outcome; MH sees 2 p − 1 per outcome.
OTHER_ALGORITHMS: dict[str, type[AdaBoostM1 | SAMME | AdaBoostMH]] = {
    "AdaBoost.M1": AdaBoostM1,
    "SAMME": SAMME,
    "AdaBoost.MH": AdaBoostMH,
}


@dataclass(frozen=True)
class AlgorithmFit:
    """Another boosting algorithm fitted on the same window, pool and method as an M2 fit."""

    name: str
    model: AdaBoostM1 | SAMME | AdaBoostMH

    def predict_proba(self, H: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.model.predict_proba(_pool_outputs(self.name, H))


def _pool_outputs(name: str, H: NDArray[np.float64]) -> NDArray[np.float64] | NDArray[np.intp]:
    return label_scores(H) if name == "AdaBoost.MH" else most_probable_class(H)


def fit_algorithm(name: str, fit: Fit, *, end: float, options: FitOptions) -> AlgorithmFit:
    """``name`` over the pool of ``fit``: its rounds chosen on the same held-out part by
    log loss, then refitted on the whole window (as ``fit_ensemble`` does for M2)."""
    estimator = OTHER_ALGORITHMS[name]
    training = fit.training
    fit_part, validation = split_by_kickoff(training, options.validation_fraction)
    weights = decay_weights(fit_part.kickoff, float(fit_part.kickoff.max()), options.half_life_days)
    try:
        model = estimator(max(options.rounds_grid), learner=FixedPool()).fit(
            _pool_outputs(name, fit_part.H), fit_part.y, sample_weight=weights
        )
        if len(model.classes_) != len(OUTCOMES):
            raise FitError(f"the training window of {name} lacks an outcome")
        staged = list(model.staged_predict_proba(_pool_outputs(name, validation.H)))
        rounds, _ = best_rounds(options.rounds_grid, validation.y, staged)
        final = estimator(rounds, learner=FixedPool()).fit(
            _pool_outputs(name, training.H),
            training.y,
            sample_weight=decay_weights(training.kickoff, end, options.half_life_days),
        )
    except ValueError as error:  # e.g. M1: no bookmaker with an error below 1/2
        raise FitError(str(error)) from error
    return AlgorithmFit(name, final)
