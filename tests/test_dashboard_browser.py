"""The dashboard in a real browser: Debian's chromium, driven by Playwright, against a real
``oddsboost serve`` on the fitted data (model version 1) with upcoming matches posted through
the admin API, one of them between a team named like a script and another, and the track
record back-filled for the data's last month.

Each page must load with no console error (a blocked inline style or script is one: the
Content-Security-Policy reports it there), with that policy, and with no failed request; the
board must show what ``GET /upcoming`` serves; charts must draw shapes of some size; the
filter must narrow the rows; the hostile name must stay text. Every page, with and without
the user's options, must fit the desktop and a phone 375 and 320 pixels wide (nothing past
the screen's sides outside a table's scrolling frame); the reload must be there only when
asked; the terms sent by the form must judge the board as ``GET /upcoming`` does. A
screenshot of each page is saved in the test's temporary directory, and also in
ODDSBOOST_SCREENSHOT_DIR when that is set (that is how docs/dashboard.png is made).

Chromium is found at ODDSBOOST_CHROMIUM (default /usr/bin/chromium); without it these tests
fail: `.ci/run` installs it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    FloatRect,
    Locator,
    Page,
    ViewportSize,
)

from app.db.engine import make_engine, make_session_factory, session_scope
from app.services import track_record
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.databases import Databases
from tests.plugins.browser import CSP, PHONES, VIEWPORT, Watched, fits, screenshot
from tests.processes import Server, child_environment, running_server

pytestmark = pytest.mark.slow

HOSTILE = "<script>alert(1)</script>"
# The fitted model's bookmakers, each with a margin of a few percent.
PRICES: dict[str, tuple[float, float, float]] = {
    "B365": (2.10, 3.40, 3.60),
    "BW": (2.05, 3.40, 3.70),
    "IW": (2.00, 3.30, 3.80),
    "PS": (2.15, 3.45, 3.65),
    "WH": (2.10, 3.30, 3.50),
    "VC": (2.20, 3.40, 3.50),
}
# Upcoming matches: competition, home, away, days from now; each match's home prices are
# those above raised by its index × 0.1 and its away prices lowered as much, so that no two
# matches share probabilities. The first has two quotes per bookmaker, so its page draws a
# price history.
UPCOMING = (
    ("E0", "Arsenal", "Chelsea", 1),
    ("SP1", "Barcelona", "Sevilla", 2),
    ("E0", HOSTILE, "Everton", 3),
    ("SP1", "Valencia", "Getafe", 4),
)
TILT = 0.1
# The fitted data's last month of matches, back-filled into the track record.
LOGGED_FROM = dt.datetime(2018, 5, 1, tzinfo=dt.UTC)
LOGGED_TO = dt.datetime(2018, 6, 1, tzinfo=dt.UTC)
PAGE_NAMES = {
    "/dashboard": "dashboard",
    "/dashboard/model": "dashboard-model",
    "/dashboard/track-record": "dashboard-track-record",
}


@dataclass
class Board:
    server: Server
    browser: Browser
    ids: dict[str, int]
    screenshots: Path
    shown_pages: dict[str, tuple[Page, Watched]] = field(default_factory=dict)

    def shown(self, path: str) -> tuple[Page, Watched]:
        """``path`` loaded once for every test that only reads it (none clicks or navigates
        there): a load waits for half a second of network quiet, the longest part of most
        of these tests. What goes wrong on it at any time is still watched."""
        if path not in self.shown_pages:
            self.shown_pages[path] = self.open(path)
        return self.shown_pages[path]

    def open(self, path: str, viewport: ViewportSize = VIEWPORT) -> tuple[Page, Watched]:
        page = self.browser.new_page(viewport=viewport)
        watched = Watched()
        watched.attach(page)
        response = page.goto(f"{self.server.base_url}{path}")
        # The browser asks for what the page did not name (a favicon) after the load event.
        page.wait_for_load_state("networkidle")
        assert response is not None
        assert response.status == 200, (path, response.status)
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert response.headers["content-security-policy"] == CSP
        return page, watched

    def upcoming(self, **params: str) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.server.base_url}/upcoming", params=params, timeout=30)
        assert answer.status_code == 200, answer.text
        items: list[dict[str, Any]] = answer.json()["items"]
        return items


def quote(
    competition: str,
    home: str,
    away: str,
    kickoff: dt.datetime,
    bookmaker: str,
    captured: dt.datetime,
    shift: float,
) -> dict[str, Any]:
    home_price, draw_price, away_price = PRICES[bookmaker]
    return {
        "match": {
            "competition": competition,
            "kickoff": kickoff.isoformat(),
            "home_team": home,
            "away_team": away,
        },
        "bookmaker": bookmaker,
        "home": round(home_price + shift, 2),
        "draw": draw_price,
        "away": round(away_price - shift, 2),
        "captured_at": captured.isoformat(),
    }


def post_upcoming(server: Server) -> dict[str, int]:
    """The upcoming matches, quoted by every bookmaker an hour ago (the first one also two
    hours ago, at other prices); the ids of the matches by home team."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    hour_ago = now - dt.timedelta(hours=1)
    items = []
    for index, (competition, home, away, days) in enumerate(UPCOMING):
        kickoff = (now + dt.timedelta(days=days)).replace(minute=0, second=0)
        tilt = index * TILT
        for bookmaker in PRICES:
            items.append(quote(competition, home, away, kickoff, bookmaker, hour_ago, tilt))
            if index == 0:
                earlier = hour_ago - dt.timedelta(hours=1)
                items.append(quote(competition, home, away, kickoff, bookmaker, earlier, 0.15))
    stored = httpx.post(
        f"{server.base_url}/admin/odds",
        json={"quotes": items},
        headers={"X-API-Key": ADMIN_KEY},
        timeout=30,
    )
    assert stored.status_code == 200, stored.text
    upcoming = httpx.get(f"{server.base_url}/upcoming", timeout=30).json()["items"]
    ids = {item["match"]["home_team"]: item["match"]["id"] for item in upcoming}
    assert set(ids) == {home for _, home, _, _ in UPCOMING}
    return ids


