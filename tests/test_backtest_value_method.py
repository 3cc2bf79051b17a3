"""The backtest de-margines a bookmaker's or the consensus's line with the method of the
model that forecast the match, as the live service de-margines them with the active model's:
for a Shin model (and per competition, a Shin one beside a power one) every outcome the live
valuation flags on two real seasons is a bet of the backtest, at the same price and EV."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from app.domain.backtest.folds import CONSENSUS, ENSEMBLE, Fold
from app.domain.backtest.value_bets import ValueBetConfig, bets_of, fitted_methods, priced_fold
from app.domain.ensemble import Ensemble
from app.domain.prediction import QuotedOdds
from app.domain.records import OUTCOME_INDEX
from app.domain.tables import MatchTable, QuoteTable
from app.domain.value import ValueTerms, match_values
from app.domain.vocabulary import Method, Phase
from app.services.backtest import tables_from_files

SeasonFile = Callable[[str], Path]
BOOKMAKERS = ("B365", "BW", "IW", "PS", "WH", "VC")
SOURCES = ("consensus", "B365", "PS,consensus")
THRESHOLDS = (0.0, 0.02)
Flag = tuple[int, int, str, float, float]


def model(method: Method) -> Ensemble:
    """A fitted model as far as the value lines care: the method it read odds with."""
    return Ensemble(("PS",), np.array([1.0]), method, Phase.PRE, rounds=1)


def season_fold(matches: MatchTable, ensembles: dict[str, Ensemble]) -> Fold:
    """Every match of ``matches`` a test row, forecast evenly (the lines tested are not the
    forecast's), by the models ``ensembles``."""
    even = np.full((len(matches), 3), 1 / 3)
    return Fold(
        season="2018/19",
        train_seasons={},
        train_match_ids=np.array([], dtype=np.int64),
        test_match_ids=matches.ids,
        test_first_kickoff=float(matches.kickoff.min()),
        y=matches.result,
        forecasts={ENSEMBLE: even, CONSENSUS: even.copy()},
        compared=(),
        best_bookmaker="PS",
        best_used={},
        ensembles=ensembles,
        training_margins=np.array([0.0]),
        dropped={},
        closing_rows=np.zeros(len(matches), dtype=np.bool_),
        closing=np.empty((0, 3)),
        base_rates=(1 / 3, 1 / 3, 1 / 3),
    )


def live_odds(matches: MatchTable, quotes: QuoteTable) -> list[list[QuotedOdds]]:
    """Each match's pre-match quotes as the live service reads them, in the backtest's
    column order (so that equal best prices name the same bookmaker)."""
    found: list[list[QuotedOdds]] = [[] for _ in range(len(matches))]
    for row in np.flatnonzero(quotes.phase == Phase.PRE.value):
        code = str(quotes.bookmaker[row])
        if code in BOOKMAKERS:
            found[quotes.match[row]].append(QuotedOdds(code, *quotes.prices[row].tolist()))
    return [sorted(odds, key=lambda quote: BOOKMAKERS.index(quote.bookmaker)) for odds in found]


def live_flags(
    matches: MatchTable, quotes: QuoteTable, terms: ValueTerms, methods: dict[str, Method]
) -> list[Flag]:
    """The outcomes the live valuation flags, each competition's matches valued with the
    method of the model serving it."""
    odds = live_odds(matches, quotes)
    flags: list[Flag] = []
    for competition, method in methods.items():
        rows = np.flatnonzero(matches.competition == competition)
        values = match_values(
            [(1 / 3, 1 / 3, 1 / 3)] * len(rows), [odds[r] for r in rows], terms, method
        )
        for row, value in zip(rows, values, strict=True):
            for outcome in value.flagged:
                # A flagged outcome is priced: its price and EV are there.
                assert outcome.net_price is not None
                assert outcome.expected_value is not None
                flags.append(
                    (
                        int(matches.ids[row]),
                        OUTCOME_INDEX[outcome.outcome],
                        str(outcome.bookmaker),
                        outcome.net_price,
                        outcome.expected_value,
                    )
                )
    return sorted(flags)


@pytest.mark.parametrize(
    ("ensembles", "methods"),
    [
        ({"": model(Method.SHIN)}, {"E0": Method.SHIN, "SP1": Method.SHIN}),
        (
            {"E0": model(Method.SHIN), "SP1": model(Method.POWER)},
            {"E0": Method.SHIN, "SP1": Method.POWER},
        ),
    ],
    ids=["one shin model", "shin for E0, power for SP1"],
)
def test_the_backtests_bets_are_the_live_flags_of_the_fitted_method(
    season_file: SeasonFile, ensembles: dict[str, Ensemble], methods: dict[str, Method]
) -> None:
    matches, quotes = tables_from_files([season_file("E0_1819"), season_file("SP1_1819")])
    config = ValueBetConfig(
        sources=SOURCES, thresholds=THRESHOLDS, reference="PS", bookmakers=BOOKMAKERS
    )
    priced = priced_fold(season_fold(matches, ensembles), matches, quotes, config)
    compared = 0
    for source, threshold in itertools.product(SOURCES, THRESHOLDS):
        flags = live_flags(matches, quotes, ValueTerms(min_ev=threshold, source=source), methods)
        bets = bets_of(priced, source, threshold)
        placed = sorted(
            zip(
                bets.match_id.tolist(),
                bets.outcome.tolist(),
                bets.bookmaker.tolist(),
                bets.price.tolist(),
                bets.claimed_ev.tolist(),
                strict=True,
            )
        )
        assert len(flags) == len(placed) > 0, (source, threshold)
        for flag, bet in zip(flags, placed, strict=True):
            assert flag[:4] == bet[:4], (source, threshold)
            # Shin's solver runs per match live and over the season here: equal to its tolerance.
            assert flag[4] == pytest.approx(bet[4], abs=1e-9), (source, threshold)
        compared += len(placed)
    assert compared > 500


def test_each_row_is_read_by_its_models_method_and_by_the_default_without_one() -> None:
    matches = MatchTable.from_columns(
        ids=[1, 2, 3],
        kickoff=[dt.datetime(2018, 8, 11, 15, tzinfo=dt.UTC)] * 3,
        result=["1", "X", "2"],
        competition=["E0", "SP1", "E0"],
        season=["2018/19"] * 3,
    )
    read = fitted_methods(season_fold(matches, {"E0": model(Method.SHIN)}), matches)
    assert {method: rows.tolist() for method, rows in read.items()} == {
        Method.SHIN: [True, False, True],
        Method.POWER: [False, True, False],  # SP1 has no model: the default, as live
    }
    (only,) = fitted_methods(season_fold(matches, {}), matches).items()
    assert (only[0], only[1].tolist()) == (Method.POWER, [True, True, True])
