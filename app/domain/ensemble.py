"""The ensemble of bookmakers: fitting with a validated number of rounds, scoring.

Shared by the refit service, the backtest and the predict endpoint, so that what is
evaluated is what is served.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.domain.training import TrainingSet
from app.domain.vocabulary import Method, Phase
from boosting import (
    AdaBoostM2,
    accuracy,
    brier_score,
    log_loss,
    ranked_probability_score,
    weighted_vote,
)

ALGORITHM = "adaboost.m2"


def calibrated(proba: NDArray[np.float64], exponent: float) -> NDArray[np.float64]:
    """p^a, renormalised per row (a = 1 changes nothing)."""
    if exponent == 1.0:
        return proba
    powered = np.power(np.clip(proba, 1e-15, 1.0), exponent)
    result: NDArray[np.float64] = powered / powered.sum(axis=1, keepdims=True)
    return result


@dataclass(frozen=True)
class Ensemble:
    """What a model version serves: a weight per bookmaker and how odds are read."""

    bookmakers: tuple[str, ...]
    weights: NDArray[np.float64]
    method: Method
    phase: Phase
    rounds: int
    version: int | None = None
    fitted_at: dt.datetime | None = None
    algorithm: str = ALGORITHM
    selection_counts: tuple[int, ...] = ()  # rounds that chose each bookmaker
    calibration: float = 1.0  # exponent a of p ∝ p^a applied to the mix; 1 = none

    def predict_proba(
        self, H: NDArray[np.float64], *, check_input: bool = True
    ) -> NDArray[np.float64]:
        """Probabilities for matches laid out over this ensemble's bookmakers (NaN: absent)."""
        return calibrated(weighted_vote(H, self.weights, check_input=check_input), self.calibration)

    @classmethod
    def from_model(cls, model: AdaBoostM2, training: TrainingSet, **extra: Any) -> Ensemble:
        return cls(
            bookmakers=training.bookmakers,
            weights=model.hypothesis_weights_.copy(),
            method=training.method,
            phase=training.phase,
            rounds=model.n_rounds,
            selection_counts=tuple(int(c) for c in model.selection_counts_),
            **extra,
        )


# --- fitting ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundsChoice:
    rounds: int
    grid: list[dict[str, float]]  # [{"rounds": T, "log_loss": x}, ...]
    model: AdaBoostM2  # fitted on the training part with the chosen rounds


def split_by_kickoff(
    training: TrainingSet, validation_fraction: float
) -> tuple[TrainingSet, TrainingSet]:
    """The earlier part for fitting, the most recent ``validation_fraction`` for validation."""
    order = np.argsort(training.kickoff, kind="stable")
    n_validation = max(1, round(len(order) * validation_fraction))
    if n_validation >= len(order):
        raise ValueError("too few matches to hold out a validation part")
    return training.rows(np.sort(order[:-n_validation])), training.rows(
        np.sort(order[-n_validation:])
    )


def choose_rounds(
    fit_part: TrainingSet,
    validation: TrainingSet,
    grid: Sequence[int],
    *,
    sample_weight: NDArray[np.float64] | None = None,
) -> RoundsChoice:
    """The T of ``grid`` with the lowest validation log loss (ties: the smaller T).

    One fit with the largest T; the prediction after each round comes from the staged
    predictions, so every T of the grid costs nothing extra. A fit that stops early (no
    bookmaker better than chance) gives the same prediction for every larger T.
    """
    grid = sorted(set(grid))
    model = AdaBoostM2(n_rounds=grid[-1]).fit(fit_part.H, fit_part.y, sample_weight=sample_weight)
    staged = list(model.staged_predict_proba(validation.H)) if model.n_rounds_ else []
    no_rounds = model.predict_proba(validation.H)  # the consensus, if no round was kept
    scores: list[dict[str, float]] = []
    for rounds in grid:
        proba = staged[min(rounds, len(staged)) - 1] if staged else no_rounds
        scores.append({"rounds": rounds, "log_loss": log_loss(validation.y, proba)})
    best = min(scores, key=lambda s: (s["log_loss"], s["rounds"]))
    chosen = AdaBoostM2(n_rounds=int(best["rounds"])).fit(
        fit_part.H, fit_part.y, sample_weight=sample_weight
    )
    return RoundsChoice(int(best["rounds"]), scores, chosen)


# --- scoring ------------------------------------------------------------------------------


def scores(y: NDArray[np.intp], proba: NDArray[np.float64]) -> dict[str, float]:
    return {
        "log_loss": log_loss(y, proba),
        "brier": brier_score(y, proba),
        "rps": ranked_probability_score(y, proba),
        "accuracy": accuracy(y, proba),
    }


def validation_report(validation: TrainingSet, model_proba: NDArray[np.float64]) -> dict[str, Any]:
    """Scores of the model, the consensus and every bookmaker on the validation matches.

    Model and consensus are scored on every validation match. A bookmaker is scored on the
    matches it quoted, next to the model on exactly those matches.
    """
    report: dict[str, Any] = {
        "rows": len(validation),
        "model": scores(validation.y, model_proba),
        "consensus": scores(validation.y, validation.consensus()),
        "bookmakers": {},
    }
    for index, code in enumerate(validation.bookmakers):
        quoted = ~np.isnan(validation.H[:, index, 0])
        if not quoted.any():
            continue
        report["bookmakers"][code] = {
            "rows": int(quoted.sum()),
            **scores(validation.y[quoted], validation.H[quoted, index, :]),
            "model_log_loss": log_loss(validation.y[quoted], model_proba[quoted]),
        }
    return report
