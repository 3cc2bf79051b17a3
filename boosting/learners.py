"""Weak learners: what the boosting variants ask of them, and the kinds of output.

Every boosting variant asks its learner, round after round, for the hypothesis h that
maximises a linear criterion

    score(h) = Σ_i Σ_c G[i, c] · h(x_i)[c]

where the variant chooses G and the kind of output h gives (`Outputs`):

* ``SIGNED`` (binary AdaBoost and its loss variants): one column, G[i] = D(i) y_i with
  y_i = ±1 (for the squared loss, w_i times the residual); h(x) ∈ [−1, 1]. The score is
  the edge r = Σ D y h = 1 − 2ε (Bonifaci).
* ``LABELS`` (AdaBoost.M1, SAMME): G[i, c] = D(i) [y_i = c]; h(x) is the one-hot vector of
  the class it predicts (all zeros where it abstains), so the score is the weighted accuracy
  1 − ε.
* ``VOTES`` (AdaBoost.MH): G[i, l] = D(i, l) Y[i, l] with Y = ±1 per label; h(x)[l] ∈ [−1, 1].

Two learners implement these protocols: `DecisionStumps`, found in
one sorted pass, and `FixedPool`, a set of pre-trained hypotheses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray


class Outputs(StrEnum):
    """What a hypothesis returns for one sample, and so what the criterion's G means.

    Attributes
    ----------
    SIGNED
        One value in [−1, 1] (binary AdaBoost): the score is the edge r = Σ D y h.
    LABELS
        The one-hot vector of a class, all zeros to abstain (AdaBoost.M1, SAMME): the score
        is the weighted accuracy 1 − ε.
    VOTES
        One value in [−1, 1] per label (AdaBoost.MH).
    """

    SIGNED = "signed"
    LABELS = "labels"
    VOTES = "votes"


@dataclass(frozen=True)
class Choice:
    """A learner's answer to one round's question.

    Attributes
    ----------
    hypothesis : int
        The hypothesis chosen, an index into the learner's `Bank`.
    score : float
        Its value of the criterion that was asked for.
    outputs : ndarray of shape (n_samples, n_outputs)
        Its outputs on the training samples.
    """

    hypothesis: int
    score: float
    outputs: NDArray[np.float64]


class Search(Protocol):
    """A learner prepared on one training set (any sorting done once), asked once a round."""

    def best(self, G: NDArray[np.float64]) -> Choice:
        """Find the hypothesis maximising the learner's criterion, Σ_i Σ_c G[i, c] h(x_i)[c].

        Parameters
        ----------
        G : ndarray of shape (n_samples, n_outputs)
            The round's weights of the outputs (see the module docstring).

        Returns
        -------
        Choice
            The hypothesis, its score and its outputs on the training samples.
        """
        ...

    def least_wrong(self, G: NDArray[np.float64]) -> Choice:
        """Find the one-hot hypothesis of smallest weighted error, whatever the criterion.

        Parameters
        ----------
        G : ndarray of shape (n_samples, n_classes)
            Each sample's weight at its class, zeros elsewhere.

        Returns
        -------
        Choice
            The hypothesis, its weighted accuracy 1 − ε and its outputs.
        """
        ...

    def best_direction(self, G: NDArray[np.float64], weights: NDArray[np.float64]) -> Choice:
        """Find the hypothesis maximising Σ_i G[i] h(x_i) / √(Σ_i w_i ‖h(x_i)‖²).

        The best direction to fit by weighted least squares, not the longest vector: the
        least-squares step α = Σ w r h / Σ w h² of Vîntur (2019).

        Parameters
        ----------
        G : ndarray of shape (n_samples, 1)
            The sample weights times the residuals.
        weights : ndarray of shape (n_samples,)
            The sample weights w_i ≥ 0.

        Returns
        -------
        Choice
            The hypothesis, its normalised score and its outputs on the training samples.
        """
        ...

    def bank(self) -> Bank:
        """Return the hypotheses handed out so far, to evaluate on new data.

        Returns
        -------
        Bank
            The bank that `Choice.hypothesis` indexes.
        """
        ...


class Bank(Protocol):
    """The hypotheses a search handed out, evaluated on new data.

    Attributes
    ----------
    n_outputs : int
        Outputs per sample of every hypothesis.
    """

    n_outputs: int

    def __len__(self) -> int:
        """Return the number of hypotheses in the bank."""
        ...

    def evaluate(self, X: ArrayLike) -> Evaluated:
        """Validate X and prepare the hypotheses' outputs on it.

        Parameters
        ----------
        X : array-like
            Data of the same kind as the training data (features, or a pool's outputs).

        Returns
        -------
        Evaluated
            The hypotheses' outputs on X, one at a time or weighted and summed.
        """
        ...


class Evaluated(Protocol):
    """A bank's hypotheses evaluated on one data set of n_samples samples."""

    def output(self, hypothesis: int) -> NDArray[np.float64]:
        """Return one hypothesis's outputs.

        Parameters
        ----------
        hypothesis : int
            Index into the bank, in [0, len(bank)).

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
        """
        ...

    def weighted_sum(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return Σ_j w_j h_j(x), the weighted sum of every hypothesis's outputs.

        Parameters
        ----------
        weights : ndarray of shape (len(bank),)
            One weight per hypothesis.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
        """
        ...


class WeakLearner(Protocol):
    """What a boosting variant needs of its weak learner."""

    def prepare(self, X: ArrayLike, kind: Outputs, n_outputs: int) -> Search:
        """Validate the training data and prepare the search of every round.

        Parameters
        ----------
        X : array-like
            The training data, as the learner reads it.
        kind : Outputs
            What the hypotheses must return.
        n_outputs : int, >= 1
            Outputs per sample: 1 for ``SIGNED``, the number of classes or labels otherwise.

        Returns
        -------
        Search
            The search, asked once a round.
        """
        ...
