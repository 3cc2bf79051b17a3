"""Value bets in the backtest: a hand-made fold whose bets, CLV, return, Kelly bankroll and
drawdown are worked out by hand, the rules of choosing a bet, and the command on real
season files."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats

from app.cli.backtest_report.value import value_markdown
from app.domain.backtest.folds import CONSENSUS, ENSEMBLE, Fold
from app.domain.backtest.value_bets import (
    Bets,
    PricedFold,
    ValueBetConfig,
    bankroll_curve,
    bets_of,
    max_drawdown,
)
from app.domain.evaluation import least_squares_slope, mean_interval
from app.domain.prediction import QuotedOdds
from app.domain.records import OUTCOME_INDEX
from app.domain.tables import MatchTable, QuoteTable
from app.domain.value import (
    ENSEMBLE_SOURCE,
    ValueTerms,
    best_prices,
    choose_outcomes,
    match_value,
    match_values,
)
from app.domain.value_summary import ValueSummary, summarise_value
from app.domain.vocabulary import Method, Phase
from app.services.backtest import tables_from_files
from tests.commands import Oddsboost

SeasonFile = Callable[[str], Path]
DAY = dt.datetime(2018, 8, 11, 15, tzinfo=dt.UTC)
# Four matches; the second and third kick off together.
KICKOFF = [DAY, DAY + dt.timedelta(days=1), DAY + dt.timedelta(days=1), DAY + dt.timedelta(days=2)]
RESULTS = ["1", "2", "2", "X"]
# The served forecast of each match (the consensus is the same: the fold only carries it).
ENSEMBLE_PROBABILITIES = [
    [0.50, 0.25, 0.25],
    [0.40, 0.30, 0.30],
    [0.25, 0.25, 0.50],
    [0.65, 0.22, 0.13],
]
PRE = {
    "B365": [[2.10, 3.80, 3.60], [2.40, 3.20, 3.00], [4.00, 3.80, 2.06], [1.60, 3.90, 6.00]],
    "WH": [[2.00, 4.00, 3.50], [2.30, 3.50, 3.10], [3.90, 3.90, 2.00], [1.62, 3.80, 6.20]],
    # Not one the bettor can bet with: its far better prices must never be taken.
    "XX": [[2.50, 5.00, 5.00], [3.00, 4.50, 4.00], [5.00, 5.00, 2.50], [1.80, 4.50, 8.00]],
    # Pinnacle's lines without margin (1/price sums to 1): their fair probabilities are
    # 1/price. It did not quote the fourth match.
    "PS": [[2.00, 4.00, 4.00], [2.50, 5.00, 2.50], [4.00, 4.00, 2.00]],
}
# Pinnacle's closing lines, without margin; none for the fourth match.
CLOSING = [[2.00, 4.00, 4.00], [2.50, 5.00, 2.50], [4.00, 4.00, 2.00]]
CONFIG = ValueBetConfig(
    sources=("ensemble", "consensus", "PS"),
    thresholds=(0.0, 0.04, 0.10),
    reference="PS",
    bookmakers=("B365", "WH"),
)


def hand_made_tables() -> tuple[MatchTable, QuoteTable]:
    matches = MatchTable.from_columns(
        ids=[10, 11, 12, 13],
        kickoff=KICKOFF,
        result=RESULTS,
        competition=["E0"] * 4,
        season=["2018/19"] * 4,
    )
    rows: list[tuple[int, str, str, list[float]]] = [
        (10 + match, bookmaker, "pre", prices)
        for bookmaker, lines in PRE.items()
        for match, prices in enumerate(lines)
    ]
    rows += [(10 + match, "PS", "closing", prices) for match, prices in enumerate(CLOSING)]
    quotes = QuoteTable.from_columns(
        matches,
        match_ids=[row[0] for row in rows],
        bookmaker=[row[1] for row in rows],
        phase=[row[2] for row in rows],
        captured_at=[None] * len(rows),
        received_at=[None] * len(rows),
        prices=[row[3] for row in rows],
    )
    return matches, quotes


def hand_made_fold() -> Fold:
    probabilities = np.array(ENSEMBLE_PROBABILITIES)
    return Fold(
        season="2018/19",
        train_seasons={"E0": ("2015/16", "2016/17", "2017/18")},
        train_match_ids=np.array([], dtype=np.int64),
        test_match_ids=np.array([10, 11, 12, 13], dtype=np.int64),
        test_first_kickoff=DAY.timestamp(),
        y=np.array([0, 2, 2, 1], dtype=np.intp),
        forecasts={ENSEMBLE: probabilities, CONSENSUS: probabilities.copy()},
        compared=("B365", "WH"),
        best_bookmaker="B365",
        best_used={"B365": 4},
        ensembles={},
        training_margins=np.array([0.0]),
        dropped={},
        closing_rows=np.array([True, True, True, False]),
        closing=np.array(CLOSING),
        base_rates=(0.45, 0.27, 0.28),
    )


def summary() -> ValueSummary:
    matches, quotes = hand_made_tables()
    return summarise_value([hand_made_fold()], matches, quotes, CONFIG)


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean ± t·s/√n, written out."""
    n = len(values)
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * s / math.sqrt(n)
    return mean, mean - half, mean + half


