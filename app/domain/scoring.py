"""The scores of a forecast of 1, X, 2 against the outcomes (lower is better but accuracy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from boosting import accuracy, brier_score, log_loss, ranked_probability_score


@dataclass(frozen=True, slots=True)
class Scores:
    log_loss: float
    brier: float  # summed over the three outcomes
    rps: float  # ranked probability score, outcomes ordered 1 < X < 2
    accuracy: float


def scores(y: NDArray[np.intp], proba: NDArray[np.float64]) -> Scores:
    return Scores(
        log_loss=log_loss(y, proba),
        brier=brier_score(y, proba),
        rps=ranked_probability_score(y, proba),
        accuracy=accuracy(y, proba),
    )
