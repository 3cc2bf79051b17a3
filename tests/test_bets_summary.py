"""The book's summary (GET /bets/summary, :mod:`app.domain.bet_book`): figures worked out by
hand on six bets, the ROI's delta-method interval against an independent computation and a
bootstrap, and the statement that ROI is noise and CLV the signal, with its numbers."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy.orm import Session

from app.domain.bet_book import roi_interval
from app.domain.bets import BetChannel, BetDraft, BetStatus
from app.domain.flags import CloseOrigin
from app.services.bets import record_bets
from tests.bet_books import match_id, store_book_matches, unsettle
from tests.placed_bets import season_lines, store_season

REPO_ROOT = Path(__file__).resolve().parents[1]
NOW = dt.datetime(2017, 9, 2, tzinfo=dt.UTC)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC)


# Six bets on real matches (names and results from football-data.co.uk E0/SP1 2017/18):
# (name, match, outcome, bookmaker, price, stake, placed, source, status, clv, settled)
BOOK = (
    # Man United 4-0 West Ham: home won, 10 at 2.0 returns 20, profit +10.
    ("A", ("E0", "Man United", "West Ham"), "1", "B365", "2.0", 10.0, utc(2017, 8, 10), "PS",
     BetStatus.WON, 0.05, utc(2017, 8, 13, 18)),
    # Newcastle 0-2 Tottenham: draw lost, profit −10.
    ("B", ("E0", "Newcastle", "Tottenham"), "X", "B365", "3.0", 10.0, utc(2017, 8, 12), None,
     BetStatus.LOST, -0.02, utc(2017, 8, 13, 16)),
    # Barcelona 2-0 Betis: home won, 20 at 1.5 returns 30, profit +10.
    ("C", ("SP1", "Barcelona", "Betis"), "1", "PS", "1.5", 20.0, utc(2017, 8, 18), None,
     BetStatus.WON, 0.01, utc(2017, 8, 20, 22)),
    # Levante 1-0 Villarreal: away lost, profit −5; no closing line. Placed 23:30 UTC on 31
    # August: 01:30 on 1 September in Madrid.
    ("D", ("SP1", "Levante", "Villarreal"), "2", "PS", "4.0", 5.0, utc(2017, 8, 31, 23, 30),
     None, BetStatus.LOST, None, utc(2017, 9, 1)),
    # Void: counted, out of every figure.
    ("E", ("E0", "Tottenham", "Chelsea"), "1", "B365", "2.5", 50.0, utc(2017, 8, 19), None,
     BetStatus.VOID, None, None),
    # Open: counted, its stake summed apart.
    ("F", ("E0", "Man United", "Leicester"), "1", "PS", "1.4", 8.0, utc(2017, 8, 25), None,
     BetStatus.OPEN, None, None),
)  # fmt: skip


@pytest.fixture
def book(session: Session, season_file: Callable[[str], Path]) -> dict[str, int]:
    """The six bets, recorded by the one path and settled by setting their columns."""
    store_book_matches(session, season_file)
    ids: dict[str, int] = {}
    for name, match, outcome, bookmaker, price, stake, placed, source, status, clv, settled in BOOK:
        draft = BetDraft(
            match_id=match_id(session, *match),
            outcome=outcome,
            bookmaker=bookmaker,
            price_text=price,
            stake=stake,
            placed_at=placed,
            void=status is BetStatus.VOID,
        )
        (bet,) = record_bets(session, [draft], BetChannel.API, NOW)
        unsettle(bet)
        bet.source = source
        if status in (BetStatus.WON, BetStatus.LOST):
            bet.status = status
            bet.returned = stake * float(price) if status is BetStatus.WON else 0.0
            bet.profit = bet.returned - stake
            bet.settled_at = settled
            if clv is not None:
                bet.clv = clv
                bet.close_origin = CloseOrigin.SEASON_FILE
        ids[name] = bet.id
    session.flush()
    return ids


@pytest.fixture
def book_client(book: dict[str, int], client: TestClient) -> TestClient:
    assert book
    return client


def summary(client: TestClient, headers: dict[str, str], query: str = "") -> dict[str, object]:
    answer = client.get(f"/bets/summary{query}", headers=headers)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


def test_the_whole_book_by_hand(book_client: TestClient, admin_headers: dict[str, str]) -> None:
    overall = summary(book_client, admin_headers)["overall"]
    assert isinstance(overall, dict)
    # Settled A, B, C, D: staked 10 + 10 + 20 + 5 = 45, profits +10 − 10 + 10 − 5 = +5,
    # returned 20 + 0 + 30 + 0 = 50; ROI 5 / 45 = 0.1111.
    assert overall["bets"] == 6
    assert (overall["open"], overall["settled"], overall["void"]) == (1, 4, 1)
    assert overall["open_stake"] == 8.0
    assert (overall["staked"], overall["returned"], overall["profit"]) == (45.0, 50.0, 5.0)
    # Delta method: mean stake 11.25, z = (profit − stake/9) / 11.25 = 0.790123, −0.987654,
    # 0.691358, −0.493827; sd (n − 1) 0.879696, se 0.439848, t(0.975, 3) = 3.182446:
    # 0.1111 ± 1.399793.
    assert overall["roi"] == pytest.approx(
        {"mean": 1 / 9, "low": 1 / 9 - 1.399793, "high": 1 / 9 + 1.399793}, abs=1e-6
    )
    # CLV of A, B, C (D had no close): mean 0.013333, sd 0.0351188, se 0.0202759,
    # t(0.975, 2) = 4.302653: ± 0.0872403.
    assert overall["clv"] == pytest.approx(
        {"mean": 0.04 / 3, "low": 0.04 / 3 - 0.0872403, "high": 0.04 / 3 + 0.0872403}, abs=1e-6
    )
    assert overall["bets_with_close"] == 3


@pytest.mark.parametrize(
    ("stake", "price", "returned"),
    [
        # 1e306 at 1000/1 returns 1.001e309: more than a float holds (inf), as a bet stored
        # before stakes were bounded could.
        (1e306, "1000/1", math.inf),
        # 1e306 at 2.0: finite, yet two such bets sum to more than a float holds.
        (1e306, "2.0", 2e306),
    ],
)
def test_a_stored_bet_out_of_bounds_is_left_out_of_the_summary(
    book_client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    caplog: pytest.LogCaptureFixture,
    stake: float,
    price: str,
    returned: float,
) -> None:
    (bet,) = record_bets(
        session,
        [
            BetDraft(
                match_id=match_id(session, "E0", "Man United", "West Ham"),
                outcome="1",
                bookmaker="B365",
                price_text=price,
                stake=10.0,
                placed_at=utc(2017, 8, 11),
            )
        ],
        BetChannel.API,
        NOW,
    )
    # Written as the book stored it before the bound: the one path refuses it now.
    bet.stake, bet.returned, bet.profit = stake, returned, returned - stake
    session.flush()
    caplog.set_level(logging.WARNING, logger="app.services.bet_book")
    answer = book_client.get("/bets/summary", headers=admin_headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    # Counted, and out of every figure: the six bets' figures by hand (above) are unchanged.
    overall = body["overall"]
    assert overall["bets"] == 7
    assert (overall["open"], overall["settled"], overall["void"]) == (1, 4, 1)
    assert (overall["staked"], overall["returned"], overall["profit"]) == (45.0, 50.0, 5.0)
    assert overall["roi"]["mean"] == pytest.approx(1 / 9)
    assert bet.id not in [point["bet_id"] for point in body["bankroll"]]
    assert caplog.messages == [f"1 bet out of bounds, left out of the summary: {bet.id}"]


def groups_of(body: dict[str, object], name: str) -> dict[str, dict[str, object]]:
    listed = body[name]
    assert isinstance(listed, list)
    return {group["key"]: group["figures"] for group in listed}


def test_the_book_by_bookmaker_competition_month_and_source(
    book_client: TestClient, admin_headers: dict[str, str]
) -> None:
    body = summary(book_client, admin_headers)
    by_bookmaker = groups_of(body, "by_bookmaker")
    # B365: A, B settled (+10 − 10 on 20), E void; PS: C, D settled (+10 − 5 on 25), F open.
    assert list(by_bookmaker) == ["B365", "PS"]
    assert [by_bookmaker["B365"][k] for k in ("bets", "settled", "staked", "profit")] == [
        3, 2, 20.0, 0.0
    ]  # fmt: skip
    assert by_bookmaker["PS"]["roi"]["mean"] == pytest.approx(5 / 25)  # type: ignore[index]
    # Two settled bets: the delta interval is a t interval with 1 degree of freedom.
    assert by_bookmaker["PS"]["roi"]["low"] is not None  # type: ignore[index]
    by_competition = groups_of(body, "by_competition")
    assert {key: value["profit"] for key, value in by_competition.items()} == {
        "E0": 0.0,
        "SP1": 5.0,
    }
    by_source = groups_of(body, "by_source")
    assert {key: value["bets"] for key, value in by_source.items()} == {"PS": 1, "none": 5}
    assert by_source["PS"]["clv"] == {"mean": 0.05, "low": None, "high": None}
    # Placed in August in UTC; in Madrid D was placed on 1 September.
    assert list(groups_of(body, "by_month")) == ["2017-08"]
    madrid = summary(book_client, admin_headers, "?tz=Europe/Madrid")
    months = groups_of(madrid, "by_month")
    assert {key: value["bets"] for key, value in months.items()} == {"2017-08": 5, "2017-09": 1}
    assert madrid["time_zone"] == "Europe/Madrid"


def test_the_bankroll_curve_follows_the_matches_kickoffs(
    book_client: TestClient, book: dict[str, int], admin_headers: dict[str, str]
) -> None:
    body = summary(book_client, admin_headers, "?starting_bankroll=100")
    # The file gives days, no times: A (Man United v West Ham) and B (Newcastle v Tottenham)
    # both kick off on 13 August, A placed first (the 10th, B the 12th); C (Barcelona v
    # Betis) on 20 August, D (Levante v Villarreal) on the 21st. B was settled before A, and
    # D on 1 September: the curve does not follow that. 100 + 10 = 110, − 10 = 100, + 10 =
    # 110, − 5 = 105.
    assert body["bankroll"] == [
        {
            "bet_id": book["A"],
            "kickoff": "2017-08-13T00:00:00Z",
            "settled_at": "2017-08-13T18:00:00Z",
            "bankroll": 110.0,
        },
        {
            "bet_id": book["B"],
            "kickoff": "2017-08-13T00:00:00Z",
            "settled_at": "2017-08-13T16:00:00Z",
            "bankroll": 100.0,
        },
        {
            "bet_id": book["C"],
            "kickoff": "2017-08-20T00:00:00Z",
            "settled_at": "2017-08-20T22:00:00Z",
            "bankroll": 110.0,
        },
        {
            "bet_id": book["D"],
            "kickoff": "2017-08-21T00:00:00Z",
            "settled_at": "2017-09-01T00:00:00Z",
            "bankroll": 105.0,
        },
    ]
    assert body["starting_bankroll"] == 100.0


def test_the_bankroll_curve_of_an_imported_history_follows_the_matches(
    client: TestClient, admin_headers: dict[str, str], season_file: Callable[[str], Path]
) -> None:
    stored = store_season(client, admin_headers, season_lines(season_file("E0_1819"), 12))
    (early, _), (late, _) = stored[0], stored[-1]
    # A spreadsheet kept newest first, as many are: both bets are settled by the import, in
    # one moment, the later match's first. E0 2018/19: Man United 2-1 Leicester on 10 August
    # (home won, 10 at 2.0: +10), the twelfth row Chelsea 3-2 Arsenal on 18 August (+10).
    csv = (
        "placed_at,match_id,outcome,bookmaker,price,stake\n"
        f"2018-08-17T12:00:00Z,{late},1,B365,2.0,10\n"
        f"2018-08-10T12:00:00Z,{early},1,B365,2.0,10\n"
    )
    headers = admin_headers | {"Content-Type": "text/csv"}
    imported = client.post("/bets/import", content=csv, headers=headers)
    assert imported.status_code == 201, imported.text
    second, first = imported.json()["bet_ids"]
    points = summary(client, admin_headers)["bankroll"]
    assert isinstance(points, list)
    assert [(p["bet_id"], p["kickoff"][:10], p["bankroll"]) for p in points] == [
        (first, "2018-08-10", 10.0),
        (second, "2018-08-18", 20.0),
    ]
    assert points[0]["settled_at"] == points[1]["settled_at"]


def test_the_filters(book_client: TestClient, admin_headers: dict[str, str]) -> None:
    pinnacle = summary(book_client, admin_headers, "?bookmaker=pinnacle")["overall"]
    assert isinstance(pinnacle, dict)
    assert (pinnacle["bets"], pinnacle["staked"]) == (3, 25.0)
    spain = summary(book_client, admin_headers, "?competition=SP1")["overall"]
    assert isinstance(spain, dict)
    assert spain["bets"] == 2
    # Placed from 12 August (B) to 19 August at midnight, both included: B, C and the void E.
    window = summary(book_client, admin_headers, "?from=2017-08-12&to=2017-08-19")["overall"]
    assert isinstance(window, dict)
    assert (window["bets"], window["void"], window["profit"]) == (3, 1, 0.0)
    empty = summary(book_client, admin_headers, "?competition=D1")
    assert empty["overall"] == {
        "bets": 0,
        "open": 0,
        "settled": 0,
        "void": 0,
        "open_stake": 0.0,
        "staked": 0.0,
        "returned": 0.0,
        "profit": 0.0,
        "roi": {"mean": None, "low": None, "high": None},
        "clv": {"mean": None, "low": None, "high": None},
        "bets_with_close": 0,
    }
    assert empty["bankroll"] == []


@pytest.mark.parametrize(
    ("query", "loc"),
    [
        ("?tz=Mars/Olympus", ["query", "tz"]),
        ("?from=2017-09-01&to=2017-08-01", ["query", "to"]),
        ("?starting_bankroll=nan", ["query", "starting_bankroll"]),
        ("?bookmaker=", ["query", "bookmaker"]),
    ],
)
def test_bad_queries_are_named(
    client: TestClient, admin_headers: dict[str, str], query: str, loc: list[str]
) -> None:
    answer = client.get(f"/bets/summary{query}", headers=admin_headers)
    assert answer.status_code == 422
    assert [error["loc"] for error in answer.json()["errors"]] == [loc]


def test_the_summary_needs_the_admin_key(client: TestClient) -> None:
    assert client.get("/bets/summary").status_code == 401
    assert (
        client.get("/bets/summary", headers={"X-API-Key": "wrong-key-0123456789"}).status_code
        == 403
    )


def delta_method_reference(stakes: np.ndarray, profits: np.ndarray) -> tuple[float, float]:
    """The textbook delta method for a ratio of means (Cochran, Sampling Techniques, 6.3):
    Var(R) ≈ (s_p² − 2 R s_ps + R² s_s²) / (n · mean(stake)²), with a t quantile."""
    n = stakes.size
    ratio = profits.sum() / stakes.sum()
    covariance = np.cov(profits, stakes, ddof=1)
    variance = (covariance[0, 0] - 2 * ratio * covariance[0, 1] + ratio**2 * covariance[1, 1]) / (
        n * stakes.mean() ** 2
    )
    half = stats.t.ppf(0.975, n - 1) * math.sqrt(variance)
    return ratio - half, ratio + half


def book_of(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` bets of stakes 1 to 50 at prices 1.3 to 6, each won with probability 1/price."""
    generator = np.random.default_rng(seed)
    stakes = generator.integers(1, 51, n).astype(np.float64)
    prices = generator.uniform(1.3, 6.0, n)
    won = generator.uniform(size=n) < 1.0 / prices
    return stakes, np.where(won, stakes * (prices - 1.0), -stakes)