def test_the_hand_made_fold_bets_as_worked_out_by_hand() -> None:
    # Best prices among B365 and WH, EV = p × price − 1:
    # match 10: 2.10, 4.00, 3.60 → +0.05, 0, −0.10: home at 2.10, won.
    # match 11: 2.40, 3.50, 3.10 → −0.04, +0.05, −0.07: draw at 3.50, lost.
    # match 12: 4.00, 3.90, 2.06 → 0, −0.025, +0.03: away at 2.06, won.
    # match 13: 1.62, 3.90, 6.20 → +0.053, −0.142, −0.194: home at 1.62, lost (no close).
    season = summary().seasons[0]
    rule = season.rule("ensemble", 0.0)
    assert rule.bets == 4
    returns = [1.10, -1.0, 1.06, -1.0]
    mean, low, high = t_interval(returns)
    assert rule.roi.n == 4
    assert [rule.roi.mean, rule.roi.low, rule.roi.high] == pytest.approx([mean, low, high])
    # CLV against the fair closing line, on the three matches that have one.
    clv = [2.10 * 0.5 - 1, 3.50 * 0.2 - 1, 2.06 * 0.5 - 1]
    mean, low, high = t_interval(clv)
    assert rule.clv.n == 3
    assert [rule.clv.mean, rule.clv.low, rule.clv.high] == pytest.approx([mean, low, high])
    claimed = [0.05, 0.05, 0.03]
    x_mean, y_mean = sum(claimed) / 3, sum(clv) / 3
    slope = sum((x - x_mean) * (y - y_mean) for x, y in zip(claimed, clv, strict=True)) / sum(
        (x - x_mean) ** 2 for x in claimed
    )
    assert rule.slope == pytest.approx(slope)
    # Quarter Kelly: 0.25 × EV / (price − 1), at most 2 %. The second and third matches
    # share a kickoff and are staked from the same bankroll; the fourth's stake,
    # 0.25 × 0.053 / 0.62 = 2.14 %, is capped at 2 %.
    after_first = 1 + 0.25 * 0.05 / 1.10 * 1.10
    after_second = after_first * (1 - 0.25 * 0.05 / 2.50 + 0.25 * 0.03 / 1.06 * 1.06)
    after_third = after_second * (1 - 0.02)
    assert rule.bankroll.curve == pytest.approx((after_first, after_second, after_third))
    assert rule.bankroll.final == pytest.approx(after_third)
    assert rule.bankroll.max_drawdown == pytest.approx(1 - after_third / after_second)
    # Above 4 %: the third match's 3 % is left out.
    assert season.rule("ensemble", 0.04).bets == 3
    assert season.rule("ensemble", 0.04).roi.mean == pytest.approx((1.10 - 1.0 - 1.0) / 3)