def log_last_month(database_url: str) -> None:
    """Back-fill the track record of the data's last month, as ``oddsboost track-record
    rebuild`` does."""
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        done = track_record.rebuild(
            session,
            refit_settings_for(database_url),
            kickoff_from=LOGGED_FROM,
            kickoff_to=LOGGED_TO,
            now=dt.datetime.now(dt.UTC),
        )
    engine.dispose()
    assert done.written > 0, str(done)


@pytest.fixture(scope="module")
def board(
    databases: Databases,
    fitted_template: str,
    browser: Browser,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Board]:
    """A server on a copy of the fitted data with the upcoming matches posted and the last
    month of the track record back-filled."""
    database = databases.copy(fitted_template)
    log_last_month(database)
    directory = tmp_path_factory.mktemp("dashboard")
    environment = child_environment(refit_settings_for(database))
    try:
        with running_server(environment, directory / "server.log") as server:
            yield Board(server, browser, post_upcoming(server), directory)
    finally:
        databases.drop(database)


def row_ids(page: Page) -> list[int]:
    rows = page.locator("table#upcoming tr[data-match-id]")
    return [int(rows.nth(i).get_attribute("data-match-id") or "") for i in range(rows.count())]


def probability(row: Locator, outcome: str) -> float:
    return float(row.locator(f"td.p-{outcome}").get_attribute("data-value") or "")


def drawn_shapes(chart: Locator) -> list[FloatRect]:
    """The bounding boxes of the chart's shapes that have some size on screen."""
    boxes = []
    shapes = chart.locator("rect, path, polyline, line")
    for i in range(shapes.count()):
        box = shapes.nth(i).bounding_box()
        if box is not None and (box["width"] > 0 or box["height"] > 0):
            boxes.append(box)
    return boxes


