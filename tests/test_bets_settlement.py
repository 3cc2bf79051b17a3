"""Bets settled: at once for a match whose result is stored, when the result arrives, again
when it is corrected; void bets return their stake; CLV against Pinnacle's close (a season
file's or a live one), with where the close came from. Real matches of E0 2018/19.

The figures are worked out in the comments from the file's prices; the closing probability
comes from tests/placed_bets.py's power method (bisection), not the service's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.domain.bets import PriceFormatError, decimal_price
from app.services import bets
from app.settings import Settings
from tests.admin_requests import alias, post_odds
from tests.apps import ADMIN_KEY, build_app
from tests.flag_books import at, book
from tests.helpers import received_at
from tests.placed_bets import (
    SeasonMatch,
    bet_body,
    post_bet,
    power_probabilities,
    season_lines,
    season_matches,
    store_season,
)


@pytest.fixture
def first_matches(
    client: TestClient, admin_headers: dict[str, str], season_file: Callable[[str], Path]
) -> list[tuple[int, SeasonMatch]]:
    """The first three matches of E0 2018/19, results and closing prices stored."""
    return store_season(client, admin_headers, season_lines(season_file("E0_1819"), 3))


def test_the_season_s_rows_are_the_ones_the_figures_below_are_worked_from(
    first_matches: list[tuple[int, SeasonMatch]],
) -> None:
    (_, united), *_ = first_matches
    assert (united.home_team, united.away_team) == ("Man United", "Leicester")
    assert (united.home_goals, united.away_goals) == (2, 1)
    assert united.pinnacle_close == (1.55, 4.07, 7.69)


def test_a_bet_of_a_match_with_a_result_is_settled_at_once_against_the_season_file_s_close(
    client: TestClient, admin_headers: dict[str, str], first_matches: list[tuple[int, SeasonMatch]]
) -> None:
    match_id, united = first_matches[0]
    # 10 on Leicester at 13/2 (decimal 7.5, B365's price that day); Man United won 2-1.
    bet = post_bet(client, admin_headers, bet_body(match_id))
    assert (bet["price"], bet["price_text"], bet["status"]) == (7.5, "13/2", "lost")
    assert (bet["returned"], bet["profit"]) == (0.0, -10.0)
    # CLV = 7.5 × p_close(away) − 1, Pinnacle's close 1.55 / 4.07 / 7.69 de-margined by power.
    p_away = power_probabilities(united.pinnacle_close)[2]
    # 1/7.69 = 0.1300 of a book summing to 1.0209; power takes more than its share (0.1274)
    # off a longshot.
    assert 0.12 < p_away < 0.1300 / 1.0209
    assert bet["closing_probability"] == pytest.approx(p_away, abs=1e-9)
    assert bet["clv"] == pytest.approx(7.5 * p_away - 1, abs=1e-9)
    assert bet["close"] == {"price": 7.69, "origin": "season_file", "captured_at": None}
    assert bet["match"]["result"] == "1"
    assert bet["settled_at"] is not None


def test_won_at_5_2_returns_35_and_a_corrected_result_settles_it_again(
    client: TestClient, admin_headers: dict[str, str], first_matches: list[tuple[int, SeasonMatch]]
) -> None:
    match_id, united = first_matches[0]
    # 10 on Man United at 5/2: decimal 3.5; they won, so it returns 10 × 3.5 = 35, profit 25.
    bet = post_bet(client, admin_headers, bet_body(match_id, outcome="1", price="5/2"))
    assert (bet["price"], bet["status"], bet["returned"], bet["profit"]) == (3.5, "won", 35.0, 25)
    p_home = power_probabilities(united.pinnacle_close)[0]
    clv = 3.5 * p_home - 1  # about 1.23: a price no bookmaker offered, hand-made for the sum
    assert bet["clv"] == pytest.approx(clv, abs=1e-9)

    # The result corrected to 1-1: a draw, so the bet is lost; its CLV does not change.
    corrected = client.post(
        "/admin/results",
        json={"results": [{"match_id": match_id, "home_goals": 1, "away_goals": 1}]},
        headers=admin_headers,
    )
    assert corrected.status_code == 200, corrected.text
    again = client.get(f"/bets/{bet['id']}", headers=admin_headers).json()
    assert (again["status"], again["returned"], again["profit"]) == ("lost", 0.0, -10.0)
    assert again["match"]["result"] == "X"
    assert again["clv"] == pytest.approx(clv, abs=1e-9)
    # A settlement is no correction of the user's: the trail has only the creation.
    assert [change["change"] for change in again["changes"]] == ["created"]


def test_a_void_bet_returns_its_stake_and_undoing_the_void_settles_it_again(
    client: TestClient, admin_headers: dict[str, str], first_matches: list[tuple[int, SeasonMatch]]
) -> None:
    match_id, _ = first_matches[0]
    bet = post_bet(client, admin_headers, bet_body(match_id))
    voided = client.patch(f"/bets/{bet['id']}", json={"status": "void"}, headers=admin_headers)
    assert voided.status_code == 200, voided.text
    void = voided.json()
    # Void: the stake of 10 comes back, no profit, no CLV (left out of both).
    assert (void["status"], void["returned"], void["profit"]) == ("void", 10.0, 0.0)
    assert (void["clv"], void["closing_probability"], void["close"]) == (None, None, None)

    reopened = client.patch(f"/bets/{bet['id']}", json={"status": "open"}, headers=admin_headers)
    assert reopened.json()["status"] == "lost"
    assert reopened.json()["clv"] == pytest.approx(bet["clv"], abs=1e-12)
    trail = reopened.json()["changes"]
    assert [
        (c["change"], (c["before"] or {}).get("status"), c["after"]["status"]) for c in trail
    ] == [
        ("created", None, "open"),  # as recorded, then settled: lost
        ("corrected", "lost", "void"),
        ("corrected", "void", "open"),  # the user's undo, then settled again
    ]


KICKOFF = dt.datetime(2026, 1, 10, 15, 0, tzinfo=dt.UTC)


def test_an_open_bet_is_settled_when_the_result_arrives_against_a_live_close(
    client: TestClient, admin_headers: dict[str, str], season_file: Callable[[str], Path]
) -> None:
    # Man United v Leicester with Pinnacle's pre-match prices of the real match (1.58, 3.93,
    # 7.5), captured ten minutes before a kickoff of January 2026: a live close.
    (united,) = [
        match
        for match in season_matches(season_lines(season_file("E0_1819"), 3))
        if match.home_team == "Man United"
    ]
    captured = KICKOFF - dt.timedelta(minutes=10)
    teams = {"home_team": united.home_team, "away_team": united.away_team}
    with received_at(client, captured + dt.timedelta(minutes=1)):
        post_odds(
            client, admin_headers, book(at(KICKOFF), "PS", united.pinnacle, captured, **teams)
        )
    match_id = client.get("/matches", params={"date": "2026-01-10"}).json()["items"][0]["id"]
    bet = post_bet(
        client,
        admin_headers,
        bet_body(match_id, outcome="1", price=1.65, placed_at="2026-01-09T18:00:00Z"),
    )
    # Before the result: open, nothing returned yet.
    assert (bet["status"], bet["returned"], bet["profit"], bet["clv"]) == ("open", None, None, None)

    results = {"results": [{"match_id": match_id, "home_goals": 2, "away_goals": 1}]}
    assert client.post("/admin/results", json=results, headers=admin_headers).status_code == 200
    settled = client.get(f"/bets/{bet['id']}", headers=admin_headers).json()
    # Won: 10 × 1.65 = 16.5 back, profit 6.5; CLV = 1.65 × p_close(home) − 1.
    assert (settled["status"], settled["returned"]) == ("won", pytest.approx(16.5))
    assert settled["profit"] == pytest.approx(6.5)
    p_home = power_probabilities(united.pinnacle)[0]
    assert settled["clv"] == pytest.approx(1.65 * p_home - 1, abs=1e-9)
    assert settled["close"] == {
        "price": 1.58,
        "origin": "live",
        "captured_at": at(captured),
    }


def test_a_bet_of_a_match_with_no_result_stays_open(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    # A postponed match: no result, so the bet waits (or the user voids it).
    with received_at(client, KICKOFF - dt.timedelta(days=2)):
        post_odds(
            client,
            admin_headers,
            book(at(KICKOFF), "B365", (2.1, 3.4, 3.6), KICKOFF - dt.timedelta(days=2)),
        )
    match_id = client.get("/matches", params={"date": "2026-01-10"}).json()["items"][0]["id"]
    bet = post_bet(client, admin_headers, bet_body(match_id, placed_at="2026-01-08T10:00:00Z"))
    assert (bet["status"], bet["settled_at"], bet["close"]) == ("open", None, None)


def test_settle_match_bets_counts_only_the_bets_it_changed(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    first_matches: list[tuple[int, SeasonMatch]],
) -> None:
    match_id, _ = first_matches[0]
    post_bet(client, admin_headers, bet_body(match_id))
    now = dt.datetime.now(dt.UTC)
    # Settled when recorded: settling again changes nothing.
    assert bets.settle_match_bets(session, [match_id], now) == 0
    assert bets.settle_match_bets(session, [], now) == 0


@pytest.mark.parametrize(
    ("typed", "decimal"),
    [
        ("2.5", 2.5),
        ("5/2", 3.5),  # 1 + 5/2
        ("13/2", 7.5),
        ("8/13", 1 + 8 / 13),
        ("+150", 2.5),  # 1 + 150/100
        ("-200", 1.5),  # 1 + 100/200
        ("evens", 2.0),
        (" EVS ", 2.0),
        ("100/1", 101.0),
    ],
)
def test_prices_typed_in_each_format(typed: str, decimal: float) -> None:
    assert decimal_price(typed) == pytest.approx(decimal)


@pytest.mark.parametrize("typed", ["1.0", "0/1", "5/0", "+50", "1002", "abc", "2,5", "-", ""])
def test_prices_no_bookmaker_offers_are_refused(typed: str) -> None:
    with pytest.raises(PriceFormatError):
        decimal_price(typed)


def test_a_season_file_bringing_the_result_settles_the_open_bets_of_its_matches(
    client: TestClient, admin_headers: dict[str, str], season_file: Callable[[str], Path]
) -> None:
    # Man United v Leicester stored first from one quote, with no result: a bet on it waits.
    content = season_lines(season_file("E0_1819"), 1)
    (united,) = season_matches(content)
    placed = dt.datetime(2018, 8, 10, 12, 0, tzinfo=dt.UTC)
    with received_at(client, placed):
        post_odds(
            client,
            admin_headers,
            book(
                "2018-08-10T19:00:00Z",
                "B365",
                (1.57, 3.9, 7.5),
                placed,
                home_team="Man United",
                away_team="Leicester",
            ),
        )
    match_id = client.get("/matches", params={"date": "2018-08-10"}).json()["items"][0]["id"]
    bet = post_bet(client, admin_headers, bet_body(match_id, placed_at=at(placed)))
    assert bet["status"] == "open"

    # The season file's row brings the result (2-1) and Pinnacle's close with it.
    store_season(client, admin_headers, content)
    settled = client.get(f"/bets/{bet['id']}", headers=admin_headers).json()
    assert (settled["status"], settled["returned"], settled["profit"]) == ("lost", 0.0, -10.0)
    p_away = power_probabilities(united.pinnacle_close)[2]
    assert settled["clv"] == pytest.approx(7.5 * p_away - 1, abs=1e-9)
    assert settled["close"]["origin"] == "season_file"


@pytest.mark.parametrize(
    ("typed", "refused"), [("1/1000", False), ("1.001", False), ("1.0009", True)]
)
def test_the_lowest_price_is_1_001(typed: str, refused: bool) -> None:
    # A price within a rounding error of 1 would be written back as 1, which pays nothing.
    if refused:
        with pytest.raises(PriceFormatError, match=r"must be from 1\.001 to 1001"):
            decimal_price(typed)
    else:
        assert decimal_price(typed) == pytest.approx(1.001)


@contextmanager
def client_with_window(database_url: str, session: Session, minutes: int) -> Iterator[TestClient]:
    """The app on the test's session with a closing window of ``minutes``."""
    settings = Settings(
        database_url=database_url, admin_api_key=ADMIN_KEY, closing_window_minutes=minutes
    )
    with TestClient(build_app(settings, session)) as client:
        yield client


