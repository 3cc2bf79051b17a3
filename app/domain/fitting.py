"""Fitting an ensemble from quote tables: the one code path of the refit and the backtest.

:func:`fit_ensemble` holds out the window's most recent matches, chooses the rounds (and,
if asked, the method) by validation log loss, and refits AdaBoost.M2 on the whole window.
Options beyond plain M2, each measured in the walk-forward backtest:

* ``half_life_days``: a sample weight 2^(-age / half-life) per match, age counted back
  from the end of the window, so that newer matches count more;
* ``methods`` with more than one entry: the de-margining method is chosen too, by the
  validation log loss on the results whatever ``fit_target`` (the backtest's figures for
  it were measured so);
* ``calibrate``: one exponent a, p ∝ p^a, fitted on the held-out part (a < 1 softens an
  over-confident mix, a > 1 sharpens an under-confident one);
* ``fit_target`` close: each match's outcomes weighted by its closing line, the flag
  ledger's (``flags.closing_quotes``: the reference's last pre-match price seen to hold
  within ``closing_window_minutes`` before kickoff, else a season file's closing price),
  the result where there is none (``training.with_fit_targets``); the rounds chosen by
  the cross-entropy to the held-out matches' targets.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.ensemble import Ensemble, calibrated
from app.domain.flags import CLOSING_WINDOW, closing_quotes
from app.domain.rounds import RoundsChoice, choose_rounds, fit_m2, split_by_kickoff
from app.domain.tables import MatchTable, QuoteTable
from app.domain.training import DAY, TrainingSet, build_training_set, with_fit_targets
from app.domain.vocabulary import FitTarget, Method, Phase
from app.domain.wording import counted
from boosting import AdaBoostM2, log_loss

# Fewest matches in each of the fit and validation parts, to decide T and the promotion on.
MIN_PART_ROWS = 30
CALIBRATION_RANGE = (0.25, 4.0)


class FitError(ValueError):
    """The window does not hold enough usable data to fit; the message says what is short."""


@dataclass(frozen=True)
class FitOptions:
    rounds_grid: tuple[int, ...] = defaults.ROUNDS_GRID
    validation_fraction: float = defaults.VALIDATION_FRACTION
    phase: Phase = defaults.PHASE
    methods: tuple[Method, ...] = (defaults.METHOD,)
    bookmakers: tuple[str, ...] | None = None  # a fixed pool; else by min_quotes
    min_quotes: int = 1
    # Bookmakers that stopped quoting are left out too (see training.PoolRule); None: not.
    recent_days: float | None = None
    recent_share: float = defaults.POOL_RECENT_SHARE
    min_matches: int = 10
    half_life_days: float | None = None
    calibrate: bool = False
    fit_target: FitTarget = defaults.FIT_TARGET
    # How long before kickoff a pre-match price seen to hold is a close (fit_target close).
    closing_window_minutes: int = CLOSING_WINDOW // dt.timedelta(minutes=1)


def methods_to_try(configured: Method, *, choose: bool) -> tuple[Method, ...]:
    """The configured method alone or, when validation chooses, every method with the
    configured one first (the first wins ties)."""
    if not choose:
        return (configured,)
    return (configured, *(method for method in Method if method != configured))


@dataclass(frozen=True)
class Fit:
    ensemble: Ensemble
    training: TrainingSet  # the whole window, laid out with the chosen method
    model: AdaBoostM2  # fitted on the whole window
    validation: TrainingSet
    validation_proba: NDArray[np.float64]  # the held-out part, as the chosen setup predicts it
    choice: RoundsChoice  # the rounds grid of the chosen method
    method_scores: dict[str, float] = field(default_factory=dict)
    fit_rows: int = 0


def decay_weights(
    kickoff: NDArray[np.float64], end: float, half_life_days: float | None
) -> NDArray[np.float64] | None:
    """2^(-age / half-life) per match (None: no weighting)."""
    if half_life_days is None:
        return None
    age_days = np.maximum(0.0, (end - kickoff) / DAY)
    weights: NDArray[np.float64] = np.power(0.5, age_days / half_life_days)
    return weights


def fit_calibration(y: NDArray[np.intp], proba: NDArray[np.float64]) -> float:
    """The exponent a minimising the log loss of p^a (golden-section search; convex in a)."""
    low, high = (math.log(bound) for bound in CALIBRATION_RANGE)
    golden = (math.sqrt(5) - 1) / 2

    def loss(log_exponent: float) -> float:
        return log_loss(y, calibrated(proba, math.exp(log_exponent)))

    a, b = high - golden * (high - low), low + golden * (high - low)
    loss_a, loss_b = loss(a), loss(b)
    for _ in range(60):
        if loss_a < loss_b:
            high, b, loss_b = b, a, loss_a
            a = high - golden * (high - low)
            loss_a = loss(a)
        else:
            low, a, loss_a = a, b, loss_b
            b = low + golden * (high - low)
            loss_b = loss(b)
    return math.exp((low + high) / 2)


def _close_quote(matches: MatchTable, quotes: QuoteTable, options: FitOptions) -> NDArray[np.intp]:
    """Each match's closing quote (-1: none), looked for only when fitting toward the close."""
    if options.fit_target == FitTarget.RESULT:
        return np.full(len(matches), -1, dtype=np.intp)
    window = dt.timedelta(minutes=options.closing_window_minutes)
    return closing_quotes(matches, quotes, window).quote