def test_every_page_loads_with_no_console_error_and_no_failed_request(board: Board) -> None:
    arsenal = board.ids["Arsenal"]
    pages = {**PAGE_NAMES, f"/dashboard/matches/{arsenal}": "dashboard-match"}
    for path, name in pages.items():
        page, watched = board.shown(path)
        # Every page leads to the four pages and names the model version.
        links = page.locator("nav a")
        hrefs = {links.nth(i).get_attribute("href") for i in range(links.count())}
        assert set(PAGE_NAMES) <= hrefs, (path, hrefs)
        assert page.locator("main").count() == 1, path
        assert page.locator("footer").count() == 1, path
        # No script at all: the pages work without JavaScript.
        assert page.locator("script").count() == 0, path
        screenshot(page, board.screenshots, name)
        watched.assert_clean()


def test_the_root_leads_to_the_board(board: Board) -> None:
    page, watched = board.open("/")
    assert page.url == f"{board.server.base_url}/dashboard"
    watched.assert_clean()
    page.close()


def test_the_board_lists_the_upcoming_matches_with_the_served_probabilities(
    board: Board,
) -> None:
    page, watched = board.shown("/dashboard")
    served = board.upcoming()
    assert row_ids(page) == [item["match"]["id"] for item in served]
    # Each match has its own figures, so a row showing another match's would be caught.
    homes = {item["prediction"]["probabilities"]["home"] for item in served}
    assert len(homes) == len(served)
    assert set(row_ids(page)) == set(board.ids.values())
    for item in served:
        row = page.locator(f'table#upcoming tr[data-match-id="{item["match"]["id"]}"]')
        probabilities = item["prediction"]["probabilities"]
        shown = {outcome: probability(row, outcome) for outcome in ("home", "draw", "away")}
        assert shown == probabilities
        # One decimal, as a percentage.
        assert f"{probabilities['home'] * 100:.1f} %" in row.locator("td.p-home").inner_text()
        link = row.locator(f'a[href="/dashboard/matches/{item["match"]["id"]}"]')
        assert link.count() >= 1
    watched.assert_clean()


def test_charts_draw_shapes_of_some_size(board: Board) -> None:
    page, watched = board.shown("/dashboard")
    bars = page.locator("table#upcoming svg.bar")
    assert bars.count() == len(board.ids)
    # Three probabilities stacked: at least one rectangle of each bar is drawn.
    for i in range(bars.count()):
        assert drawn_shapes(bars.nth(i)), f"bar {i} draws nothing"
    watched.assert_clean()

    page, watched = board.shown("/dashboard/model")
    assert drawn_shapes(page.locator("svg.chart#weights"))
    reliability = page.locator("svg.chart#reliability")
    # The diagonal and a line for each outcome, and a point per filled bin.
    assert len(drawn_shapes(reliability)) >= 4
    assert reliability.locator("circle.point").count() >= 3
    watched.assert_clean()

    page, watched = board.shown("/dashboard/track-record")
    lines = page.locator("svg.chart#log-loss path.line")
    # Served, consensus and the best bookmaker, each drawn across the days.
    assert lines.count() == 3
    for i in range(lines.count()):
        box = lines.nth(i).bounding_box()
        assert box is not None
        assert box["width"] > 0, i
    watched.assert_clean()

    page, watched = board.shown(f"/dashboard/matches/{board.ids['Arsenal']}")
    assert drawn_shapes(page.locator("svg.chart#price-history"))
    watched.assert_clean()


def test_the_model_page_shows_the_share_of_its_weight_over_the_board(board: Board) -> None:
    # The mean of the shares the board's answers give, as the page rounds it.
    shares = [item["prediction"]["model_weight_present"] for item in board.upcoming()]
    mean = sum(shares) / len(shares)
    page, watched = board.shown("/dashboard/model")
    shown = page.locator("dd#weight-present").inner_text()
    assert shown.startswith(f"{mean * 100:.1f} % of the model's weight quoted the 4 upcoming")
    # Every match is quoted by the same bookmakers (PRICES), so the share is theirs of the
    # active model's weights, and above one half: nothing to warn of.
    active = httpx.get(f"{board.server.base_url}/models/active", timeout=30).json()
    weights = {entry["code"]: entry["weight"] for entry in active["bookmakers"]}
    quoting = sum(weight for code, weight in weights.items() if code in PRICES)
    assert mean == pytest.approx(quoting / sum(weights.values()))
    assert mean > 0.5
    assert page.locator("#weight-warning").count() == 0
    watched.assert_clean()


