"""The pool follows who still quotes: a bookmaker that stopped quoting the last days of the
window is left out of the refit's pool and the backtest's, and the version says who and why."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from numpy.typing import NDArray
from sqlalchemy import Engine, select

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import ModelVersion
from app.domain.backtest.config import BacktestConfig
from app.domain.backtest.folds import run_backtest
from app.domain.fitting import FitOptions
from app.domain.football_data import parse_football_data
from app.domain.tables import MatchTable, QuoteTable, restrict, tables_from_batches
from app.domain.training import PoolRule, TrainingSet, build_training_set
from app.main import create_app
from app.services.ingest import import_football_data
from app.settings import Settings, settings_environment
from tests.commands import Oddsboost
from tests.helpers import csv_rows

SeasonFile = Callable[[str], Path]
DAY = dt.timedelta(days=1)


def load(season_file: SeasonFile, *names: str) -> tuple[MatchTable, QuoteTable]:
    return tables_from_batches(parse_football_data(season_file(n).read_bytes()) for n in names)


def file_dates(season_file: SeasonFile, name: str) -> list[dt.date]:
    """The Date column of a season file, read with the csv module (dd/mm/yy or dd/mm/yyyy)."""
    header, rows = csv_rows(season_file(name))
    dates = []
    for row in rows:
        day, month, year = row[header.index("Date")].split("/")
        dates.append(dt.date(int(year) % 100 + 2000, int(month), int(day)))
    return dates


def recent_dates(dates: list[dt.date], days: int) -> list[dt.date]:
    """The dates of a competition's last ``days`` days: from its newest date back."""
    newest = max(dates)
    return [date for date in dates if date >= newest - days * DAY]


def laid_out(matches: MatchTable, quotes: QuoteTable) -> TrainingSet:
    """The training set by the default rule: 100 quotes, half of the last 30 days."""
    return build_training_set(matches, quotes, min_quotes=100, recent_days=30, recent_share=0.5)


def without(quotes: QuoteTable, removed: NDArray[np.bool_]) -> QuoteTable:
    return QuoteTable(**{f.name: getattr(quotes, f.name)[~removed] for f in fields(quotes)})


def quotes_of_latest_matches(
    matches: MatchTable,
    quotes: QuoteTable,
    code: str,
    competition: str,
    count: int,
    season: str | None = None,
) -> NDArray[np.bool_]:
    """``code``'s quotes of the ``count`` latest matches of ``competition`` (in ``season``)."""
    among = matches.competition == competition
    if season is not None:
        among &= matches.season == season
    in_competition = np.flatnonzero(among)
    by_kickoff = in_competition[np.argsort(matches.kickoff[in_competition], kind="stable")]
    latest = by_kickoff[len(by_kickoff) - count :]
    chosen: NDArray[np.bool_] = (quotes.bookmaker == code) & np.isin(quotes.match, latest)
    return chosen


def test_ladbrokes_is_left_out_inside_2018_19(season_file: SeasonFile) -> None:
    # By hand: E0_1718 has Ladbrokes' LBH/LBD/LBA columns filled, E0_1819 has none at all.
    assert {"LBH", "LBD", "LBA"} <= set(csv_rows(season_file("E0_1718"))[0])
    assert not {"LBH", "LBD", "LBA"} & set(csv_rows(season_file("E0_1819"))[0])
    matches, quotes = load(season_file, "E0_1617", "E0_1718", "E0_1819")
    until = dt.datetime(2018, 12, 1, tzinfo=dt.UTC)
    matches, quotes = restrict(matches, quotes, matches.kickoff < until.timestamp())

    training = laid_out(matches, quotes)

    # The matches of E0's last 30 days before 1 December 2018, counted from the file.
    dates = [d for d in file_dates(season_file, "E0_1819") if d < until.date()]
    recent = len(recent_dates(dates, 30))
    # The newest is Friday 30 November: the rounds of 3, 10 and 24 November and that match.
    assert recent == 31
    assert training.left_out == {
        "LB": f"no longer quoting: 0 of the {recent} matches of the last 30 days of E0, its "
        "best competition; at least 50% needed"
    }
    assert training.bookmakers == ("B365", "BW", "IW", "PS", "VC", "WH")
    # Before the rule, Ladbrokes' two full seasons kept it in.
    assert "LB" in build_training_set(matches, quotes, min_quotes=100).bookmakers


