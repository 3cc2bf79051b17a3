"""The dashboard's page of the user's bets (/dashboard/bets): private (the admin key as the
password of HTTP Basic credentials, or the X-API-Key header; kept by no cache), showing the
figures GET /bets/summary gives, the bankroll curve with a point per settled bet, each
settled bet's CLV, the breakdowns and the bets, newest first, keeping the page's options.

The book: bets on real matches (football-data.co.uk E0 and SP1 2017/18) recorded by the one
path and settled as the settlement would (:mod:`tests.bet_books`), their CLV against
Pinnacle's closing prices of the same season files, de-margined proportionally.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from playwright.sync_api import Browser, BrowserContext, HttpCredentials, Page, ViewportSize
from playwright.sync_api import Error as PlaywrightError
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api import charts
from app.api.schemas.bet_book import ROI_IS_NOISE
from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Bet
from app.domain.bets import BetChannel, BetDraft
from app.services import dashboard_bets
from app.services.bets import record_bets
from app.services.dashboard_bets import BetClv
from app.services.pagination import PageWindow
from app.settings import Settings
from tests.apps import ADMIN_KEY, build_app, refit_settings_for
from tests.bet_books import match_id, settle_book, store_book_matches, unsettle
from tests.databases import Databases
from tests.plugins.browser import CSP, PHONES, VIEWPORT, Watched, fits, screenshot
from tests.processes import Server, child_environment, running_server

NOW = dt.datetime(2017, 9, 2, tzinfo=dt.UTC)
REALM = 'Basic realm="oddsboost bets", charset="UTF-8"'
PRIVATE = "private, no-store"
OUTCOME_COLUMNS = {"1": "PSCH", "X": "PSCD", "2": "PSCA"}


def utc(month: int, day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(2017, month, day, hour, tzinfo=dt.UTC)


# (match: competition, home, away; outcome; bookmaker; price as typed; stake; placed)
BETS = (
    # Man United 4-0 West Ham: won, 10 at 8/13 (1.615) returns 16.15.
    (("E0", "Man United", "West Ham"), "1", "B365", "8/13", 10.0, utc(8, 10)),
    # Newcastle 0-2 Tottenham: the draw lost, −10.
    (("E0", "Newcastle", "Tottenham"), "X", "B365", "3.6", 10.0, utc(8, 12)),
    # Barcelona 2-0 Betis: won, 20 at 1.5 returns 30.
    (("SP1", "Barcelona", "Betis"), "1", "PS", "1.5", 20.0, utc(8, 18)),
    # Levante 1-0 Villarreal: away at +250 (3.5) lost, −5.
    (("SP1", "Levante", "Villarreal"), "2", "PS", "+250", 5.0, utc(8, 19)),
)
# Recorded after the settlement: a void bet and an open one.
VOID = (("E0", "Tottenham", "Chelsea"), "1", "B365", "2.5", 50.0, utc(8, 19, 9))
OPEN = (("E0", "Man United", "Leicester"), "1", "PS", "1.4", 8.0, utc(8, 25))


def _draft(session: Session, bet: tuple[Any, ...], *, void: bool = False) -> BetDraft:
    (competition, home, away), outcome, bookmaker, price, stake, placed = bet
    return BetDraft(
        match_id=match_id(session, competition, home, away),
        outcome=outcome,
        bookmaker=bookmaker,
        price_text=price,
        stake=stake,
        placed_at=placed,
        void=void,
    )


def closing_probabilities(
    season_file: Callable[[str], Path], session: Session
) -> dict[tuple[int, str], float]:
    """Each bet's (match, outcome) closing probability: Pinnacle's closing prices of the
    season file, their inverses divided by their sum."""
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    for name in ("E0_1718", "SP1_1718"):
        with season_file(name).open(encoding="latin-1", newline="") as file:
            for row in csv.DictReader(file):
                rows[(row["Div"], row["HomeTeam"], row["AwayTeam"])] = row
    found: dict[tuple[int, str], float] = {}
    for (competition, home, away), outcome, *_ in BETS:
        row = rows[(competition, home, away)]
        inverses = {o: 1 / float(row[column]) for o, column in OUTCOME_COLUMNS.items()}
        found[(match_id(session, competition, home, away), outcome)] = inverses[outcome] / sum(
            inverses.values()
        )
    return found


def fill_book(session: Session, season_file: Callable[[str], Path]) -> dict[str, int]:
    """The matches, the bets settled, then a void bet and an open one; their ids by name."""
    store_book_matches(session, season_file)
    recorded = record_bets(session, [_draft(session, bet) for bet in BETS], BetChannel.API, NOW)
    settle_book(session, closing_probabilities(season_file, session))
    (void,) = record_bets(session, [_draft(session, VOID, void=True)], BetChannel.API, NOW)
    (open_bet,) = record_bets(session, [_draft(session, OPEN)], BetChannel.API, NOW)
    unsettle(open_bet)  # recorded on a played match: as if it were still to be played
    session.flush()
    ids = {f"settled{index}": bet.id for index, bet in enumerate(recorded)}
    return ids | {"void": void.id, "open": open_bet.id}


@pytest.fixture
def book(session: Session, season_file: Callable[[str], Path]) -> dict[str, int]:
    return fill_book(session, season_file)


@pytest.fixture
def book_client(book: dict[str, int], client: TestClient) -> TestClient:
    assert book
    return client


def basic(password: str, user: str = "me") -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, and the id of the chart it is in."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str], str | None]] = []
        self.chart: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {name: value or "" for name, value in attrs}
        if tag == "svg":
            self.chart = given.get("id")
        self.tags.append((tag, given, self.chart))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.chart = None

    def having(self, tag: str, **wanted: str) -> list[dict[str, str]]:
        """The attributes of each ``tag`` with the ``wanted`` ones (``class_``: one of its
        classes)."""
        return [attrs for found, attrs, _chart in self.tags if found == tag and _has(attrs, wanted)]

    def within(self, chart: str, tag: str) -> list[dict[str, str]]:
        """The attributes of each ``tag`` drawn in the chart of id ``chart``."""
        return [attrs for found, attrs, inside in self.tags if found == tag and inside == chart]

    def one(self, tag: str, **wanted: str) -> dict[str, str]:
        (attrs,) = self.having(tag, **wanted)
        return attrs


def _has(attrs: dict[str, str], wanted: dict[str, str]) -> bool:
    for key, value in wanted.items():
        if key == "class_":
            if value not in attrs.get("class", "").split():
                return False
        elif attrs.get(key) != value:
            return False
    return True


def bets_page(client: TestClient, query: str = "") -> tuple[str, Elements]:
    answer = client.get(f"/dashboard/bets{query}", headers=basic(ADMIN_KEY))
    assert answer.status_code == 200, answer.text
    elements = Elements()
    elements.feed(answer.text)
    return answer.text, elements


def summary(client: TestClient, query: str = "") -> dict[str, Any]:
    answer = client.get(f"/bets/summary{query}", headers={"X-API-Key": ADMIN_KEY})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


@pytest.mark.parametrize(
    "headers",
    [{}, basic("wrong"), {"X-API-Key": "wrong"}, {"Authorization": "Bearer " + ADMIN_KEY}],
    ids=["none", "wrong basic", "wrong header", "another scheme"],
)
def test_without_the_key_the_page_asks_for_it(
    book_client: TestClient, headers: dict[str, str]
) -> None:
    answer = book_client.get("/dashboard/bets?tz=Europe/London", headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == REALM
    assert answer.headers["cache-control"] == PRIVATE
    assert answer.headers["content-type"].startswith("text/html")
    assert "any user name and the admin key" in answer.text
    assert "data-bet-id" not in answer.text


def test_the_key_is_checked_before_the_options_are_read(book_client: TestClient) -> None:
    # A bad option from someone without the key says nothing about the page but "sign in".
    answer = book_client.get("/dashboard/bets?tz=Nowhere/Else&limit=0")
    assert answer.status_code == 401
    # With the key, the same options are refused as on the other pages.
    refused = book_client.get("/dashboard/bets?tz=Nowhere/Else", headers=basic(ADMIN_KEY))
    assert refused.status_code == 422


@pytest.mark.parametrize(
    "authorization",
    [
        "Basic !!!not base64!!!",
        "Basic " + base64.b64encode(ADMIN_KEY.encode()).decode(),  # no colon: no password
        "Basic " + base64.b64encode(b"me:\xff" + ADMIN_KEY.encode()).decode(),  # not UTF-8
        "Basic " + base64.b64encode(f"{ADMIN_KEY}:".encode()).decode(),  # the key as user name
        "Basic",
    ],
    ids=["not base64", "no colon", "not utf-8", "key as user", "no credentials"],
)
def test_malformed_credentials_are_asked_again(book_client: TestClient, authorization: str) -> None:
    answer = book_client.get("/dashboard/bets", headers={"Authorization": authorization})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == REALM


def test_the_scheme_is_read_in_any_letter_case(book_client: TestClient) -> None:
    # RFC 7617: the scheme name is case-insensitive.
    token = base64.b64encode(f"me:{ADMIN_KEY}".encode()).decode()
    answer = book_client.get("/dashboard/bets", headers={"Authorization": f"bAsIc {token}"})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    "headers",
    [basic(ADMIN_KEY), basic(ADMIN_KEY, user=""), {"X-API-Key": ADMIN_KEY}],
    ids=["basic", "basic without a user name", "header"],
)
def test_the_key_opens_the_page_kept_by_no_cache(
    book_client: TestClient, headers: dict[str, str]
) -> None:
    answer = book_client.get("/dashboard/bets", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == PRIVATE
    assert "etag" not in answer.headers
    assert "script-src" not in answer.headers["content-security-policy"]
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    # Asked again with the key, it is made again, never answered from the pages kept.
    again = book_client.get("/dashboard/bets", headers=headers)
    assert again.headers["cache-control"] == PRIVATE


def test_with_no_admin_key_configured_bets_are_off(settings: Settings, session: Session) -> None:
    off = settings.model_copy(update={"admin_api_key": None})
    with TestClient(build_app(off, session)) as client:
        answer = client.get("/dashboard/bets", headers=basic(ADMIN_KEY))
        assert answer.status_code == 503
        assert "Bets are off" in answer.text
        assert "ODDSBOOST_ADMIN_API_KEY" in answer.text
        assert client.get("/bets/summary").status_code == 503  # as the API says


def test_the_figures_are_the_summarys(book_client: TestClient) -> None:
    text, elements = bets_page(book_client)
    overall = summary(book_client)["overall"]
    # By hand: settled 10 + 10 + 20 + 5 = 45 staked; returned 10 × 8/13 = 16.1538...
    # (the decimal price is kept unrounded) + 0 + 30 + 0; open 8 at stake; one void.
    assert overall["staked"] == 45.0
    assert overall["returned"] == pytest.approx(10 * (1 + 8 / 13) + 30)
    assert (overall["open"], overall["settled"], overall["void"]) == (1, 4, 1)
    for name in ("staked", "returned", "profit"):
        assert float(elements.one("dd", id=name)["data-value"]) == pytest.approx(overall[name])
    for name in ("roi", "clv"):
        shown = elements.one("dd", id=name)
        for bound in ("mean", "low", "high"):
            key = "data-value" if bound == "mean" else f"data-{bound}"
            assert float(shown[key]) == pytest.approx(overall[name][bound])
    counts = elements.one("dd", id="counts")
    assert (counts["data-open"], counts["data-settled"], counts["data-void"]) == ("1", "4", "1")
    assert escape(ROI_IS_NOISE) in text  # the API's own words
    for typed in ("16.15", "+250", "8/13"):
        assert typed in text


def test_every_bet_is_listed_newest_first_with_its_match_and_close(
    book_client: TestClient, book: dict[str, int]
) -> None:
    text, elements = bets_page(book_client)
    rows = elements.having("tr")
    listed = [int(row["data-bet-id"]) for row in rows if "data-bet-id" in row]
    # Placed: open 25 Aug, settled3 19 Aug 12:00, void 19 Aug 09:00, settled2 18 Aug, ...
    order = ["open", "settled3", "void", "settled2", "settled1", "settled0"]
    assert listed == [book[name] for name in order]
    statuses = {int(row["data-bet-id"]): row["data-status"] for row in rows if "data-bet-id" in row}
    named = {name: statuses[book[name]] for name in ("void", "open", "settled0", "settled1")}
    assert named == {"void": "void", "open": "open", "settled0": "won", "settled1": "lost"}
    assert "Man United v West Ham" in text
    # Names, their codes in the title.
    assert elements.having("span", class_="named", title="B365")
    assert elements.having("span", class_="named", title="E0")
    assert "season file" in text  # where each close came from


def test_the_curve_has_a_point_per_settled_bet_and_each_clv_a_bar(
    book_client: TestClient,
) -> None:
    _text, elements = bets_page(book_client, "?bankroll=500")
    body = summary(book_client, "?starting_bankroll=500")
    (path,) = elements.within("book-bankroll", "path")
    points = path["d"].removeprefix("M").split(" L")
    assert len(points) == len(body["bankroll"]) == body["overall"]["settled"] == 4
    # Four bets with a close: one bar each, above zero for those that beat the close.
    bars = elements.within("clv-bars", "rect")
    assert len(bars) == body["overall"]["bets_with_close"] == 4
    assert body["bankroll"][-1]["bankroll"] == pytest.approx(500 + body["overall"]["profit"])


def test_the_clv_bars_follow_the_kickoffs_as_the_curve_does(
    session: Session, book: dict[str, int]
) -> None:
    assert len(book) == 6
    # Settled in the reverse order of their kickoffs (an imported history settles at one
    # moment, a late close settles a bet again): the bars keep the order of the matches.
    settled = session.scalars(select(Bet).where(Bet.clv.is_not(None)).order_by(Bet.id)).all()
    late = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    for offset, bet in enumerate(settled):
        bet.settled_at = late - dt.timedelta(hours=offset)
    session.flush()
    view = dashboard_bets.bets_view(
        session, PageWindow(limit=50, offset=0), starting_bankroll=0.0, time_zone="UTC"
    )
    by_kickoff = sorted(settled, key=lambda bet: (bet.match.kickoff, bet.placed_at, bet.id))
    assert [point.bet_id for point in view.clv] == [bet.id for bet in by_kickoff]
    curve = [point.bet_id for point in view.summary.bankroll]
    assert [bet_id for bet_id in curve if bet_id in {b.id for b in settled}] == [
        point.bet_id for point in view.clv
    ]


def test_the_options_are_kept_and_the_zone_honoured(book_client: TestClient) -> None:
    text, elements = bets_page(book_client, "?tz=Asia/Tokyo&bankroll=500&min_ev=0.03")
    kept = {"tz": ["Asia/Tokyo"], "bankroll": ["500"], "min_ev": ["0.03"]}
    for link in elements.having("a"):
        href = link["href"]
        if href.startswith("/dashboard"):
            query = parse_qs(urlsplit(href).query)
            assert {name: query.get(name) for name in kept} == kept, href
    assert elements.having("a", href="/dashboard/bets?tz=Asia%2FTokyo&bankroll=500&min_ev=0.03")
    assert "from 500.00" in text
    # The first bet was placed at 12:00 UTC on 10 August: 21:00 in Tokyo.
    assert "Thu 10 Aug 2017 21:00 JST" in text
    assert re.search(r"By month placed \(Asia/Tokyo\)", text)


def test_the_list_pages_through_the_bets(book_client: TestClient, book: dict[str, int]) -> None:
    _text, elements = bets_page(book_client, "?limit=2&offset=2")
    listed = [int(row["data-bet-id"]) for row in elements.having("tr") if "data-bet-id" in row]
    assert listed == [book["void"], book["settled2"]]
    assert elements.having("a", rel="prev", href="/dashboard/bets?limit=2&offset=0")
    assert elements.having("a", rel="next", href="/dashboard/bets?limit=2&offset=4")


def test_the_public_pages_link_to_the_page_but_show_no_bet(
    book_client: TestClient, session: Session
) -> None:
    match = match_id(session, "E0", "Man United", "West Ham")
    for path in ("/dashboard", f"/dashboard/matches/{match}"):
        answer = book_client.get(path)
        assert answer.status_code == 200
        assert 'href="/dashboard/bets"' in answer.text
        assert "data-bet-id" not in answer.text
        assert "8/13" not in answer.text


def test_an_empty_book_says_how_to_fill_it(client: TestClient) -> None:
    text, _elements = bets_page(client)
    assert "No bet recorded yet" in text
    assert 'id="bets"' not in text


# --- in a real browser --------------------------------------------------------------------


@dataclass
class BetsServer:
    server: Server
    ids: dict[str, int]
    screenshots: Path


@pytest.fixture(scope="module")
def bets_server(
    databases: Databases,
    migrated_template: str,
    season_file: Callable[[str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[BetsServer]:
    """A real ``oddsboost serve`` on a database holding the book (committed)."""
    database = databases.copy(migrated_template)
    engine = make_engine(database)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            ids = fill_book(session, season_file)
        engine.dispose()
        directory = tmp_path_factory.mktemp("bets-page")
        environment = child_environment(refit_settings_for(database))
        with running_server(environment, directory / "server.log") as server:
            yield BetsServer(server, ids, directory)
    finally:
        engine.dispose()
        databases.drop(database)


def open_page(
    browser: Browser,
    url: str,
    viewport: ViewportSize,
    credentials: HttpCredentials | None,
) -> tuple[BrowserContext, Page, Watched, int]:
    context = browser.new_context(viewport=viewport, http_credentials=credentials)
    page = context.new_page()
    watched = Watched()
    watched.attach(page)
    response = page.goto(url)
    page.wait_for_load_state("networkidle")
    assert response is not None
    return context, page, watched, response.status


@pytest.mark.slow
def test_the_browser_signs_in_and_the_page_fits_the_desktop_and_phones(
    bets_server: BetsServer, browser: Browser
) -> None:
    base = bets_server.server.base_url
    credentials = HttpCredentials(username="me", password=ADMIN_KEY)
    paths = {
        "/dashboard/bets": "dashboard-bets",
        "/dashboard/bets?tz=Asia/Tokyo&bankroll=1000&refresh=300": "dashboard-bets-options",
    }
    for viewport in (VIEWPORT, *PHONES):
        for path, name in paths.items():
            context, page, watched, status_code = open_page(
                browser, f"{base}{path}", viewport, credentials
            )
            assert status_code == 200, path
            # The two charts draw: the curve a line with a point per settled bet, a bar per CLV.
            assert page.locator("svg#book-bankroll path.line").bounding_box() is not None
            assert page.locator("svg#clv-bars rect.clv").count() == 4
            assert page.locator("table#bets tr[data-bet-id]").count() == len(bets_server.ids)
            assert page.locator("script").count() == 0
            fits(page)
            screenshot(page, bets_server.screenshots, f"{name}-{viewport['width']}")
            watched.assert_clean()
            context.close()


@pytest.mark.slow
def test_the_browser_without_the_key_is_challenged_for_it(
    bets_server: BetsServer, browser: Browser
) -> None:
    url = f"{bets_server.server.base_url}/dashboard/bets"
    # Challenged with Basic, a browser asks its user; a headless one has none to ask.
    with pytest.raises(PlaywrightError, match="ERR_INVALID_AUTH_CREDENTIALS"):
        open_page(browser, url, VIEWPORT, None)
    # A wrong password is refused again: the browser shows the page that says how.
    wrong = HttpCredentials(username="me", password="wrong")
    context, page, _watched, status_code = open_page(browser, url, VIEWPORT, wrong)
    assert status_code == 401
    assert page.locator("h1").inner_text() == "Sign in to see your bets"
    assert "ODDSBOOST_ADMIN_API_KEY" in page.locator("body").inner_text()
    assert page.locator("[data-bet-id]").count() == 0
    context.close()


@pytest.mark.slow
def test_the_page_is_served_under_the_dashboards_policy(bets_server: BetsServer) -> None:
    answer = httpx.get(
        f"{bets_server.server.base_url}/dashboard/bets", auth=("me", ADMIN_KEY), timeout=30
    )
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == CSP
    assert answer.headers["cache-control"] == PRIVATE


def test_a_clv_bar_rises_above_zero_for_a_bet_that_beat_the_close() -> None:
    moment = dt.datetime(2017, 8, 13, tzinfo=dt.UTC)
    drawn = Elements()
    drawn.feed(str(charts.clv_bars([BetClv(1, moment, 0.10), BetClv(2, moment, -0.05)])))
    above, below = drawn.within("clv-bars", "rect")
    # The axis spans −5 % to +10 %: zero is a third of the way up the plot, whose bottom is
    # at 220 − 28 = 192 and top at 12: 192 − (192 − 12) / 3 = 132.
    assert above["class"] == "clv above"
    assert float(above["y"]) == pytest.approx(12)
    assert float(above["y"]) + float(above["height"]) == pytest.approx(132)
    assert below["class"] == "clv below"
    assert float(below["y"]) == pytest.approx(132)
    assert float(below["y"]) + float(below["height"]) == pytest.approx(192)
    # The running mean: 10 %, then (10 − 5) / 2 = 2.5 %.
    (mean,) = drawn.having("path", id="clv-running-mean")
    first, second = mean["d"].removeprefix("M").split(" L")
    assert float(first.split(",")[1]) == pytest.approx(12)
    assert float(second.split(",")[1]) == pytest.approx(192 - (0.025 + 0.05) / 0.15 * 180)