def test_a_threshold_above_every_ev_flags_nothing() -> None:
    rule = summary().overall.rule("ensemble", 0.10)
    assert rule.bets == 0
    assert (rule.clv.n, rule.clv.mean, rule.roi.mean, rule.slope) == (0, None, None, None)
    assert (rule.bankroll.final, rule.bankroll.max_drawdown) == (1.0, 0.0)


def test_a_bookmakers_line_bets_only_where_it_quoted() -> None:
    # Pinnacle's fair lines: match 11 is 0.4, 0.2, 0.4, so its best EV is the away win at
    # 3.10 (+0.24, won); match 13 has no Pinnacle line, so no bet.
    rule = summary().overall.rule("PS", 0.0)
    assert rule.bets == 3
    assert rule.roi.mean == pytest.approx((1.10 + 2.10 + 1.06) / 3)
    assert rule.clv.mean == pytest.approx((0.05 + 0.24 + 0.03) / 3)


def test_every_outcome_at_the_best_price_and_the_distance_to_the_close() -> None:
    whole = summary().overall
    # A stake on each outcome of each match: per match the winner's price − 3, over 3.
    per_match = [(2.10 - 3) / 3, (3.10 - 3) / 3, (2.06 - 3) / 3, (3.90 - 3) / 3]
    assert whole.every_outcome.mean == pytest.approx(sum(per_match) / 4)
    assert (whole.matches, whole.closing_matches) == (4, 3)
    distance = next(d for d in whole.closing_distances if d.source == "PS")
    assert distance.matches == 3
    assert distance.mean_absolute == pytest.approx(0.0, abs=1e-9)
    ensemble = next(d for d in whole.closing_distances if d.source == "ensemble")
    # Only match 11 differs from the close: |0.4−0.4| + |0.3−0.2| + |0.3−0.4| over 9 cells.
    assert ensemble.mean_absolute == pytest.approx(0.2 / 9)
    # The report gives it for each season and for all of them.
    markdown = value_markdown(summary(), plots_written=False)
    for season in ("2018/19", "all"):
        assert f"| {season} | ensemble | 3 | 0.0222 | +0.0000 | +0.0333 | -0.0333 |" in markdown


# A forecast unlike Pinnacle's line, for comparing two sources' bets: no outcome of match 10
# or 11 is worth a bet at the best prices; match 12's away win at 2.06 claims
# 0.60 × 2.06 − 1 = +0.236; match 13's home win at 1.62 claims 0.70 × 1.62 − 1 = +0.134.
OTHER_FORECAST = [
    [0.475, 0.249, 0.276],
    [0.41, 0.28, 0.31],
    [0.20, 0.20, 0.60],
    [0.70, 0.20, 0.10],
]


def test_each_sources_own_bets_keep_their_claimed_ev_beside_their_clv() -> None:
    matches, quotes = hand_made_tables()
    fold = dataclasses.replace(hand_made_fold(), forecasts={ENSEMBLE: np.array(OTHER_FORECAST)})
    config = dataclasses.replace(CONFIG, sources=("PS", "ensemble"))
    value = summarise_value([fold], matches, quotes, config)
    whole = value.overall
    # Above 0, Pinnacle's line bets 10 (+0.05), 11 (+0.24) and 12 (+0.03); the ensemble
    # 12 and 13. Pinnacle's own bets are 10 and 11; the ensemble's own, 13, has no close.
    at_zero = next(c for c in whole.comparisons if c.threshold == 0.0)
    assert (at_zero.first, at_zero.second, at_zero.matches) == ("PS", "ensemble", 1)
    assert at_zero.first_only.n == 2
    assert at_zero.first_only_claimed_ev == pytest.approx((0.05 + 0.24) / 2)
    assert (at_zero.second_only.n, at_zero.second_only_claimed_ev) == (0, None)
    # Above 4 %, Pinnacle's line drops 12, which the ensemble then bets alone: it claims
    # +0.236 for a CLV of 2.06 × 0.5 − 1 = +0.03. Match 13, without a close, is left out
    # of both means, or the claim would be (0.236 + 0.134) / 2.
    above = next(c for c in whole.comparisons if c.threshold == 0.04)
    assert above.matches == 0
    assert above.first_only_claimed_ev == pytest.approx(0.145)
    assert above.second_only.n == 1
    assert above.second_only.mean == pytest.approx(0.03)
    assert above.second_only_claimed_ev == pytest.approx(0.236)
    written = above.to_json()
    assert written["first_only_claimed_ev"] == pytest.approx(0.145)
    assert written["second_only_claimed_ev"] == pytest.approx(0.236)
    # The report prints them beside each CLV, for the season and for all seasons.
    markdown = "\n".join(value_markdown(value, plots_written=False))
    for season in ("2018/19", "all"):
        assert f"| {season} | PS vs ensemble | 4% | 0 | 0 | | | +14.50 % [" in markdown
    assert "(2) | +14.50 % | +3.00 % (1) | +23.60 % |" in markdown


