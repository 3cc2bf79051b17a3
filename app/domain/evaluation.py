"""Comparing two forecasts scored on the same rows (the paired t-test) and the t intervals
of means, from the values or from their sums and sums of squares."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

ROUNDING = 1e-12  # per-row differences this small are floating-point noise
CONFIDENCE = 0.95
# The spread left by rounding when every value is the same, relative to the sum of squares.
_SPREAD_NOISE = 1e-12

# Student's t comes from scipy's special functions, imported when first needed: what
# ``scipy.stats.t`` computes with, without the 0.6 s and 50 MB that importing
# ``scipy.stats`` costs every process of the service.


def _t_quantile(probability: float, degrees: int) -> float:
    """The value t with P(T <= t) = ``probability``."""
    from scipy.special import stdtrit

    return float(stdtrit(degrees, probability))


def _t_tail(value: float, degrees: int) -> float:
    """P(T > ``value``)."""
    from scipy.special import stdtr

    return float(stdtr(degrees, -value))


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Mean of a − b over paired rows, its standard error, and the two-sided p-value of
    the paired t-test (n − 1 degrees of freedom) for "the mean difference is zero"."""

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
    return PairedDifference(mean, standard_error, _p_value(n, mean, standard_error), n)


def paired_p_value_of_sums(n: int, total: float, squares: float) -> float:
    """The p-value of :func:`paired_difference` from the sum and sum of squares of ``n`` >= 2
    (already rounded) differences, to within rounding."""
    if n < 2:
        raise ValueError("a paired comparison needs at least 2 rows")
    return _p_value(n, total / n, _standard_error(n, total, squares))


def _p_value(n: int, mean: float, standard_error: float) -> float:
    if standard_error == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    return min(1.0, 2.0 * _t_tail(abs(mean) / standard_error, n - 1))


@dataclass(frozen=True, slots=True)
class MeanInterval:
    """A mean with its two-sided interval ``mean ± t·s/√n`` (n − 1 degrees of freedom).
    ``mean`` is None without values; the bounds are None with fewer than 2."""

    n: int
    mean: float | None
    low: float | None
    high: float | None


def mean_interval(values: ArrayLike, confidence: float = CONFIDENCE) -> MeanInterval:
    """The mean of ``values`` with its t interval at ``confidence``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise ValueError("values must be 1-D and finite")
    n = array.shape[0]
    if n < 2:
        return _interval(n, float(array.sum()), 0.0, confidence)
    return _interval(n, float(array.mean()), float(array.std(ddof=1) / math.sqrt(n)), confidence)


def interval_of_sums(
    n: int, total: float, squares: float, confidence: float = CONFIDENCE
) -> MeanInterval:
    """:func:`mean_interval` of ``n`` values given by their sum and sum of squares, to
    within rounding."""
    if n < 2:
        return _interval(n, total, 0.0, confidence)
    return _interval(n, total / n, _standard_error(n, total, squares), confidence)


def _interval(n: int, mean: float, standard_error: float, confidence: float) -> MeanInterval:
    if n == 0:
        return MeanInterval(0, None, None, None)
    if n == 1:
        return MeanInterval(1, mean, None, None)
    half_width = _t_quantile(0.5 + confidence / 2.0, n - 1) * standard_error
    return MeanInterval(n, mean, mean - half_width, mean + half_width)


def _standard_error(n: int, total: float, squares: float) -> float:
    """s/√n of ``n`` >= 2 values from their sum and sum of squares."""
    spread = squares - total * total / n
    if spread <= _SPREAD_NOISE * squares:
        return 0.0
    return math.sqrt(spread / (n - 1) / n)


def least_squares_slope(x_values: ArrayLike, y_values: ArrayLike) -> float | None:
    """The slope of the ordinary least-squares line of y on x (with an intercept); None
    with fewer than 2 points or when x does not vary."""
    x = np.asarray(x_values, dtype=np.float64)
    y = np.asarray(y_values, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D and of equal length, got {x.shape}, {y.shape}")
    if x.shape[0] < 2:
        return None
    deviation = x - x.mean()
    spread = float(deviation @ deviation)
    if spread == 0.0:
        return None
    return float(deviation @ (y - y.mean())) / spread
