"""Scoring rules for probabilistic class forecasts, and a paired comparison of two forecasts.

Every score takes integer labels ``y`` (n,) and probabilities ``proba`` (n, K). Each has a
``*_rows`` variant returning the per-row scores whose mean is the score. Probabilities are
clipped to [1e-15, 1] before a logarithm, so no score is NaN or infinite for valid input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import check_labels, check_probabilities

LOG_CLIP = 1e-15
ROUNDING = 1e-12  # per-row differences this small are floating-point noise


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


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Mean of a − b over paired rows, its standard error, and a two-sided p-value.

    The p-value is from Student's t with n − 1 degrees of freedom for the null hypothesis
    "the mean difference is zero" (a paired t-test).
    """

    mean: float
    standard_error: float
    p_value: float
    n: int


def paired_difference(a_rows: ArrayLike, b_rows: ArrayLike) -> PairedDifference:
    """Compare two forecasts scored on the same rows (for example two log-loss row arrays)."""
    a = np.asarray(a_rows, dtype=np.float64)
    b = np.asarray(b_rows, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"a_rows and b_rows must be 1-D and of equal length, got {a.shape}, {b.shape}"
        )
    if a.shape[0] < 2:
        raise ValueError("a paired comparison needs at least 2 rows")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a_rows and b_rows must be finite")
    differences = a - b
    # Two forecasts equal up to rounding (the same mix computed two ways) do not differ.
    differences[np.abs(differences) <= ROUNDING] = 0.0
    n = differences.shape[0]
    mean = float(differences.mean())
    standard_error = float(differences.std(ddof=1) / math.sqrt(n))
    if standard_error == 0.0:
        p_value = 1.0 if mean == 0.0 else 0.0
    else:
        p_value = 2.0 * student_t_sf(abs(mean) / standard_error, n - 1)
    return PairedDifference(mean, standard_error, min(1.0, p_value), n)


def student_t_sf(t: float, degrees_of_freedom: float) -> float:
    """P(T > t) for Student's t, t ≥ 0: ½ I_{ν/(ν+t²)}(ν/2, ½) (regularised incomplete beta)."""
    if t < 0:
        return 1.0 - student_t_sf(-t, degrees_of_freedom)
    nu = float(degrees_of_freedom)
    return 0.5 * regularized_incomplete_beta(nu / 2.0, 0.5, nu / (nu + t * t))


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) by Lentz's continued fraction (Numerical Recipes, 3rd ed., §6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # The continued fraction converges fast for x < (a + 1) / (a + b + 2); use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float, *, tolerance: float = 1e-15) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < tolerance:
            return result
    raise ArithmeticError("incomplete beta continued fraction did not converge")  # pragma: no cover
