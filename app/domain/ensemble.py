"""The fitted ensemble: a weight per bookmaker and how odds are read; shared by the refit,
the backtest and predictions, so that what is evaluated is what is served."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.domain.odds import Triple
from app.domain.training import TrainingSet
from app.domain.vocabulary import Method, Phase
from boosting import AdaBoostM2, weighted_vote

ALGORITHM = "adaboost.m2"
# Weights that differ by no more than this are the same fit, computed again.
SAME_WEIGHTS_TOLERANCE = 1e-12
# Probabilities are raised to the calibration exponent from at least this, never from 0.
CALIBRATION_FLOOR = 1e-15


def calibrated(proba: NDArray[np.float64], exponent: float) -> NDArray[np.float64]:
    """p^a, renormalised per row (a = 1 changes nothing)."""
    if exponent == 1.0:
        return proba
    powered = np.power(np.clip(proba, CALIBRATION_FLOOR, 1.0), exponent)
    result: NDArray[np.float64] = powered / powered.sum(axis=1, keepdims=True)
    return result


def mix_few(weighted: Iterable[tuple[float, Triple]], calibration: float) -> Triple:
    """:meth:`Ensemble.predict_proba` for one match's ``(weight, probabilities)`` in pool
    order, the same steps with plain floats (numpy's cost per call would dominate)."""
    total = home = draw = away = 0.0
    for weight, probabilities in weighted:
        total += weight
        home += weight * probabilities[0]
        draw += weight * probabilities[1]
        away += weight * probabilities[2]
    home, draw, away = home / total, draw / total, away / total
    sums = home + draw + away
    if sums > 0:
        home, draw, away = home / sums, draw / sums, away / sums
    else:
        home = draw = away = 1.0 / 3
    if calibration == 1.0:
        return (home, draw, away)
    home, draw, away = (
        min(max(p, CALIBRATION_FLOOR), 1.0) ** calibration for p in (home, draw, away)
    )
    powered = home + draw + away
    return (home / powered, draw / powered, away / powered)


@dataclass(frozen=True)
class Ensemble:
    """What a model version serves: a weight per bookmaker and how odds are read."""

    bookmakers: tuple[str, ...]
    weights: NDArray[np.float64]
    method: Method
    phase: Phase
    rounds: int
    version: int | None = None
    fitted_at: dt.datetime | None = None
    algorithm: str = ALGORITHM
    selection_counts: tuple[int, ...] = ()  # rounds that chose each bookmaker
    calibration: float = 1.0  # exponent a of p ∝ p^a applied to the mix; 1 = none

    def predict_proba(
        self, H: NDArray[np.float64], *, check_input: bool = True
    ) -> NDArray[np.float64]:
        """Probabilities for matches laid out over this ensemble's bookmakers (NaN: absent)."""
        return calibrated(weighted_vote(H, self.weights, check_input=check_input), self.calibration)

    def same_mix_as(self, other: Ensemble) -> bool:
        """Whether both read quotes the same way and mix them alike (within tolerance)."""
        return (
            (self.phase, self.method, self.bookmakers)
            == (other.phase, other.method, other.bookmakers)
            and abs(self.calibration - other.calibration) <= SAME_WEIGHTS_TOLERANCE
            and bool(np.all(np.abs(self.weights - other.weights) <= SAME_WEIGHTS_TOLERANCE))
        )

    @classmethod
    def from_model(
        cls, model: AdaBoostM2, training: TrainingSet, *, calibration: float = 1.0
    ) -> Ensemble:
        return cls(
            bookmakers=training.bookmakers,
            weights=model.hypothesis_weights_.copy(),
            method=training.method,
            phase=training.phase,
            rounds=model.n_rounds,
            selection_counts=tuple(int(c) for c in model.selection_counts_),
            calibration=calibration,
        )
