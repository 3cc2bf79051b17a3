"""Boosting with numpy alone: AdaBoost.M2, binary AdaBoost, M1, SAMME, MH and scoring rules.

AdaBoost.M2 over fixed pools of pre-trained hypotheses; binary AdaBoost (three losses),
AdaBoost.M1, SAMME and AdaBoost.MH over decision stumps or fixed pools; scoring rules for
probabilistic class forecasts.

The library is not tied to any application: a hypothesis is anything that gives, for each
sample, a plausibility vector over the classes (or abstains with NaN), a class, or a score.

Besides the papers cited where each algorithm is defined, the docstrings refer to:

* G. D'Angelo, "Metodologia di boosting in ambito di problemi multiclasse", BSc thesis,
  Università degli Studi di Genova, 2014 (AdaBoost.M1, M2, SAMME, MH; pre-trained
  hypotheses as the weak learners of M2).
* P. Medici, AdaBoost lecture notes, 2025 (binary AdaBoost as exponential-loss
  minimisation; α = ½ ln((1 − ε)/ε) = ½ ln((1 + r)/(1 − r))).
* J. F. B. S. Martins, "AdaBoost", course report, 2017 (stumps on tic-tac-toe: 1.77 %
  five-fold cross-validated error after 300 rounds).
* V. Bonifaci, "Modelli ad albero e combinazione di modelli", IN550 Machine Learning
  lecture notes (decision stumps; real-valued AdaBoost with h ∈ [−1, 1]).
* C. Vîntur, "Margini ale erorilor la generalizare pentru diferiți algoritmi de învățare
  automată", BSc thesis, Universitatea "Alexandru Ioan Cuza" din Iași, 2019 (stumps found
  in O(d m) per round after sorting once; logistic and squared losses; banknote).
"""

from boosting._loop import NotFittedError, StopReason
from boosting.binary import AdaBoost
from boosting.learners import Outputs
from boosting.m2 import AdaBoostM2, pseudo_losses, weighted_vote
from boosting.metrics import (
    accuracy,
    accuracy_rows,
    brier_score,
    brier_score_rows,
    cross_entropy,
    hamming_loss,
    log_loss,
    log_loss_rows,
    ranked_probability_score,
    ranked_probability_score_rows,
)
from boosting.multiclass import SAMME, AdaBoostM1
from boosting.multilabel import AdaBoostMH
from boosting.pool import FixedPool, label_scores, most_probable_class
from boosting.soft_labels import LabelledRows, soft_label_rows
from boosting.stumps import DecisionStumps

__all__ = [
    "SAMME",
    "AdaBoost",
    "AdaBoostM1",
    "AdaBoostM2",
    "AdaBoostMH",
    "DecisionStumps",
    "FixedPool",
    "LabelledRows",
    "NotFittedError",
    "Outputs",
    "StopReason",
    "accuracy",
    "accuracy_rows",
    "brier_score",
    "brier_score_rows",
    "cross_entropy",
    "hamming_loss",
    "label_scores",
    "log_loss",
    "log_loss_rows",
    "most_probable_class",
    "pseudo_losses",
    "ranked_probability_score",
    "ranked_probability_score_rows",
    "soft_label_rows",
    "weighted_vote",
]
