"""AdaBoost.M2 over a fixed pool of pre-trained hypotheses.

Freund & Schapire, "A decision-theoretic generalization of on-line learning and an
application to boosting", J. Comput. Syst. Sci. 55 (1997), section 4.2 (figure 3). The
"weak learner" does not train anything: every round it returns the pool member with the
smallest pseudo-loss under the current distribution over mislabel pairs.

Notation: m samples, B hypotheses, K classes; ``H[i, b, y]`` in [0, 1] is hypothesis b's
plausibility of class y for sample i (NaN for every class where b abstains on i).

The pseudo-loss of hypothesis b under a distribution D over mislabel pairs (i, y), y ≠ y_i,
is eps_b = 1/2 Σ D(i, y) (1 − H[i, b, y_i] + H[i, b, y]). With the margin of a pair,
M[b, (i, y)] = H[i, b, y_i] − H[i, b, y], and Σ D = 1 this is eps = 1/2 (1 − M @ D): one
matrix-vector product over a float32 array precomputed once, which is what makes a round
run at memory speed. The update D(i, y) ← D(i, y) β^{1/2 (1 + M[b_t, (i, y)])} / Z is the
one of figure 3; the variant β^{1/2 (M)} found in some write-ups differs by the constant β^{1/2},
which the normalisation Z removes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._checks import (
    BLOCK_SAMPLES,
    as_plausibility_array,
    check_labels,
    check_plausibilities,
    check_sample_weight,
    checked_block,
)
from boosting._loop import ERROR_FLOOR, BoostingLoop, Step, StopReason
from boosting.soft_labels import soft_label_rows

# Mislabel pairs per block of the pseudo-loss product: small blocks keep each product in
# cache and single-threaded in the BLAS, which makes rounds fast and steady on a busy machine.
PRODUCT_BLOCK = 8_192
# Hypotheses whose float32 pseudo-loss is this close to the smallest are re-scored exactly.
# The float32 product's error is about 1e-9 in practice and below ~2e-7 by a random-walk
# bound (unit roundoff 6e-8 times the partial sums of an 8,192-pair block), so the exact
# minimum, and the lowest index among exact ties, is always among them.
TIE_WINDOW = 1e-6
# Float64 margin rows kept for re-scoring (least recently used are dropped).
EXACT_ROWS_KEPT = 8
# Below this pseudo-loss the float32 rounding of the margins (about 3e-8 on ε) is no longer
# small next to ε itself, so the chosen hypothesis is scored from H in float64.
EXACT_BELOW = 1e-3


@dataclass
class _M2State:
    H: NDArray[np.floating]  # the caller's array, read again only for exact rows
    y: NDArray[np.intp]
    margins: NDArray[np.float32]  # (B, m * (K - 1)), pairs ordered by sample, then label
    distribution: NDArray[np.float64]  # (m * (K - 1),), sums to 1
    n_classes: int
    history: list[NDArray[np.float64]] | None = field(default=None)
    exact_rows: dict[int, NDArray[np.float64]] = field(default_factory=dict)

    def exact_margins(self, hypothesis: int) -> NDArray[np.float64]:
        """Return the margins of one hypothesis in float64, from H itself.

        They are kept: the same few hypotheses tend to be chosen round after round.
        """
        row = self.exact_rows.pop(hypothesis, None)
        if row is None:
            row = _hypothesis_margins(self.H[:, hypothesis, :], self.y)
            if len(self.exact_rows) >= EXACT_ROWS_KEPT:
                self.exact_rows.pop(next(iter(self.exact_rows)))
        self.exact_rows[hypothesis] = row  # (re)inserted last: the most recently used
        return row


def _mislabel_columns(y: NDArray[np.intp], n_classes: int) -> NDArray[np.intp]:
    """(m, K - 1) wrong labels of each sample, in increasing order."""
    offsets = np.arange(n_classes - 1)[None, :]
    return offsets + (offsets >= y[:, None])


def _pair_margins(
    H: NDArray[np.floating], y: NDArray[np.intp]
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Validate H and build the margins M[b, (i, y)] = H[i, b, y_i] − H[i, b, y].

    Returns the float32 margins of every mislabel pair, pairs ordered by sample and then by
    wrong label, and the (m, B) abstention mask. Abstentions count as the uniform vector
    1/K, whose margins are exactly 0 (pseudo-loss 1/2 on that sample). One blocked pass
    over H: validation and construction share it, and only the result is full size.
    """
    n_samples, n_hypotheses, n_classes = H.shape
    margins = np.empty((n_hypotheses, n_samples * (n_classes - 1)), dtype=np.float32)
    abstaining = np.empty((n_samples, n_hypotheses), dtype=bool)
    for start in range(0, n_samples, BLOCK_SAMPLES):
        stop = min(start + BLOCK_SAMPLES, n_samples)
        block, abstaining[start:stop] = checked_block(H[start:stop], start)
        labels = y[start:stop]
        true = np.take_along_axis(block, labels[:, None, None], axis=2)  # (c, B, 1)
        wrong = np.take_along_axis(block, _mislabel_columns(labels, n_classes)[:, None, :], axis=2)
        margins[:, start * (n_classes - 1) : stop * (n_classes - 1)] = (
            (true - wrong).transpose(1, 0, 2).reshape(n_hypotheses, -1)
        )
    return margins, abstaining


