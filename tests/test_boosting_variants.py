"""AdaBoost (three losses), AdaBoost.M1, SAMME and AdaBoost.MH, checked by hand.

The toy pools below are small enough to run the algorithms' equations on paper; the comments
give each round's distribution, and the expected errors and weights are those fractions.
"""

from __future__ import annotations

import math
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.datasets import load_iris
from sklearn.metrics import hamming_loss as sklearn_hamming_loss

from boosting import (
    SAMME,
    AdaBoost,
    AdaBoostM1,
    AdaBoostMH,
    DecisionStumps,
    FixedPool,
    NotFittedError,
    StopReason,
    hamming_loss,
    label_scores,
    most_probable_class,
)

# y = +1, +1, −1, −1 (labels 1, 1, 0, 0); three ±1 hypotheses, wrong on {2}, {1}, {0, 3}.
BINARY_POOL = np.array(
    [
        [+1, +1, -1],
        [+1, -1, +1],
        [+1, -1, -1],
        [-1, -1, +1],
    ],
    dtype=float,
)
BINARY_Y = np.array([1, 1, 0, 0])


def test_discrete_adaboost_by_hand() -> None:
    # D1 = 1/4 each: errors 1/4, 1/4, 1/2 → h0 (lowest index), α = ½ ln 3.
    # D2 = 1/6, 1/6, 1/2, 1/6 (the mistake now weighs ½): errors 1/2, 1/6, 1/3 → h1, ½ ln 5.
    # D3 = 1/10, 1/2, 3/10, 1/10: errors 3/10, 1/2, 1/5 → h2, α = ½ ln 4.
    # D4 = 1/4, 5/16, 3/16, 1/4: errors 3/16, 5/16, 1/2 → h0, α = ½ ln(13/3).
    model = AdaBoost(4, learner=FixedPool()).fit(BINARY_POOL, BINARY_Y)
    assert model.chosen_.tolist() == [0, 1, 2, 0]
    assert model.errors_ == pytest.approx([1 / 4, 1 / 6, 1 / 5, 3 / 16])
    half_ln = [0.5 * math.log(v) for v in (3, 5, 4, 13 / 3)]
    assert model.round_weights_ == pytest.approx(half_ln)
    assert model.hypothesis_weights_ == pytest.approx(
        [half_ln[0] + half_ln[3], half_ln[1], half_ln[2]]
    )
    assert model.predict(BINARY_POOL).tolist() == BINARY_Y.tolist()
    F = BINARY_POOL @ model.hypothesis_weights_
    assert model.decision_function(BINARY_POOL) == pytest.approx(F)
    # P(y = 1 | x) = 1 / (1 + e^{−2F}) (Friedman, Hastie & Tibshirani 2000).
    assert model.predict_proba(BINARY_POOL)[:, 1] == pytest.approx(1 / (1 + np.exp(-2 * F)))


def test_real_adaboost_by_hand() -> None:
    # One confidence-rated hypothesis: y h = ½, ½, ½, −½, so r = ¼ and α = ½ ln(5/3)
    # (Bonifaci). Then D2 ∝ e^{−α y h}: three samples at e^{−α/2}, one at e^{α/2}.
    h = np.array([[0.5], [0.5], [-0.5], [0.5]])
    model = AdaBoost(2, learner=FixedPool()).fit(h, BINARY_Y)
    alpha = 0.5 * math.log(5 / 3)
    right, wrong = math.exp(-alpha / 2), math.exp(alpha / 2)
    r2 = 0.5 * (3 * right - wrong) / (3 * right + wrong)
    assert model.errors_ == pytest.approx([(1 - 0.25) / 2, (1 - r2) / 2])
    assert model.round_weights_ == pytest.approx([alpha, 0.5 * math.log((1 + r2) / (1 - r2))])


def test_adaboost_stops_when_no_hypothesis_beats_chance() -> None:
    # Only hypothesis: right on half the weight. Nothing to learn: fitting says so.
    with pytest.raises(ValueError, match=r"AdaBoost learnt nothing.*error 0\.500"):
        AdaBoost(3, learner=FixedPool()).fit(np.array([[1.0], [1.0], [1.0], [1.0]]), BINARY_Y)


