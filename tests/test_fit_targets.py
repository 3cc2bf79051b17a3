"""Fitting toward the closing line: each match's targets, the fallback to the result where
there is no close, and the rounds chosen by the cross-entropy to the held-out targets."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from app.domain import defaults
from app.domain.fitting import FitOptions, fit_ensemble
from app.domain.flags import CLOSING_WINDOW, closing_quotes
from app.domain.football_data import parse_football_data
from app.domain.tables import (
    MatchTable,
    QuoteTable,
    positions_of,
    tables_from_batches,
    tables_from_rows,
)
from app.domain.training import TrainingSet, build_training_set, with_fit_targets
from app.domain.vocabulary import FitTarget, Method, Phase
from boosting import AdaBoostM2, cross_entropy, log_loss

SeasonFile = Callable[[str], Path]
KICKOFF = dt.datetime(2018, 8, 10, 19, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
# Odds with no margin: 1/2 + 1/4 + 1/4 = 1, so every de-margining method leaves them as
# the probabilities (0.5, 0.25, 0.25).
FAIR = (2.0, 4.0, 4.0)
PRE = (2.1, 3.4, 3.6)


def hand_tables() -> tuple[MatchTable, QuoteTable]:
    """Four settled matches quoted pre-match by B365, with Pinnacle's close or not."""
    match_rows = [
        (1, KICKOFF, "1", "E0", "2018/19"),  # Pinnacle's close: the target
        (2, KICKOFF + HOUR, "X", "E0", "2018/19"),  # no close at all
        (3, KICKOFF + 2 * HOUR, "2", "E0", "2018/19"),  # another bookmaker's close only
        (4, KICKOFF + 3 * HOUR, "1", "E0", "2018/19"),  # a close captured after kickoff
    ]
    quote_rows = [
        *((match, "B365", "pre", None, None, *PRE, None) for match in (1, 2, 3, 4)),
        (1, "PS", "closing", None, None, *FAIR, None),
        (3, "B365", "closing", None, None, *FAIR, None),
        (4, "PS", "closing", KICKOFF + 4 * HOUR, None, *FAIR, None),
    ]
    return tables_from_rows(match_rows, quote_rows)


def toward(
    training: TrainingSet, matches: MatchTable, quotes: QuoteTable, target: FitTarget
) -> TrainingSet:
    """``training`` with the targets toward ``target``, the closes found by the ledger's rule."""
    closes = closing_quotes(matches, quotes, CLOSING_WINDOW)
    return with_fit_targets(training, matches, quotes, target, closes.quote)


def test_a_match_is_fitted_toward_the_close_and_toward_its_result_without_one() -> None:
    matches, quotes = hand_tables()
    training = build_training_set(matches, quotes, phase=Phase.PRE, bookmakers=("B365",))

    toward_close = toward(training, matches, quotes, FitTarget.CLOSE)
    targets = toward_close.targets

    assert training.match_ids.tolist() == [1, 2, 3, 4]
    assert targets is not None
    assert targets[0] == pytest.approx([0.5, 0.25, 0.25])
    # No close from Pinnacle before kickoff: the result, one-hot (X, 2, 1).
    assert targets[1:].tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    assert toward_close.target_is_close is not None
    assert toward_close.target_is_close.tolist() == [True, False, False, False]


def test_fitting_toward_the_results_sets_no_targets() -> None:
    matches, quotes = hand_tables()
    training = build_training_set(matches, quotes, phase=Phase.PRE, bookmakers=("B365",))

    assert toward(training, matches, quotes, FitTarget.RESULT) is training


def test_the_targets_follow_the_rows_they_belong_to() -> None:
    matches, quotes = hand_tables()
    training = toward(
        build_training_set(matches, quotes, phase=Phase.PRE, bookmakers=("B365",)),
        matches,
        quotes,
        FitTarget.CLOSE,
    )

    last_two = training.rows(np.array([2, 3]))

    assert last_two.targets is not None
    assert last_two.targets.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    assert last_two.target_is_close is not None
    assert last_two.target_is_close.tolist() == [False, False]


def tables_of(season_file: SeasonFile, names: tuple[str, ...]) -> tuple[MatchTable, QuoteTable]:
    return tables_from_batches([parse_football_data(season_file(n).read_bytes()) for n in names])


OPTIONS = FitOptions(rounds_grid=(1, 5, 20, 100), bookmakers=("B365", "BW", "IW", "PS", "WH"))