def test_a_bookmaker_outside_the_price_takers_is_never_chosen() -> None:
    matches, quotes = hand_made_tables()
    season = summarise_value([hand_made_fold()], matches, quotes, CONFIG).seasons[0]
    # XX's home price 1.80 on match 13 would give the biggest EV of all; it is not taken.
    assert season.rule("ensemble", 0.0).roi.mean == pytest.approx(0.04)
    priced = priced_fold_of_hand_made()
    bets = bets_of(priced, "ensemble", 0.0)
    assert set(bets.bookmaker.tolist()) <= {"B365", "WH"}
    assert bets.bookmaker.tolist() == ["B365", "WH", "B365", "WH"]
    assert bets.price.tolist() == [2.10, 3.50, 2.06, 1.62]


def priced_fold_of_hand_made() -> PricedFold:
    from app.domain.backtest.value_bets import priced_fold

    matches, quotes = hand_made_tables()
    return priced_fold(hand_made_fold(), matches, quotes, CONFIG)


def test_one_bet_per_match_the_outcome_of_highest_ev() -> None:
    # Every outcome is above the threshold; only the best is bet.
    probabilities = np.array([[0.40, 0.35, 0.35], [0.30, 0.30, 0.45]])
    prices = np.full((2, 3), 3.0)
    placed, outcome, ev = choose_outcomes(probabilities, prices, 0.0)
    assert placed.tolist() == [True, True]
    assert outcome.tolist() == [0, 2]
    assert ev[0].tolist() == pytest.approx([0.20, 0.05, 0.05])
    rng = np.random.default_rng(7)
    priced = random_priced_fold(rng, 500)
    bets = bets_of(priced, "ensemble", 0.0)
    assert len(np.unique(bets.match_id)) == len(bets) > 0


def random_priced_fold(rng: np.random.Generator, n: int) -> PricedFold:
    probabilities = rng.dirichlet([4, 3, 3], n)
    prices = rng.uniform(1.2, 8.0, (n, 2, 3))
    return PricedFold(
        season="2018/19",
        match_ids=np.arange(n, dtype=np.int64),
        kickoff=np.arange(n, dtype=np.float64),
        y=rng.integers(0, 3, n).astype(np.intp),
        best=best_prices(prices),
        bookmakers=("B365", "WH"),
        # The closing line equal to the forecast: every bet's CLV is its claimed EV.
        closing=probabilities,
        probabilities={"ensemble": probabilities},
    )


def test_the_slope_is_one_where_clv_is_the_claimed_ev() -> None:
    bets = bets_of(random_priced_fold(np.random.default_rng(8), 300), "ensemble", 0.0)
    assert bets.clv == pytest.approx(bets.claimed_ev)
    assert least_squares_slope(bets.claimed_ev, bets.clv) == pytest.approx(1.0)
    assert least_squares_slope([1.0, 2.0, 3.0], [1.0, 0.0, -1.0]) == pytest.approx(-1.0)
    assert least_squares_slope([1.0, 1.0], [0.0, 2.0]) is None