def fit_ensemble(
    matches: MatchTable, quotes: QuoteTable, *, end: float, options: FitOptions
) -> Fit:
    """Fit on every settled match of the tables (the caller chooses the window)."""
    candidates: list[
        tuple[float, TrainingSet, TrainingSet, TrainingSet, RoundsChoice, NDArray[np.float64]]
    ] = []
    method_scores: dict[str, float] = {}
    close_quote = _close_quote(matches, quotes, options)
    for method in options.methods:
        training = build_training_set(
            matches,
            quotes,
            phase=options.phase,
            method=method,
            bookmakers=options.bookmakers,
            min_quotes=options.min_quotes,
            recent_days=options.recent_days,
            recent_share=options.recent_share,
        )
        training = with_fit_targets(training, matches, quotes, options.fit_target, close_quote)
        if len(training) < options.min_matches or not training.bookmakers:
            raise FitError(
                f"only {counted(len(training), 'settled match')} with "
                f"usable {options.phase} quotes; at least {options.min_matches} are needed"
            )
        held_out = round(len(training) * options.validation_fraction)
        if min(held_out, len(training) - held_out) < MIN_PART_ROWS:
            raise FitError(
                f"a validation fraction of {options.validation_fraction} splits "
                f"{counted(len(training), 'match')} into {len(training) - held_out} to fit and "
                f"{held_out} to validate; each part needs at least {MIN_PART_ROWS} "
                "(ODDSBOOST_REFIT_VALIDATION_FRACTION)"
            )
        fit_part, validation = split_by_kickoff(training, options.validation_fraction)
        weights = decay_weights(
            fit_part.kickoff, float(fit_part.kickoff.max()), options.half_life_days
        )
        choice = choose_rounds(fit_part, validation, options.rounds_grid, sample_weight=weights)
        proba = choice.model.predict_proba(validation.H)
        score = log_loss(validation.y, proba)
        method_scores[str(method)] = score
        candidates.append((score, training, fit_part, validation, choice, proba))
    # min keeps the first of equal scores: the configured method wins ties.
    _, training, fit_part, validation, choice, proba = min(candidates, key=lambda c: c[0])
    exponent = fit_calibration(validation.y, proba) if options.calibrate else 1.0
    final = fit_m2(
        training, choice.rounds, decay_weights(training.kickoff, end, options.half_life_days)
    )
    ensemble = Ensemble.from_model(final, training, calibration=exponent)
    return Fit(
        ensemble=ensemble,
        training=training,
        model=final,
        validation=validation,
        validation_proba=calibrated(proba, exponent),
        choice=choice,
        method_scores=method_scores,
        fit_rows=len(fit_part),
    )