def test_without_any_close_a_fit_toward_the_close_is_the_fit_on_the_results(
    season_file: SeasonFile,
) -> None:
    # The England files of 2013/14 and 2014/15 have no closing odds.
    matches, quotes = tables_of(season_file, ("E0_1314", "E0_1415"))
    end = float(matches.kickoff.max()) + 1.0
    assert not (quotes.phase == Phase.CLOSING).any()

    on_results = fit_ensemble(matches, quotes, end=end, options=OPTIONS)
    toward_close = fit_ensemble(
        matches, quotes, end=end, options=replace(OPTIONS, fit_target=FitTarget.CLOSE)
    )

    assert toward_close.choice.grid == on_results.choice.grid
    assert toward_close.choice.rounds == on_results.choice.rounds
    assert np.array_equal(toward_close.ensemble.weights, on_results.ensemble.weights)


def test_a_fit_toward_the_close_learns_and_chooses_its_rounds_on_the_close(
    season_file: SeasonFile,
) -> None:
    matches, quotes = tables_of(season_file, ("E0_1617", "E0_1718"))
    end = float(matches.kickoff.max()) + 1.0

    fit = fit_ensemble(
        matches, quotes, end=end, options=replace(OPTIONS, fit_target=FitTarget.CLOSE)
    )

    training, validation = fit.training, fit.validation
    assert training.targets is not None
    assert validation.targets is not None
    one_hot = np.eye(3)[training.y]
    # These files have Pinnacle's close for (nearly) every match.
    assert (np.abs(training.targets - one_hot).max(axis=1) > 0).mean() > 0.99
    # The chosen T's score is the cross-entropy of its model to the held-out targets...
    chosen = next(point for point in fit.choice.grid if point.rounds == fit.choice.rounds)
    proba = fit.choice.model.predict_proba(validation.H)
    assert chosen.log_loss == pytest.approx(cross_entropy(validation.targets, proba), rel=1e-12)
    assert chosen.log_loss == min(point.log_loss for point in fit.choice.grid)
    # ... and the final weights are M2 on the whole window toward the targets.
    final = AdaBoostM2(n_rounds=fit.choice.rounds).fit_targets(training.H, training.targets)
    assert np.array_equal(fit.ensemble.weights, final.hypothesis_weights_)


def former_targets(training: TrainingSet, matches: MatchTable, quotes: QuoteTable) -> np.ndarray:
    """The targets as fits toward the close learned them before live closes counted:
    Pinnacle's ("PS") latest closing-phase quote laid out as a training set, the result
    one-hot where it had none."""
    targets = np.eye(3)[training.y]
    closing = build_training_set(
        matches,
        quotes,
        phase=Phase.CLOSING,
        method=defaults.CLOSING_METHOD,
        bookmakers=(defaults.CLOSING_BOOKMAKER,),
    )
    at = positions_of(closing.match_ids, training.match_ids)
    targets[at >= 0] = closing.H[at[at >= 0], 0]
    return targets


@pytest.mark.parametrize("names", [("E0_1718", "SP1_1718"), ("D1_1415",)])
def test_on_season_files_the_targets_are_the_former_ones(
    season_file: SeasonFile, names: tuple[str, ...]
) -> None:
    # Season files give no capture times: their closing prices are the close, as before, so
    # the committed backtest reports, fitted toward the close, stand as they are.
    matches, quotes = tables_of(season_file, names)
    training = build_training_set(matches, quotes, phase=Phase.PRE, bookmakers=("B365", "WH"))

    toward_close = toward(training, matches, quotes, FitTarget.CLOSE)
    targets = toward_close.targets

    assert targets is not None
    assert toward_close.target_is_close is not None
    assert toward_close.target_is_close.mean() > 0.9  # Pinnacle closed nearly every match
    assert np.allclose(targets, former_targets(training, matches, quotes), rtol=0, atol=1e-12)


def test_toward_the_close_the_method_is_still_chosen_by_the_log_loss_on_the_results(
    season_file: SeasonFile,
) -> None:
    # The backtest's "method chosen by validation" was measured so; see guides/refits.md.
    matches, quotes = tables_of(season_file, ("E0_1617", "E0_1718"))
    end = float(matches.kickoff.max()) + 1.0
    methods = (Method.POWER, Method.MULTIPLICATIVE, Method.SHIN)
    options = replace(OPTIONS, fit_target=FitTarget.CLOSE, methods=methods)

    fit = fit_ensemble(matches, quotes, end=end, options=options)

    chosen = fit.method_scores[str(fit.training.method)]
    assert chosen == pytest.approx(log_loss(fit.validation.y, fit.validation_proba), rel=1e-12)
    assert chosen == min(fit.method_scores.values())
    assert set(fit.method_scores) == {str(method) for method in methods}