def test_bankroll_and_drawdown_of_a_sequence_by_hand() -> None:
    bets = bets_of(random_priced_fold(np.random.default_rng(9), 40), "ensemble", 0.0)
    curve = bankroll_curve(bets, 0.25, 0.02)
    assert len(curve) == len(bets)  # every kickoff apart
    assert max_drawdown(np.array([1.1, 0.99, 1.2, 0.9, 1.0])) == pytest.approx(0.25)
    assert max_drawdown(np.array([1.1, 1.2])) == 0.0
    assert max_drawdown(np.array([0.8])) == pytest.approx(0.2)


def test_mean_interval_against_scipy() -> None:
    values = np.random.default_rng(10).normal(0.01, 0.1, 200)
    interval = mean_interval(values)
    low, high = stats.t.interval(0.95, 199, loc=values.mean(), scale=stats.sem(values))
    assert [interval.low, interval.high] == pytest.approx([low, high])
    assert mean_interval([0.5]) == mean_interval([0.5])
    assert (mean_interval([0.5]).low, mean_interval([]).mean) == (None, None)


def test_the_command_measures_value_bets_on_real_seasons(
    oddsboost: Oddsboost, season_file: SeasonFile, tmp_path: Path
) -> None:
    files = [
        str(season_file(f"{league}_{season}"))
        for league in ("E0", "SP1")
        for season in ("1415", "1516", "1617", "1718", "1819")
    ]
    result = oddsboost.run(
        "backtest",
        *files,
        "--test-seasons",
        "2017/18,2018/19",
        "--rounds-grid",
        "1,5,20",
        "--value-bets",
        "--value-thresholds",
        "0.02,0",
        "--output",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "report.md").read_text()
    assert "## Value bets" in markdown
    assert (tmp_path / "value_bankroll.png").read_bytes().startswith(b"\x89PNG")
    value = json.loads((tmp_path / "report.json").read_text())["value"]
    assert value["config"]["thresholds"] == [0.0, 0.02]
    # The bookmakers' margin: betting everything at the best price loses.
    every = value["overall"]["every_outcome"]
    assert every["n"] > 1400
    assert every["mean"] < 0
    rules = {(r["source"], r["threshold"]): r for r in value["overall"]["rules"]}
    assert set(rules) == {(s, t) for s in ("ensemble", "consensus", "PS") for t in (0.0, 0.02)}
    assert rules["PS", 0.02]["bets"] < rules["PS", 0.0]["bets"]


def test_value_options_are_checked(
    oddsboost: Oddsboost, season_file: SeasonFile, tmp_path: Path
) -> None:
    path = str(season_file("E0_1819"))

    def run(*args: str) -> tuple[int, str]:
        result = oddsboost.run("backtest", path, "--value-bets", *args, "--output", str(tmp_path))
        return result.returncode, result.stderr

    code, stderr = run("--value-thresholds", "0,lots")
    assert code == 2
    assert "--value-thresholds takes numbers" in stderr
    code, stderr = run("--value-thresholds", "0,0")
    assert code == 2
    assert "given twice" in stderr
    code, stderr = run("--value-sources", "ensemble;PS,XYZ")
    assert code == 2
    assert "unknown value source 'XYZ'" in stderr
    code, stderr = run("--value-sources", "ensemble;PS,,consensus")
    assert code == 2
    assert "a value source has an empty link" in stderr
    code, stderr = run("--value-sources", "PS,consensus;ps, Consensus")
    assert code == 2
    assert "a value source is given twice: PS,consensus" in stderr
    code, stderr = run("--value-sources", "ensemble;consensus,Ladbrokes")
    assert code == 2
    assert "no bookmaker LB in the data" in stderr
    code, stderr = run("--value-reference", "B365")
    assert code == 2
    assert "no closing line of B365 in the data; it has PS" in stderr
    assert not (tmp_path / "report.json").exists()


