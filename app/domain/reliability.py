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


def bin_of(probability: NDArray[np.float64], bins: int) -> NDArray[np.intp]:
    """Each probability's equal-width bin (1 falls in the last)."""
    return np.minimum((probability * bins).astype(np.intp), bins - 1)


def curve_of_bins(
    count: NDArray[np.float64], predicted: NDArray[np.float64], observed: NDArray[np.float64]
) -> ReliabilityCurve:
    """The curve of bins given by their counts, summed probabilities and outcomes that
    happened (the empty ones left out)."""
    filled = count > 0
    return ReliabilityCurve(
        predicted=(predicted[filled] / count[filled]).tolist(),
        observed=(observed[filled] / count[filled]).tolist(),
        count=count[filled].tolist(),
    )


def reliability(
    y: NDArray[np.intp], proba: NDArray[np.float64], bins: int = 10
) -> list[ReliabilityCurve]:
    """Per outcome, in equal-width bins of predicted probability."""
    curves = []
    for outcome in range(len(OUTCOMES)):
        predicted = proba[:, outcome]
        index = bin_of(predicted, bins)
        happened = (y == outcome).astype(np.float64)
        count, summed, hits = (
            np.bincount(index, weights=weights, minlength=bins).astype(np.float64)
            for weights in (None, predicted, happened)
        )
        curves.append(curve_of_bins(count, summed, hits))
    return curves