def pinnacle_45_minutes_before(
    client: TestClient, headers: dict[str, str], season_file: Callable[[str], Path], **teams: str
) -> SeasonMatch:
    """Pinnacle's pre-match prices of the real Man United v Leicester (1.58, 3.93, 7.5),
    captured 45 minutes before a kickoff of January 2026: a live close within a window of 60
    minutes, none within the default 30."""
    (united,) = [
        match
        for match in season_matches(season_lines(season_file("E0_1819"), 3))
        if match.home_team == "Man United"
    ]
    captured = KICKOFF - dt.timedelta(minutes=45)
    named = {"home_team": united.home_team, "away_team": united.away_team, **teams}
    with received_at(client, captured + dt.timedelta(minutes=1)):
        post_odds(client, headers, book(at(KICKOFF), "PS", united.pinnacle, captured, **named))
    return united


def expected_close(minutes: int) -> dict[str, Any] | None:
    if minutes < 45:
        return None
    captured = KICKOFF - dt.timedelta(minutes=45)
    return {"price": 1.58, "origin": "live", "captured_at": at(captured)}


@pytest.mark.parametrize("minutes", [30, 60])
def test_an_import_settles_with_the_configured_closing_window(
    database_url: str,
    session: Session,
    admin_headers: dict[str, str],
    season_file: Callable[[str], Path],
    minutes: int,
) -> None:
    with client_with_window(database_url, session, minutes) as client:
        united = pinnacle_45_minutes_before(client, admin_headers, season_file)
        match_id = client.get("/matches", params={"date": "2026-01-10"}).json()["items"][0]["id"]
        results = {"results": [{"match_id": match_id, "home_goals": 2, "away_goals": 1}]}
        assert client.post("/admin/results", json=results, headers=admin_headers).status_code == 200
        data = (
            "placed_at,match_id,outcome,bookmaker,price,stake\n"
            f"2026-01-09T18:00:00Z,{match_id},1,B365,1.65,10\n"
        )
        headers = {**admin_headers, "Content-Type": "text/csv"}
        imported = client.post("/bets/import", content=data, headers=headers)
        assert imported.status_code == 201, imported.text
        (bet_id,) = imported.json()["bet_ids"]
        bet = client.get(f"/bets/{bet_id}", headers=admin_headers).json()
    # Won either way (2-1): 10 × 1.65 = 16.5 back; the close only within the window.
    assert (bet["status"], bet["returned"]) == ("won", pytest.approx(16.5))
    assert bet["close"] == expected_close(minutes)
    if minutes > 45:
        p_home = power_probabilities(united.pinnacle)[0]
        assert bet["clv"] == pytest.approx(1.65 * p_home - 1, abs=1e-9)
    else:
        assert bet["clv"] is None


