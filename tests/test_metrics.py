"""Scoring rules against published and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boosting import (
    accuracy,
    brier_score,
    brier_score_rows,
    log_loss,
    log_loss_rows,
    ranked_probability_score,
    ranked_probability_score_rows,
)

# RPS = 1/2 [(P1 - O1)^2 + (P2 - O2)^2] with cumulative forecast P and outcome O (K = 3),
# worked out by hand:
HAND_RPS = [
    ((1.0, 0.0, 0.0), 0, 0.0),  # P = (1, 1), O = (1, 1)
    ((0.9, 0.1, 0.0), 0, 0.005),  # P = (.9, 1): (.01 + 0) / 2
    ((0.8, 0.1, 0.1), 0, 0.025),  # P = (.8, .9): (.04 + .01) / 2
    ((0.5, 0.25, 0.25), 0, 0.15625),  # P = (.5, .75): (.25 + .0625) / 2
    ((0.35, 0.3, 0.35), 1, 0.1225),  # P = (.35, .65), O = (0, 1): (.1225 + .1225) / 2
    ((0.6, 0.3, 0.1), 1, 0.185),  # P = (.6, .9), O = (0, 1): (.36 + .01) / 2
    ((0.6, 0.25, 0.15), 1, 0.19125),  # P = (.6, .85): (.36 + .0225) / 2
    ((0.2, 0.3, 0.5), 2, 0.145),  # P = (.2, .5), O = (0, 0): (.04 + .25) / 2
]


@pytest.mark.parametrize(("forecast", "outcome", "expected"), HAND_RPS)
def test_rps_by_hand(forecast: tuple[float, float, float], outcome: int, expected: float) -> None:
    assert ranked_probability_score([outcome], [forecast]) == pytest.approx(expected)


def test_rps_rewards_being_close_in_rank_where_brier_cannot_tell() -> None:
    # A home win: missing by a draw is better than missing by an away win
    # (Constantinou & Fenton 2012). (.5, .5, 0): P = (.5, 1) -> .125;
    # (.5, 0, .5): P = (.5, .5) -> (.25 + .25) / 2 = .25. Brier is .5 for both.
    near, far = [[0.5, 0.5, 0.0]], [[0.5, 0.0, 0.5]]
    assert ranked_probability_score([0], near) == pytest.approx(0.125)
    assert ranked_probability_score([0], far) == pytest.approx(0.25)
    assert brier_score([0], near) == pytest.approx(brier_score([0], far)) == pytest.approx(0.5)


def test_hand_computed_scores() -> None:
    proba = [[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]]
    y = [0, 1]
    # log loss: -ln .5 = .693147, -ln .2 = 1.609438
    assert log_loss_rows(y, proba) == pytest.approx([0.693147, 1.609438], abs=1e-6)
    assert log_loss(y, proba) == pytest.approx((0.693147 + 1.609438) / 2, abs=1e-6)
    # Brier (sum over classes): .25 + .09 + .04 = .38; .04 + .64 + .36 = 1.04
    assert brier_score_rows(y, proba) == pytest.approx([0.38, 1.04])
    assert brier_score(y, proba) == pytest.approx(0.71)
    # RPS: cumulative (.5, .8) vs (1, 1): (.25 + .04)/2 = .145;
    #      cumulative (.2, .4) vs (0, 1): (.04 + .36)/2 = .2
    assert ranked_probability_score_rows(y, proba) == pytest.approx([0.145, 0.2])
    assert accuracy(y, proba) == 0.5


def test_brier_and_rps_ranges() -> None:
    sure_and_wrong = [[0.0, 0.0, 1.0]]
    assert brier_score([0], sure_and_wrong) == 2.0
    assert ranked_probability_score([0], sure_and_wrong) == 1.0
    assert brier_score([2], sure_and_wrong) == 0.0


def test_no_nan_or_inf_for_valid_input() -> None:
    zero_on_outcome = [[0.0, 1.0, 0.0]]
    loss = log_loss([0], zero_on_outcome)
    assert math.isfinite(loss)
    assert loss == pytest.approx(-math.log(1e-15))
    assert math.isfinite(brier_score([0], zero_on_outcome))


def test_accuracy_ties_go_to_the_lowest_class() -> None:
    assert accuracy([0, 1], [[0.4, 0.4, 0.2], [0.4, 0.4, 0.2]]) == 0.5


@pytest.mark.parametrize(
    ("y", "proba", "message"),
    [
        ([0], [[0.5, np.nan, 0.5]], "NaN"),
        ([0], [[1.5, -0.5, 0.0]], r"\[0, 1\]"),
        ([3], [[0.2, 0.3, 0.5]], r"labels must lie in \[0, 3\)"),
        ([0, 1], [[0.2, 0.3, 0.5]], "shape"),
        ([], np.zeros((0, 3)), "no rows"),
        ([0], [0.2, 0.3, 0.5], "shape"),
        ([0], [[1.0, 1.0, 1.0]], "sum to 1"),
        ([0], [[0.0, 0.0, 0.0]], "sum to 1"),
    ],
)
def test_invalid_scoring_input(y: object, proba: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        log_loss(y, proba)  # type: ignore[arg-type]
