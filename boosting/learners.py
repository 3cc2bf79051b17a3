"""Weak learners: what the boosting variants ask of them, and the kinds of output.

Every boosting variant asks its learner, round after round, for the hypothesis h that
maximises a linear criterion

    score(h) = Σ_i Σ_c G[i, c] · h(x_i)[c]

where the variant chooses G and the kind of output h gives (:class:`Outputs`):

* ``SIGNED`` (binary AdaBoost and its loss variants): one column, G[i] = D(i) y_i with
  y_i = ±1 (for the squared loss, w_i times the residual); h(x) ∈ [−1, 1]. The score is
  the edge r = Σ D y h = 1 − 2ε (Bonifaci).
* ``LABELS`` (AdaBoost.M1, SAMME): G[i, c] = D(i) [y_i = c]; h(x) is the one-hot vector of
  the class it predicts (all zeros where it abstains), so the score is the weighted accuracy
  1 − ε.
* ``VOTES`` (AdaBoost.MH): G[i, l] = D(i, l) Y[i, l] with Y = ±1 per label; h(x)[l] ∈ [−1, 1].

Two learners implement these protocols: :class:`~boosting.stumps.DecisionStumps`, found in
one sorted pass, and :class:`~boosting.pool.FixedPool`, a set of pre-trained hypotheses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray


class Outputs(StrEnum):
    """What a hypothesis returns for one sample (see the module docstring)."""

    SIGNED = "signed"
    LABELS = "labels"
    VOTES = "votes"


@dataclass(frozen=True)
class Choice:
    """A learner's answer: the hypothesis (an index into its bank), its score and outputs on
    the training samples, shape (n_samples, n_outputs)."""

    hypothesis: int
    score: float
    outputs: NDArray[np.float64]


class Search(Protocol):
    """A learner prepared on one training set (sorting done once)."""

    def best(self, G: NDArray[np.float64]) -> Choice:
        """The hypothesis maximising the learner's criterion for G."""
        ...

    def least_wrong(self, G: NDArray[np.float64]) -> Choice:
        """The one-hot hypothesis of smallest weighted error, whatever the learner's own
        criterion (G holds each sample's weight at its class)."""
        ...

    def best_direction(self, G: NDArray[np.float64], weights: NDArray[np.float64]) -> Choice:
        """The hypothesis maximising Σ G h / √(Σ_i w_i ‖h(x_i)‖²): the best direction to
        fit by weighted least squares, not the longest vector (Vîntur 2019)."""
        ...

    def bank(self) -> Bank: ...


class Bank(Protocol):
    """The hypotheses a search handed out, evaluated on new data."""

    n_outputs: int

    def __len__(self) -> int: ...

    def evaluate(self, X: ArrayLike) -> Evaluated: ...


class Evaluated(Protocol):
    def output(self, hypothesis: int) -> NDArray[np.float64]: ...

    def weighted_sum(self, weights: NDArray[np.float64]) -> NDArray[np.float64]: ...


class WeakLearner(Protocol):
    def prepare(self, X: ArrayLike, kind: Outputs, n_outputs: int) -> Search: ...