@pytest.mark.parametrize("minutes", [30, 60])
def test_a_team_merge_settles_the_bets_it_moves_with_the_configured_closing_window(
    database_url: str,
    session: Session,
    admin_headers: dict[str, str],
    season_file: Callable[[str], Path],
    minutes: int,
) -> None:
    with client_with_window(database_url, session, minutes) as client:
        # The match stored twice: Pinnacle's prices and the result on "Man United", a bet
        # on the duplicate under another source's spelling, open (no result there).
        pinnacle_45_minutes_before(client, admin_headers, season_file)
        captured = KICKOFF - dt.timedelta(days=1)
        with received_at(client, captured):
            post_odds(
                client,
                admin_headers,
                book(
                    at(KICKOFF),
                    "B365",
                    (1.6, 3.9, 7.0),
                    captured,
                    home_team="Manchester United",
                    away_team="Leicester",
                ),
            )
        matches = client.get("/matches", params={"date": "2026-01-10"}).json()["items"]
        by_home = {item["home_team"]: item["id"] for item in matches}
        results = {
            "results": [{"match_id": by_home["Man United"], "home_goals": 2, "away_goals": 1}]
        }
        assert client.post("/admin/results", json=results, headers=admin_headers).status_code == 200
        body = bet_body(by_home["Manchester United"], outcome="1", price=1.65)
        bet = post_bet(client, admin_headers, {**body, "placed_at": "2026-01-09T18:00:00Z"})
        assert bet["status"] == "open"
        merged = alias(client, admin_headers, "Manchester United", "Man United")
        assert merged.status_code == 200, merged.text
        moved = client.get(f"/bets/{bet['id']}", headers=admin_headers).json()
    assert moved["match"]["id"] == by_home["Man United"]
    assert (moved["status"], moved["returned"]) == ("won", pytest.approx(16.5))
    assert moved["close"] == expected_close(minutes)
