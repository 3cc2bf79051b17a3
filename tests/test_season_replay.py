"""A season replayed through the live path flags exactly what the backtest bets.

E0 2018/19 of the shared files, run by the backtest and through the service as an operator
runs it (see ``tests.plugins.season_replay``): the refit's model before the season, the
quotes sent through the admin API in kickoff order, and the board read before each
matchday's kickoffs. The backtest is the reference: one decision rule is meant to run in
both, on the same model weights, the same bookmakers, threshold and commissions."""

from __future__ import annotations

import numpy as np
import pytest

from app.domain.backtest.folds import ENSEMBLE
from tests.plugins.season_replay import SeasonBacktest, SeasonReplay, by_decision

pytestmark = pytest.mark.slow

# The season's matches (20 clubs, each meeting every other twice).
SEASON_MATCHES = 20 * 19


def test_the_refit_before_the_season_serves_the_backtests_model(
    season_replay: SeasonReplay, season_backtest: SeasonBacktest
) -> None:
    fold = season_backtest.fold
    (fitted,) = fold.ensembles.values()
    assert season_replay.trained_matches == len(fold.train_match_ids)
    served = season_replay.served
    assert (served.bookmakers, served.method, served.phase, served.rounds) == (
        fitted.bookmakers,
        fitted.method,
        fitted.phase,
        fitted.rounds,
    )
    np.testing.assert_allclose(served.weights, fitted.weights, rtol=0, atol=1e-12)


def test_every_match_was_listed_with_the_models_prediction_before_its_kickoff(
    season_replay: SeasonReplay, season_backtest: SeasonBacktest
) -> None:
    days = season_replay.matchdays
    assert sum(day.matches for day in days) == SEASON_MATCHES
    assert [day.listed for day in days] == [day.matches for day in days]
    # The backtest forecast the whole season too: no match is left out of its bets' rows.
    assert len(season_backtest.fold.forecasts[ENSEMBLE]) == SEASON_MATCHES


def test_the_boards_flags_are_the_backtests_bets(
    season_replay: SeasonReplay, season_backtest: SeasonBacktest
) -> None:
    terms = season_replay.settings.value_terms()
    assert season_backtest.config.commissions == terms.commissions
    assert season_backtest.config.thresholds == (terms.min_ev,)
    flags = by_decision(season_replay.flags())
    bets = by_decision(season_backtest.bets)
    assert len(bets) > 40  # a season's worth of decisions, not an empty comparison
    # Match, outcome, bookmaker and net price alike; the claimed EV to the de-margining
    # solver's tolerance (one match at a time live, the season at once in the backtest).
    assert [flag.decision for flag in flags] == [bet.decision for bet in bets]
    for flag, bet in zip(flags, bets, strict=True):
        assert flag.expected_value == pytest.approx(bet.expected_value, rel=0, abs=1e-9), flag


def test_upcoming_and_the_dashboard_show_the_value_bets_list(season_replay: SeasonReplay) -> None:
    for day in season_replay.matchdays:
        assert by_decision(day.board_bets) == by_decision(day.value_bets), day.moment
        shown = sorted((f.home_team, f.away_team, f.outcome) for f in day.value_bets)
        assert sorted(day.dashboard_bets) == shown, day.moment
