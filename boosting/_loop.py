"""The boosting loop shared by every variant.

A variant supplies one step: given the current distribution over its training pairs, pick
a hypothesis, say how bad it is and how much it weighs, and re-weight the distribution.
The loop records the rounds, stops when a step says so, and sums each hypothesis's weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

# A zero error would make the round's weight infinite; errors are floored here instead, so
# a perfect hypothesis gets a large but finite weight (ln(1/1e-10) ≈ 23).
ERROR_FLOOR = 1e-10


class StopReason(StrEnum):
    """Why fitting stopped, in a fitted model's ``stop_reason_``.

    Attributes
    ----------
    MAX_ROUNDS
        Every round asked for was run.
    NO_BETTER_THAN_CHANCE
        The best hypothesis of a round was no better than chance (its error reached the
        variant's limit); that round is not kept.
    PERFECT
        A hypothesis made no error; it is kept with a large but finite weight, and another
        round would change nothing.
    """

    MAX_ROUNDS = "max_rounds"
    NO_BETTER_THAN_CHANCE = "no_better_than_chance"
    PERFECT = "perfect"


@dataclass(frozen=True, slots=True)
class Step:
    """What one round chose. ``stop`` ends fitting after (PERFECT) or instead of this round."""

    hypothesis: int
    error: float
    weight: float = 0.0
    beta: float = math.nan
    stop: StopReason | None = None


class NotFittedError(ValueError, AttributeError):
    """Raised when a prediction method is called before ``fit``.

    A ``ValueError`` and an ``AttributeError``, as scikit-learn's, so that callers
    catching either see it.
    """


class BoostingLoop:
    """Base class: ``fit`` validates, calls `_start`, then `_step` per round.

    Subclasses implement ``_start(X, y, sample_weight) -> state`` (validation and
    allocation) and ``_step(state) -> Step`` (choose, score and re-weight). After ``fit``:

    ``chosen_``, ``errors_``, ``betas_``, ``round_weights_``: one entry per round kept;
    ``n_rounds_``: rounds kept; ``stop_reason_``; ``hypothesis_weights_``: the sum of the
    round weights of each hypothesis; ``selection_counts_``: how often each was chosen.
    """

    n_rounds: int

    def __init__(self, n_rounds: int = 100) -> None:
        self.n_rounds = n_rounds

    def _check_params(self) -> None:
        if isinstance(self.n_rounds, bool) or not isinstance(self.n_rounds, int | np.integer):
            raise TypeError(f"n_rounds must be an integer, got {self.n_rounds!r}")
        if self.n_rounds < 1:
            raise ValueError(f"n_rounds must be at least 1, got {self.n_rounds}")

    def _start(self, X: Any, y: Any, sample_weight: Any) -> Any:
        raise NotImplementedError

    def _step(self, state: Any) -> Step:
        raise NotImplementedError

    def _n_hypotheses(self, state: Any) -> int:
        raise NotImplementedError

    def _forget_fit(self) -> None:
        """Drop every fitted attribute (names ending in ``_``).

        A fit that fails, or a new one, must not leave a model that looks fitted with parts
        of an old one.
        """
        for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("_")]:
            delattr(self, name)

    def _run(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        """Validate, then boost; returns the variant's final state."""
        self._forget_fit()
        self._check_params()
        try:
            return self._boost(X, y, sample_weight)
        except BaseException:
            self._forget_fit()
            raise

    def _boost(self, X: Any, y: Any, sample_weight: Any) -> Any:
        state = self._start(X, y, sample_weight)
        chosen: list[int] = []
        errors: list[float] = []
        betas: list[float] = []
        weights: list[float] = []
        stop_reason = StopReason.MAX_ROUNDS
        for _ in range(int(self.n_rounds)):
            step = self._step(state)
            if step.stop is StopReason.NO_BETTER_THAN_CHANCE:
                stop_reason = step.stop
                self.stopping_error_ = step.error
                break
            chosen.append(step.hypothesis)
            errors.append(step.error)
            betas.append(step.beta)
            weights.append(step.weight)
            if step.stop is not None:
                stop_reason = step.stop
                break
        n_hypotheses = self._n_hypotheses(state)
        self.chosen_: NDArray[np.intp] = np.asarray(chosen, dtype=np.intp)
        self.errors_: NDArray[np.float64] = np.asarray(errors, dtype=np.float64)
        self.betas_: NDArray[np.float64] = np.asarray(betas, dtype=np.float64)
        self.round_weights_: NDArray[np.float64] = np.asarray(weights, dtype=np.float64)
        self.n_rounds_: int = len(chosen)
        self.stop_reason_: StopReason = stop_reason
        self.hypothesis_weights_: NDArray[np.float64] = np.bincount(
            self.chosen_, weights=self.round_weights_, minlength=n_hypotheses
        ).astype(np.float64)
        self.selection_counts_: NDArray[np.intp] = np.bincount(
            self.chosen_, minlength=n_hypotheses
        ).astype(np.intp)
        if not np.all(np.isfinite(self.hypothesis_weights_)):  # pragma: no cover - floors guard it
            raise FloatingPointError("boosting produced non-finite hypothesis weights")
        return state

    def _check_fitted(self) -> None:
        if not hasattr(self, "hypothesis_weights_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit() before predicting"
            )