def test_a_perfect_hypothesis_ends_fitting_with_a_finite_weight() -> None:
    perfect = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    model = AdaBoost(10, learner=FixedPool()).fit(perfect, BINARY_Y)
    assert model.stop_reason_ is StopReason.PERFECT
    assert model.n_rounds_ == 1
    assert model.errors_[0] == 0.0
    assert math.isfinite(model.round_weights_[0])
    assert model.round_weights_[0] > 10


def test_a_failed_fit_leaves_no_model_behind() -> None:
    X = np.ones((4, 1))
    model = AdaBoost(5)
    with pytest.raises(ValueError, match="learnt nothing"):
        model.fit(X, [0, 1, 0, 1])
    with pytest.raises(NotFittedError):
        model.predict(X)
    fitted = AdaBoost(5).fit(np.arange(4.0)[:, None], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="learnt nothing"):
        fitted.fit(X, ["a", "b", "a", "b"])
    assert not hasattr(fitted, "classes_")
    with pytest.raises(NotFittedError):
        fitted.predict(X)


def test_the_logistic_line_search_keeps_working_once_the_loss_is_tiny() -> None:
    # Once the fitted samples' margins are large, the loss and its derivatives are tiny in
    # absolute terms; every round must still find its (clearly positive) step.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = ((X[:, 0] > 0) & (X[:, 1] > 0)).astype(int)
    model = AdaBoost(300, loss="logistic").fit(X, y)
    assert model.n_rounds_ == 300
    assert model.round_weights_.min() > 0.05


def test_m1_does_not_give_up_while_a_good_enough_stump_exists() -> None:
    # The split with the best Gini impurity errs on 0.501 of the weight here, but another
    # stump errs on 0.478: AdaBoost.M1 must use that one rather than stop.
    X = np.array([[3], [0], [1], [1], [1], [2], [3], [1]])
    y = np.array([0, 0, 2, 2, 1, 0, 1, 1])
    weights = np.array([0.0333, 0.0761, 0.0633, 0.2797, 0.1237, 0.1018, 0.1559, 0.1661])
    model = AdaBoostM1(10).fit(X, y, sample_weight=weights)
    assert model.errors_[0] < 0.5
    by_error = AdaBoostM1(10, learner=DecisionStumps(criterion="error"))
    assert by_error.fit(X, y, sample_weight=weights).errors_[0] == pytest.approx(model.errors_[0])


def logistic_loss(alpha: float, F: np.ndarray, h: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.log1p(np.exp(-y * (F + alpha * h)))))


def test_logistic_loss_steps_minimise_the_loss_along_each_hypothesis() -> None:
    rng = np.random.default_rng(11)
    y = rng.choice([-1.0, 1.0], 200)
    pool = np.clip(y[:, None] * rng.uniform(-0.4, 1.0, (200, 5)), -1, 1)
    model = AdaBoost(3, learner=FixedPool(), loss="logistic").fit(pool, (y > 0).astype(int))
    F = np.zeros(200)
    for hypothesis, alpha in zip(model.chosen_, model.round_weights_, strict=True):
        h = pool[:, hypothesis]
        reference = minimize_scalar(
            logistic_loss,
            bounds=(0, 20),
            args=(F, h, y),
            method="bounded",
            options={"xatol": 1e-10},
        )
        assert alpha == pytest.approx(reference.x, abs=1e-6)
        # and the hypothesis chosen has the largest edge under D ∝ 1 / (1 + e^{yF})
        D = 1 / (1 + np.exp(y * F))
        assert hypothesis == int(np.argmax((D * y) @ pool))
        F = F + alpha * h
    assert model.predict_proba(pool)[:, 1] == pytest.approx(1 / (1 + np.exp(-F)))