def test_the_track_record_page_has_the_flag_ledger_s_section(board: Board) -> None:
    page, watched = board.shown("/dashboard/track-record")
    heading = page.get_by_role("heading", name="Flags, scored from when they were raised")
    assert heading.count() == 1
    # The board's flags are all of upcoming matches: none is settled yet.
    answer = httpx.get(f"{board.server.base_url}/performance", timeout=30)
    assert answer.json()["flags"]["all"]["flags"] == 0
    assert page.get_by_text("No flag of the ledger is settled in this window.").count() == 1
    watched.assert_clean()


def test_choosing_a_competition_narrows_the_rows(board: Board) -> None:
    page, watched = board.open("/dashboard")
    options = page.locator("form#filters select[name=competition] option")
    values = [options.nth(i).get_attribute("value") or "" for i in range(options.count())]
    assert values[0] == ""
    assert sorted(values[1:]) == ["E0", "SP1"]
    page.select_option("form#filters select[name=competition]", "SP1")
    with page.expect_navigation():
        page.click("form#filters button[type=submit]")
    assert "competition=SP1" in page.url
    spanish = [item["match"]["id"] for item in board.upcoming(competition="SP1")]
    assert spanish == [board.ids["Barcelona"], board.ids["Valencia"]]
    assert row_ids(page) == spanish
    watched.assert_clean()
    page.close()


def test_a_hostile_team_name_shows_as_text(board: Board) -> None:
    match_id = board.ids[HOSTILE]
    for path in ("/dashboard", f"/dashboard/matches/{match_id}"):
        page, watched = board.shown(path)
        # Read as markup, the name would be a script element and its text "alert(1)" alone.
        named = page.locator("main").get_by_text(HOSTILE)
        assert named.count() >= 1, path
        assert HOSTILE in (named.first.text_content() or "")
        assert page.locator("script").count() == 0, path
        watched.assert_clean()


def test_an_empty_database_shows_how_to_fill_the_board(
    migrated_url: str, browser: Browser, tmp_path: Path
) -> None:
    environment = child_environment(refit_settings_for(migrated_url))
    with running_server(environment, tmp_path / "server.log") as server:
        page = browser.new_page(viewport=VIEWPORT)
        watched = Watched()
        watched.attach(page)
        response = page.goto(f"{server.base_url}/dashboard")
        page.wait_for_load_state("networkidle")
        assert response is not None
        assert response.status == 200
        assert page.locator("table#upcoming tr[data-match-id]").count() == 0
        empty = page.locator("p.empty")
        assert empty.count() == 1
        text = empty.inner_text()
        assert "No upcoming matches" in text
        assert "oddsboost import football-data" in text
        assert "oddsboost fetch football-data" in text
        screenshot(page, tmp_path, "dashboard-empty")
        watched.assert_clean()
        page.close()


def best_ev(item: dict[str, Any]) -> float | None:
    """The expected value of a board item's best outcome, from GET /upcoming's answer."""
    value = item["value"]
    outcomes = [] if value is None else value["outcomes"]
    found = [outcome["expected_value"] for outcome in outcomes]
    return max((ev for ev in found if ev is not None), default=None)


def by_best_ev(items: list[dict[str, Any]]) -> list[int]:
    """The ids of ``items`` highest best EV first; equal ones (and those with none, last)
    in the board's order."""
    ranked = sorted(
        enumerate(items),
        key=lambda pair: (best_ev(pair[1]) is None, -(best_ev(pair[1]) or 0.0), pair[0]),
    )
    return [item["match"]["id"] for _, item in ranked]


