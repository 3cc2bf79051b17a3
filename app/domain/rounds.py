"""Choosing the number of boosting rounds on the held-out, most recent part of a window."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.domain.training import TrainingSet
from boosting import AdaBoostM2, cross_entropy, log_loss


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


@dataclass(frozen=True, slots=True)
class GridPoint:
    """One number of rounds tried and its validation log loss (for a fit toward the close,
    its cross-entropy to the held-out matches' targets)."""

    rounds: int
    log_loss: float


def best_rounds(
    grid: Sequence[int],
    y: NDArray[np.intp],
    staged: Sequence[NDArray[np.float64]],
    no_rounds: NDArray[np.float64] | None = None,
    targets: NDArray[np.float64] | None = None,
) -> tuple[int, list[GridPoint]]:
    """The T of ``grid`` with the lowest log loss on ``y`` (or cross-entropy to ``targets``,
    when given; ties: the smaller), and every T's, scored from ``staged``, one fit's
    prediction after each round it kept (its last for any larger T; ``no_rounds`` when it
    kept none)."""
    points: list[GridPoint] = []
    for rounds in sorted(set(grid)):
        if staged:
            proba = staged[min(rounds, len(staged)) - 1]
        elif no_rounds is not None:
            proba = no_rounds
        else:
            raise ValueError("the fit kept no round and has no prediction without one")
        score = log_loss(y, proba) if targets is None else cross_entropy(targets, proba)
        points.append(GridPoint(rounds, score))
    best = min(points, key=lambda point: (point.log_loss, point.rounds))
    return best.rounds, points


@dataclass(frozen=True)
class RoundsChoice:
    rounds: int
    grid: list[GridPoint]
    model: AdaBoostM2  # fitted on the training part with the chosen rounds


def choose_rounds(
    fit_part: TrainingSet,
    validation: TrainingSet,
    grid: Sequence[int],
    *,
    sample_weight: NDArray[np.float64] | None = None,
) -> RoundsChoice:
    """AdaBoost.M2 with the T of ``grid`` that :func:`best_rounds` picks on ``validation``;
    toward the parts' ``targets`` when they have them (fitted on them, scored by the
    cross-entropy to the held-out ones)."""
    largest = max(grid)
    model = fit_m2(fit_part, largest, sample_weight)
    staged = list(model.staged_predict_proba(validation.H)) if model.n_rounds_ else []
    rounds, points = best_rounds(
        grid,
        validation.y,
        staged,
        no_rounds=model.predict_proba(validation.H),
        targets=validation.targets,
    )
    return RoundsChoice(rounds, points, fit_m2(fit_part, rounds, sample_weight))


def fit_m2(
    training: TrainingSet, rounds: int, sample_weight: NDArray[np.float64] | None
) -> AdaBoostM2:
    """AdaBoost.M2 on ``training``: toward its targets when it has them, else its results."""
    model = AdaBoostM2(n_rounds=rounds)
    if training.targets is None:
        return model.fit(training.H, training.y, sample_weight=sample_weight)
    return model.fit_targets(training.H, training.targets, sample_weight=sample_weight)
