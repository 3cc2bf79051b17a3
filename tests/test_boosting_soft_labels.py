"""Soft labels: AdaBoost.M2 fitted toward a probability vector per sample, and the
cross-entropy that scores forecasts against such targets."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from app.domain.football_data import parse_football_data
from app.domain.tables import tables_from_batches
from app.domain.training import TrainingSet, build_training_set
from app.domain.vocabulary import Phase
from boosting import AdaBoostM2, cross_entropy, log_loss, soft_label_rows

SeasonFile = Callable[[str], Path]

# One sample, two classes, two hypotheses: A leans to class 0, B is uniform (chance).
TINY_H = np.array([[[0.8, 0.2], [0.5, 0.5]]])
TINY_TARGETS = np.array([[0.75, 0.25]])


def one_hot(y: NDArray[np.intp], n_classes: int = 3) -> NDArray[np.float64]:
    targets = np.zeros((len(y), n_classes))
    targets[np.arange(len(y)), y] = 1.0
    return targets


@pytest.fixture(scope="module")
def real_season(season_file: SeasonFile) -> TrainingSet:
    """Two real seasons' pre-match odds of seven bookmakers, power de-margined; Ladbrokes
    quoted only the first, so it abstains on the second."""
    batches = [
        parse_football_data(season_file(name).read_bytes()) for name in ("E0_1718", "E0_1819")
    ]
    matches, quotes = tables_from_batches(batches)
    return build_training_set(
        matches,
        quotes,
        phase=Phase.PRE,
        method="power",
        bookmakers=("B365", "BW", "IW", "LB", "PS", "WH", "VC"),
    )


def test_a_sample_becomes_one_row_per_class_of_positive_target() -> None:
    targets = [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5]]

    rows = soft_label_rows(targets, sample_weight=[2.0, 1.0, 1.0])

    assert rows.samples.tolist() == [0, 0, 1, 2, 2, 2]
    assert rows.labels.tolist() == [0, 1, 2, 0, 1, 2]
    # Each sample's weight split by its targets.
    assert rows.weights == pytest.approx([1.0, 1.0, 1.0, 0.2, 0.3, 0.5])


def test_hand_worked_two_rounds_on_a_soft_label() -> None:
    model = AdaBoostM2(n_rounds=2).fit_targets(TINY_H, TINY_TARGETS)

    # Rows (label 0, weight 3/4) and (label 1, weight 1/4); A's margins there are ±0.6, so
    # ε_A = ½ (1 − (0.75 · 0.6 − 0.25 · 0.6)) = 0.35 and B's is ½: A is chosen, β = 7/13.
    beta_1 = 0.35 / 0.65
    # D_2 ∝ (0.75 β^{½ (1 + 0.6)}, 0.25 β^{½ (1 − 0.6)}), then ε_2 = ½ (1 − 0.6 (D_0 − D_1)).
    d0, d1 = 0.75 * beta_1**0.8, 0.25 * beta_1**0.2
    error_2 = 0.5 * (1 - 0.6 * (d0 - d1) / (d0 + d1))
    assert error_2 == pytest.approx(0.395487, abs=1e-6)
    assert model.chosen_.tolist() == [0, 0]
    assert model.pseudo_losses_ == pytest.approx([0.35, error_2], abs=1e-7)
    expected_weight = math.log(13 / 7) + math.log((1 - error_2) / error_2)
    assert model.hypothesis_weights_ == pytest.approx([expected_weight, 0.0], abs=1e-7)


def test_a_target_the_hypotheses_cannot_beat_stops_at_once() -> None:
    # A (0.8, 0.2) against a target of (0.5, 0.5): margins ±0.6 weigh equally, ε = ½.
    model = AdaBoostM2(n_rounds=5).fit_targets(TINY_H, [[0.5, 0.5]])

    assert model.n_rounds_ == 0
    assert model.predict_proba(TINY_H)[0] == pytest.approx([0.65, 0.35])  # the plain mean


@pytest.mark.parametrize("decay", [False, True])
def test_one_hot_targets_fit_exactly_as_their_labels_on_real_data(
    real_season: TrainingSet, decay: bool
) -> None:
    weights = np.power(0.5, np.arange(len(real_season))[::-1] / 200.0) if decay else None

    hard = AdaBoostM2(n_rounds=50).fit(real_season.H, real_season.y, sample_weight=weights)
    soft = AdaBoostM2(n_rounds=50).fit_targets(
        real_season.H, one_hot(real_season.y), sample_weight=weights
    )

    assert np.isnan(real_season.H).any()  # abstentions included
    assert soft.chosen_.tolist() == hard.chosen_.tolist()
    assert np.array_equal(soft.pseudo_losses_, hard.pseudo_losses_)
    assert np.array_equal(soft.hypothesis_weights_, hard.hypothesis_weights_)
    assert np.array_equal(soft.predict_proba(real_season.H), hard.predict_proba(real_season.H))


def test_soft_targets_weigh_each_label_as_repeated_samples_would(
    real_season: TrainingSet,
) -> None:
    # A target of (1/2, 1/2, 0) is the sample twice, once as each label (each at half weight).
    rows = real_season.rows(np.arange(300))
    targets = np.tile([0.5, 0.5, 0.0], (300, 1))

    soft = AdaBoostM2(n_rounds=20).fit_targets(rows.H, targets)
    repeated = AdaBoostM2(n_rounds=20).fit(
        np.repeat(rows.H, 2, axis=0), np.tile([0, 1], 300), sample_weight=np.ones(600)
    )

    assert soft.chosen_.tolist() == repeated.chosen_.tolist()
    assert soft.hypothesis_weights_ == pytest.approx(repeated.hypothesis_weights_, rel=1e-12)


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ([[0.5, 0.4]], "targets rows must sum to 1"),
        ([[1.5, -0.5]], r"targets values must lie in \[0, 1\]"),
        ([[np.nan, 1.0]], "targets contains NaN"),
        ([[1.0, 0.0], [0.0, 1.0]], "one row per sample of H"),
        ([1.0, 0.0], "one row per sample of H"),
    ],
)
def test_invalid_targets_are_refused(targets: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AdaBoostM2().fit_targets(TINY_H, targets)  # type: ignore[arg-type]


def test_cross_entropy_by_hand() -> None:
    targets = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]
    proba = [[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]]

    # Row 1: −(½ ln ½ + ½ ln ¼) = 1.5 ln 2; row 2: −(0.2 ln ¼ + 0.3 ln ¼ + 0.5 ln ½) = 1.5 ln 2.
    assert cross_entropy(targets, proba) == pytest.approx(1.5 * math.log(2))


def test_cross_entropy_to_one_hot_targets_is_the_log_loss(real_season: TrainingSet) -> None:
    consensus = real_season.consensus()

    assert cross_entropy(one_hot(real_season.y), consensus) == pytest.approx(
        log_loss(real_season.y, consensus), rel=1e-12
    )


def test_cross_entropy_refuses_targets_shaped_unlike_the_forecasts() -> None:
    with pytest.raises(ValueError, match="targets must have 3 columns"):
        cross_entropy([[0.5, 0.5]], [[0.2, 0.3, 0.5]])