def test_squared_loss_steps_are_least_squares_fits_of_the_residual() -> None:
    rng = np.random.default_rng(12)
    y = rng.choice([-1.0, 1.0], 150)
    pool = np.clip(y[:, None] * rng.uniform(-0.3, 1.0, (150, 6)) * rng.uniform(0.2, 1, 6), -1, 1)
    weights = rng.uniform(0.5, 2.0, 150)
    model = AdaBoost(4, learner=FixedPool(), loss="squared").fit(
        pool, (y > 0).astype(int), sample_weight=weights
    )
    F = np.zeros(150)
    root = np.sqrt(weights)
    for hypothesis, alpha in zip(model.chosen_, model.round_weights_, strict=True):
        residual = y - F
        # Weighted least squares of the residual on each hypothesis alone: the best one
        # leaves the smallest sum of squares, with its coefficient as α. A pool's
        # hypotheses are never turned round, so only positive coefficients qualify.
        fits = [
            np.linalg.lstsq(root[:, None] * pool[:, [b]], root * residual, rcond=None)
            for b in range(pool.shape[1])
        ]
        remaining = [fit[1][0] if fit[0][0] > 0 else np.inf for fit in fits]
        assert hypothesis == int(np.argmin(remaining))
        assert alpha == pytest.approx(fits[hypothesis][0][0])
        F = F + alpha * pool[:, hypothesis]
    assert model.decision_function(pool) == pytest.approx(F)


# y = 0, 1, 2, 0, 1; class predictions wrong on {4}, {2, 3}, {0}.
LABEL_POOL = np.array([[0, 0, 2], [1, 1, 1], [2, 1, 2], [0, 1, 0], [0, 1, 1]])
LABEL_Y = np.array([0, 1, 2, 0, 1])


def test_adaboost_m1_by_hand() -> None:
    # D1 = 1/5: errors 1/5, 2/5, 1/5 → h0; β = 1/4.
    # D2 = 1/8, 1/8, 1/8, 1/8, 1/2: errors 1/2, 1/4, 1/8 → h2; β = 1/7.
    # D3 = 1/2, 1/14, 1/14, 1/14, 2/7: errors 2/7, 1/7, 1/2 → h1; β = 1/6.
    model = AdaBoostM1(3, learner=FixedPool()).fit(LABEL_POOL, LABEL_Y)
    assert model.chosen_.tolist() == [0, 2, 1]
    assert model.errors_ == pytest.approx([1 / 5, 1 / 8, 1 / 7])
    assert model.betas_ == pytest.approx([1 / 4, 1 / 7, 1 / 6])
    assert model.round_weights_ == pytest.approx([math.log(4), math.log(7), math.log(6)])
    # argmax_y Σ_{t: h_t(x) = y} ln(1/β_t): sample 0 gets ln 4 + ln 6 for 0, ln 7 for 2.
    votes = model.decision_function(LABEL_POOL)
    assert votes[0] == pytest.approx([math.log(24), 0, math.log(7)])
    assert model.predict(LABEL_POOL).tolist() == LABEL_Y.tolist()


def test_samme_by_hand() -> None:
    # K = 3, α = ln((1 − ε)/ε) + ln 2; a mistake's weight is multiplied by e^α.
    # D1 = 1/5: h0 (ε = 1/5), α = ln 8 → D2 = 1/12, 1/12, 1/12, 1/12, 2/3.
    # Errors 2/3, 1/6, 1/12 → h2, α = ln 22 → D3 = 2/3, 1/33, 1/33, 1/33, 8/33.
    # Errors 8/33, 2/33, 2/3 → h1, α = ln 31.
    model = SAMME(3, learner=FixedPool()).fit(LABEL_POOL, LABEL_Y)
    assert model.chosen_.tolist() == [0, 2, 1]
    assert model.errors_ == pytest.approx([1 / 5, 1 / 12, 2 / 33])
    assert model.round_weights_ == pytest.approx([math.log(8), math.log(22), math.log(31)])


def test_samme_keeps_going_where_m1_gives_up() -> None:
    # Three classes, one hypothesis right on 9 of 20 samples: ε = 0.55 is worse than ½
    # (AdaBoost.M1 cannot use it) but better than random guessing, 1 − 1/3 (SAMME can).
    y = np.arange(20) % 3
    prediction = np.where(np.arange(20) < 9, y, (y + 1) % 3)[:, None]
    with pytest.raises(ValueError, match=r"AdaBoostM1 learnt nothing.*error 0\.550.*below 1/2"):
        AdaBoostM1(5, learner=FixedPool()).fit(prediction, y)
    model = SAMME(1, learner=FixedPool()).fit(prediction, y)
    assert model.round_weights_[0] == pytest.approx(math.log(0.45 / 0.55) + math.log(2))