def test_of_two_outcomes_with_value_the_backtest_bets_the_higher_as_the_live_list_flags() -> None:
    # 0.5 × 2.2 − 1 = 0.1 and 0.28 × 4.0 − 1 = 0.12 are above 0.02; 0.22 × 4.2 − 1 = −0.076.
    probabilities = np.array([[0.5, 0.28, 0.22]])
    prices = np.array([[[2.2, 3.8, 4.2], [2.1, 4.0, 4.0]]])  # B365, WH
    priced = PricedFold(
        season="2018/19",
        match_ids=np.array([7], dtype=np.int64),
        kickoff=np.array([0.0]),
        y=np.array([1], dtype=np.intp),
        best=best_prices(prices),
        bookmakers=("B365", "WH"),
        closing=np.array([[0.45, 0.3, 0.25]]),
        probabilities={"ensemble": probabilities},
    )
    bets = bets_of(priced, "ensemble", 0.02)
    assert (bets.outcome.tolist(), bets.bookmaker.tolist(), bets.price.tolist()) == (
        [1],
        ["WH"],
        [4.0],
    )
    assert bets.claimed_ev.tolist() == pytest.approx([0.12])
    assert bets.clv.tolist() == pytest.approx([0.3 * 4.0 - 1])
    assert bets.returns.tolist() == pytest.approx([3.0])
    # The live service flags the same outcome at the same price, and only it.
    odds = [QuotedOdds("B365", 2.2, 3.8, 4.2), QuotedOdds("WH", 2.1, 4.0, 4.0)]
    live = match_value(
        (0.5, 0.28, 0.22), odds, ValueTerms(min_ev=0.02, source=ENSEMBLE_SOURCE), Method.POWER
    )
    assert [(o.outcome, o.bookmaker, o.price) for o in live.flagged] == [("X", "WH", 4.0)]
    assert live.outcomes[0].expected_value == pytest.approx(0.1)


def test_equal_values_bet_the_first_outcome_in_1_x_2_order() -> None:
    # 0.5 × 2.5 − 1 = 0.25 × 5.0 − 1 = 0.25 exactly, in the backtest as live.
    tie = choose_outcomes(np.array([[0.5, 0.25, 0.25]]), np.array([[2.5, 5.0, 3.0]]), 0.02)
    assert (tie.placed.tolist(), tie.outcome.tolist()) == ([True], [0])
    later = choose_outcomes(np.array([[0.25, 0.5, 0.25]]), np.array([[3.0, 2.5, 5.0]]), 0.02)
    assert later.outcome.tolist() == [1]
    assert later.flags().tolist() == [[False, True, False]]


def test_the_backtest_takes_an_exchanges_price_net_of_its_commission() -> None:
    # BFE's 2.20 pays 1 + 1.2 × 0.95 = 2.14 net, more than B365's 2.10; its 4.0 away pays
    # 3.85, less than B365's 3.9. The home win is worth 0.5 × 2.14 − 1 = 0.07.
    config = dataclasses.replace(CONFIG, bookmakers=("B365", "BFE"))
    commission = config.commission_of_bookmakers()
    assert commission.tolist() == [0.0, 0.05]
    prices = np.array([[[2.10, 3.3, 3.9], [2.20, 3.2, 4.0]]])
    best = best_prices(prices, commission)
    assert best.price[0].tolist() == pytest.approx([2.14, 3.3, 3.9])
    assert best.bookmaker.tolist() == [[1, 0, 0]]
    priced = PricedFold(
        season="2018/19",
        match_ids=np.array([3], dtype=np.int64),
        kickoff=np.array([0.0]),
        y=np.array([0], dtype=np.intp),
        best=best,
        bookmakers=config.bookmakers,
        closing=np.array([[0.48, 0.27, 0.25]]),
        probabilities={"ensemble": np.array([[0.5, 0.27, 0.23]])},
    )
    bets = bets_of(priced, "ensemble", 0.02)
    assert (bets.bookmaker.tolist(), bets.outcome.tolist()) == (["BFE"], [0])
    assert bets.claimed_ev.tolist() == pytest.approx([0.07])
    # Its return and CLV are those of the net price: 1.14 won, 0.48 × 2.14 − 1.
    assert bets.returns.tolist() == pytest.approx([1.14])
    assert bets.clv.tolist() == pytest.approx([0.48 * 2.14 - 1])
    # Without commission the quoted 2.20 counts.
    assert best_prices(prices).price.tolist() == [[2.2, 3.3, 4.0]]


