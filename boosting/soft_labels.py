"""Soft labels: a sample whose label is a probability vector over the classes.

A sample i with target q_i (a probability vector over the K classes) and weight w_i is
spread over one labelled row (i, c) per class c with q_i(c) > 0, weighted w_i q_i(c). An
algorithm that accepts sample weights then fits the soft labels unchanged: for AdaBoost.M2
the initial distribution over mislabel triples (i, c, y), y ≠ c, is
D_1(i, c, y) ∝ w_i q_i(c) / (K − 1), and each round's pseudo-loss is the expectation of the
hard-label one over the targets. Classes with a zero target (and samples of weight zero)
give no row, so one-hot targets give back exactly the hard-labelled samples, in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import check_probabilities, check_sample_weight


@dataclass(frozen=True, slots=True)
class LabelledRows:
    """The hard-labelled rows of soft-labelled samples, ordered by sample, then class."""

    samples: NDArray[np.intp]  # the sample each row comes from
    labels: NDArray[np.intp]
    weights: NDArray[np.float64]  # w_i q_i(c)


def soft_label_rows(targets: ArrayLike, sample_weight: ArrayLike | None = None) -> LabelledRows:
    """Spread soft-labelled samples over hard-labelled rows, one per class of positive target.

    Parameters
    ----------
    targets : array-like of shape (n_samples, n_classes)
        Each sample's target probabilities over the classes, in [0, 1], each row summing
        to 1 (within 1e-6); a one-hot row is a hard label.
    sample_weight : array-like of shape (n_samples,), optional
        Finite, non-negative, with a positive sum. Default: uniform.

    Returns
    -------
    LabelledRows
        Row (i, c) for every q_i(c) > 0 with w_i > 0, weighted w_i q_i(c) (w_i = 1 when
        no weights are given). Left unnormalised, so that one-hot targets give the very
        weights given, which the estimators then normalise as they always do.

    Raises
    ------
    ValueError
        If ``targets`` is not finite, outside [0, 1] or has rows not summing to 1, or
        ``sample_weight`` is malformed.
    """
    probabilities = check_probabilities(targets, name="targets")
    n_samples = probabilities.shape[0]
    if n_samples == 0:
        raise ValueError("targets has no rows")
    check_sample_weight(sample_weight, n_samples)
    weights = (
        np.ones(n_samples) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    )
    row_weights = weights[:, None] * probabilities
    samples, labels = np.nonzero(row_weights > 0)  # row-major: by sample, then class
    return LabelledRows(
        samples=samples.astype(np.intp),
        labels=labels.astype(np.intp),
        weights=row_weights[samples, labels],
    )