def test_at_the_end_of_2017_18_every_bookmaker_still_quotes(season_file: SeasonFile) -> None:
    matches, quotes = load(season_file, "E0_1617", "E0_1718")
    training = laid_out(matches, quotes)
    assert training.left_out == {}
    assert "LB" in training.bookmakers


@pytest.fixture(scope="module")
def e0_to_2018(season_file: SeasonFile) -> tuple[MatchTable, QuoteTable, int]:
    """E0 2016/17 and 2017/18, and the number of matches of E0's last 30 days (from the file)."""
    matches, quotes = load(season_file, "E0_1617", "E0_1718")
    return matches, quotes, len(recent_dates(file_dates(season_file, "E0_1718"), 30))


@pytest.mark.parametrize(
    ("removed", "kept"),
    [
        ("none", True),
        # Half of the recent matches quoted: exactly the threshold, kept.
        ("half", True),
        # One match fewer than half: left out.
        ("half+1", False),
        ("all", False),
    ],
)
def test_a_bookmaker_that_stops_quoting_is_left_out_at_the_threshold(
    e0_to_2018: tuple[MatchTable, QuoteTable, int], removed: str, kept: bool
) -> None:
    matches, quotes, recent = e0_to_2018
    # E0_1718 ends on 13 May 2018: from 13 April on, 56 matches.
    assert recent == 56
    count = {"none": 0, "half": recent // 2, "half+1": recent // 2 + 1, "all": recent}[removed]
    removal = quotes_of_latest_matches(matches, quotes, "WH", "E0", count)
    assert removal.sum() == count  # William Hill quoted each of them

    training = laid_out(matches, without(quotes, removal))

    assert ("WH" in training.bookmakers) == kept
    assert "B365" in training.bookmakers
    if not kept:
        quoted = recent - count
        assert training.left_out == {
            "WH": f"no longer quoting: {quoted} of the {recent} matches of the last 30 days "
            "of E0, its best competition; at least 50% needed"
        }


def test_the_share_a_bookmaker_must_keep_defaults_to_the_models(
    e0_to_2018: tuple[MatchTable, QuoteTable, int],
) -> None:
    matches, quotes, recent = e0_to_2018
    # William Hill quoted one match fewer than half of E0's last 30 days: under 50 %.
    removal = quotes_of_latest_matches(matches, quotes, "WH", "E0", recent // 2 + 1)
    kept = without(quotes, removal)
    training = build_training_set(matches, kept, min_quotes=100, recent_days=30)
    assert "WH" in training.left_out
    options = FitOptions(recent_days=30, min_quotes=100)
    rule = PoolRule(min_quotes=100, recent_days=30)
    assert rule.recent_share == options.recent_share == 0.5  # the refit's default share


def test_one_competition_still_quoted_keeps_a_bookmaker_in_one_pool_for_all(
    season_file: SeasonFile,
) -> None:
    matches, quotes = load(season_file, "E0_1718", "SP1_1718")
    e0_recent = len(recent_dates(file_dates(season_file, "E0_1718"), 30))
    sp1_recent = len(recent_dates(file_dates(season_file, "SP1_1718"), 30))
    gone_from_e0 = quotes_of_latest_matches(matches, quotes, "WH", "E0", e0_recent)
    gone_from_sp1 = quotes_of_latest_matches(matches, quotes, "WH", "SP1", sp1_recent)

    assert "WH" in laid_out(matches, without(quotes, gone_from_e0)).bookmakers
    both = laid_out(matches, without(quotes, gone_from_e0 | gone_from_sp1))
    assert "WH" in both.left_out
    # A pool of E0 alone judges it on E0 alone.
    e0, e0_quotes = restrict(matches, without(quotes, gone_from_e0), matches.competition == "E0")
    assert "WH" in laid_out(e0, e0_quotes).left_out


def test_the_reason_names_a_competition_the_bookmaker_quoted(season_file: SeasonFile) -> None:
    matches, quotes = load(season_file, "E0_1718", "SP1_1718")
    sp1_recent = len(recent_dates(file_dates(season_file, "SP1_1718"), 30))
    # Ladbrokes kept in SP1 only, and gone from its last 30 days: 0 recent quotes anywhere.
    never_in_e0 = (quotes.bookmaker == "LB") & (matches.competition[quotes.match] == "E0")
    gone_from_sp1 = quotes_of_latest_matches(matches, quotes, "LB", "SP1", sp1_recent)

    training = laid_out(matches, without(quotes, never_in_e0 | gone_from_sp1))

    # E0 comes first and ties at 0, but Ladbrokes never quoted it: SP1 is named.
    assert training.left_out == {
        "LB": f"no longer quoting: 0 of the {sp1_recent} matches of the last 30 days of SP1, "
        "its best competition; at least 50% needed"
    }


def test_the_backtest_folds_use_the_same_rule(season_file: SeasonFile) -> None:
    matches, quotes = load(season_file, "E0_1718", "E0_1819", "SP1_1718", "SP1_1819")
    # William Hill stops quoting E0 for the last 30 days of 2017/18, the training season.
    recent = len(recent_dates(file_dates(season_file, "E0_1718"), 30))
    gone = quotes_of_latest_matches(matches, quotes, "WH", "E0", recent, season="2017/18")
    options = FitOptions(rounds_grid=(1, 5), recent_days=30, recent_share=0.5, min_quotes=100)

    def pools(per_competition: bool) -> dict[str, tuple[str, ...]]:
        config = BacktestConfig(
            options=options,
            train_seasons=1,
            test_seasons=("2018/19",),
            per_competition=per_competition,
        )
        (fold,) = run_backtest(matches, without(quotes, gone), config)
        return {name: ensemble.bookmakers for name, ensemble in fold.ensembles.items()}

    # One pool for all: still quoting SP1, William Hill stays; one pool per competition:
    # out of E0's, in SP1's. Ladbrokes quoted all of 2017/18, the training season.
    assert "WH" in pools(per_competition=False)[""]
    by_competition = pools(per_competition=True)
    assert "WH" not in by_competition["E0"]
    assert "WH" in by_competition["SP1"]
    assert "LB" in by_competition["E0"]


def test_a_refit_inside_2018_19_leaves_ladbrokes_out_and_says_so(
    refit_settings: Settings, season_file: SeasonFile, oddsboost: Oddsboost
) -> None:
    engine = make_engine(refit_settings.database_url)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            for name in ("E0_1819", "SP1_1819"):
                import_football_data(session, season_file(name).read_bytes())
        result = oddsboost.run(
            "refit", "--until", "2018-12-01T00:00:00Z", env=settings_environment(refit_settings)
        )
        assert result.returncode == 0, result.stderr
        version = _only_version(engine)
    finally:
        engine.dispose()
    assert "LB" not in {bookmaker.code for bookmaker in version.bookmakers}
    assert version.validation.left_out is not None
    assert set(version.validation.left_out) == {"LB"}
    reason = version.validation.left_out["LB"]
    assert reason.startswith("no longer quoting: 0 of the ")
    # What `oddsboost refit` printed names it, with why.
    assert f"Left out of the pool: LB ({reason})" in " ".join(result.stdout.split())
    with TestClient(create_app(refit_settings)) as client:
        listed = client.get("/models")
    assert listed.status_code == 200, listed.text
    (served,) = listed.json()["items"]
    assert served["validation"]["left_out"] == {"LB": reason}
    assert served["validation"]["options"]["recent_days"] == 30
    assert math.isclose(served["validation"]["options"]["recent_share"], 0.5)


def _only_version(engine: Engine) -> ModelVersion:
    with make_session_factory(engine)() as session:
        (version,) = session.scalars(select(ModelVersion))
        return version
