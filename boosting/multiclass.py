"""AdaBoost.M1 and SAMME: several classes, one label per sample, a vote per round.

References
----------
Freund & Schapire, "A decision-theoretic generalization of on-line learning and an
application to boosting", J. Comput. Syst. Sci. 55 (1997): AdaBoost.M1 (fig. 2).
Zhu, Zou, Rosset & Hastie, "Multi-class AdaBoost", Statistics and Its Interface 2 (2009):
SAMME.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import check_same_length, check_sample_weight, class_labels
from boosting._learner_boosting import CHANCE_TOLERANCE, LearnerState, WeakLearnerBoosting
from boosting._loop import ERROR_FLOOR, Step, StopReason
from boosting.learners import Outputs


@dataclass(frozen=True, slots=True)
class _Round:
    """How an AdaBoost.M1 or SAMME round with a given error weighs and re-weights."""

    weight: float  # α_t, the round's vote
    beta: float  # β_t (AdaBoost.M1; NaN for SAMME)
    right_scale: float  # D_{t+1} ∝ D_t times this where h_t is right, D_t where it is wrong


class _Multiclass(WeakLearnerBoosting):
    """Shared by AdaBoost.M1 and SAMME: one-hot hypotheses, a vote per round.

    Both predict from the weighted votes F_k(x) = Σ_t α_t [h_t(x) = k] (see `SAMME`
    for their link to probabilities).
    """

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Fit the round weights (see the class for the equations of the variant).

        Parameters
        ----------
        X : array-like
            What the learner reads: features of shape (n_samples, n_features) for decision
            stumps; for a fixed pool, its class predictions of shape (n_samples,
            n_hypotheses), indices into ``classes_`` or −1 to abstain.
        y : array-like of shape (n_samples,)
            Labels of at least two classes.
        sample_weight : array-like of shape (n_samples,), optional
            Finite, non-negative, with a positive sum; D_1 is proportional to it.
            Default: uniform.

        Returns
        -------
        AdaBoostM1 or SAMME
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
        classes, index = class_labels(y, 2)
        check_same_length(X, index)
        weights = check_sample_weight(sample_weight, index.shape[0])
        self.classes_ = classes
        self.n_classes_ = len(classes)
        search = self._weak_learner().prepare(X, Outputs.LABELS, self.n_classes_)
        return LearnerState(search, index, weights, weights.copy(), np.zeros(0))

    def _error_limit(self) -> float:
        raise NotImplementedError

    def _round(self, error: float) -> _Round:
        """Weigh a round with weighted error ε_t: its α_t, β_t and re-weighting."""
        raise NotImplementedError

    def _step(self, state: LearnerState) -> Step:
        D = state.distribution
        rows = np.arange(D.shape[0])
        G = np.zeros((D.shape[0], self.n_classes_))
        G[rows, state.targets] = D
        choice = state.search.best(G)
        correct = choice.outputs[rows, state.targets] > 0
        error = float(D[~correct].sum())
        if error >= self._error_limit() - CHANCE_TOLERANCE:
            # A learner ranking by another criterion (Gini) may have passed over a
            # hypothesis that is good enough: stop only if the least wrong one fails too.
            choice = state.search.least_wrong(G)
            correct = choice.outputs[rows, state.targets] > 0
            error = float(D[~correct].sum())
        if error >= self._error_limit() - CHANCE_TOLERANCE:
            return Step(choice.hypothesis, error, stop=StopReason.NO_BETTER_THAN_CHANCE)
        this_round = self._round(max(error, ERROR_FLOOR))
        if error <= ERROR_FLOOR:
            return Step(
                choice.hypothesis,
                error,
                this_round.weight,
                this_round.beta,
                stop=StopReason.PERFECT,
            )
        updated = np.where(correct, D * this_round.right_scale, D)
        state.distribution = updated / updated.sum()
        return Step(choice.hypothesis, error, this_round.weight, this_round.beta)

    def _labels(self, decision: NDArray[np.float64]) -> NDArray[Any]:
        result: NDArray[Any] = self.classes_[np.argmax(decision, axis=1)]
        return result

    def _probabilities(self, decision: NDArray[np.float64]) -> NDArray[np.float64]:
        shifted = np.exp(decision - decision.max(axis=1, keepdims=True))
        result: NDArray[np.float64] = shifted / shifted.sum(axis=1, keepdims=True)
        return result


class AdaBoostM1(_Multiclass):
    """AdaBoost.M1 (Freund & Schapire 1997, fig. 2; D'Angelo 2014).

    ε_t = Σ_{i: h_t(x_i) ≠ y_i} D_t(i); fitting stops when ε_t ≥ ½ (that round is not
    kept); β_t = ε_t/(1 − ε_t); D_{t+1}(i) ∝ D_t(i) β_t where h_t is right; the final
    hypothesis is argmax_y Σ_{t: h_t(x) = y} ln(1/β_t).

    ``decision_function`` gives those votes F_y(x), shape (n_samples, n_classes);
    ``predict`` is their argmax (ties: the first class); ``predict_proba`` is
    P(y | x) ∝ exp(F_y(x)), the link of `SAMME`.

    Parameters
    ----------
    n_rounds : int, >= 1
        Maximum number of rounds T.
    learner : WeakLearner, optional
        Default `DecisionStumps` (each side predicts a class); a
        `FixedPool` boosts pre-trained classifiers.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes_,)
        The labels of y, sorted.
    n_classes_ : int
        Number of classes K, at least 2.
    hypotheses_ : Bank
        The learner's bank of the hypotheses chosen.
    chosen_ : ndarray of int, shape (n_rounds_,)
        Each round's hypothesis, an index into ``hypotheses_``.
    errors_ : ndarray of shape (n_rounds_,)
        Each round's weighted error ε_t in [0, ½).
    betas_ : ndarray of shape (n_rounds_,)
        Each round's β_t = ε_t/(1 − ε_t).
    round_weights_ : ndarray of shape (n_rounds_,)
        Each round's vote ln(1/β_t).
    hypothesis_weights_ : ndarray of shape (len(hypotheses_),)
        Σ ln(1/β_t) over the rounds that chose each hypothesis.
    selection_counts_ : ndarray of int, shape (len(hypotheses_),)
        How often each hypothesis was chosen.
    n_rounds_ : int
        Rounds kept, at least 1.
    stop_reason_ : StopReason
        Why fitting stopped.
    """

    def _error_limit(self) -> float:
        return 0.5

    def _chance_hint(self) -> str:
        return (
            " (AdaBoost.M1 needs an error below 1/2; SAMME only below 1 − 1/K = "
            f"{1 - 1 / self.n_classes_:.3f})"
        )

    def _round(self, error: float) -> _Round:
        beta = error / (1.0 - error)
        return _Round(weight=math.log(1.0 / beta), beta=beta, right_scale=beta)


class SAMME(_Multiclass):
    """SAMME: stagewise additive modelling with a multi-class exponential loss.

    Zhu, Zou, Rosset & Hastie (2009), algorithm 2; D'Angelo (2014). ε_t as for AdaBoost.M1,
    but α_t = ln((1 − ε_t)/ε_t) + ln(K − 1), which is positive as soon as the learner beats
    random guessing (ε_t < 1 − 1/K; otherwise fitting stops and the round is not kept);
    D_{t+1}(i) ∝ D_t(i) exp(α_t) where h_t is wrong; the final hypothesis is
    argmax_k Σ_t α_t [h_t(x) = k]. With two classes it is binary AdaBoost with every α
    doubled: the same predictions.

    ``decision_function`` gives the votes F_k(x) = Σ_t α_t [h_t(x) = k], shape (n_samples,
    n_classes); ``predict`` is their argmax (ties: the first class); ``predict_proba`` is
    P(k | x) ∝ exp(F_k(x)): the minimiser of the multi-class exponential loss (Zhu et al.
    2009, eq. (4)) once α is scaled back to that loss's step, (K − 1)²/K · α, as the
    scalings cancel to exp(F_k). For two classes it is binary AdaBoost's σ(2F).

    Parameters
    ----------
    n_rounds : int, >= 1
        Maximum number of rounds T.
    learner : WeakLearner, optional
        Default `DecisionStumps` (each side predicts a class); a
        `FixedPool` boosts pre-trained classifiers.

    Attributes
    ----------
    classes_, n_classes_, hypotheses_, chosen_, selection_counts_, n_rounds_, stop_reason_
        As for `AdaBoostM1`.
    errors_ : ndarray of shape (n_rounds_,)
        Each round's weighted error ε_t in [0, 1 − 1/K).
    round_weights_ : ndarray of shape (n_rounds_,)
        Each round's α_t = ln((1 − ε_t)/ε_t) + ln(K − 1) > 0.
    hypothesis_weights_ : ndarray of shape (len(hypotheses_),)
        Σ α_t over the rounds that chose each hypothesis.
    betas_ : ndarray of shape (n_rounds_,)
        NaN: SAMME has no β.
    """

    def _error_limit(self) -> float:
        return 1.0 - 1.0 / self.n_classes_

    def _round(self, error: float) -> _Round:
        alpha = math.log((1.0 - error) / error) + math.log(self.n_classes_ - 1)
        # exp(α) itself can overflow when ε is tiny; scaling the right ones by exp(−α)
        # instead is the same distribution after normalising.
        return _Round(weight=alpha, beta=math.nan, right_scale=math.exp(-alpha))
