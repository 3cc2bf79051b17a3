"""What AdaBoost, AdaBoost.M1, SAMME and AdaBoost.MH share: boosting a weak learner.

Each of them boosts a weak learner, either `DecisionStumps` (the
default) or a `FixedPool` of pre-trained hypotheses, through the loop
of `boosting._loop`: each round one step picks the learner's best hypothesis under the
current weights, weighs it and re-weights the samples. What they share beyond the loop is
here: the learner, the bank of the hypotheses chosen, the weighted sums F(x) = Σ_t α_t h_t(x)
and every prediction method built on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._loop import BoostingLoop
from boosting.learners import Bank, Search, WeakLearner
from boosting.stumps import DecisionStumps

# An edge this small (or an error this close to the variant's limit) is rounding in the
# re-normalised weights, not skill: the round would add a hypothesis that says nothing.
CHANCE_TOLERANCE = 1e-12


def sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """1 / (1 + e^{−z}) without overflow for large |z|."""
    result: NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * z))
    return result


@dataclass
class LearnerState:
    """What a learner-based variant carries from one round to the next."""

    search: Search
    targets: NDArray[Any]  # ±1 signs (binary, per label for MH) or class indices
    weights: NDArray[np.float64]  # the sample weights, summing to 1
    distribution: NDArray[np.float64]  # D_t (per sample, or per sample and label for MH)
    scores: NDArray[np.float64]  # F_{t-1} on the training samples (binary AdaBoost)


class WeakLearnerBoosting(BoostingLoop):
    """What the learner-based variants share.

    The learner, the fitted bank of hypotheses and the weighted sums that every prediction
    starts from.
    """

    learner: WeakLearner | None

    def __init__(self, n_rounds: int = 100, *, learner: WeakLearner | None = None) -> None:
        super().__init__(n_rounds)
        self.learner = learner

    def _boost(self, X: Any, y: Any, sample_weight: Any) -> Any:
        state = super()._boost(X, y, sample_weight)
        if self.n_rounds_ == 0:
            # Unlike M2, whose pool of plausibility vectors has a consensus to fall back
            # on, a model without a single round would answer the first class for everything.
            raise ValueError(
                f"{type(self).__name__} learnt nothing: the best hypothesis of the first "
                f"round has error {self.stopping_error_:.3f}, no better than chance"
                f"{self._chance_hint()}"
            )
        return state

    def _chance_hint(self) -> str:
        return ""

    def _weak_learner(self) -> WeakLearner:
        return self.learner if self.learner is not None else DecisionStumps()

    def _n_hypotheses(self, state: LearnerState) -> int:
        self.hypotheses_: Bank = state.search.bank()
        return len(self.hypotheses_)

    def _sums(self, X: ArrayLike) -> NDArray[np.float64]:
        """F(x) = Σ_t α_t h_t(x), shape (n_samples, n_outputs)."""
        self._check_fitted()
        return self.hypotheses_.evaluate(X).weighted_sum(self.hypothesis_weights_)

    def _staged_sums(self, X: ArrayLike) -> Iterator[NDArray[np.float64]]:
        """F after each round 1..n_rounds_ (the last equals ``_sums``)."""
        self._check_fitted()
        evaluated = self.hypotheses_.evaluate(X)
        total: NDArray[np.float64] | None = None
        for hypothesis, weight in zip(self.chosen_, self.round_weights_, strict=True):
            step = weight * evaluated.output(int(hypothesis))
            total = step if total is None else total + step
            yield total

    # Each variant says what its sums mean: the decision function, the label it predicts
    # and the probabilities (its link), from which every prediction method follows.

    def _decision(self, sums: NDArray[np.float64]) -> NDArray[np.float64]:
        return sums

    def _labels(self, decision: NDArray[np.float64]) -> NDArray[Any]:
        raise NotImplementedError

    def _probabilities(self, decision: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Compute the weighted sum of the hypotheses, F(x) = Σ_t α_t h_t(x).

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.

        Returns
        -------
        ndarray
            F(x), of shape (n_samples,) for `AdaBoost` and
            (n_samples, n_classes) for the multi-class variants (see the class for its
            meaning).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        return self._decision(self._sums(X))

    def staged_decision_function(self, X: ArrayLike) -> Iterator[NDArray[np.float64]]:
        """Compute the decision function after each round 1..n_rounds_.

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.

        Yields
        ------
        ndarray
            F after rounds 1, 2, …, ``n_rounds_``, shaped as `decision_function`; the
            last equals it.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        for sums in self._staged_sums(X):
            yield self._decision(sums)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict with the final hypothesis of the variant (see the class).

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.

        Returns
        -------
        ndarray
            Labels from ``classes_``, shape (n_samples,); for
            `AdaBoostMH` fitted on an indicator matrix, an
            indicator matrix of shape (n_samples, n_labels).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        return self._labels(self.decision_function(X))

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Estimate class probabilities through the variant's link (see the class).

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of ``classes_`` in [0, 1], rows summing to 1 (for
            `AdaBoostMH` on an indicator matrix, each label's
            own probability).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        return self._probabilities(self.decision_function(X))

    def staged_predict(self, X: ArrayLike) -> Iterator[NDArray[Any]]:
        """Predict after each round 1..n_rounds_.

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.

        Yields
        ------
        ndarray
            The predictions after rounds 1, 2, …, ``n_rounds_``, shaped as `predict`;
            the last equals it.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        for decision in self.staged_decision_function(X):
            yield self._labels(decision)

    def staged_predict_proba(self, X: ArrayLike) -> Iterator[NDArray[np.float64]]:
        """Estimate class probabilities after each round 1..n_rounds_.

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.

        Yields
        ------
        ndarray of shape (n_samples, n_classes)
            The probabilities after rounds 1, 2, …, ``n_rounds_``; the last equals
            `predict_proba`.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        for decision in self.staged_decision_function(X):
            yield self._probabilities(decision)

    def staged_error(self, X: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        """Measure the share of wrong predictions after each round: a training or test curve.

        Parameters
        ----------
        X : array-like
            What the learner reads, as in ``fit``: features of shape (n_samples,
            n_features) for decision stumps, the pool's outputs for a fixed pool.
        y : array-like
            The true labels, shape (n_samples,), or an indicator matrix (n_samples,
            n_labels) for `AdaBoostMH` fitted on one.

        Returns
        -------
        ndarray of shape (n_rounds_,)
            Values in [0, 1]: the share of wrong labels after rounds 1, 2, …, ``n_rounds_``
            (for an indicator matrix, of wrong (sample, label) pairs: the Hamming loss of
            Schapire & Singer 1999).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X is malformed or unlike the training data.
        """
        truth = np.asarray(y)
        return np.array([float(np.mean(p != truth)) for p in self.staged_predict(X)])
