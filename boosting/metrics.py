"""Scoring rules for probabilistic class forecasts.

Every score takes integer labels ``y`` (n,) and probabilities ``proba`` (n, K). Each has a
``*_rows`` variant returning the per-row scores whose mean is the score. Probabilities are
clipped to [1e-15, 1] before a logarithm, so no score is NaN or infinite for valid input.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import check_labels, check_probabilities

LOG_CLIP = 1e-15


def _inputs(y: ArrayLike, proba: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    probabilities = check_probabilities(proba)
    if probabilities.shape[0] == 0:
        raise ValueError("no rows to score")
    labels = check_labels(y, probabilities.shape[0], probabilities.shape[1])
    return labels, probabilities


def _one_hot(labels: NDArray[np.intp], n_classes: int) -> NDArray[np.float64]:
    outcome = np.zeros((labels.shape[0], n_classes))
    outcome[np.arange(labels.shape[0]), labels] = 1.0
    return outcome


def log_loss_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """−ln p(y_i) per row (natural log)."""
    labels, probabilities = _inputs(y, proba)
    chosen = probabilities[np.arange(labels.shape[0]), labels]
    result: NDArray[np.float64] = -np.log(np.clip(chosen, LOG_CLIP, 1.0))
    return result


def brier_score_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """Σ_k (p_k − o_k)² per row, summed over classes: 0 (perfect) to 2 (sure and wrong)."""
    labels, probabilities = _inputs(y, proba)
    result: NDArray[np.float64] = (
        (probabilities - _one_hot(labels, probabilities.shape[1])) ** 2
    ).sum(axis=1)
    return result


def ranked_probability_score_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """RPS per row for ordered classes (Constantinou & Fenton 2012, eq. 1).

    1/(K−1) Σ_{k=1}^{K−1} (Σ_{j≤k} p_j − Σ_{j≤k} o_j)²: 0 is perfect, 1 is sure and wrong
    at the far end. The classes are ranked in index order, 0 < 1 < … < K − 1.
    """
    labels, probabilities = _inputs(y, proba)
    n_classes = probabilities.shape[1]
    if n_classes < 2:
        raise ValueError("RPS needs at least 2 classes")
    gaps = np.cumsum(probabilities - _one_hot(labels, n_classes), axis=1)[:, :-1]
    result: NDArray[np.float64] = (gaps**2).sum(axis=1) / (n_classes - 1)
    return result


def accuracy_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """1.0 where the most probable class (lowest index on ties) is the outcome, else 0.0."""
    labels, probabilities = _inputs(y, proba)
    result: NDArray[np.float64] = (np.argmax(probabilities, axis=1) == labels).astype(np.float64)
    return result


def log_loss(y: ArrayLike, proba: ArrayLike) -> float:
    return float(log_loss_rows(y, proba).mean())


def brier_score(y: ArrayLike, proba: ArrayLike) -> float:
    return float(brier_score_rows(y, proba).mean())


def ranked_probability_score(y: ArrayLike, proba: ArrayLike) -> float:
    return float(ranked_probability_score_rows(y, proba).mean())


def accuracy(y: ArrayLike, proba: ArrayLike) -> float:
    return float(accuracy_rows(y, proba).mean())


def hamming_loss(Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
    """Share of (sample, label) pairs predicted wrong, for indicator matrices of 0 and 1:
    1/(m K) Σ_i |h(x_i) △ Y_i| (Schapire & Singer 1999), the loss AdaBoost.MH minimises."""
    truth, predicted = np.asarray(Y_true), np.asarray(Y_pred)
    if truth.ndim != 2 or truth.shape != predicted.shape:
        raise ValueError(
            f"Y_true and Y_pred must be indicator matrices of one shape, got {truth.shape} "
            f"and {predicted.shape}"
        )
    if truth.size == 0:
        raise ValueError("no rows to score")
    for name, matrix in (("Y_true", truth), ("Y_pred", predicted)):
        if not np.isin(matrix, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0 and 1")
    return float(np.mean(truth.astype(bool) != predicted.astype(bool)))