def _hypothesis_margins(
    plausibilities: NDArray[np.floating], y: NDArray[np.intp]
) -> NDArray[np.float64]:
    """Float64 margins h(y_i) − h(y) of one hypothesis, (m, K) → (m (K − 1),) pairs."""
    n_samples, n_classes = plausibilities.shape
    filled = np.nan_to_num(plausibilities.astype(np.float64), nan=1.0 / n_classes)
    true = filled[np.arange(n_samples), y]
    wrong = np.take_along_axis(filled, _mislabel_columns(y, n_classes), axis=1)
    result: NDArray[np.float64] = (true[:, None] - wrong).reshape(-1)
    return result


def _blocked_product(
    margins: NDArray[np.float32], distribution: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Compute margins @ distribution in blocks of pairs, accumulated in float64."""
    weights = distribution.astype(np.float32)
    total = np.zeros(margins.shape[0])
    for start in range(0, margins.shape[1], PRODUCT_BLOCK):
        stop = start + PRODUCT_BLOCK
        total += margins[:, start:stop] @ weights[start:stop]
    return total


def _initial_distribution(
    sample_weight: NDArray[np.float64], n_classes: int
) -> NDArray[np.float64]:
    """D_1 over mislabel pairs: uniform, or in proportion to each sample's weight."""
    return np.repeat(sample_weight / (n_classes - 1), n_classes - 1)


def pseudo_losses(
    H: ArrayLike, y: ArrayLike, distribution: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Compute the pseudo-loss of every hypothesis under a distribution over mislabel pairs.

    ε_b = ½ Σ_{(i, y): y ≠ y_i} D(i, y) (1 − H[i, b, y_i] + H[i, b, y]), the pseudo-loss of
    Freund & Schapire (1997), section 4.2 (figure 3). Computed in float64, directly from
    the definition: a reference for the fast path of `AdaBoostM2`.

    Parameters
    ----------
    H : array-like of shape (n_samples, n_hypotheses, n_classes)
        Plausibilities in [0, 1], NaN for every class where a hypothesis abstains (it then
        counts as the uniform vector 1/K, whose pseudo-loss on that sample is ½).
    y : array-like of shape (n_samples,)
        Integer labels in [0, n_classes).
    distribution : array-like of shape (n_samples, n_classes), optional
        Non-negative weight of the pair (i, y) at [i, y]; entries at the true labels are
        ignored, and the rest is normalised to sum to 1. Default: uniform over the pairs.

    Returns
    -------
    ndarray of shape (n_hypotheses,)
        Pseudo-losses in [0, 1]; ½ is chance.

    Raises
    ------
    ValueError
        If H, y or ``distribution`` is malformed or out of range.
    """
    plaus, _ = check_plausibilities(H)
    n_samples, _, n_classes = plaus.shape
    labels = check_labels(y, n_samples, n_classes)
    filled = np.nan_to_num(plaus.astype(np.float64), nan=1.0 / n_classes)
    if distribution is None:
        weights = np.ones((n_samples, n_classes))
    else:
        weights = np.array(distribution, dtype=np.float64)
        if weights.shape != (n_samples, n_classes):
            raise ValueError(f"distribution must have shape {(n_samples, n_classes)}")
    weights[np.arange(n_samples), labels] = 0.0
    weights /= weights.sum()
    true = filled[np.arange(n_samples), :, labels]  # (m, B)
    margins = true[:, :, None] - filled  # (m, B, K); zero at the true label
    # 1/2 Σ D (1 − margin) with Σ D = 1; an abstention's margins are exactly 0.
    result: NDArray[np.float64] = 0.5 * (1.0 - np.einsum("iy,iby->b", weights, margins))
    return result


def _vote_inputs(H: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate H; return it with abstentions as zeros, and the (m, B) presence mask."""
    plaus, abstaining = check_plausibilities(H)
    available = ~abstaining
    if not available.any(axis=1).all():
        row = int(np.argmin(available.any(axis=1)))
        raise ValueError(f"sample {row}: no hypothesis gives a vector (H[{row}] is all NaN)")
    return np.nan_to_num(plaus.astype(np.float64), nan=0.0), available.astype(np.float64)


def _combine(
    filled: NDArray[np.float64], available: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    weighted = available * weights[None, :]
    total = weighted.sum(axis=1)
    fallback = total <= 0
    if fallback.any():
        weighted[fallback] = available[fallback]
        total = weighted.sum(axis=1)
    scores = np.einsum("ib,iby->iy", weighted, filled) / total[:, None]
    # Plausibilities need not sum to one; the returned probabilities must.
    sums = scores.sum(axis=1, keepdims=True)
    normalised: NDArray[np.float64] = np.divide(
        scores, sums, out=np.full_like(scores, 1.0 / filled.shape[2]), where=sums > 0
    )
    return normalised


def weighted_vote(
    H: ArrayLike, weights: ArrayLike, *, check_input: bool = True
) -> NDArray[np.float64]:
    """Combine plausibility vectors by weight: Σ_b w_b H[i, b] / Σ_b w_b, per sample.

    The final hypothesis of AdaBoost.M2 (Freund & Schapire 1997, figure 3) is the argmax
    of Σ_b w_b H[i, b, y]; divided by Σ_b w_b it is a convex combination of the vectors.
    Only hypotheses that give a vector for a sample take part. Where none of those has a
    positive weight, the plain mean of the ones present is returned (the consensus). Rows
    are normalised to sum to 1.

    Parameters
    ----------
    H : array-like of shape (n_samples, n_hypotheses, n_classes)
        Plausibilities in [0, 1], NaN for every class where a hypothesis abstains; at
        least one hypothesis present per sample.
    weights : array-like of shape (n_hypotheses,)
        Finite, non-negative hypothesis weights w_b.
    check_input : bool, default True
        False skips validating H (as scikit-learn's ``check_input``): for a caller that
        built H itself, with NaN rows for absent hypotheses and at least one present
        hypothesis per sample.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Probabilities in [0, 1], each row summing to 1.

    Raises
    ------
    ValueError
        If H is malformed, a sample has no hypothesis present, or ``weights`` has the
        wrong shape or a negative or non-finite value.
    """
    if check_input:
        filled, available = _vote_inputs(H)
    else:
        plaus = np.asarray(H, dtype=np.float64)
        present = ~np.isnan(plaus[:, :, 0])
        filled, available = np.where(present[:, :, None], plaus, 0.0), present.astype(np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (filled.shape[1],):
        raise ValueError(f"weights must have shape ({filled.shape[1]},), got {w.shape}")
    if not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError("weights must be finite and non-negative")
    return _combine(filled, available, w)


class AdaBoostM2(BoostingLoop):
    """AdaBoost.M2 over a fixed pool of pre-trained hypotheses.

    Freund & Schapire (1997), section 4.2 (figure 3). D_1 is uniform over the mislabel
    pairs (i, y), y ≠ y_i (or in proportion to the sample weights). Each round picks the
    hypothesis b_t of smallest pseudo-loss
    ε_t = ½ Σ D_t(i, y) (1 − H[i, b, y_i] + H[i, b, y]) (ties: the lowest index), stops if
    ε_t ≥ ½, sets β_t = ε_t/(1 − ε_t) and updates
    D_{t+1}(i, y) ∝ D_t(i, y) β_t^{½ (1 + H[i, b_t, y_i] − H[i, b_t, y])}. The final
    hypothesis is argmax_y Σ_b w_b H[i, b, y] with w_b = Σ_{t: b_t = b} ln(1/β_t).

    Parameters
    ----------
    n_rounds : int, >= 1
        Maximum number of boosting rounds T. A hypothesis may be chosen in many rounds.
    store_distributions : bool, default False
        Keep the distribution D_t over mislabel pairs of every round in ``distributions_``
        (each of shape (n_samples, n_classes), zero at the true labels). Costs T × m × K
        floats; meant for analysis and tests.

    Attributes
    ----------
    hypothesis_weights_ : ndarray of shape (n_hypotheses_,)
        w_b = Σ ln(1/β_t) ≥ 0 over the rounds that chose b; zero for hypotheses never
        chosen.
    chosen_ : ndarray of int, shape (n_rounds_,)
        Each round's hypothesis b_t.
    pseudo_losses_ : ndarray of shape (n_rounds_,)
        Each round's pseudo-loss ε_t in [0, ½) (the same array as ``errors_``).
    betas_ : ndarray of shape (n_rounds_,)
        Each round's β_t = ε_t/(1 − ε_t), with ε_t floored at 1e-10.
    round_weights_ : ndarray of shape (n_rounds_,)
        Each round's ln(1/β_t).
    selection_counts_ : ndarray of int, shape (n_hypotheses_,)
        How often each hypothesis was chosen.
    n_rounds_ : int
        Rounds kept (0 when the first round is no better than chance).
    stop_reason_ : StopReason
        ``max_rounds``; ``no_better_than_chance`` (the best pseudo-loss was ≥ 1/2, that
        round is not kept); ``perfect`` (pseudo-loss 0: the round is kept with the finite
        weight ln(1/β) where ε is floored at 1e-10, and fitting stops because the update
        would leave D unchanged).
    n_classes_, n_hypotheses_ : int
        K and B of the training data.
    distributions_ : list of ndarray of shape (n_samples, n_classes)
        D_1, D_2, … when ``store_distributions`` is set.
    """

    def __init__(self, n_rounds: int = 100, *, store_distributions: bool = False) -> None:
        super().__init__(n_rounds)
        self.store_distributions = store_distributions

    def fit(self, H: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> AdaBoostM2:
        """Fit the hypothesis weights w_b (see the class for the equations).

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses, n_classes)
            Plausibilities in [0, 1], n_classes >= 2; NaN for every class where a
            hypothesis abstains (the uniform vector 1/K while fitting, pseudo-loss ½ on
            that sample). At least one hypothesis present per sample.
        y : array-like of shape (n_samples,)
            Integer labels in [0, n_classes).
        sample_weight : array-like of shape (n_samples,), optional
            Finite, non-negative, with a positive sum. D_1 over mislabel pairs is
            proportional to it, each sample's weight split evenly over its K − 1 pairs.
            Default: uniform.

        Returns
        -------
        AdaBoostM2
            The fitted model.

        Raises
        ------
        ValueError
            If ``n_rounds`` is invalid, H, y or ``sample_weight`` is malformed or out of
            range, or every hypothesis abstains on a sample.
        """
        state: _M2State = self._run(H, y, sample_weight)
        if state.history is not None:
            self.distributions_ = [
                self._as_matrix(d, np.asarray(y, dtype=np.intp), state.n_classes)
                for d in state.history
            ]
        return self

    def fit_targets(
        self, H: ArrayLike, targets: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> AdaBoostM2:
        """Fit the hypothesis weights on soft labels: a probability vector per sample.

        Each sample i counts as label c with weight w_i q_i(c), one row per class of
        positive target (`boosting.soft_labels.soft_label_rows`), so D_1 over the mislabel
        triples (i, c, y), y ≠ c, is proportional to w_i q_i(c) / (K − 1) and every round
        is the one of `fit` (Freund & Schapire 1997, figure 3) on those rows. One-hot
        targets give exactly the fit of their labels.

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses, n_classes)
            Plausibilities as for `fit`.
        targets : array-like of shape (n_samples, n_classes)
            Target probabilities in [0, 1], each row summing to 1 (within 1e-6).
        sample_weight : array-like of shape (n_samples,), optional
            Finite, non-negative, with a positive sum. Default: uniform.

        Returns
        -------
        AdaBoostM2
            The fitted model; ``distributions_`` (if stored) are over the labelled rows.

        Raises
        ------
        ValueError
            If H, ``targets`` or ``sample_weight`` is malformed or out of range, their
            numbers of samples differ, or every hypothesis abstains on a sample.
        """
        plaus = as_plausibility_array(H)
        if np.shape(targets)[:1] != plaus.shape[:1]:
            raise ValueError(
                f"targets must have one row per sample of H ({plaus.shape[0]}), "
                f"got shape {np.shape(targets)}"
            )
        rows = soft_label_rows(targets, sample_weight)
        return self.fit(plaus[rows.samples], rows.labels, sample_weight=rows.weights)

    def _start(self, H: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None) -> _M2State:
        plaus = as_plausibility_array(H)
        n_samples, n_hypotheses, n_classes = plaus.shape
        labels = check_labels(y, n_samples, n_classes)
        margins, abstaining = _pair_margins(plaus, labels)
        if abstaining.all(axis=1).any():
            row = int(np.argmax(abstaining.all(axis=1)))
            raise ValueError(f"sample {row}: every hypothesis abstains (H[{row}] is all NaN)")
        weights = check_sample_weight(sample_weight, n_samples)
        self.n_classes_ = n_classes
        self.n_hypotheses_ = n_hypotheses
        distribution = _initial_distribution(weights, n_classes)
        return _M2State(
            H=plaus,
            y=labels,
            margins=margins,
            distribution=distribution,
            n_classes=n_classes,
            history=[distribution.copy()] if self.store_distributions else None,
        )

    def _n_hypotheses(self, state: _M2State) -> int:
        return int(state.margins.shape[0])

    def _step(self, state: _M2State) -> Step:
        # eps_b = 1/2 (1 − Σ_pairs D · M_b): one float32 pass over the margin array finds
        # the candidates; the few near the minimum are then scored exactly in float64, so
        # float32 rounding can neither break a tie nor hide a perfect hypothesis.
        approximate = 0.5 * (1.0 - _blocked_product(state.margins, state.distribution))
        candidates = np.flatnonzero(approximate <= approximate.min() + TIE_WINDOW)
        if len(candidates) == 1 and approximate[candidates[0]] > EXACT_BELOW:
            # The usual case: one clear winner; its float32 margins, summed in float64, give
            # ε to about 3e-8.
            best = int(candidates[0])
            row = state.margins[best].astype(np.float64)
            error = 0.5 * (1.0 - float(row @ state.distribution))
        else:
            exact = [
                0.5 * (1.0 - float(state.exact_margins(int(c)) @ state.distribution))
                for c in candidates
            ]
            best = int(candidates[int(np.argmin(exact))])  # ties: the lowest index
            row = state.exact_margins(best)
            error = max(0.0, min(exact))
        if error >= 0.5:
            return Step(best, error, stop=StopReason.NO_BETTER_THAN_CHANCE)
        floored = max(error, ERROR_FLOOR)
        beta = floored / (1.0 - floored)
        weight = math.log(1.0 / beta)
        if error <= ERROR_FLOOR:
            return Step(best, error, weight, beta, stop=StopReason.PERFECT)
        exponent = 0.5 * (1.0 + row)
        updated = state.distribution * np.exp(math.log(beta) * exponent)
        total = updated.sum()
        if not np.isfinite(total) or total <= 0:  # pragma: no cover - needs ε below the floor
            return Step(best, error, weight, beta, stop=StopReason.PERFECT)
        state.distribution = updated / total
        if state.history is not None:
            state.history.append(state.distribution.copy())
        return Step(best, error, weight, beta)

    @property
    def pseudo_losses_(self) -> NDArray[np.float64]:
        """Each round's pseudo-loss ε_t, the same array as ``errors_``."""
        return self.errors_

    @staticmethod
    def _as_matrix(
        flat: NDArray[np.float64], y: NDArray[np.intp], n_classes: int
    ) -> NDArray[np.float64]:
        matrix = np.zeros((y.shape[0], n_classes))
        np.put_along_axis(
            matrix, _mislabel_columns(y, n_classes), flat.reshape(-1, n_classes - 1), axis=1
        )
        return matrix

    def _prediction_inputs(self, H: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        self._check_fitted()
        shape = np.shape(H)
        if len(shape) == 3 and tuple(shape[1:]) != (self.n_hypotheses_, self.n_classes_):
            raise ValueError(
                f"H must have shape (n_samples, {self.n_hypotheses_}, {self.n_classes_}) "
                f"like the training data, got {tuple(shape)}"
            )
        return _vote_inputs(H)

    def predict_proba(self, H: ArrayLike) -> NDArray[np.float64]:
        """Estimate class probabilities: `weighted_vote` with the fitted weights.

        p(y | i) = Σ_b w_b H[i, b, y] / Σ_b w_b over the hypotheses present, the final
        hypothesis of Freund & Schapire (1997), figure 3, divided by its total weight.
        Where every hypothesis with positive weight abstains (or none has any weight, as
        after a first round no better than chance), the plain mean of the present ones is
        returned: the consensus.

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses_, n_classes_)
            Plausibilities in [0, 1], NaN for every class where a hypothesis abstains; at
            least one hypothesis present per sample.

        Returns
        -------
        ndarray of shape (n_samples, n_classes_)
            Probabilities in [0, 1], each row summing to 1.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If H is malformed, shaped unlike the training data, or a sample has no
            hypothesis present.
        """
        filled, available = self._prediction_inputs(H)
        return _combine(filled, available, self.hypothesis_weights_)

    def predict(self, H: ArrayLike) -> NDArray[np.intp]:
        """Predict argmax_y Σ_b w_b H[i, b, y], the final hypothesis of figure 3.

        Freund & Schapire (1997); ties go to the lowest class.

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses_, n_classes_)
            Plausibilities in [0, 1], NaN for every class where a hypothesis abstains; at
            least one hypothesis present per sample.

        Returns
        -------
        ndarray of int, shape (n_samples,)
            Class indices in [0, n_classes_).

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If H is malformed, shaped unlike the training data, or a sample has no
            hypothesis present.
        """
        labels: NDArray[np.intp] = np.argmax(self.predict_proba(H), axis=1).astype(np.intp)
        return labels

    def staged_predict_proba(self, H: ArrayLike) -> Iterator[NDArray[np.float64]]:
        """Estimate class probabilities after each round 1..n_rounds_.

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses_, n_classes_)
            Plausibilities in [0, 1], NaN for every class where a hypothesis abstains; at
            least one hypothesis present per sample.

        Yields
        ------
        ndarray of shape (n_samples, n_classes_)
            The probabilities with the weights of rounds 1..t, for t = 1, …, ``n_rounds_``;
            the last equals `predict_proba`.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If H is malformed, shaped unlike the training data, or a sample has no
            hypothesis present.
        """
        filled, available = self._prediction_inputs(H)
        weights = np.zeros(self.n_hypotheses_)
        for hypothesis, weight in zip(self.chosen_, self.round_weights_, strict=True):
            weights[hypothesis] += weight
            yield _combine(filled, available, weights)

    def decision_function(self, H: ArrayLike) -> NDArray[np.float64]:
        """Compute F(x_i, y) = Σ_b w_b H[i, b, y], abstaining hypotheses left out.

        The sum maximised by the final hypothesis of Freund & Schapire (1997), figure 3.

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses_, n_classes_)
            Plausibilities in [0, 1], NaN for every class where a hypothesis abstains; at
            least one hypothesis present per sample.

        Returns
        -------
        ndarray of shape (n_samples, n_classes_)
            Values in [0, Σ_b w_b].

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If H is malformed, shaped unlike the training data, or a sample has no
            hypothesis present.
        """
        filled, _available = self._prediction_inputs(H)
        scores: NDArray[np.float64] = np.einsum("iby,b->iy", filled, self.hypothesis_weights_)
        return scores

    def margins(self, H: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        """Compute the normalised margins (F(x_i, y_i) − max_{y ≠ y_i} F(x_i, y)) / Σ_b w_b.

        Schapire, Freund, Bartlett & Lee, "Boosting the margin", Ann. Statist. 26 (1998).
        An abstaining hypothesis adds the same amount to every class, so whether it counts
        as uniform or is left out does not change a margin.

        Parameters
        ----------
        H : array-like of shape (n_samples, n_hypotheses_, n_classes_)
            Plausibilities in [0, 1], NaN for every class where a hypothesis abstains; at
            least one hypothesis present per sample.
        y : array-like of shape (n_samples,)
            Integer labels in [0, n_classes_).

        Returns
        -------
        ndarray of shape (n_samples,)
            Margins in [−1, 1], positive where the sample is classified right; zero when no
            weight was learnt.

        Raises
        ------
        NotFittedError
            If the model is not fitted.
        ValueError
            If H is malformed, shaped unlike the training data, or a sample has no
            hypothesis present.
        """
        scores = self.decision_function(H)
        labels = check_labels(y, scores.shape[0], self.n_classes_)
        rows = np.arange(scores.shape[0])
        true = scores[rows, labels]
        rivals = np.take_along_axis(scores, _mislabel_columns(labels, self.n_classes_), axis=1)
        total = self.hypothesis_weights_.sum()
        if total <= 0:
            return np.zeros(scores.shape[0])
        result: NDArray[np.float64] = (true - rivals.max(axis=1)) / total
        return result
