"""Walk-forward backtest: no look-ahead, reproducible reports, figures checked independently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.domain.backtest import BacktestConfig, run_backtest, summarise
from app.domain.fitting import FitOptions
from app.domain.football_data import parse_football_data
from app.domain.odds import Method
from app.domain.training import tables_from_batches
from app.reporting import write_report
from app.services.backtest import evaluate
from tests.helpers import csv_rows

SeasonFile = Callable[[str], Path]
ODDSBOOST = Path(sys.executable).with_name("oddsboost")
SIX = ("B365", "BW", "IW", "PS", "WH", "VC")
SEASONS = ("1415", "1516", "1617", "1718", "1819")


def load(season_file: SeasonFile, leagues: tuple[str, ...] = ("E0", "SP1")) -> Any:
    batches = [
        parse_football_data(season_file(f"{league}_{season}").read_bytes())
        for league in leagues
        for season in SEASONS
    ]
    return tables_from_batches(batches)


CONFIG = BacktestConfig(
    options=FitOptions(rounds_grid=(1, 5, 20), bookmakers=SIX, min_quotes=1),
    train_seasons=3,
    test_seasons=("2017/18", "2018/19"),
)


def test_no_match_of_the_test_season_or_later_reaches_training(season_file: SeasonFile) -> None:
    matches, quotes = load(season_file)
    folds = run_backtest(matches, quotes, CONFIG)
    assert [f.season for f in folds] == ["2017/18", "2018/19"]
    kickoff = dict(zip(matches.ids.tolist(), matches.kickoff.tolist(), strict=True))
    season = dict(zip(matches.ids.tolist(), matches.season.tolist(), strict=True))
    for fold in folds:
        train = fold.train_match_ids.tolist()
        assert max(kickoff[m] for m in train) < fold.test_first_kickoff
        assert {season[m] for m in train} == set(fold.train_seasons)
        assert fold.season not in fold.train_seasons
        assert not set(train) & set(fold.test_match_ids.tolist())
        assert fold.train_seasons == tuple(
            {
                "2017/18": ("2014/15", "2015/16", "2016/17"),
                "2018/19": ("2015/16", "2016/17", "2017/18"),
            }[fold.season]
        )


def test_nothing_about_the_test_season_changes_what_is_fitted(season_file: SeasonFile) -> None:
    # Scramble the outcomes and odds of 2018/19 and everything after it: the fold for
    # 2018/19 must fit exactly the same pool, rounds, weights and "best bookmaker".
    matches, quotes = load(season_file)
    config = BacktestConfig(
        options=FitOptions(rounds_grid=(1, 5, 20), min_quotes=100), test_seasons=("2018/19",)
    )
    (honest,) = run_backtest(matches, quotes, config)
    test = matches.season == "2018/19"
    rng = np.random.default_rng(0)
    matches.result[test] = rng.integers(0, 3, int(test.sum()))
    in_test = test[quotes.match]
    quotes.prices[in_test] = rng.uniform(1.1, 12.0, (int(in_test.sum()), 3))
    (scrambled,) = run_backtest(matches, quotes, config)
    for competition, ensemble in honest.ensembles.items():
        other = scrambled.ensembles[competition]
        assert other.bookmakers == ensemble.bookmakers
        assert other.rounds == ensemble.rounds
        assert other.weights.tolist() == ensemble.weights.tolist()
    assert scrambled.best_bookmaker == honest.best_bookmaker
    assert scrambled.base_rates == honest.base_rates
    assert scrambled.train_match_ids.tolist() == honest.train_match_ids.tolist()


def test_figures_agree_with_a_direct_computation_from_the_files(season_file: SeasonFile) -> None:
    # E0 only, test 2018/19, trained on 2015/16-2017/18, multiplicative de-margining:
    # recompute the consensus, each bookmaker and the base rates straight from the CSVs.
    matches, quotes = load(season_file, leagues=("E0",))
    config = BacktestConfig(
        options=FitOptions(
            rounds_grid=(1, 5), bookmakers=SIX, min_quotes=1, methods=(Method.MULTIPLICATIVE,)
        ),
        test_seasons=("2018/19",),
    )
    summary = summarise(run_backtest(matches, quotes, config))
    header, rows = csv_rows(season_file("E0_1819"))
    odds = np.array(
        [[[float(row[header.index(f"{b}{o}")]) for o in "HDA"] for b in SIX] for row in rows]
    )
    outcome = np.array([{"H": 0, "D": 1, "A": 2}[row[header.index("FTR")]] for row in rows])
    implied = 1 / odds
    probabilities = implied / implied.sum(axis=2, keepdims=True)  # (380, 6, 3)
    consensus = probabilities.mean(axis=1)
    picked = np.arange(len(outcome))
    scores = summary["overall"]["scores"]
    assert summary["overall"]["rows"] == 380
    assert scores["consensus"]["log_loss"] == pytest.approx(
        -np.log(consensus[picked, outcome]).mean()
    )
    for index, code in enumerate(SIX):
        expected = -np.log(probabilities[picked, index, outcome]).mean()
        assert scores[code]["log_loss"] == pytest.approx(expected)
    # Base rates: the outcome frequencies of the three training seasons.
    counts = np.zeros(3)
    for season in ("1516", "1617", "1718"):
        h, r = csv_rows(season_file(f"E0_{season}"))
        for row in r:
            counts[{"H": 0, "D": 1, "A": 2}[row[h.index("FTR")]]] += 1
    base = counts / counts.sum()
    assert summary["seasons"][0]["base_rates"] == pytest.approx(base.tolist())
    assert scores["base rates"]["log_loss"] == pytest.approx(-np.log(base[outcome]).mean())
    # Pinnacle closing, on every match (all of E0 2018/19 has PSCH).
    closing = np.array([[float(row[header.index(f"PSC{o}")]) for o in "HDA"] for row in rows])
    closing_probabilities = (1 / closing) / (1 / closing).sum(axis=1, keepdims=True)
    assert summary["overall"]["closing"]["scores"]["Pinnacle closing"]["log_loss"] == pytest.approx(
        -np.log(closing_probabilities[picked, outcome]).mean()
    )


def test_the_report_is_reproducible(season_file: SeasonFile, tmp_path: Path) -> None:
    matches, quotes = load(season_file)
    contents = []
    for name in ("first", "second"):
        evaluation = evaluate(matches, quotes, CONFIG, source="E0 and SP1", compare_variants=True)
        written = write_report(evaluation, tmp_path / name)
        contents.append({path.name: path.read_bytes() for path in written})
    assert contents[0] == contents[1]
    assert set(contents[0]) == {
        "report.md",
        "report.json",
        "reliability.png",
        "weights.png",
        "margins.png",
        "log_loss_by_season.png",
    }
    assert all(
        contents[0][name].startswith(b"\x89PNG") for name in contents[0] if name.endswith(".png")
    )
    data = json.loads(contents[0]["report.json"])
    assert set(data["variants"]) == {
        "time decay, half-life 365 days",
        "time decay, half-life 180 days",
        "per-competition pools",
        "method chosen by validation",
        "calibrated (power on the mix)",
    }
    markdown = contents[0]["report.md"].decode()
    assert "## Rows compared and rows left out" in markdown
    assert "significantly" in markdown  # a verdict, whichever it is


def test_rows_left_out_are_counted(season_file: SeasonFile) -> None:
    matches, quotes = load(season_file)
    (fold,) = run_backtest(
        matches,
        quotes,
        BacktestConfig(
            options=FitOptions(rounds_grid=(1,), bookmakers=SIX, min_quotes=1),
            test_seasons=("2018/19",),
        ),
    )
    total = int((matches.season == "2018/19").sum())
    assert len(fold.y) + sum(fold.dropped.values()) == total
    # Independently: 2018/19 rows of E0 and SP1 missing one of the six prices.
    missing = 0
    for league in ("E0", "SP1"):
        header, rows = csv_rows(season_file(f"{league}_1819"))
        for row in rows:
            missing += any(not row[header.index(f"{b}{o}")].strip() for b in SIX for o in "HDA")
    assert fold.dropped.get("a compared bookmaker did not quote it", 0) == missing


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ODDSBOOST), "backtest", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_the_command_on_files_and_on_the_database_gives_the_same_figures(
    season_file: SeasonFile, seeded_url: str, tmp_path: Path
) -> None:
    # seeded_url holds E0 and SP1 2015/16-2017/18: test 2017/18 on two training seasons.
    files = [
        str(season_file(name))
        for name in ("E0_1516", "E0_1617", "E0_1718", "SP1_1516", "SP1_1617", "SP1_1718")
    ]
    common = ["--test-seasons", "2017/18", "--train-seasons", "2", "--rounds-grid", "1,5,20"]
    from_files = run(*files, *common, "--output", str(tmp_path / "files"))
    assert from_files.returncode == 0, from_files.stderr
    assert "wrote" in from_files.stdout
    from_database = run(
        "--database",
        *common,
        "--output",
        str(tmp_path / "db"),
        env={"ODDSBOOST_DATABASE_URL": seeded_url},
    )
    assert from_database.returncode == 0, from_database.stderr
    first = json.loads((tmp_path / "files" / "report.json").read_text())
    second = json.loads((tmp_path / "db" / "report.json").read_text())
    assert first["overall"] == second["overall"]
    assert first["seasons"] == second["seasons"]


def test_command_errors(season_file: SeasonFile, tmp_path: Path) -> None:
    path = str(season_file("E0_1819"))
    unknown = run(path, "--test-seasons", "2030/31", "--output", str(tmp_path))
    assert unknown.returncode == 1
    assert "no matches of season '2030/31'" in unknown.stderr
    too_early = run(path, "--test-seasons", "2018/19", "--output", str(tmp_path))
    assert too_early.returncode == 1
    assert "3 are needed" in too_early.stderr
    assert run(path, "--method", "astrology").returncode == 2
    assert run("--database", path).returncode == 2
    assert run().returncode == 2