def test_the_roi_interval_is_the_delta_methods() -> None:
    stakes, profits = book_of(400, seed=7)
    interval = roi_interval(stakes, profits)
    low, high = delta_method_reference(stakes, profits)
    assert interval.mean == pytest.approx(profits.sum() / stakes.sum())
    assert (interval.low, interval.high) == pytest.approx((low, high), rel=1e-9)


def test_the_roi_interval_matches_a_bootstrap() -> None:
    # A percentile bootstrap of the ratio (fixed seed, 4000 resamples of 400 bets) gives an
    # interval of nearly the same width: the delta method is the right approximation here.
    stakes, profits = book_of(400, seed=11)
    interval = roi_interval(stakes, profits)
    generator = np.random.default_rng(2017)
    picks = generator.integers(0, stakes.size, (4000, stakes.size))
    ratios = profits[picks].sum(axis=1) / stakes[picks].sum(axis=1)
    low, high = np.quantile(ratios, [0.025, 0.975])
    assert interval.low is not None
    assert interval.high is not None
    assert (interval.high - interval.low) == pytest.approx(high - low, rel=0.08)


def test_equal_stakes_give_the_t_interval_of_the_returns() -> None:
    # With equal stakes the ratio is the mean return per unit and z is its deviation.
    returns = np.array([1.0, -1.0, 0.5, -1.0, 2.2])
    interval = roi_interval(np.full(5, 4.0), returns * 4.0)
    expected = stats.t.interval(0.95, 4, loc=returns.mean(), scale=stats.sem(returns))
    assert (interval.low, interval.high) == pytest.approx(expected)


