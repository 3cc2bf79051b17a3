"""AdaBoost.M2 over a fixed pool: a hand-worked example, invariants, validation."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from boosting import AdaBoostM2, NotFittedError, StopReason, pseudo_losses, weighted_vote
from tests.reference_m2 import reference_m2

# --- the hand-worked example ------------------------------------------------------------
#
# Three matches with outcomes y = (1, X, 2) = (0, 1, 2) and two bookmakers:
#
#   A: (.6 .3 .1)  (.3 .4 .3)  (.2 .3 .5)
#   B: (.5 .25 .25) (.5 .25 .25) (.25 .25 .5)
#
# Mislabel pairs in order (0,X) (0,2) (1,1) (1,2) (2,1) (2,X); D1 = 1/6 each.
# Margins h(y_i) - h(y):
#   A: .6-.3=.3  .6-.1=.5  .4-.3=.1  .4-.3=.1  .5-.2=.3  .5-.3=.2    sum 1.5
#   B: .25       .25       -.25      0         .25       .25         sum .75
# Round 1: eps = 1/2 (1 - mean margin):
#   eps_A = 1/2 (1 - 1.5/6) = 0.375,  eps_B = 1/2 (1 - .75/6) = 0.4375  -> A.
#   beta_1 = .375/.625 = 0.6;  weight ln(1/0.6) = 0.5108256.
# Update D2 ∝ D1 · 0.6^(1/2 (1 + margin_A)); exponents .65 .75 .55 .55 .65 .60:
#   0.6^.65 = .717461  0.6^.75 = .681732  0.6^.55 = .755063  0.6^.60 = .736022
#   sum = 2(.717461) + .681732 + 2(.755063) + .736022 = 4.362802
#   D2 = .164450 .156260 .173068 .173068 .164450 .168704
# Round 2: Σ D2·margin_A = .16445(.3) + .15626(.5) + .173068(.1)(2) + .16445(.3)
#          + .168704(.2) = .245154  -> eps_A = 1/2 (1 - .245154) = 0.377423
#   Σ D2·margin_B = .25(.16445 + .15626 + .16445 + .168704) - .25(.173068) = .120199
#          -> eps_B = 0.439901.  A again: beta_2 = .377423/.622577 = 0.606227,
#   weight ln(1/0.606227) = 0.500501; A's total weight 1.011327, B's 0.

HAND_H = np.array(
    [
        [[0.6, 0.3, 0.1], [0.5, 0.25, 0.25]],
        [[0.3, 0.4, 0.3], [0.5, 0.25, 0.25]],
        [[0.2, 0.3, 0.5], [0.25, 0.25, 0.5]],
    ]
)
HAND_Y = np.array([0, 1, 2])


def test_hand_worked_first_two_rounds() -> None:
    model = AdaBoostM2(n_rounds=2, store_distributions=True).fit(HAND_H, HAND_Y)
    assert model.chosen_.tolist() == [0, 0]
    assert model.pseudo_losses_ == pytest.approx([0.375, 0.377423], abs=1e-6)
    assert model.betas_ == pytest.approx([0.6, 0.606227], abs=1e-6)
    assert model.hypothesis_weights_ == pytest.approx([0.510826 + 0.500501, 0.0], abs=1e-6)
    assert model.selection_counts_.tolist() == [2, 0]
    d1, d2 = model.distributions_[0], model.distributions_[1]
    # Distributions are (match, class) matrices, zero at the true class.
    assert d1[np.arange(3), HAND_Y].tolist() == [0, 0, 0]
    assert d1[d1 > 0] == pytest.approx([1 / 6] * 6)
    assert [d2[0, 1], d2[0, 2], d2[1, 0], d2[1, 2], d2[2, 0], d2[2, 1]] == pytest.approx(
        [0.164450, 0.156260, 0.173068, 0.173068, 0.164450, 0.168704], abs=1e-6
    )
    # Under D2, B's pseudo-loss is 0.439901 (A's is the chosen 0.377423).
    assert pseudo_losses(HAND_H, HAND_Y, d2) == pytest.approx([0.377423, 0.439901], abs=1e-6)


def test_hand_example_prediction_is_the_weighted_mix() -> None:
    model = AdaBoostM2(n_rounds=2).fit(HAND_H, HAND_Y)
    # Only A has weight, so the ensemble is A itself.
    assert model.predict_proba(HAND_H) == pytest.approx(HAND_H[:, 0, :])
    assert model.predict(HAND_H).tolist() == [0, 1, 2]


# --- invariants -------------------------------------------------------------------------


def random_pool(
    n_samples: int = 400, n_hypotheses: int = 6, n_classes: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_samples)
    alpha = np.ones((n_samples, n_hypotheses, n_classes))
    alpha[np.arange(n_samples), :, y] += rng.uniform(0.2, 1.5, n_hypotheses)
    H = rng.standard_gamma(alpha)
    return H / H.sum(axis=2, keepdims=True), y


def test_distribution_sums_to_one_and_chosen_hypothesis_gets_harder() -> None:
    H, y = random_pool()
    model = AdaBoostM2(n_rounds=25, store_distributions=True).fit(H, y)
    assert model.n_rounds_ == 25
    for t, distribution in enumerate(model.distributions_):
        assert distribution.sum() == pytest.approx(1.0, abs=1e-9)
        assert (distribution[np.arange(len(y)), y] == 0).all()
        assert (distribution >= 0).all()
        if t < model.n_rounds_:
            losses = pseudo_losses(H, y, distribution)
            # The fast float32 path agrees with the float64 definition...
            assert model.pseudo_losses_[t] == pytest.approx(losses[model.chosen_[t]], abs=1e-6)
            # ...picks the smallest pseudo-loss...
            assert model.chosen_[t] == int(np.argmin(losses))
            # ...and after the update that hypothesis looks worse than before.
            if t + 1 < len(model.distributions_):
                after = pseudo_losses(H, y, model.distributions_[t + 1])[model.chosen_[t]]
                assert after > model.pseudo_losses_[t]


def test_a_perfect_hypothesis_stops_at_once_with_a_finite_weight() -> None:
    H, y = random_pool()
    H[:, 2, :] = np.eye(3)[y]  # hypothesis 2 knows every answer
    model = AdaBoostM2(n_rounds=50).fit(H, y)
    assert model.stop_reason_ is StopReason.PERFECT
    assert model.n_rounds_ == 1
    assert model.chosen_.tolist() == [2]
    assert math.isfinite(model.hypothesis_weights_[2])
    assert model.hypothesis_weights_[2] > 20  # ln(1/1e-10) ≈ 23
    assert model.predict(H).tolist() == y.tolist()


def test_uniform_hypotheses_stop_with_no_weight_and_predict_the_consensus() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 50)
    H = np.full((50, 4, 3), 1 / 3)
    model = AdaBoostM2(n_rounds=10).fit(H, y)
    assert model.pseudo_losses_.size == 0
    assert model.n_rounds_ == 0
    assert model.stop_reason_ is StopReason.NO_BETTER_THAN_CHANCE
    assert model.hypothesis_weights_.tolist() == [0, 0, 0, 0]
    # With no weight learnt the prediction is the plain mean of the hypotheses present.
    other = rng.dirichlet(np.ones(3), size=(5, 4))
    assert model.predict_proba(other) == pytest.approx(other.mean(axis=1))
    assert (model.margins(other, np.zeros(5, int)) == 0).all()


def test_the_reference_pseudo_loss_of_abstentions_is_one_half() -> None:
    H, y = random_pool(n_samples=60)
    abstaining_rows = np.arange(0, 60, 3)
    H[abstaining_rows, 1, :] = np.nan
    only_those = np.zeros((60, 3))
    only_those[abstaining_rows] = 1.0
    assert pseudo_losses(H, y, only_those)[1] == 0.5
    model = AdaBoostM2(n_rounds=5, store_distributions=True).fit(H, y)
    masked = np.zeros_like(model.distributions_[0])
    masked[abstaining_rows] = model.distributions_[0][abstaining_rows]
    assert pseudo_losses(H, y, masked)[1] == 0.5


def test_abstaining_hypotheses_are_left_out_of_the_prediction() -> None:
    H, y = random_pool(n_samples=200, n_hypotheses=3)
    model = AdaBoostM2(n_rounds=30).fit(H, y)
    w = model.hypothesis_weights_
    row = H[:1].copy()
    row[0, 1, :] = np.nan
    expected = (w[0] * row[0, 0] + w[2] * row[0, 2]) / (w[0] + w[2])
    assert model.predict_proba(row)[0] == pytest.approx(expected)


def test_rows_where_every_weighted_hypothesis_abstains_fall_back_to_the_mean() -> None:
    H, y = random_pool(n_samples=200, n_hypotheses=3)
    H[:, 2, :] = np.full(3, 1 / 3)  # never better than chance: never chosen
    model = AdaBoostM2(n_rounds=30).fit(H, y)
    assert model.hypothesis_weights_[2] == 0
    row = H[:1].copy()
    row[0, :2, :] = np.nan
    assert model.predict_proba(row)[0] == pytest.approx([1 / 3] * 3)
    nothing = np.full((1, 3, 3), np.nan)
    with pytest.raises(ValueError, match="no hypothesis gives a vector"):
        model.predict_proba(nothing)


def test_prediction_agrees_with_itself() -> None:
    H, y = random_pool(seed=5)
    model = AdaBoostM2(n_rounds=40).fit(H, y)
    proba = model.predict_proba(H)
    assert proba.sum(axis=1) == pytest.approx(np.ones(len(y)))
    assert (np.argmax(proba, axis=1) == model.predict(H)).all()
    staged = list(model.staged_predict_proba(H))
    assert len(staged) == model.n_rounds_
    assert staged[-1] == pytest.approx(proba)
    margins = model.margins(H, y)
    assert ((margins >= -1) & (margins <= 1)).all()
    assert ((margins > 0) == (model.predict(H) == y)).mean() > 0.99  # ties aside


def test_margins_by_hand() -> None:
    model = AdaBoostM2(n_rounds=2).fit(HAND_H, HAND_Y)
    # Only A has weight, so F = w_A · A and the normalised margin is A's own margin:
    # match 0: .6 - max(.3, .1) = .3; match 1: .4 - max(.3, .3) = .1; match 2: .5 - .3 = .2
    assert model.margins(HAND_H, HAND_Y) == pytest.approx([0.3, 0.1, 0.2])


def test_sample_weight_equals_repeating_samples() -> None:
    H, y = random_pool(n_samples=50, seed=9)
    counts = np.arange(50) % 3 + 1
    weighted = AdaBoostM2(n_rounds=15).fit(H, y, sample_weight=counts)
    repeated = AdaBoostM2(n_rounds=15).fit(np.repeat(H, counts, axis=0), np.repeat(y, counts))
    assert weighted.chosen_.tolist() == repeated.chosen_.tolist()
    assert weighted.hypothesis_weights_ == pytest.approx(repeated.hypothesis_weights_, rel=1e-5)


def test_ties_go_to_the_lowest_index() -> None:
    # Two different hypotheses with exactly equal pseudo-loss 3/7 (values 0 and 1 only).
    y = np.zeros(7, dtype=int)
    H = np.zeros((7, 2, 2))
    H[:4, 0, 0] = 1
    H[4:, 0, 1] = 1
    H[3:, 1, 0] = 1
    H[:3, 1, 1] = 1
    losses = pseudo_losses(H, y)
    assert losses[0] == losses[1] == pytest.approx(3 / 7)
    assert AdaBoostM2(n_rounds=1).fit(H, y).chosen_.tolist() == [0]
    assert AdaBoostM2(n_rounds=1).fit(H[:, ::-1], y).chosen_.tolist() == [0]


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_a_plain_float64_implementation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_classes = int(rng.choice([2, 3, 5]))
    n_samples, n_hypotheses = int(rng.integers(1, 40)), int(rng.integers(1, 6))
    y = rng.integers(0, n_classes, n_samples)
    alpha = np.ones((n_samples, n_hypotheses, n_classes))
    alpha[np.arange(n_samples), :, y] += rng.uniform(0.0, 2.0, n_hypotheses)
    H = rng.standard_gamma(alpha)
    H /= H.sum(axis=2, keepdims=True)
    abstain = rng.random((n_samples, n_hypotheses)) < 0.2
    abstain[:, 0] = False  # every sample keeps one vector
    H[abstain] = np.nan
    weights = rng.uniform(0.1, 3.0, n_samples) if seed % 2 else None
    model = AdaBoostM2(n_rounds=30).fit(H, y, sample_weight=weights)
    reference = reference_m2(H, y, 30, weights)
    assert model.chosen_.tolist() == reference.chosen
    assert model.stop_reason_ == reference.stop_reason
    # The usual rounds score ε from float32 margins, summed in float64: about 3e-8.
    assert model.pseudo_losses_ == pytest.approx(reference.errors, rel=1e-7, abs=3e-8)
    assert model.betas_ == pytest.approx(reference.betas, rel=1e-7)
    assert model.hypothesis_weights_ == pytest.approx(reference.weights, rel=1e-7)
    assert model.predict_proba(H) == pytest.approx(weighted_vote(H, reference.weights))


def test_near_perfect_hypotheses_are_scored_exactly() -> None:
    # ε of about 1e-9 is below float32's resolution of a margin near 1.
    y = np.arange(200) % 3
    for spread in (2e-8, 1e-9):
        H = np.full((200, 1, 3), spread / 2)
        H[np.arange(200), 0, y] = 1 - spread
        model = AdaBoostM2(n_rounds=3).fit(H, y)
        reference = reference_m2(H, y, 3)
        assert model.stop_reason_ == reference.stop_reason == "max_rounds"
        assert model.pseudo_losses_ == pytest.approx(reference.errors, rel=1e-6)
        assert model.hypothesis_weights_ == pytest.approx(reference.weights, rel=1e-8)


def test_abstentions_are_exactly_chance_while_fitting() -> None:
    # Each hypothesis abstains on some matches and is uniform on the others (every match
    # keeps one vector): both pseudo-losses are exactly 1/2, so not a single round is run.
    H, y = random_pool(n_samples=90, n_hypotheses=2)
    H[:, :, :] = 1 / 3
    H[::3, 0, :] = np.nan
    H[1::3, 1, :] = np.nan
    model = AdaBoostM2(n_rounds=5).fit(H, y)
    assert model.n_rounds_ == 0
    assert model.stop_reason_ is StopReason.NO_BETTER_THAN_CHANCE


def test_huge_sample_weights_do_not_overflow() -> None:
    plain = AdaBoostM2(n_rounds=5).fit(HAND_H, HAND_Y)
    huge = AdaBoostM2(n_rounds=5).fit(HAND_H, HAND_Y, sample_weight=[1e308] * 3)
    assert huge.chosen_.tolist() == plain.chosen_.tolist()
    assert huge.hypothesis_weights_ == pytest.approx(plain.hypothesis_weights_)


def test_pickling_keeps_predictions() -> None:
    H, y = random_pool()
    model = AdaBoostM2(n_rounds=20).fit(H, y)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.predict_proba(H) == pytest.approx(model.predict_proba(H))
    assert restored.chosen_.tolist() == model.chosen_.tolist()


def test_extreme_values_give_no_nan() -> None:
    rng = np.random.default_rng(11)
    y = rng.integers(0, 3, 300)
    H = np.eye(3)[rng.integers(0, 3, (300, 5))]  # one-hot votes, mostly wrong
    H[:, 0, :] = np.eye(3)[np.where(rng.random(300) < 0.9, y, (y + 1) % 3)]
    model = AdaBoostM2(n_rounds=200).fit(H, y)
    assert np.isfinite(model.hypothesis_weights_).all()
    assert np.isfinite(model.predict_proba(H)).all()


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("H", "y", "message"),
    [
        (np.ones((3, 2)), [0, 1, 2], "shape"),
        (np.ones((0, 2, 3)), [], "empty"),
        (np.ones((3, 2, 1)), [0, 0, 0], "at least 2 classes"),
        (np.full((3, 2, 3), 1.5), [0, 1, 2], r"\[0, 1\]"),
        (np.full((3, 2, 3), -0.1), [0, 1, 2], r"\[0, 1\]"),
        (np.full((3, 2, 3), np.inf), [0, 1, 2], r"\[0, 1\]"),
        (HAND_H, [0, 1], r"y must have shape \(3,\)"),
        (HAND_H, [0, 1, 3], r"labels must lie in \[0, 3\)"),
        (HAND_H, [0, 1, -1], r"labels must lie in \[0, 3\)"),
        (HAND_H, [0.5, 1, 2], "integer class labels"),
        (np.array([["a"]]), [0], "numeric"),
    ],
)
def test_invalid_input(H: object, y: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        AdaBoostM2().fit(H, y)  # type: ignore[arg-type]


def test_nan_rules() -> None:
    H = HAND_H.copy()
    H[1, :, :] = np.nan
    with pytest.raises(ValueError, match="sample 1: every hypothesis abstains"):
        AdaBoostM2().fit(H, HAND_Y)
    H = HAND_H.copy()
    H[2, 0, 1] = np.nan
    with pytest.raises(ValueError, match=r"H\[2, 0\] is partly NaN"):
        AdaBoostM2().fit(H, HAND_Y)


@pytest.mark.parametrize("rounds", [0, -1, 2.5, True])
def test_invalid_rounds(rounds: object) -> None:
    with pytest.raises((ValueError, TypeError), match="n_rounds"):
        AdaBoostM2(n_rounds=rounds).fit(HAND_H, HAND_Y)  # type: ignore[arg-type]


@pytest.mark.parametrize("weights", [[1, 1], [1, -1, 1], [0, 0, 0], [1, np.nan, 1]])
def test_invalid_sample_weight(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="sample_weight"):
        AdaBoostM2().fit(HAND_H, HAND_Y, sample_weight=weights)


def test_unfitted_model_refuses_to_predict() -> None:
    model = AdaBoostM2()
    for method in (model.predict_proba, model.predict, model.decision_function):
        with pytest.raises(NotFittedError, match="not fitted"):
            method(HAND_H)


def test_prediction_input_must_match_the_pool() -> None:
    model = AdaBoostM2(n_rounds=2).fit(HAND_H, HAND_Y)
    with pytest.raises(ValueError, match=r"\(n_samples, 2, 3\)"):
        model.predict_proba(np.ones((3, 3, 3)) / 3)