def test_samme_on_two_classes_is_adaboost_with_doubled_weights() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 300)
    signs = np.where(y == 1, 1.0, -1.0)
    pool = np.where(
        rng.random((300, 8)) < rng.uniform(0.55, 0.75, 8), signs[:, None], -signs[:, None]
    )
    adaboost = AdaBoost(25, learner=FixedPool()).fit(pool, y)
    samme = SAMME(25, learner=FixedPool()).fit(((pool + 1) / 2).astype(int), y)
    assert samme.chosen_.tolist() == adaboost.chosen_.tolist()
    assert samme.round_weights_ == pytest.approx(2 * adaboost.round_weights_)
    labels = ((pool + 1) / 2).astype(int)
    assert samme.predict(labels).tolist() == adaboost.predict(pool).tolist()
    assert samme.predict_proba(labels) == pytest.approx(adaboost.predict_proba(pool))


def test_an_abstaining_hypothesis_counts_as_a_mistake_and_casts_no_vote() -> None:
    pool = np.array([[0, -1], [1, 1], [2, 2], [0, 0], [1, -1]])
    model = SAMME(1, learner=FixedPool()).fit(pool, LABEL_Y)
    assert model.chosen_.tolist() == [0]  # 0 mistakes against 2 abstentions
    # Right on 3 samples, silent on 2: an error of 2/5 while fitting.
    silent = AdaBoostM1(1, learner=FixedPool()).fit(
        np.array([[-1], [-1], [1], [1], [1]]), [0, 0, 1, 1, 1]
    )
    assert silent.errors_[0] == pytest.approx(0.4)
    votes = model.decision_function(np.array([[-1, -1]]))
    assert votes.tolist() == [[0.0, 0.0, 0.0]]


def test_adaboost_mh_by_hand() -> None:
    # Two samples, three labels: Y = (+, −, −) and (−, −, +); D1 = 1/6.
    # The one hypothesis says (1, −1, 1) and (−1, 0, 1): Y h = (1, 1, −1) and (1, 0, 1),
    # so ε = Σ D (1 − Y h)/2 = (1 + ½)/6 = ¼ and α = ½ ln 3.
    outputs = np.array([[[1.0, -1.0, 1.0]], [[-1.0, 0.0, 1.0]]])
    model = AdaBoostMH(2, learner=FixedPool()).fit(outputs, np.array([[1, 0, 0], [0, 0, 1]]))
    alpha = 0.5 * math.log(3)
    # D2 ∝ e^{−α Y h}: e^{−α} where Y h = 1, e^{α} where −1, 1 where 0.
    down, up = math.exp(-alpha), math.exp(alpha)
    error2 = (up + 0.5) / (4 * down + up + 1)
    assert model.errors_ == pytest.approx([0.25, error2])
    assert model.round_weights_ == pytest.approx([alpha, 0.5 * math.log((1 - error2) / error2)])
    # sign(F) per label, where F = (α1 + α2) h: an abstention (0) is not a label.
    assert model.predict(outputs).tolist() == [[1, 0, 1], [0, 0, 1]]


def test_adaboost_mh_learns_several_labels_at_once() -> None:
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(300, 3))
    Y = np.column_stack([X[:, 0] > 0.5, X[:, 1] > 0.3, X[:, 0] + X[:, 2] > 1]).astype(int)
    model = AdaBoostMH(150).fit(X, Y)
    predicted = model.predict(X)
    assert predicted.shape == (300, 3)
    assert set(np.unique(predicted)) <= {0, 1}
    assert hamming_loss(Y, predicted) < 0.03
    curve = model.staged_error(X, Y)
    assert curve[-1] == pytest.approx(hamming_loss(Y, predicted))
    assert curve[-1] < curve[0]
    assert model.predict_proba(X).shape == (300, 3)


def test_hamming_loss_matches_scikit_learn() -> None:
    rng = np.random.default_rng(9)
    truth, predicted = rng.integers(0, 2, (50, 4)), rng.integers(0, 2, (50, 4))
    assert hamming_loss(truth, predicted) == pytest.approx(sklearn_hamming_loss(truth, predicted))
    with pytest.raises(ValueError, match="only 0 and 1"):
        hamming_loss(truth * 2, predicted)


