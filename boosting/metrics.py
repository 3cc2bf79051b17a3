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
    """Compute the log loss of each row, −ln p(y_i) (natural log; Good 1952).

    Probabilities are clipped to [1e-15, 1] first, so a zero on the outcome costs
    −ln 1e-15 ≈ 34.5, not infinity.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    ndarray of shape (n_samples,)
        Values in [0, 34.6], 0 for a sure and right forecast.

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.
    """
    labels, probabilities = _inputs(y, proba)
    chosen = probabilities[np.arange(labels.shape[0]), labels]
    result: NDArray[np.float64] = -np.log(np.clip(chosen, LOG_CLIP, 1.0))
    return result


def brier_score_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """Compute the Brier score of each row, Σ_k (p_k − o_k)², summed over the classes.

    Brier (1950), "Verification of forecasts expressed in terms of probability", Monthly
    Weather Review 78: o_k is 1 for the outcome's class and 0 for the others.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    ndarray of shape (n_samples,)
        Values in [0, 2]: 0 for a sure and right forecast, 2 for a sure and wrong one.

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.
    """
    labels, probabilities = _inputs(y, proba)
    result: NDArray[np.float64] = (
        (probabilities - _one_hot(labels, probabilities.shape[1])) ** 2
    ).sum(axis=1)
    return result


def ranked_probability_score_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """Compute the ranked probability score of each row, for ordered classes.

    RPS = 1/(K−1) Σ_{k=1}^{K−1} (Σ_{j≤k} p_j − Σ_{j≤k} o_j)² (Epstein 1969, "A scoring
    system for probability forecasts of ranked categories", J. Appl. Meteor. 8; in this
    normalised form eq. 1 of Constantinou & Fenton 2012). The classes are ranked in index
    order, 0 < 1 < … < K − 1, so a forecast near the outcome's rank scores better than
    one far from it.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    ndarray of shape (n_samples,)
        Values in [0, 1]: 0 for a sure and right forecast, 1 for a sure one at the far end.

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.
    """
    labels, probabilities = _inputs(y, proba)
    n_classes = probabilities.shape[1]
    if n_classes < 2:
        raise ValueError("RPS needs at least 2 classes")
    gaps = np.cumsum(probabilities - _one_hot(labels, n_classes), axis=1)[:, :-1]
    result: NDArray[np.float64] = (gaps**2).sum(axis=1) / (n_classes - 1)
    return result


def accuracy_rows(y: ArrayLike, proba: ArrayLike) -> NDArray[np.float64]:
    """Tell, for each row, whether the most probable class is the outcome.

    The most probable class is argmax_k p_k, the lowest index on ties.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    ndarray of shape (n_samples,)
        1.0 where the most probable class is the outcome, 0.0 elsewhere.

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.
    """
    labels, probabilities = _inputs(y, proba)
    result: NDArray[np.float64] = (np.argmax(probabilities, axis=1) == labels).astype(np.float64)
    return result


def log_loss(y: ArrayLike, proba: ArrayLike) -> float:
    """Compute the mean log loss, 1/n Σ_i −ln p_i(y_i) (natural log; Good 1952).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    float
        The mean of the rows' log losses, in [0, 34.6].

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.

    See Also
    --------
    log_loss_rows : the score of each row.
    """
    return float(log_loss_rows(y, proba).mean())


def brier_score(y: ArrayLike, proba: ArrayLike) -> float:
    """Compute the mean Brier score, 1/n Σ_i Σ_k (p_ik − o_ik)² (Brier 1950).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    float
        The mean of the rows' Brier scores, in [0, 2].

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.

    See Also
    --------
    brier_score_rows : the score of each row.
    """
    return float(brier_score_rows(y, proba).mean())


def ranked_probability_score(y: ArrayLike, proba: ArrayLike) -> float:
    """Compute the mean ranked probability score for ordered classes (Epstein 1969).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    float
        The mean of the rows' RPS, in [0, 1].

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.

    See Also
    --------
    ranked_probability_score_rows : the score of each row.
    """
    return float(ranked_probability_score_rows(y, proba).mean())


def accuracy(y: ArrayLike, proba: ArrayLike) -> float:
    """Compute the share of rows whose most probable class is the outcome.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer class labels in [0, n_classes).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    float
        A share in [0, 1].

    Raises
    ------
    ValueError
        If there are no rows, ``proba`` is not finite, outside [0, 1] or has rows not
        summing to 1, or a label is out of range.

    See Also
    --------
    accuracy_rows : the score of each row.
    """
    return float(accuracy_rows(y, proba).mean())


def hamming_loss(Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
    """Compute the share of (sample, label) pairs predicted wrong.

    1/(m K) Σ_i |h(x_i) △ Y_i| (Schapire & Singer 1999), the loss AdaBoost.MH minimises.

    Parameters
    ----------
    Y_true : array-like of shape (n_samples, n_labels)
        The true indicator matrix, of 0 and 1.
    Y_pred : array-like of shape (n_samples, n_labels)
        The predicted indicator matrix, of 0 and 1.

    Returns
    -------
    float
        A share in [0, 1].

    Raises
    ------
    ValueError
        If the matrices are not 2-D, differ in shape, are empty, or hold a value other
        than 0 and 1.
    """
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


def cross_entropy(targets: ArrayLike, proba: ArrayLike) -> float:
    """Compute the mean cross-entropy to target distributions, 1/n Σ_i −Σ_k q_i(k) ln p_i(k).

    With one-hot targets it is the log loss. Probabilities are clipped to [1e-15, 1] before
    the logarithm, as for `log_loss`.

    Parameters
    ----------
    targets : array-like of shape (n_samples, n_classes)
        Target probabilities q_i in [0, 1], each row summing to 1 (within 1e-6).
    proba : array-like of shape (n_samples, n_classes)
        Forecast probabilities in [0, 1], each row summing to 1 (within 1e-6).

    Returns
    -------
    float
        The mean cross-entropy, at least the mean entropy of the targets.

    Raises
    ------
    ValueError
        If there are no rows, either array is not finite, outside [0, 1], has rows not
        summing to 1, or the shapes differ.
    """
    probabilities = check_probabilities(proba)
    if probabilities.shape[0] == 0:
        raise ValueError("no rows to score")
    wanted = check_probabilities(targets, probabilities.shape[1], name="targets")
    if wanted.shape != probabilities.shape:
        raise ValueError(
            f"targets must have the shape of proba {probabilities.shape}, got {wanted.shape}"
        )
    logs = np.log(np.clip(probabilities, LOG_CLIP, 1.0))
    return float(-(wanted * logs).sum(axis=1).mean())
