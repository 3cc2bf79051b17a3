"""``oddsboost bets add`` and ``oddsboost bets list`` on a database of real seasons, and
``oddsboost matches delete`` refusing a match with bets."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from app.db.engine import make_engine
from app.db.orm import Bet, Match, Team
from tests.commands import Oddsboost, table_rows
from tests.placed_bets import power_probabilities


def on(database_url: str) -> dict[str, str]:
    return {"ODDSBOOST_DATABASE_URL": database_url}


def match_of(database_url: str, home: str, away: str, season: str) -> int:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            home_team = select(Team.id).where(Team.name == home).scalar_subquery()
            away_team = select(Team.id).where(Team.name == away).scalar_subquery()
            found = connection.scalar(
                select(Match.id).where(
                    Match.home_team_id == home_team,
                    Match.away_team_id == away_team,
                    Match.season == season,
                )
            )
    finally:
        engine.dispose()
    assert found is not None
    return int(found)


def bet_count(database_url: str) -> int:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return len(connection.execute(select(Bet.id)).all())
    finally:
        engine.dispose()


@pytest.fixture
def arsenal_leicester(seeded_url: str) -> int:
    # E0 2017/18, 11 August 2017: Arsenal 4-3 Leicester; Pinnacle closed 1.49, 4.73, 7.25
    # (PSCH, PSCD, PSCA of the season file).
    return match_of(seeded_url, "Arsenal", "Leicester", "2017/18")


def add(oddsboost: Oddsboost, url: str, match_id: int, *more: str) -> Any:
    return oddsboost.run(
        "bets",
        "add",
        "--match-id",
        str(match_id),
        "--outcome",
        "2",
        "--bookmaker",
        "Bet365",
        "--price",
        "+1000",
        "--stake",
        "5",
        "--placed-at",
        "2017-08-11T12:00:00",
        *more,
        env=on(url),
    )


def test_a_bet_added_from_the_command_line_is_settled_at_once(
    oddsboost: Oddsboost, seeded_url: str, arsenal_leicester: int
) -> None:
    result = add(oddsboost, seeded_url, arsenal_leicester, "--note", "a punt", "--json")
    assert result.returncode == 0, result.stderr
    bet = json.loads(result.stdout)
    # +1000 is 11.0 decimal; Arsenal won, so 5 on Leicester is lost: profit −5. The price
    # beat the close of 7.25 by far: CLV = 11 × p_close(away) − 1, about +0.45.
    assert (bet["price"], bet["price_text"], bet["bookmaker"]) == (11.0, "+1000", "B365")
    assert (bet["status"], bet["returned"], bet["profit"]) == ("lost", 0.0, -5.0)
    assert bet["placed_at"] == "2017-08-11T12:00:00Z"  # no zone given: UTC
    p_away = power_probabilities((1.49, 4.73, 7.25))[2]
    assert bet["clv"] == pytest.approx(11.0 * p_away - 1, abs=1e-9)
    assert bet["close"]["origin"] == "season_file"
    assert [change["channel"] for change in bet["changes"]] == ["cli"]


def test_the_list_prints_a_table_and_json(
    oddsboost: Oddsboost, seeded_url: str, arsenal_leicester: int
) -> None:
    assert add(oddsboost, seeded_url, arsenal_leicester).returncode == 0
    printed = oddsboost.run("bets", "list", env=on(seeded_url))
    assert printed.returncode == 0, printed.stderr
    (row,) = table_rows(printed.stdout, "id")
    assert (row["match"], row["price"], row["status"], row["profit"]) == (
        "Arsenal v Leicester",
        "11",
        "lost",
        "-5.00",
    )
    assert "1 bet shown of 1" in printed.stdout
    listed = json.loads(
        oddsboost.run("bets", "list", "--status", "won", "--json", env=on(seeded_url)).stdout
    )
    assert (listed["items"], listed["total"]) == ([], 0)


@pytest.mark.parametrize(
    ("more", "said"),
    [
        (("--price", "5/0"), "--price: price '5/0' divides by zero"),
        (("--stake", "0"), "--stake: stake 0 must be above 0 and at most 1000000000"),
        # The API's bound: a bankroll's worth of zeros typed by mistake.
        (
            ("--stake", "1000000001"),
            "--stake: stake 1000000001 must be above 0 and at most 1000000000",
        ),
        (("--placed-at", "2099-01-01T00:00:00Z"), "--placed-at: 2099-01-01T00:00:00+00:00 is in"),
        (("--flag-id", "99"), "--flag-id: no flag 99 is stored"),
    ],
)
def test_a_bad_bet_is_refused_with_the_option_named_and_nothing_written(
    oddsboost: Oddsboost,
    seeded_url: str,
    arsenal_leicester: int,
    more: tuple[str, ...],
    said: str,
) -> None:
    result = add(oddsboost, seeded_url, arsenal_leicester, *more)
    assert result.returncode == 1
    assert said in result.stderr
    assert bet_count(seeded_url) == 0


def test_an_unknown_match_is_named(oddsboost: Oddsboost, seeded_url: str) -> None:
    result = add(oddsboost, seeded_url, 999_999)
    assert result.returncode == 1
    assert "--match-id: no match 999999 is stored" in result.stderr


def test_a_match_with_bets_is_not_deleted(
    oddsboost: Oddsboost, seeded_url: str, arsenal_leicester: int
) -> None:
    added = json.loads(add(oddsboost, seeded_url, arsenal_leicester, "--json").stdout)
    refused = oddsboost.run(
        "matches", "delete", str(arsenal_leicester), "--force", env=on(seeded_url)
    )
    assert refused.returncode == 1
    assert f"match {arsenal_leicester} has 1 bet ({added['id']})" in refused.stderr
    assert bet_count(seeded_url) == 1
