"""Comparing two forecasts scored on the same rows: the paired t-test of the backtest.

Given per-row scores of two forecasts on the same rows (for example two log-loss row
arrays), the mean difference, its standard error and the two-sided p-value of Student's t
with n − 1 degrees of freedom for the null hypothesis "the mean difference is zero".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

ROUNDING = 1e-12  # per-row differences this small are floating-point noise


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
        p_value = 2.0 * float(stats.t.sf(abs(mean) / standard_error, n - 1))
    return PairedDifference(mean, standard_error, min(1.0, p_value), n)
