"""Reliability of a forecast: how often outcomes happened against how probable it said they were."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.domain.records import OUTCOMES


@dataclass(frozen=True)
class ReliabilityCurve:
    """For one outcome: mean predicted probability and observed frequency per filled bin."""

    predicted: list[float]
    observed: list[float]
    count: list[float]


def reliability(
    y: NDArray[np.intp], proba: NDArray[np.float64], bins: int = 10
) -> list[ReliabilityCurve]:
    """Per outcome, in equal-width bins of predicted probability."""
    curves = []
    for outcome in range(len(OUTCOMES)):
        predicted = proba[:, outcome]
        observed = (y == outcome).astype(np.float64)
        index = np.minimum((predicted * bins).astype(int), bins - 1)
        counts = np.bincount(index, minlength=bins)
        filled = counts > 0
        mean_predicted = (
            np.bincount(index, weights=predicted, minlength=bins)[filled] / counts[filled]
        )
        frequency = np.bincount(index, weights=observed, minlength=bins)[filled] / counts[filled]
        curves.append(
            ReliabilityCurve(
                predicted=mean_predicted.tolist(),
                observed=frequency.tolist(),
                count=counts[filled].astype(float).tolist(),
            )
        )
    return curves