def test_the_guide_states_the_noise_of_roi_with_its_numbers() -> None:
    """300 bets at price 2.0 winning half the time: per-unit returns ±1, sd 1.00167, so the
    ROI's interval is ±1.9679 × 1.00167 / √300 = ±0.1138: ±11 points. The mean CLV of as many
    bets: the published backtest's flagged bets (docs/figures/backtest_value.json) spread
    their CLV by sd = half-width × √n / t; at 300 bets that is about ±1 point."""
    stakes = np.ones(300)
    interval = roi_interval(stakes, np.where(np.arange(300) < 150, 1.0, -1.0))
    assert interval.high is not None
    roi_half = interval.high
    assert round(roi_half * 100) == 11
    figures = json.loads((REPO_ROOT / "docs/figures/backtest_value.json").read_text())
    clv = figures["value"]["overall"]["rules"][0]["clv"]
    spread = (clv["high"] - clv["low"]) / 2 * math.sqrt(clv["n"]) / stats.t.ppf(0.975, clv["n"] - 1)
    clv_half = stats.t.ppf(0.975, 299) * spread / math.sqrt(300)
    assert round(clv_half * 100) == 1
    assert round(spread * 100) == 8
    guide = (REPO_ROOT / "docs/guides/bets-import-and-summary.md").read_text()
    assert "ROI over a few hundred bets is noise; CLV is the signal" in guide
    assert f"±{roi_half * 100:.0f} points" in guide
    assert f"±{clv_half * 100:.0f} point" in guide
    assert f"about\n{spread * 100:.0f} points" in guide


