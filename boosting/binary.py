"""Binary AdaBoost, discrete or real, minimising the exponential, logistic or squared loss.

References
----------
Freund & Schapire, "A decision-theoretic generalization of on-line learning and an
application to boosting", J. Comput. Syst. Sci. 55 (1997): AdaBoost.
Schapire & Singer, "Improved boosting algorithms using confidence-rated predictions",
Machine Learning 37 (1999): real-valued hypotheses, α = ½ ln((1 + r)/(1 − r)).
Friedman, Hastie & Tibshirani, "Additive logistic regression", Ann. Statist. 28 (2000):
the losses as stagewise additive modelling and the link P(y = 1 | x) = 1/(1 + e^{−2F}).
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import check_same_length, check_sample_weight, class_labels
from boosting._learner_boosting import (
    CHANCE_TOLERANCE,
    LearnerState,
    WeakLearnerBoosting,
    sigmoid,
)
from boosting._loop import ERROR_FLOOR, Step, StopReason
from boosting.learners import Outputs, WeakLearner

Loss = Literal["exponential", "logistic", "squared"]
LOSSES: tuple[Loss, ...] = ("exponential", "logistic", "squared")
# The largest round weight: what a hypothesis with the floored error ε = 1e-10 gets,
# ½ ln((1 − ε)/ε) ≈ 11.5. A perfect hypothesis under the logistic loss would otherwise
# have an infinite line-search minimum.
ALPHA_CAP = 0.5 * math.log((1.0 - ERROR_FLOOR) / ERROR_FLOOR)
# Below this the squared loss has nothing left to fit: the residuals are zero.
RESIDUAL_FLOOR = 1e-20


class AdaBoost(WeakLearnerBoosting):
    """Binary AdaBoost, discrete or real, minimising the exponential, logistic or squared loss.

    With the exponential loss this is AdaBoost (Medici; Martins 2017; Bonifaci): each round
    the learner returns h_t maximising the edge r_t = Σ D_t(i) y_i h_t(x_i) (for h ∈ {−1, 1},
    r = 1 − 2ε with ε the weighted error), weighted by α_t = ½ ln((1 + r_t)/(1 − r_t)),
    which is ½ ln((1 − ε_t)/ε_t) for discrete hypotheses; then D_{t+1}(i) ∝
    D_t(i) exp(−α_t y_i h_t(x_i)). Real-valued hypotheses (h ∈ [−1, 1], from a
    `FixedPool`) use the same equations (Bonifaci).

    The other losses follow the stagewise loop of Vîntur (2019) on F = Σ α_t h_t:

    * ``logistic``, L = ln(1 + e^{−yF}): D_t(i) ∝ w_i / (1 + e^{y_i F(x_i)}); h_t maximises
      the edge under D_t and α_t minimises the loss along h_t (Newton's method).
    * ``squared``, L = (y − F)²: h_t maximises Σ w_i r_i h_t(x_i) with the residuals
      r = y − F, and α_t = Σ w r h / Σ w h² (least squares).

    ``decision_function`` is F(x) = Σ_t α_t h_t(x); ``predict`` is sign(F) as a label
    (F = 0 gives ``classes_[0]``); ``predict_proba`` goes through each loss's link:
    P(classes_[1] | x) = σ(2F) for the exponential loss (Friedman, Hastie & Tibshirani
    2000, lemma 1), σ(F) for the logistic one (the binomial log-likelihood), and (1 + F)/2
    clipped to [0, 1] for the squared one (F estimates E[y | x] = 2p − 1).

    Parameters
    ----------
    n_rounds : int, >= 1
        Maximum number of rounds T.
    learner : WeakLearner, optional
        Default `DecisionStumps`; a
        `FixedPool` boosts pre-trained hypotheses.
    loss : {"exponential", "logistic", "squared"}, default "exponential"
        The loss minimised.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels, sorted; ``classes_[1]`` is coded +1.
    hypotheses_ : Bank
        The learner's bank of the hypotheses chosen.
    chosen_ : ndarray of int, shape (n_rounds_,)
        Each round's hypothesis, an index into ``hypotheses_``.
    errors_ : ndarray of shape (n_rounds_,)
        Each round's weighted error ε_t = (1 − r_t)/2 in [0, ½) (for ``squared``, the
        weighted share of samples whose residual h_t points the wrong way).
    round_weights_ : ndarray of shape (n_rounds_,)
        Each round's α_t > 0.
    hypothesis_weights_ : ndarray of shape (len(hypotheses_),)
        Σ α_t over the rounds that chose each hypothesis.
    selection_counts_ : ndarray of int, shape (len(hypotheses_),)
        How often each hypothesis was chosen.
    n_rounds_ : int
        Rounds kept, at least 1.
    stop_reason_ : StopReason
        ``no_better_than_chance`` when no hypothesis has a positive edge (the round is not
        kept); ``perfect`` when one makes no error (kept, α capped at ≈ 11.5).
    """

    def __init__(
        self, n_rounds: int = 100, *, learner: WeakLearner | None = None, loss: Loss = "exponential"
    ) -> None:
        super().__init__(n_rounds, learner=learner)
        self.loss = loss

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Fit the round weights α_t (see the class for the equations of each loss).

        Parameters
        ----------
        X : array-like
            What the learner reads: features of shape (n_samples, n_features) for decision
            stumps; for a fixed pool, its outputs of shape (n_samples, n_hypotheses) in
            [−1, 1], NaN to abstain.
        y : array-like of shape (n_samples,)
            Labels of exactly two classes.
        sample_weight : array-like of shape (n_samples,), optional
            Finite, non-negative, with a positive sum; D_1 is proportional to it.
            Default: uniform.

        Returns
        -------
        AdaBoost
            The fitted model.

        Raises
        ------
        ValueError
            If ``n_rounds`` or ``loss`` is invalid, X or y is malformed, their lengths
            differ, or the first round is no better than chance (nothing is learnt).
        """
        self._run(X, y, sample_weight)
        return self

    def _start(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> LearnerState:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        classes, index = class_labels(y, 2)
        if len(classes) > 2:
            raise ValueError(
                f"AdaBoost is for two classes, y has {len(classes)}; use SAMME, "
                "AdaBoostM1 or AdaBoostMH"
            )
        check_same_length(X, index)
        weights = check_sample_weight(sample_weight, index.shape[0])
        self.classes_ = classes
        search = self._weak_learner().prepare(X, Outputs.SIGNED, 1)
        signs = np.where(index == 1, 1.0, -1.0)
        return LearnerState(search, signs, weights, weights.copy(), np.zeros(index.shape[0]))

    def _step(self, state: LearnerState) -> Step:
        y = state.targets
        if self.loss == "squared":
            return self._squared_step(state)
        if self.loss == "logistic":
            # The logistic loss's weights: w_i / (1 + e^{y_i F_i}), normalised.
            state.distribution = _logistic_distribution(state.weights, y * state.scores)
        D = state.distribution
        choice = state.search.best((D * y)[:, None])
        h = choice.outputs[:, 0]
        # ε = Σ D (1 − y h)/2: a sum of non-negative terms, exactly 0 for a perfect h
        error = float(np.dot(D, 0.5 * (1.0 - y * h)))
        if 1.0 - 2.0 * error <= CHANCE_TOLERANCE:
            return Step(choice.hypothesis, error, stop=StopReason.NO_BETTER_THAN_CHANCE)
        floored = max(error, ERROR_FLOOR)
        if self.loss == "exponential":
            alpha = 0.5 * math.log((1.0 - floored) / floored)
        else:
            alpha = _logistic_line_search(y, state.scores, h, state.weights)
        state.scores = state.scores + alpha * h
        if error <= ERROR_FLOOR:
            return Step(choice.hypothesis, error, alpha, stop=StopReason.PERFECT)
        if self.loss == "exponential":
            updated = D * np.exp(-alpha * y * h)
            state.distribution = updated / updated.sum()
        return Step(choice.hypothesis, error, alpha)

    def _squared_step(self, state: LearnerState) -> Step:
        residual = state.targets - state.scores
        weighted = state.weights * residual
        choice = state.search.best_direction(weighted[:, None], state.weights)
        h = choice.outputs[:, 0]
        along = float(np.dot(weighted, h))
        length = float(np.dot(state.weights, h * h))
        if along <= 0.0 or length <= 0.0:
            return Step(choice.hypothesis, 0.5, stop=StopReason.NO_BETTER_THAN_CHANCE)
        alpha = along / length
        state.scores = state.scores + alpha * h
        size = np.abs(weighted)
        error = float(size[h * residual < 0].sum() / size.sum())
        left = state.targets - state.scores
        if float(np.dot(state.weights, left * left)) <= RESIDUAL_FLOOR:
            return Step(choice.hypothesis, error, alpha, stop=StopReason.PERFECT)
        return Step(choice.hypothesis, error, alpha)

    def _decision(self, sums: NDArray[np.float64]) -> NDArray[np.float64]:
        return sums[:, 0]  # F(x); positive means classes_[1]

    def _labels(self, decision: NDArray[np.float64]) -> NDArray[Any]:
        # sign(F), with F = 0 going to classes_[0]
        result: NDArray[Any] = self.classes_[(decision > 0).astype(np.intp)]
        return result

    def _probabilities(self, decision: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.loss == "exponential":
            positive = sigmoid(2.0 * decision)  # Friedman, Hastie & Tibshirani (2000), lemma 1
        elif self.loss == "logistic":
            positive = sigmoid(decision)  # the binomial log-likelihood's own link
        else:
            positive = np.clip(0.5 * (1.0 + decision), 0.0, 1.0)  # F estimates E[y | x] = 2p − 1
        return np.column_stack([1.0 - positive, positive])


def _logistic_line_search(
    y: NDArray[np.float64],
    scores: NDArray[np.float64],
    h: NDArray[np.float64],
    weights: NDArray[np.float64],
) -> float:
    """argmin_α Σ w ln(1 + e^{−y (F + α h)}), α ∈ [0, ALPHA_CAP], by safeguarded Newton.

    The loss is convex in α and decreasing at 0 (the edge is positive), so Newton steps
    from 0, kept inside a shrinking bracket, converge; the cap bounds α for a hypothesis
    that classifies every sample right, whose loss decreases without end.
    """
    low, high, alpha = 0.0, ALPHA_CAP, 0.0
    yh = y * h
    for _ in range(100):
        wrong = _logistic_distribution(weights, y * scores + alpha * yh)
        # Derivatives divided by Σ w σ(−margin): the gradient is minus the edge under the
        # logistic distribution, so the tolerance means the same however small the loss.
        gradient = -float(np.dot(wrong, yh))
        curvature = float(np.dot(wrong, yh * yh * (1.0 - sigmoid(-(y * scores + alpha * yh)))))
        if gradient < 0:
            low = alpha
        else:
            high = alpha
        if abs(gradient) <= 1e-12 or high - low <= 1e-12:
            break
        step = alpha - gradient / curvature if curvature > 0 else math.inf
        alpha = step if low < step < high else 0.5 * (low + high)
    return alpha


def _logistic_distribution(
    weights: NDArray[np.float64], margins: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Compute w_i / (1 + e^{margin_i}), normalised, in logs.

    Margins of hundreds (a well-fitted sample) must not underflow every weight to zero.
    """
    with np.errstate(divide="ignore"):  # a zero sample weight stays zero
        logs = np.log(weights) - np.logaddexp(0.0, margins)
    unnormalised = np.exp(logs - logs.max())
    result: NDArray[np.float64] = unnormalised / unnormalised.sum()
    return result
