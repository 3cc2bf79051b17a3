"""Boosting: AdaBoost.M2 over fixed pools of pre-trained hypotheses, binary AdaBoost (three
losses), AdaBoost.M1, SAMME and AdaBoost.MH over decision stumps or fixed pools, and
scoring rules. Needs only numpy.

The library knows nothing about football: a hypothesis is anything that gives, for each
sample, a plausibility vector over the classes (or abstains with NaN), a class, or a score.
"""

from boosting._loop import NotFittedError, StopReason
from boosting.adaboost import SAMME, AdaBoost, AdaBoostM1, AdaBoostMH
from boosting.learners import (
    DecisionStumps,
    FixedPool,
    Outputs,
    label_scores,
    most_probable_class,
)
from boosting.m2 import AdaBoostM2, pseudo_losses, weighted_vote
from boosting.metrics import (
    PairedDifference,
    accuracy,
    accuracy_rows,
    brier_score,
    brier_score_rows,
    hamming_loss,
    log_loss,
    log_loss_rows,
    paired_difference,
    ranked_probability_score,
    ranked_probability_score_rows,
)

__all__ = [
    "SAMME",
    "AdaBoost",
    "AdaBoostM1",
    "AdaBoostM2",
    "AdaBoostMH",
    "DecisionStumps",
    "FixedPool",
    "NotFittedError",
    "Outputs",
    "PairedDifference",
    "StopReason",
    "accuracy",
    "accuracy_rows",
    "brier_score",
    "brier_score_rows",
    "hamming_loss",
    "label_scores",
    "log_loss",
    "log_loss_rows",
    "most_probable_class",
    "paired_difference",
    "pseudo_losses",
    "ranked_probability_score",
    "ranked_probability_score_rows",
    "weighted_vote",
]