def test_the_report_states_the_commissions_it_applied() -> None:
    markdown = value_markdown(summary(), plots_written=False)
    # B365 and WH take no commission.
    assert (
        "Commission applied: none (no price-taking bookmaker is an exchange of "
        "ODDSBOOST_EXCHANGE_COMMISSION); every price is taken as quoted."
    ) in markdown
    matches, quotes = hand_made_tables()
    config = dataclasses.replace(
        CONFIG, bookmakers=("B365", "BFE", "MB"), commissions=(("BFE", 0.05), ("MB", 0.015))
    )
    with_exchanges = summarise_value([hand_made_fold()], matches, quotes, config)
    stated = "\n".join(value_markdown(with_exchanges, plots_written=False))
    assert "Commission applied: BFE 5 %, MB 1.5 % on net winnings;" in stated


def test_the_command_takes_the_commissions_of_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.cli.backtest import _value_config
    from app.settings import get_settings

    monkeypatch.setenv("ODDSBOOST_EXCHANGE_COMMISSION", '{"Betfair Exchange": 0.02}')
    get_settings.cache_clear()
    try:
        config = _value_config("ensemble", "0.02", "PS", "B365,BFE")
    finally:
        get_settings.cache_clear()
    assert config.commissions == (("BFE", 0.02),)
    assert config.commission_of_bookmakers().tolist() == [0.0, 0.02]


SIX = ("B365", "BW", "IW", "PS", "WH", "VC")


def season_quotes(
    matches: MatchTable, quotes: QuoteTable, bookmakers: tuple[str, ...]
) -> list[list[QuotedOdds]]:
    """Each match's pre-match quotes of ``bookmakers``, as the live service reads them."""
    found: list[list[QuotedOdds]] = [[] for _ in range(len(matches))]
    for row in np.flatnonzero(quotes.phase == "pre"):
        code = str(quotes.bookmaker[row])
        if code in bookmakers:
            home, draw, away = quotes.prices[row].tolist()
            found[quotes.match[row]].append(QuotedOdds(code, home, draw, away))
    # In the order of the backtest's columns, so that equal best prices name one bookmaker.
    return [sorted(odds, key=lambda quote: bookmakers.index(quote.bookmaker)) for odds in found]