def options_path() -> str:
    """The board with every option asked for."""
    return "/dashboard?" + urlencode(
        [
            ("bookmakers", "B365"),
            ("bookmakers", "Pinnacle"),
            ("bankroll", "1000"),
            ("min_ev", "0.01"),
            ("sort", "ev"),
            ("refresh", "300"),
            ("tz", "Asia/Tokyo"),
        ]
    )


def test_every_page_fits_a_phone_and_the_desktop(board: Board) -> None:
    arsenal = board.ids["Arsenal"]
    pages = {
        **PAGE_NAMES,
        f"/dashboard/matches/{arsenal}": "dashboard-match",
        options_path(): "dashboard-options",
        f"/dashboard/matches/{arsenal}?bankroll=1000&bookmakers=B365": "dashboard-match-terms",
    }
    for viewport in (VIEWPORT, *PHONES):
        for path, name in pages.items():
            page, watched = board.open(path, viewport)
            fits(page)
            screenshot(page, board.screenshots, f"{name}-{viewport['width']}")
            watched.assert_clean()
            page.close()


def test_the_page_reloads_itself_only_when_asked(board: Board) -> None:
    page, watched = board.shown("/dashboard")
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    watched.assert_clean()
    page, watched = board.open("/dashboard?competition=SP1&refresh=60")
    (content,) = [
        page.locator('meta[http-equiv="refresh"]').nth(i).get_attribute("content")
        for i in range(page.locator('meta[http-equiv="refresh"]').count())
    ]
    assert content == "60"
    # Every page the navigation leads to keeps reloading; the control turns it off, and
    # keeps the page's filter.
    for path in PAGE_NAMES:
        assert page.locator(f'nav a[href="{path}?refresh=60"]').count() == 1, path
    with page.expect_navigation():
        page.locator("#reload a", has_text="never").click()
    assert page.url == f"{board.server.base_url}/dashboard?competition=SP1"
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    assert row_ids(page) == [board.ids["Barcelona"], board.ids["Valencia"]]
    watched.assert_clean()
    page.close()


def test_the_users_terms_sent_by_the_form_judge_the_board(board: Board) -> None:
    page, watched = board.open("/dashboard")
    page.locator("#terms-form summary").click()
    page.check('form#filters input[name=bookmakers][value="B365"]')
    page.fill("form#filters input[name=bankroll]", "1000")
    page.select_option("form#filters select[name=sort]", "ev")
    with page.expect_navigation():
        page.click("form#filters button[type=submit]")
    assert "bookmakers=B365" in page.url
    assert "bankroll=1000" in page.url
    assert "sort=ev" in page.url
    served = board.upcoming(bookmakers="B365", bankroll="1000")
    # Ordered by the best outcome's EV at Bet365's prices, as GET /upcoming judges it.
    assert row_ids(page) == by_best_ev(served)
    terms = page.locator("p#terms").inner_text()
    assert "Bet365 only" in terms
    assert "a bankroll of 1,000.00" in terms
    bets = [bet for item in served for bet in item["value_bets"]]
    for bet in bets:
        row = page.locator(f'table#upcoming tr[data-match-id="{bet["match"]["id"]}"]')
        assert f"= {bet['stake']:,.2f}" in row.locator("td.value .ev").inner_text()
    # The match page the row leads to keeps the terms.
    first = row_ids(page)[0]
    with page.expect_navigation():
        page.locator(f'tr[data-match-id="{first}"] td.teams a').click()
    assert "bookmakers=B365" in page.url
    assert "bankroll=1000" in page.url
    (answer,) = [item for item in served if item["match"]["id"] == first]
    best = page.locator("table#prices td.best")
    prices = [float(best.nth(i).get_attribute("data-price") or "") for i in range(best.count())]
    wanted = [outcome["price"] for outcome in answer["value"]["outcomes"]]
    assert prices == wanted
    watched.assert_clean()
    page.close()