def test_bookmaker_style_pools_from_plausibilities() -> None:
    H = np.array([[[0.5, 0.3, 0.2], [np.nan] * 3], [[0.2, 0.3, 0.5], [0.4, 0.4, 0.2]]])
    assert most_probable_class(H).tolist() == [[0, -1], [2, 0]]
    assert np.allclose(label_scores(H)[1, 0], [-0.6, -0.4, 0.0])


# --- properties every estimator shares -------------------------------------------------


def iris() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    return X, y


def estimators() -> list[pytest.ParameterSet]:
    """(model, y) pairs, each named by its test id."""
    _, y = iris()
    binary = (y == 2).astype(int)
    return [
        pytest.param(AdaBoost(30), binary, id="AdaBoost exponential"),
        pytest.param(AdaBoost(30, loss="logistic"), binary, id="AdaBoost logistic"),
        pytest.param(AdaBoost(30, loss="squared"), binary, id="AdaBoost squared"),
        pytest.param(AdaBoostM1(30), y, id="AdaBoost.M1"),
        pytest.param(SAMME(30), y, id="SAMME"),
        pytest.param(AdaBoostMH(30), y, id="AdaBoost.MH"),
    ]


@pytest.mark.parametrize(("model", "y"), estimators())
def test_staged_results_end_at_the_final_ones(model: Any, y: np.ndarray) -> None:
    X, _ = iris()
    model.fit(X, y)
    staged = list(model.staged_decision_function(X))
    assert len(staged) == model.n_rounds_
    assert staged[-1] == pytest.approx(model.decision_function(X))
    assert list(model.staged_predict_proba(X))[-1] == pytest.approx(model.predict_proba(X))
    assert np.array_equal(list(model.staged_predict(X))[-1], model.predict(X))
    assert model.staged_error(X, y)[-1] == pytest.approx(np.mean(model.predict(X) != y))


@pytest.mark.parametrize(("model", "y"), estimators())
def test_probabilities_agree_with_predictions(model: Any, y: np.ndarray) -> None:
    X, _ = iris()
    model.fit(X, y)
    proba = model.predict_proba(X)
    assert np.all(proba >= 0)
    assert np.allclose(proba.sum(axis=1), 1)
    assert np.array_equal(model.classes_[np.argmax(proba, axis=1)], model.predict(X))


@pytest.mark.parametrize(("model", "y"), estimators())
def test_pickling_keeps_predictions(model: Any, y: np.ndarray) -> None:
    X, _ = iris()
    model.fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize(("model", "y"), estimators())
def test_extreme_sample_weights_give_no_nan(model: Any, y: np.ndarray) -> None:
    X, _ = iris()
    weights = np.where(np.arange(len(y)) % 2 == 0, 1e-300, 1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(X, y, sample_weight=weights)
        assert np.all(np.isfinite(model.predict_proba(X)))
        assert np.all(np.isfinite(model.round_weights_))


def test_invalid_input_is_refused_clearly() -> None:
    X, y = iris()
    with pytest.raises(ValueError, match="AdaBoost is for two classes, y has 3"):
        AdaBoost(5).fit(X, y)
    with pytest.raises(ValueError, match="y needs at least 2 classes, got 1"):
        SAMME(5).fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="X has 150 samples but y has 149"):
        AdaBoostM1(5).fit(X, y[:-1])
    with pytest.raises(ValueError, match="loss must be one of exponential, logistic, squared"):
        AdaBoost(5, loss="hinge").fit(X, y == 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_rounds must be at least 1"):
        SAMME(0).fit(X, y)
    with pytest.raises(ValueError, match="indicator matrix y must hold only 0 and 1"):
        AdaBoostMH(5).fit(X, np.full((150, 2), 2))
    with pytest.raises(NotFittedError, match="not fitted yet"):
        SAMME(5).predict(X)
    with pytest.raises(ValueError, match="y contains NaN"):
        AdaBoost(5).fit(X, np.where(y == 1, np.nan, 1.0))
