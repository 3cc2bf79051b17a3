"""AdaBoost.MH: several labels per sample, boosted for the Hamming loss.

References
----------
Schapire & Singer, "Improved boosting algorithms using confidence-rated predictions",
Machine Learning 37 (1999): AdaBoost.MH, real-valued hypotheses.
"""

from __future__ import annotations

import math
from typing import Any, Self

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
from boosting.learners import Outputs


class AdaBoostMH(WeakLearnerBoosting):
    """AdaBoost.MH: multi-label boosting for the Hamming loss (Schapire & Singer 1999).

    One binary problem per label, all sharing one distribution (also D'Angelo 2014).
    D_1(i, l) = w_i / K over (sample, label) pairs; with Y[i, l] = +1 if sample i has label
    l and −1 otherwise, each round the learner returns h_t(x, l) ∈ [−1, 1] maximising
    r_t = Σ D_t(i, l) Y[i, l] h_t(x_i, l); α_t = ½ ln((1 + r_t)/(1 − r_t)) (the round
    stops fitting and is not kept when r_t ≤ 0); D_{t+1}(i, l) ∝ D_t(i, l)
    exp(−α_t Y[i, l] h_t(x_i, l)); the final hypothesis is sign(Σ_t α_t h_t(x, l)) per
    label. A stump outputs v_l φ(x) with φ = ±1 on its two sides and one vote v_l = ±1
    per label. Single-label data (y of shape (n_samples,)) is the case where each sample
    has exactly one label; its prediction is argmax_l F(x, l).

    ``decision_function`` is F(x, l), shape (n_samples, n_labels); ``predict`` returns an
    indicator matrix (F > 0) for multi-label data and labels otherwise; ``predict_proba``
    is σ(2 F(x, l)) per label, normalised over the labels for single-label data.

    Parameters
    ----------
    n_rounds : int, >= 1
        Maximum number of rounds T.
    learner : WeakLearner, optional
        Default `DecisionStumps` (one vote per label); a
        `FixedPool` boosts pre-trained hypotheses.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes_,)
        The labels of y, sorted (0..K−1 for an indicator matrix).
    n_classes_ : int
        Number of labels K, at least 2.
    multilabel_ : bool
        Whether y was an indicator matrix (then ``predict`` returns one too).
    errors_ : ndarray of shape (n_rounds_,)
        Each round's (1 − r_t)/2 in [0, ½): the weighted Hamming error of a ±1 hypothesis.
    round_weights_ : ndarray of shape (n_rounds_,)
        Each round's α_t > 0.
    hypotheses_, chosen_, hypothesis_weights_, selection_counts_, n_rounds_, stop_reason_
        As for `AdaBoost`.
    """

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Fit the round weights (see the class for the equations).

        Parameters
        ----------
        X : array-like
            What the learner reads: features of shape (n_samples, n_features) for decision
            stumps; for a fixed pool, its outputs of shape (n_samples, n_hypotheses,
            n_labels) in [−1, 1], NaN to abstain.
        y : array-like
            Labels of at least two classes, shape (n_samples,), or an indicator matrix of
            0 and 1, shape (n_samples, n_labels) with n_labels >= 2.
        sample_weight : array-like of shape (n_samples,), optional
            Finite, non-negative, with a positive sum; D_1 is proportional to it.
            Default: uniform.

        Returns
        -------
        AdaBoostMH
            The fitted model.

        Raises
        ------
        ValueError
            If ``n_rounds`` is invalid, X or y is malformed, their lengths differ, or the
            first round is no better than chance (nothing is learnt).
        """
        self._run(X, y, sample_weight)
        return self

    def _start(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> LearnerState:
        target = np.asarray(y)
        if target.ndim == 2:
            if target.shape[1] < 2:
                raise ValueError("an indicator matrix y needs at least 2 labels")
            if not np.isin(target, (0, 1)).all():
                raise ValueError("an indicator matrix y must hold only 0 and 1")
            self.multilabel_ = True
            self.classes_ = np.arange(target.shape[1])
            member = target.astype(bool)
        else:
            classes, index = class_labels(target, 2)
            self.multilabel_ = False
            self.classes_ = classes
            member = np.zeros((index.shape[0], len(classes)), dtype=bool)
            member[np.arange(index.shape[0]), index] = True
        check_same_length(X, member)
        self.n_classes_ = member.shape[1]
        weights = check_sample_weight(sample_weight, member.shape[0])
        search = self._weak_learner().prepare(X, Outputs.VOTES, self.n_classes_)
        distribution = np.repeat(weights[:, None] / self.n_classes_, self.n_classes_, axis=1)
        signs = np.where(member, 1.0, -1.0)
        return LearnerState(search, signs, weights, distribution, np.zeros(0))

    def _step(self, state: LearnerState) -> Step:
        D = state.distribution
        choice = state.search.best(D * state.targets)
        agreement = state.targets * choice.outputs
        error = float((D * (0.5 * (1.0 - agreement))).sum())
        if 1.0 - 2.0 * error <= CHANCE_TOLERANCE:
            return Step(choice.hypothesis, error, stop=StopReason.NO_BETTER_THAN_CHANCE)
        floored = max(error, ERROR_FLOOR)
        alpha = 0.5 * math.log((1.0 - floored) / floored)
        if error <= ERROR_FLOOR:
            return Step(choice.hypothesis, error, alpha, stop=StopReason.PERFECT)
        updated = D * np.exp(-alpha * agreement)
        state.distribution = updated / updated.sum()
        return Step(choice.hypothesis, error, alpha)

    def _labels(self, decision: NDArray[np.float64]) -> NDArray[Any]:
        if self.multilabel_:
            return (decision > 0).astype(np.intp)
        result: NDArray[Any] = self.classes_[np.argmax(decision, axis=1)]
        return result

    def _probabilities(self, decision: NDArray[np.float64]) -> NDArray[np.float64]:
        per_label = sigmoid(2.0 * decision)  # each label's own binary link
        if self.multilabel_:
            return per_label
        result: NDArray[np.float64] = per_label / per_label.sum(axis=1, keepdims=True)
        return result