def test_a_seasons_live_flags_are_the_backtests_bets(season_file: SeasonFile) -> None:
    """A season of the shared files decided twice on the same quotes and probabilities: by
    the live valuation (match_values, as /predict, the board and the track record run it)
    and by the backtest (priced_fold and bets_of). Every flag is a bet and every bet a flag.
    VC stands in for an exchange, at 5 %, so that the commission is decided on too."""
    from app.domain.backtest.prices import fair_line, quoted_prices
    from app.domain.backtest.value_bets import priced_fold

    matches, quotes = tables_from_files([season_file("E0_1819")])
    ids = matches.ids
    commissions = (("BFE", 0.05), ("VC", 0.05))
    config = ValueBetConfig(
        sources=("ensemble", "PS", "consensus", "PS,consensus", "consensus,PS", "PS,ensemble"),
        thresholds=(0.0, 0.02, 0.05),
        reference="PS",
        bookmakers=SIX,
        commissions=commissions,
    )
    # The consensus is every quoting bookmaker's, live and in the backtest: here the six.
    assert set(quotes.bookmaker.tolist()) == set(SIX)
    # The "ensemble" here is the mean of the six de-margined lines: any forecast will do.
    lines = quoted_prices(matches, quotes, ids, SIX, Phase.PRE)
    forecast = np.nanmean([fair_line(lines[:, b], Method.POWER) for b in range(len(SIX))], 0)
    fold = dataclasses.replace(
        hand_made_fold(),
        test_match_ids=ids,
        y=matches.result,
        forecasts={ENSEMBLE: forecast, CONSENSUS: forecast},
    )
    priced = priced_fold(fold, matches, quotes, config)
    odds = season_quotes(matches, quotes, SIX)
    served = [(float(p[0]), float(p[1]), float(p[2])) for p in forecast]
    compared = 0
    for source, threshold in itertools.product(config.sources, config.thresholds):
        terms = ValueTerms(min_ev=threshold, source=source, commissions=commissions)
        values = match_values(served, odds, terms, Method.POWER)
        flags = [
            (int(match_id), OUTCOME_INDEX[o.outcome], o.bookmaker, o.net_price, o.expected_value)
            for match_id, value in zip(ids, values, strict=True)
            for o in value.flagged
        ]
        bets = bets_of(priced, source, threshold)
        assert len(flags) == len(bets) > 0, (source, threshold)
        placed = sorted(zip(*bet_columns(bets), strict=True))
        for flag, bet in zip(sorted(flags), placed, strict=True):
            assert flag[:4] == bet[:4], (source, threshold)
            # A bookmaker's line is de-margined by one iterative solver per match live and
            # for the whole season in the backtest: equal to its tolerance.
            assert flag[4] == pytest.approx(bet[4], abs=1e-9), (source, threshold)
        # A match gets one bet at most, live as in the backtest.
        assert len({flag[0] for flag in flags}) == len(flags)
        compared += len(bets)
    assert compared > 1000  # 1,236 over the eighteen rules


def bet_columns(bets: Bets) -> tuple[list[int], list[int], list[str], list[float], list[float]]:
    return (
        bets.match_id.tolist(),
        bets.outcome.tolist(),
        bets.bookmaker.tolist(),
        bets.price.tolist(),
        bets.claimed_ev.tolist(),
    )


def test_a_matchdays_flags_from_predict_are_the_backtests_bets(
    season_file: SeasonFile, fitted_client: TestClient
) -> None:
    """The first matchdays of a real season sent to /predict/batch with their six
    bookmakers' quotes: the outcomes it flags are the bets the backtest's rule places on
    the same probabilities (the served ones) and the same quotes."""
    from app.domain.backtest.prices import quoted_prices

    matches, quotes = tables_from_files([season_file("E0_1819")])
    first = np.argsort(matches.kickoff, kind="stable")[:60]
    ids = matches.ids[first]
    odds = season_quotes(matches, quotes, SIX)
    items = [
        {
            "odds": [
                {"bookmaker": q.bookmaker, "home": q.home, "draw": q.draw, "away": q.away}
                for q in odds[row]
            ]
        }
        for row in first
    ]
    response = fitted_client.post("/predict/batch", json={"items": items})
    assert response.status_code == 200, response.text
    answers = [result["prediction"] for result in response.json()["results"]]
    served = np.array([[a["probabilities"][k] for k in ("home", "draw", "away")] for a in answers])
    priced = PricedFold(
        season="2018/19",
        match_ids=ids,
        kickoff=matches.kickoff[first],
        y=matches.result[first],
        best=best_prices(quoted_prices(matches, quotes, ids, SIX, Phase.PRE)),
        bookmakers=SIX,
        closing=np.full((len(ids), 3), np.nan),
        probabilities={"ensemble": served},
    )
    bets = bets_of(priced, "ensemble", 0.02)
    flags = sorted(
        (int(match_id), OUTCOME_INDEX[outcome["outcome"]], outcome["bookmaker"], outcome["price"])
        for match_id, answer in zip(ids, answers, strict=True)
        for outcome in (
            answer["value"]["outcomes"][key] | {"outcome": symbol}
            for key, symbol in (("home", "1"), ("draw", "X"), ("away", "2"))
        )
        if outcome["flagged"]
    )
    assert len(flags) == len(bets) > 0  # 13 of the 60 matches
    assert flags == sorted(zip(*bet_columns(bets)[:4], strict=True))
