"""The paired comparison of two forecasts, against scipy's paired t-test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from app.domain.evaluation import paired_difference


def test_paired_difference_matches_scipy_paired_t_test() -> None:
    rng = np.random.default_rng(4)
    a = rng.normal(1.00, 0.3, 500)
    b = a + rng.normal(0.02, 0.1, 500)
    result = paired_difference(a, b)
    reference = stats.ttest_rel(a, b)
    assert result.n == 500
    assert result.mean == pytest.approx(float(np.mean(a - b)))
    assert result.standard_error == pytest.approx(float(stats.sem(a - b)))
    assert result.p_value == pytest.approx(float(reference.pvalue), rel=1e-8)


def test_forecasts_equal_up_to_rounding_do_not_differ() -> None:
    # The same numbers summed in another order differ by ~1e-16 per row: that is not a
    # difference between forecasts, whatever the t statistic of the noise says.
    rng = np.random.default_rng(5)
    a = rng.uniform(0.5, 1.5, 300)
    b = a + rng.choice([-1.0, 1.0], 300) * np.spacing(a)
    result = paired_difference(a, b)
    assert (result.mean, result.standard_error, result.p_value) == (0.0, 0.0, 1.0)


def test_paired_difference_edge_cases() -> None:
    same = paired_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert (same.mean, same.standard_error, same.p_value) == (0.0, 0.0, 1.0)
    shifted = paired_difference([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])
    assert (shifted.mean, shifted.standard_error, shifted.p_value) == (0.5, 0.0, 0.0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        paired_difference([1.0], [2.0])
    with pytest.raises(ValueError, match="equal length"):
        paired_difference([1.0, 2.0], [1.0])