@pytest.mark.parametrize(
    ("query", "names"),
    [
        # Placed at Pinnacle (PS): C, D and the open F.
        ("bookmaker=pinnacle", {"C", "D", "F"}),
        ("competition=SP1", {"C", "D"}),
        # Placed from 12 August to 19 August at midnight, both ends included.
        ("from=2017-08-12&to=2017-08-19", {"B", "C", "E"}),
        ("competition=E0&bookmaker=B365&to=2017-08-12", {"A", "B"}),
    ],
)
def test_the_list_the_export_and_the_summary_read_one_filter(
    book_client: TestClient,
    book: dict[str, int],
    admin_headers: dict[str, str],
    query: str,
    names: set[str],
) -> None:
    expected = {book[name] for name in names}
    listed = book_client.get(f"/bets?{query}", headers=admin_headers).json()["items"]
    exported = book_client.get(f"/bets/export?{query}", headers=admin_headers).text
    rows = list(csv.DictReader(io.StringIO(exported)))
    overall = summary(book_client, admin_headers, f"?{query}")["overall"]
    assert isinstance(overall, dict)
    assert {bet["id"] for bet in listed} == expected
    assert {int(row["id"]) for row in rows} == expected
    assert overall["bets"] == len(expected)


def test_the_summary_takes_the_list_s_filters(
    book_client: TestClient, admin_headers: dict[str, str]
) -> None:
    def overall(query: str) -> dict[str, object]:
        found = summary(book_client, admin_headers, query)["overall"]
        assert isinstance(found, dict)
        return found

    # The book's one void bet (E), the source of the flag A followed (PS), the one open (F).
    assert overall("?status=void")["bets"] == 1
    by_source = overall("?source=PS")
    assert (by_source["bets"], by_source["profit"]) == (1, 10.0)
    assert overall("?status=open")["open"] == 1
