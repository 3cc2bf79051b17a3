"""Fixed pools: pre-trained hypotheses whose outputs are given as the data.

A fixed pool is a set of pre-trained hypotheses whose outputs are given as the data X: the
learner only picks the pool member with the best score. `most_probable_class` and
`label_scores` build such outputs from plausibility vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting.learners import Choice, Outputs


def _pool_outputs(X: ArrayLike, kind: Outputs, n_outputs: int) -> NDArray[np.float64]:
    """Validate a pool's outputs; return them as (m, B, n_outputs), abstentions as zeros."""
    array = np.asarray(X, dtype=np.float64)
    if array.ndim >= 2 and (array.shape[0] == 0 or array.shape[1] == 0):
        raise ValueError(f"the pool is empty: shape {array.shape}")
    if kind is Outputs.LABELS:
        if array.ndim != 2:
            raise ValueError(
                f"a pool of class predictions must have shape (n_samples, n_hypotheses), "
                f"got {array.shape}"
            )
        finite = np.isfinite(array)
        valid = finite & (array == np.round(array)) & (array >= -1) & (array < n_outputs)
        if not valid.all():
            row, column = np.argwhere(~valid)[0]
            raise ValueError(
                f"X[{row}, {column}] = {array[row, column]:g}: a pool's predictions must be "
                f"class indices in [0, {n_outputs}), or -1 to abstain"
            )
        labels = array.astype(np.intp)
        one_hot = np.zeros((*labels.shape, n_outputs))
        rows, columns = np.nonzero(labels >= 0)
        one_hot[rows, columns, labels[rows, columns]] = 1.0
        return one_hot
    expected = 2 if kind is Outputs.SIGNED else 3
    if array.ndim != expected or (kind is Outputs.VOTES and array.shape[2] != n_outputs):
        shape = (
            "(n_samples, n_hypotheses)"
            if expected == 2
            else f"(n_samples, n_hypotheses, {n_outputs})"
        )
        raise ValueError(f"a pool's outputs must have shape {shape}, got {array.shape}")
    filled = np.nan_to_num(array, nan=0.0, posinf=np.inf, neginf=-np.inf)
    bad = ~(np.abs(filled) <= 1.0)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"X{list(where)} = {array[where]:g}: a pool's outputs must lie in [-1, 1] "
            "(NaN to abstain)"
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"the pool is empty: shape {array.shape}")
    return filled.reshape(array.shape[0], array.shape[1], -1)


@dataclass
class PoolBank:
    """The members of a fixed pool: hypothesis j is column j of the data.

    Attributes
    ----------
    kind : Outputs
        What the pool's hypotheses return.
    n_outputs : int
        Outputs per sample of every hypothesis.
    n_hypotheses : int
        Hypotheses in the pool.
    """

    kind: Outputs
    n_outputs: int
    n_hypotheses: int

    def __len__(self) -> int:
        """Return the number of hypotheses in the pool."""
        return self.n_hypotheses

    def evaluate(self, X: ArrayLike) -> _EvaluatedPool:
        """Validate the pool's outputs on new samples.

        Parameters
        ----------
        X : array-like
            The pool's outputs, shaped as in training (see `FixedPool`) with the
            same number of hypotheses.

        Returns
        -------
        Evaluated
            The pool's outputs on the new samples.

        Raises
        ------
        ValueError
            If X is shaped otherwise, out of range, or has another number of hypotheses.
        """
        outputs = _pool_outputs(X, self.kind, self.n_outputs)
        if outputs.shape[1] != self.n_hypotheses:
            raise ValueError(
                f"X has {outputs.shape[1]} hypotheses; the model was fitted on {self.n_hypotheses}"
            )
        return _EvaluatedPool(outputs)


