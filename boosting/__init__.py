"""Boosting over fixed pools of pre-trained hypotheses, and scoring rules. Needs only numpy.

The library knows nothing about football: a hypothesis is anything that gives, for each
sample, a plausibility vector over the classes (or abstains with NaN).
"""

from boosting._loop import NotFittedError, StopReason
from boosting.m2 import AdaBoostM2, pseudo_losses, weighted_vote
from boosting.metrics import (
    PairedDifference,
    accuracy,
    accuracy_rows,
    brier_score,
    brier_score_rows,
    log_loss,
    log_loss_rows,
    paired_difference,
    ranked_probability_score,
    ranked_probability_score_rows,
)

__all__ = [
    "AdaBoostM2",
    "NotFittedError",
    "PairedDifference",
    "StopReason",
    "accuracy",
    "accuracy_rows",
    "brier_score",
    "brier_score_rows",
    "log_loss",
    "log_loss_rows",
    "paired_difference",
    "pseudo_losses",
    "ranked_probability_score",
    "ranked_probability_score_rows",
    "weighted_vote",
]
