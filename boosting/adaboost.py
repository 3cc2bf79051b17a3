"""AdaBoost for two classes (three losses), AdaBoost.M1, SAMME and AdaBoost.MH.

Every estimator here boosts a weak learner, either :class:`~boosting.stumps.DecisionStumps`
(the default) or a :class:`~boosting.pool.FixedPool` of pre-trained hypotheses, through
the loop of :mod:`boosting._loop`: each round one step picks the learner's best hypothesis
under the current weights, weighs it and re-weights the samples.

References
----------
Freund & Schapire, "A decision-theoretic generalization of on-line learning and an
application to boosting", J. Comput. Syst. Sci. 55 (1997): AdaBoost, AdaBoost.M1 (fig. 2).
Schapire & Singer, "Improved boosting algorithms using confidence-rated predictions",
Machine Learning 37 (1999): real-valued hypotheses, α = ½ ln((1 + r)/(1 − r)), AdaBoost.MH.
Friedman, Hastie & Tibshirani, "Additive logistic regression", Ann. Statist. 28 (2000):
the losses as stagewise additive modelling and the link P(y = 1 | x) = 1/(1 + e^{−2F}).
Zhu, Zou, Rosset & Hastie, "Multi-class AdaBoost", Statistics and Its Interface 2 (2009):
SAMME.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import check_sample_weight
from boosting._loop import ERROR_FLOOR, BoostingLoop, Step, StopReason
from boosting.learners import Bank, Outputs, Search, WeakLearner
from boosting.stumps import DecisionStumps

Loss = Literal["exponential", "logistic", "squared"]
LOSSES: tuple[Loss, ...] = ("exponential", "logistic", "squared")
# The largest round weight: what a hypothesis with the floored error ε = 1e-10 gets,
# ½ ln((1 − ε)/ε) ≈ 11.5. A perfect hypothesis under the logistic loss would otherwise
# have an infinite line-search minimum.
ALPHA_CAP = 0.5 * math.log((1.0 - ERROR_FLOOR) / ERROR_FLOOR)
# Below this the squared loss has nothing left to fit: the residuals are zero.
RESIDUAL_FLOOR = 1e-20
# An edge this small (or an error this close to the variant's limit) is rounding in the
# re-normalised weights, not skill: the round would add a hypothesis that says nothing.
CHANCE_TOLERANCE = 1e-12


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """1 / (1 + e^{−z}) without overflow for large |z|."""
    result: NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * z))
    return result


def _n_samples(X: ArrayLike) -> int:
    shape = np.shape(X)
    if len(shape) < 2:
        raise ValueError(f"X must have one row per sample, got shape {shape}")
    return int(shape[0])


def _check_same_length(X: ArrayLike, y: NDArray[Any]) -> None:
    if _n_samples(X) != y.shape[0]:
        raise ValueError(f"X has {_n_samples(X)} samples but y has {y.shape[0]}")


def _class_labels(y: ArrayLike, minimum: int) -> tuple[NDArray[Any], NDArray[np.intp]]:
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y must have shape (n_samples,), got {labels.shape}")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError("y contains NaN or infinite labels")
    classes, index = np.unique(labels, return_inverse=True)
    if len(classes) < minimum:
        raise ValueError(f"y needs at least {minimum} classes, got {len(classes)}")
    return classes, index.astype(np.intp)


@dataclass
class _State:
    search: Search
    targets: NDArray[Any]  # ±1 signs (binary, per label for MH) or class indices
    weights: NDArray[np.float64]  # the sample weights, summing to 1
    distribution: NDArray[np.float64]  # D_t (per sample, or per sample and label for MH)
    scores: NDArray[np.float64]  # F_{t-1} on the training samples (binary AdaBoost)


class _WeakLearnerBoosting(BoostingLoop):
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

    def _n_hypotheses(self, state: _State) -> int:
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
            F(x), of shape (n_samples,) for :class:`AdaBoost` and (n_samples, n_classes)
            for the multi-class variants (see the class for its meaning).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X does not match the training data.
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
            F after rounds 1, 2, …, ``n_rounds_``, shaped as :meth:`decision_function`; the
            last equals it.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X does not match the training data.
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
            Labels from ``classes_``, shape (n_samples,); for :class:`AdaBoostMH` fitted on
            an indicator matrix, an indicator matrix of shape (n_samples, n_labels).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X does not match the training data.
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
            :class:`AdaBoostMH` on an indicator matrix, each label's own probability).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X does not match the training data.
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
            The predictions after rounds 1, 2, …, ``n_rounds_``, shaped as :meth:`predict`;
            the last equals it.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X does not match the training data.
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
            :meth:`predict_proba`.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If X does not match the training data.
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
            n_labels) for :class:`AdaBoostMH` fitted on one.

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
            If X does not match the training data.
        """
        truth = np.asarray(y)
        return np.array([float(np.mean(p != truth)) for p in self.staged_predict(X)])


# --- two classes -------------------------------------------------------------------------