@dataclass
class _EvaluatedPool:
    outputs: NDArray[np.float64]  # (m, B, C)

    def output(self, hypothesis: int) -> NDArray[np.float64]:
        return self.outputs[:, hypothesis, :]

    def weighted_sum(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        result: NDArray[np.float64] = np.einsum("ibc,b->ic", self.outputs, weights)
        return result


class _PoolSearch:
    def __init__(self, outputs: NDArray[np.float64], kind: Outputs) -> None:
        self.outputs = outputs
        self._bank = PoolBank(kind, outputs.shape[2], outputs.shape[1])

    def bank(self) -> PoolBank:
        return self._bank

    def best(self, G: NDArray[np.float64]) -> Choice:
        return self._highest(np.einsum("ic,ibc->b", G, self.outputs))

    def least_wrong(self, G: NDArray[np.float64]) -> Choice:
        # A pool of one-hot hypotheses is already ranked by weighted accuracy.
        return self.best(G)

    def best_direction(self, G: NDArray[np.float64], weights: NDArray[np.float64]) -> Choice:
        # Least squares (Vîntur 2019: α = Σ w r h / Σ w h²): a pool's hypotheses have
        # different lengths, so each score is divided by the hypothesis's weighted norm.
        scores = np.einsum("ic,ibc->b", G, self.outputs)
        norms = np.sqrt(np.einsum("i,ibc,ibc->b", weights, self.outputs, self.outputs))
        return self._highest(np.divide(scores, norms, out=np.zeros_like(scores), where=norms > 0))

    def _highest(self, scores: NDArray[np.float64]) -> Choice:
        best = int(np.argmax(scores))  # ties: the lowest index
        return Choice(best, float(scores[best]), self.outputs[:, best, :])


@dataclass(frozen=True)
class FixedPool:
    """A pool of pre-trained hypotheses whose outputs are the data (nothing is trained).

    The data X holds, per sample, each hypothesis's output:

    * for binary AdaBoost: shape (n_samples, n_hypotheses), values in [−1, 1] (±1 for
      discrete hypotheses, any value between for confidence-rated ones), NaN to abstain;
    * for AdaBoost.M1 and SAMME: shape (n_samples, n_hypotheses), the predicted class
      as an index into the estimator's ``classes_`` (the sorted labels of y, so every
      class must occur in y), −1 to abstain (an abstention is counted as a mistake while
      fitting and casts no vote);
    * for AdaBoost.MH: shape (n_samples, n_hypotheses, n_labels), values in [−1, 1], NaN
      to abstain (as 0: no opinion).

    Hypotheses are used as they are: one that does worse than chance is never turned
    round. See `most_probable_class` and `label_scores` to build these from
    plausibility vectors.
    """

    def prepare(self, X: ArrayLike, kind: Outputs, n_outputs: int) -> _PoolSearch:
        """Validate the pool's outputs on the training samples.

        Parameters
        ----------
        X : array-like
            The pool's outputs, shaped for ``kind`` as described in the class docstring.
        kind : Outputs
            What the estimator asks of its hypotheses.
        n_outputs : int, >= 1
            Outputs per sample: 1 for ``SIGNED``, the number of classes or labels otherwise.

        Returns
        -------
        Search
            The search over the pool, asked once a round.

        Raises
        ------
        ValueError
            If the pool is empty, shaped otherwise, holds a value outside [−1, 1], or a
            class prediction that is not an index in [0, n_outputs) or −1.
        """
        return _PoolSearch(_pool_outputs(X, Outputs(kind), n_outputs), Outputs(kind))


def most_probable_class(H: ArrayLike) -> NDArray[np.intp]:
    """Turn plausibility vectors into class predictions, the input of AdaBoost.M1 and SAMME.

    Each hypothesis predicts its most plausible class, argmax_y H[i, b, y] (the lowest class
    on ties), as a plausibility hypothesis of AdaBoost.M2 is read as a single label
    (Freund & Schapire 1997).

    Parameters
    ----------
    H : array-like of shape (n_samples, n_hypotheses, n_classes)
        Plausibilities, NaN for every class where a hypothesis abstains.

    Returns
    -------
    ndarray of int, shape (n_samples, n_hypotheses)
        Class indices in [0, n_classes), −1 where the hypothesis abstains.

    Raises
    ------
    ValueError
        If H is not 3-D.
    """
    array = np.asarray(H, dtype=np.float64)
    if array.ndim != 3:
        raise ValueError(
            f"H must have shape (n_samples, n_hypotheses, n_classes), got {array.shape}"
        )
    abstaining = np.isnan(array).all(axis=2)
    labels: NDArray[np.intp] = np.argmax(np.nan_to_num(array, nan=-np.inf), axis=2).astype(np.intp)
    labels[abstaining] = -1
    return labels


def label_scores(H: ArrayLike) -> NDArray[np.float64]:
    """Turn plausibilities into AdaBoost.MH outputs, 2 p − 1 for every label.

    The sign says whether the hypothesis gives the label and the magnitude how sure it is:
    a confidence-rated prediction (Schapire & Singer 1999).

    Parameters
    ----------
    H : array-like of shape (n_samples, n_hypotheses, n_classes)
        Plausibilities in [0, 1], NaN where a hypothesis abstains.

    Returns
    -------
    ndarray of shape (n_samples, n_hypotheses, n_classes)
        Values in [−1, 1]; NaN stays NaN (no opinion).
    """
    array = np.asarray(H, dtype=np.float64)
    result: NDArray[np.float64] = 2.0 * array - 1.0
    return result
