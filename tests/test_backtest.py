"""Walk-forward backtest: no look-ahead, reproducible reports, figures checked independently."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.cli.backtest_report import write_report
from app.domain.backtest.algorithms import OTHER_ALGORITHMS
from app.domain.backtest.config import BacktestConfig
from app.domain.backtest.folds import BEST, ENSEMBLE, run_backtest
from app.domain.backtest_summary import summarise
from app.domain.fitting import FitOptions
from app.domain.football_data import parse_football_data
from app.domain.tables import QuoteTable, restrict, tables_from_batches
from app.domain.training import build_training_set
from app.domain.vocabulary import Method
from app.services.backtest import evaluate
from app.settings import Settings
from boosting import SAMME, AdaBoostM1, AdaBoostMH, FixedPool, label_scores, most_probable_class
from tests.commands import CommandResult, Oddsboost
from tests.helpers import csv_rows
from tests.processes import child_environment, oddsboost_command

SeasonFile = Callable[[str], Path]
SIX = ("B365", "BW", "IW", "PS", "WH", "VC")
SEASONS = ("1415", "1516", "1617", "1718", "1819")


def without_quotes(quotes: QuoteTable, removed: np.ndarray) -> QuoteTable:
    return QuoteTable(**{f.name: getattr(quotes, f.name)[~removed] for f in fields(quotes)})


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
        assert not set(train) & set(fold.test_match_ids.tolist())
        expected = {
            "2017/18": ("2014/15", "2015/16", "2016/17"),
            "2018/19": ("2015/16", "2016/17", "2017/18"),
        }[fold.season]
        assert fold.train_seasons == {"E0": expected, "SP1": expected}
        assert {season[m] for m in train} == set(expected)


def test_a_season_kicking_off_in_july_is_tested_whole(season_file: SeasonFile) -> None:
    # Ligue 1 2005/06 started on 29 July 2005: the whole file is the test season, and the
    # two seasons before it (every match of their files) are the training set.
    names = ("F1_0304", "F1_0405", "F1_0506")
    matches, quotes = tables_from_batches(
        parse_football_data(season_file(name).read_bytes()) for name in names
    )
    config = BacktestConfig(
        options=FitOptions(rounds_grid=(1, 5), min_quotes=100),
        train_seasons=2,
        test_seasons=("2005/06",),
    )
    (fold,) = run_backtest(matches, quotes, config)
    files = {name: len(csv_rows(season_file(name))[1]) for name in names}
    assert fold.train_seasons == {"F1": ("2003/04", "2004/05")}
    assert len(fold.train_match_ids) == files["F1_0304"] + files["F1_0405"]
    assert len(fold.y) + sum(fold.dropped.values()) == files["F1_0506"]
    first = dt.datetime(2005, 7, 29, tzinfo=dt.UTC).timestamp()
    assert first <= fold.test_first_kickoff < first + 86400
    assert (
        matches.kickoff[np.isin(matches.ids, fold.train_match_ids)].max() < fold.test_first_kickoff
    )


def test_each_competition_trains_on_its_own_seasons(season_file: SeasonFile) -> None:
    # The files have no Serie A for 2013/14 and 2014/15: I1 2015/16 trains on its two
    # seasons before the gap, E0 on the two before 2015/16, and the report says so.
    # Ligue 1 has only its test season here: it is not tested, and its matches are counted.
    names = ("E0_1314", "E0_1415", "E0_1516", "I1_1112", "I1_1213", "I1_1516", "F1_1516")
    matches, quotes = tables_from_batches(
        parse_football_data(season_file(name).read_bytes()) for name in names
    )
    config = BacktestConfig(options=FitOptions(rounds_grid=(1, 5), min_quotes=100), train_seasons=2)
    (fold,) = run_backtest(matches, quotes, config)
    assert fold.season == "2015/16"
    assert fold.train_seasons == {
        "E0": ("2013/14", "2014/15"),
        "I1": ("2011/12", "2012/13"),
    }
    assert "I1 has no 2013/14, 2014/15 in the data: trained on 2011/12, 2012/13" in fold.notes
    assert "F1 is not tested: 0 earlier season(s) in the data, 2 needed" in fold.notes
    assert fold.dropped["its competition has too few earlier seasons"] == len(
        csv_rows(season_file("F1_1516"))[1]
    )
    counted = sum(len(csv_rows(season_file(f"{c}_1516"))[1]) for c in ("E0", "I1", "F1"))
    assert len(fold.y) + sum(fold.dropped.values()) == counted
    trained = {len(csv_rows(season_file(name))[1]) for name in names[:2] + names[3:5]}
    assert len(fold.train_match_ids) == sum(
        len(csv_rows(season_file(name))[1]) for name in names[:2] + names[3:5]
    ), trained


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
    # VC's quotes of the 2018 half of the test season are removed: VC is then no longer
    # scored alone, but the consensus still averages it wherever it quoted.
    matches, quotes = load(season_file, leagues=("E0",))
    new_year = dt.datetime(2019, 1, 1, tzinfo=dt.UTC).timestamp()
    vc_removed = (
        (quotes.bookmaker == "VC")
        & (matches.season[quotes.match] == "2018/19")
        & (matches.kickoff[quotes.match] < new_year)
    )
    quotes = without_quotes(quotes, vc_removed)
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
    in_2018 = np.array([row[header.index("Date")].endswith("2018") for row in rows])
    assert 0.3 < in_2018.mean() < 0.7
    probabilities[in_2018, SIX.index("VC")] = np.nan
    consensus = np.nanmean(probabilities, axis=1)
    picked = np.arange(len(outcome))
    scores = summary.overall.scores
    assert summary.overall.rows == 380
    assert scores["consensus"].scores.log_loss == pytest.approx(
        -np.log(consensus[picked, outcome]).mean()
    )
    assert "VC" not in scores
    for index, code in enumerate(SIX):
        if code != "VC":
            expected = -np.log(probabilities[picked, index, outcome]).mean()
            assert scores[code].scores.log_loss == pytest.approx(expected)
    # Base rates: the outcome frequencies of the three training seasons.
    counts = np.zeros(3)
    for season in ("1516", "1617", "1718"):
        h, r = csv_rows(season_file(f"E0_{season}"))
        for row in r:
            counts[{"H": 0, "D": 1, "A": 2}[row[h.index("FTR")]]] += 1
    base = counts / counts.sum()
    assert summary.seasons[0].base_rates == pytest.approx(base.tolist())
    assert scores["base rates"].scores.log_loss == pytest.approx(-np.log(base[outcome]).mean())
    # Pinnacle closing, on every match (all of E0 2018/19 has PSCH).
    closing = np.array([[float(row[header.index(f"PSC{o}")]) for o in "HDA"] for row in rows])
    closing_probabilities = (1 / closing) / (1 / closing).sum(axis=1, keepdims=True)
    pinnacle = summary.overall.closing.scores["Pinnacle closing"]
    assert pinnacle.scores.log_loss == pytest.approx(
        -np.log(closing_probabilities[picked, outcome]).mean()
    )


@pytest.mark.slow
def test_the_report_is_reproducible(season_file: SeasonFile, tmp_path: Path) -> None:
    matches, quotes = load(season_file)
    contents = []
    config = replace(CONFIG, algorithms=tuple(OTHER_ALGORITHMS))
    for name in ("first", "second"):
        evaluation = evaluate(matches, quotes, config, source="E0 and SP1", compare_variants=True)
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
    # The options as a model version records them: CONFIG's, with the defaults it leaves.
    assert data["config"]["fit"] == {
        "rounds_grid": [1, 5, 20],
        "validation_fraction": 0.2,
        "phase": "pre",
        "methods": ["power"],
        "bookmakers": list(SIX),
        "min_quotes": 1,
        "half_life_days": None,
        "calibrate": False,
        "fit_target": "close",
        "closing_window_minutes": 30,
    }
    assert set(data["variants"]) == {
        "time decay, half-life 365 days",
        "time decay, half-life 180 days",
        "per-competition pools",
        "method chosen by validation",
        "calibrated (power on the mix)",
        "fitted toward the results",
    }
    markdown = contents[0]["report.md"].decode()
    assert "## Rows compared and rows left out" in markdown
    assert "## Other boosting algorithms over the same bookmakers" in markdown
    assert set(data["overall"]["algorithms"]) == set(OTHER_ALGORITHMS)
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


def test_the_best_bookmaker_is_chosen_on_training_alone(season_file: SeasonFile) -> None:
    # Remove the best bookmaker's quotes of the E0 half of the test season: it is still
    # "the best" (nothing about the test season chose it); where it is missing, the next
    # one of the training ranking stands in, row by row.
    matches, quotes = load(season_file)
    config = replace(CONFIG, test_seasons=("2018/19",))
    (honest,) = run_backtest(matches, quotes, config)
    best = honest.best_bookmaker
    assert list(honest.best_used) == [best]
    removed = (
        (quotes.bookmaker == best)
        & (matches.season[quotes.match] == "2018/19")
        & (matches.competition[quotes.match] == "E0")
    )
    (fold,) = run_backtest(matches, without_quotes(quotes, removed), config)
    assert fold.best_bookmaker == best
    assert best not in fold.compared
    first, stand_in = list(fold.best_used)
    assert first == best
    e0 = np.isin(fold.test_match_ids, matches.ids[matches.competition == "E0"])
    assert fold.best_used == {best: int((~e0).sum()), stand_in: int(e0.sum())}
    assert np.array_equal(fold.forecasts[BEST][e0], fold.forecasts[stand_in][e0])
    assert any(note.startswith(f"{best}, the best bookmaker") for note in fold.notes)
    assert fold.train_match_ids.tolist() == honest.train_match_ids.tolist()


def test_each_competition_model_reads_the_odds_of_its_own_method(season_file: SeasonFile) -> None:
    # One pool per competition, the method chosen by validation: each model scores the
    # test season de-margined by the method it was fitted with, not the first method.
    matches, quotes = load(season_file)
    methods = (Method.MULTIPLICATIVE, Method.POWER, Method.SHIN, Method.ADDITIVE)
    config = replace(
        CONFIG,
        options=replace(CONFIG.options, methods=methods),
        per_competition=True,
        test_seasons=("2018/19",),
    )
    (fold,) = run_backtest(matches, quotes, config)
    chosen = {c: ensemble.method for c, ensemble in fold.ensembles.items()}
    assert set(chosen) == {"E0", "SP1"}
    assert any(method != Method.MULTIPLICATIVE for method in chosen.values()), chosen
    for competition, ensemble in fold.ensembles.items():
        test_matches, test_quotes = restrict(
            matches,
            quotes,
            (matches.season == "2018/19") & (matches.competition == competition),
        )
        own = build_training_set(
            test_matches,
            test_quotes,
            method=ensemble.method,
            bookmakers=ensemble.bookmakers,
            min_quotes=0,
        )
        row = {int(m): i for i, m in enumerate(own.match_ids)}
        in_group = np.isin(fold.test_match_ids, test_matches.ids)
        at = [row[int(m)] for m in fold.test_match_ids[in_group]]
        expected = ensemble.predict_proba(own.H[at])
        np.testing.assert_allclose(fold.forecasts[ENSEMBLE][in_group], expected, rtol=1e-12)


def test_other_algorithms_are_fitted_on_the_same_pool_and_change_nothing_else(
    season_file: SeasonFile,
) -> None:
    matches, quotes = load(season_file, leagues=("E0",))
    plain = replace(CONFIG, test_seasons=("2018/19",))
    (alone,) = run_backtest(matches, quotes, plain)
    (fold,) = run_backtest(matches, quotes, replace(plain, algorithms=tuple(OTHER_ALGORITHMS)))
    for name, proba in alone.forecasts.items():
        assert np.array_equal(fold.forecasts[name], proba)
    # Each algorithm's forecast is the library estimator over the same pool, fitted by
    # hand here on the training seasons with the rounds the fold reports.
    ensemble = fold.ensembles[""]
    train_matches, train_quotes = restrict(
        matches, quotes, np.isin(matches.ids, fold.train_match_ids)
    )
    test_matches, test_quotes = restrict(matches, quotes, matches.season == "2018/19")
    layouts = [
        build_training_set(
            m, q, method=ensemble.method, bookmakers=ensemble.bookmakers, min_quotes=0
        )
        for m, q in ((train_matches, train_quotes), (test_matches, test_quotes))
    ]
    training, test = layouts
    at = [list(test.match_ids).index(m) for m in fold.test_match_ids]
    for name, estimator, pool in (
        ("AdaBoost.M1", AdaBoostM1, most_probable_class),
        ("SAMME", SAMME, most_probable_class),
        ("AdaBoost.MH", AdaBoostMH, label_scores),
    ):
        rounds = fold.algorithm_rounds[name][""]
        model = estimator(rounds, learner=FixedPool()).fit(pool(training.H), training.y)
        assert model.n_rounds_ == rounds
        expected = model.predict_proba(pool(test.H[at]))
        np.testing.assert_allclose(fold.forecasts[name], expected, rtol=1e-10)


HASH_PROBE = "oddsboost"


def another_hash_seed() -> str:
    """A PYTHONHASHSEED under which a new interpreter hashes text otherwise than this one
    (of two seeds that hash it differently, at least one differs from this process's)."""
    for seed in ("1", "2"):
        hashed = subprocess.run(
            [sys.executable, "-c", f"print(hash({HASH_PROBE!r}))"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        if int(hashed.stdout) != hash(HASH_PROBE):
            return seed
    raise AssertionError(f"hash seeds 1 and 2 hash {HASH_PROBE!r} alike")


@pytest.mark.slow
def test_the_report_does_not_depend_on_the_hash_seed(
    oddsboost: Oddsboost, season_file: SeasonFile, tmp_path: Path
) -> None:
    """This process and another, started with another hash seed (it is fixed when the
    interpreter starts), run the command and write the same report."""
    files = [str(season_file(name)) for name in ("E0_1516", "E0_1617", "E0_1718", "SP1_1718")]
    arguments = ["backtest", *files, "--train-seasons", "2", "--rounds-grid", "1,5,20"]
    here = oddsboost.run(*arguments, "--output", str(tmp_path / "here"))
    assert here.returncode == 0, here.stderr
    other = subprocess.run(
        oddsboost_command(*arguments, "--output", str(tmp_path / "other")),
        env=child_environment(PYTHONHASHSEED=another_hash_seed()),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert other.returncode == 0, other.stderr
    reports = [
        {name: (tmp_path / run / name).read_bytes() for name in ("report.md", "report.json")}
        for run in ("here", "other")
    ]
    assert reports[0] == reports[1]
    assert b"SP1 is not tested" in reports[0]["report.md"]


def test_the_command_on_files_and_on_the_database_gives_the_same_figures(
    oddsboost: Oddsboost, season_file: SeasonFile, seeded_settings: Settings, tmp_path: Path
) -> None:
    # The seeded database holds E0 and SP1 2015/16-2017/18: test 2017/18 on two training
    # seasons.
    files = [
        str(season_file(name))
        for name in ("E0_1516", "E0_1617", "E0_1718", "SP1_1516", "SP1_1617", "SP1_1718")
    ]
    common = ["--test-seasons", "2017/18", "--train-seasons", "2", "--rounds-grid", "1,5,20"]
    from_files = oddsboost.run("backtest", *files, *common, "--output", str(tmp_path / "files"))
    assert from_files.returncode == 0, from_files.stderr
    assert "wrote" in from_files.stdout
    from_database = oddsboost.run(
        "backtest",
        "--database",
        *common,
        "--output",
        str(tmp_path / "db"),
        env={"ODDSBOOST_DATABASE_URL": seeded_settings.database_url},
    )
    assert from_database.returncode == 0, from_database.stderr
    first = json.loads((tmp_path / "files" / "report.json").read_text())
    second = json.loads((tmp_path / "db" / "report.json").read_text())
    assert first["overall"] == second["overall"]
    assert first["seasons"] == second["seasons"]


def test_command_errors(
    oddsboost: Oddsboost, season_file: SeasonFile, fresh_database_url: str, tmp_path: Path
) -> None:
    def run(*args: str, env: dict[str, str] | None = None) -> CommandResult:
        return oddsboost.run("backtest", *args, env=env)

    path = str(season_file("E0_1819"))
    output = ["--output", str(tmp_path)]
    unknown = run(path, "--test-seasons", "2030/31", *output)
    assert unknown.returncode == 1
    assert "no matches of season '2030/31'" in unknown.stderr
    too_early = run(path, "--test-seasons", "2018/19", *output)
    assert too_early.returncode == 1
    assert "season 2018/19 cannot be tested" in too_early.stderr
    assert "the 3 needed" in too_early.stderr
    # Without --test-seasons, a single season has nothing to train on either.
    alone = run(path, *output)
    assert alone.returncode == 1
    assert "no season can be tested" in alone.stderr
    no_book = run(path, "--bookmakers", "B365,XYZ,ABC", *output)
    assert no_book.returncode == 2
    assert "no bookmaker ABC, XYZ in the data" in no_book.stderr
    assert "B365" in no_book.stderr  # the codes it does have
    no_league = run(path, "--leagues", "E0,N1", *output)
    assert no_league.returncode == 2
    assert "no league N1 in the data; it has E0" in no_league.stderr
    migrate = oddsboost.run("migrate", env={"ODDSBOOST_DATABASE_URL": fresh_database_url})
    assert migrate.returncode == 0, migrate.stderr
    empty = run("--database", *output, env={"ODDSBOOST_DATABASE_URL": fresh_database_url})
    assert empty.returncode == 1
    assert "there are no matches to evaluate" in empty.stderr
    assert not (tmp_path / "report.json").exists()
    assert run(path, "--method", "astrology").returncode == 2
    assert run("--database", path).returncode == 2
    assert run().returncode == 2


def season_folder(season_file: SeasonFile, folder: Path, *names: str) -> Path:
    """A folder holding copies of real season files (as the backtest is usually given)."""
    folder.mkdir()
    for name in names:
        (folder / f"{name}.csv").write_bytes(season_file(name).read_bytes())
    return folder


def broken_in_the_middle(content: bytes) -> bytes:
    """The file with an unterminated quoted cell of 200,000 characters after its 100th row:
    its first rows still read, the file as a whole does not."""
    lines = content.split(b"\n")
    return b"\n".join([*lines[:101], b'SP1,01/03/2019,"A' + b"x" * 200_000, *lines[101:]])


def test_a_broken_file_of_a_league_not_asked_for_is_not_parsed(
    oddsboost: Oddsboost, season_file: SeasonFile, tmp_path: Path
) -> None:
    folder = season_folder(season_file, tmp_path / "seasons", "E0_1617", "E0_1718", "E0_1819")
    (folder / "SP1_1819.csv").write_bytes(
        broken_in_the_middle(season_file("SP1_1819").read_bytes())
    )
    common = ["--test-seasons", "2018/19", "--train-seasons", "2", "--rounds-grid", "1,5"]
    only_e0 = oddsboost.run(
        "backtest", str(folder), "--leagues", "E0", *common, "--output", str(tmp_path / "e0")
    )
    assert only_e0.returncode == 0, only_e0.stderr
    assert json.loads((tmp_path / "e0" / "report.json").read_text())["overall"]["rows"] > 300
    both = oddsboost.run(
        "backtest", str(folder), "--leagues", "E0,SP1", *common, "--output", str(tmp_path / "x")
    )
    assert both.returncode == 1
    assert "Traceback" not in both.stderr
    assert f"{folder / 'SP1_1819.csv'}: not a readable CSV file" in both.stderr
    every = oddsboost.run("backtest", str(folder), *common, "--output", str(tmp_path / "y"))
    assert every.returncode == 1
    assert f"{folder / 'SP1_1819.csv'}: not a readable CSV file" in every.stderr
    # The leagues a folder has are told from each file's first rows, broken ones too.
    other = oddsboost.run(
        "backtest", str(folder), "--leagues", "N1", *common, "--output", str(tmp_path / "z")
    )
    assert other.returncode == 2
    assert "no league N1 in the data; it has E0, SP1" in other.stderr


def test_a_file_that_is_no_season_file_is_named(
    oddsboost: Oddsboost, season_file: SeasonFile, tmp_path: Path
) -> None:
    folder = season_folder(season_file, tmp_path / "seasons", "E0_1718", "E0_1819")
    (folder / "notes.csv").write_text("name,age\nann,3\n")
    result = oddsboost.run(
        "backtest", str(folder), "--leagues", "E0", "--output", str(tmp_path / "out")
    )
    assert result.returncode == 1
    assert f"{folder / 'notes.csv'}: not a football-data.co.uk file" in result.stderr