class AdaBoost(_WeakLearnerBoosting):
    """Binary AdaBoost, discrete or real, minimising the exponential, logistic or squared loss.

    With the exponential loss this is AdaBoost (Medici; Martins 2017; Bonifaci): each round
    the learner returns h_t maximising the edge r_t = Σ D_t(i) y_i h_t(x_i) (for h ∈ {−1, 1},
    r = 1 − 2ε with ε the weighted error), weighted by α_t = ½ ln((1 + r_t)/(1 − r_t)),
    which is ½ ln((1 − ε_t)/ε_t) for discrete hypotheses; then D_{t+1}(i) ∝
    D_t(i) exp(−α_t y_i h_t(x_i)). Real-valued hypotheses (h ∈ [−1, 1], from a
    :class:`~boosting.pool.FixedPool`) use the same equations (Bonifaci).

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
        Default :class:`~boosting.stumps.DecisionStumps`; a
        :class:`~boosting.pool.FixedPool` boosts pre-trained hypotheses.
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

    def _start(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> _State:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        classes, index = _class_labels(y, 2)
        if len(classes) > 2:
            raise ValueError(
                f"AdaBoost is for two classes, y has {len(classes)}; use SAMME, "
                "AdaBoostM1 or AdaBoostMH"
            )
        _check_same_length(X, index)
        weights = check_sample_weight(sample_weight, index.shape[0])
        self.classes_ = classes
        search = self._weak_learner().prepare(X, Outputs.SIGNED, 1)
        signs = np.where(index == 1, 1.0, -1.0)
        return _State(search, signs, weights, weights.copy(), np.zeros(index.shape[0]))

    def _step(self, state: _State) -> Step:
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

    def _squared_step(self, state: _State) -> Step:
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
            positive = _sigmoid(2.0 * decision)  # Friedman, Hastie & Tibshirani (2000), lemma 1
        elif self.loss == "logistic":
            positive = _sigmoid(decision)  # the binomial log-likelihood's own link
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
        curvature = float(np.dot(wrong, yh * yh * (1.0 - _sigmoid(-(y * scores + alpha * yh)))))
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


# --- several classes, one label each ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Round:
    """How an AdaBoost.M1 or SAMME round with a given error weighs and re-weights."""

    weight: float  # α_t, the round's vote
    beta: float  # β_t (AdaBoost.M1; NaN for SAMME)
    right_scale: float  # D_{t+1} ∝ D_t times this where h_t is right, D_t where it is wrong


class _Multiclass(_WeakLearnerBoosting):
    """Shared by AdaBoost.M1 and SAMME: one-hot hypotheses, a vote per round.

    Both predict from the weighted votes F_k(x) = Σ_t α_t [h_t(x) = k] (see :class:`SAMME`
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

    def _start(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> _State:
        classes, index = _class_labels(y, 2)
        _check_same_length(X, index)
        weights = check_sample_weight(sample_weight, index.shape[0])
        self.classes_ = classes
        self.n_classes_ = len(classes)
        search = self._weak_learner().prepare(X, Outputs.LABELS, self.n_classes_)
        return _State(search, index, weights, weights.copy(), np.zeros(0))

    def _error_limit(self) -> float:
        raise NotImplementedError

    def _round(self, error: float) -> _Round:
        """Weigh a round with weighted error ε_t: its α_t, β_t and re-weighting."""
        raise NotImplementedError

    def _step(self, state: _State) -> Step:
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
    P(y | x) ∝ exp(F_y(x)), the link of :class:`SAMME`.

    Parameters
    ----------
    n_rounds : int, >= 1
        Maximum number of rounds T.
    learner : WeakLearner, optional
        Default :class:`~boosting.stumps.DecisionStumps` (each side predicts a class); a
        :class:`~boosting.pool.FixedPool` boosts pre-trained classifiers.

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
        Default :class:`~boosting.stumps.DecisionStumps` (each side predicts a class); a
        :class:`~boosting.pool.FixedPool` boosts pre-trained classifiers.

    Attributes
    ----------
    classes_, n_classes_, hypotheses_, chosen_, selection_counts_, n_rounds_, stop_reason_
        As for :class:`AdaBoostM1`.
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


# --- several labels per sample ---------------------------------------------------------


class AdaBoostMH(_WeakLearnerBoosting):
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
        Default :class:`~boosting.stumps.DecisionStumps` (one vote per label); a
        :class:`~boosting.pool.FixedPool` boosts pre-trained hypotheses.

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
        As for :class:`AdaBoost`.
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

    def _start(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> _State:
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
            classes, index = _class_labels(target, 2)
            self.multilabel_ = False
            self.classes_ = classes
            member = np.zeros((index.shape[0], len(classes)), dtype=bool)
            member[np.arange(index.shape[0]), index] = True
        _check_same_length(X, member)
        self.n_classes_ = member.shape[1]
        weights = check_sample_weight(sample_weight, member.shape[0])
        search = self._weak_learner().prepare(X, Outputs.VOTES, self.n_classes_)
        distribution = np.repeat(weights[:, None] / self.n_classes_, self.n_classes_, axis=1)
        signs = np.where(member, 1.0, -1.0)
        return _State(search, signs, weights, distribution, np.zeros(0))

    def _step(self, state: _State) -> Step:
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
        per_label = _sigmoid(2.0 * decision)  # each label's own binary link
        if self.multilabel_:
            return per_label
        result: NDArray[np.float64] = per_label / per_label.sum(axis=1, keepdims=True)
        return result
