"""The dashboard's pages, read as HTML.

The upcoming and match pages run on the hand-chosen matches of the value-bets tests (the
model trusts Bet&Win alone, whose books have no margin: each served probability is 1/price
of its line); the track record on the three settled matches of the track-record tests.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from html.parser import HTMLParser
from typing import Any, cast
from urllib.parse import parse_qs, urlencode, urlsplit
from zoneinfo import ZoneInfo

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api import charts
from app.api.deps import board_moment
from app.db.orm import PredictionLogEntry
from app.domain.scoring import Scores
from app.domain.track_record_scores import DayBucket
from app.domain.vocabulary import ActivatedBy, Method
from app.services.model_versions import activate
from app.services.pagination import PageWindow
from app.services.upcoming import UpcomingBoards, UpcomingPage, UpcomingQuery
from tests.apps import ADMIN_KEY
from tests.helpers import (
    HAND_MADE_VALIDATION,
    error_messages,
    hand_made_served,
    hand_made_version,
    store_versions,
)
from tests.plugins.track_record import Fixture, entry_of, settle, store_match
from tests.upcoming_matches import (
    ARSENAL,
    CAPTURED,
    EVERTON,
    NOW,
    Seeded,
    app_on,
    barcelona_on_the_exchange,
    quote_items,
    seed,
    store,
    store_model,
)

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HOSTILE = "<script>alert(1)</script>"
PAGES = ("/dashboard", "/dashboard/model", "/dashboard/track-record")


class Elements(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def having(self, tag: str, **wanted: str) -> list[dict[str, str]]:
        """The attributes of each ``tag`` with the ``wanted`` ones (``class_``: one of its
        classes)."""
        return [attrs for found, attrs in self.tags if found == tag and _has(attrs, wanted)]


def _has(attrs: dict[str, str], wanted: dict[str, str]) -> bool:
    for key, value in wanted.items():
        if key == "class_":
            if value not in attrs.get("class", "").split():
                return False
        elif attrs.get(key) != value:
            return False
    return True


class Text(HTMLParser):
    """A page's text as a reader sees it: the markup left out, the spaces joined."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, _attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":  # a line break reads as a space
            self.parts.append(" ")

    @classmethod
    def of(cls, html: str) -> str:
        found = cls()
        found.feed(html)
        return " ".join("".join(found.parts).split())


def page(client: TestClient, path: str, **params: Any) -> tuple[str, Elements]:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CSP
    parsed = Elements()
    parsed.feed(response.text)
    return response.text, parsed


def within(text: str, start: str, end: str) -> Elements:
    """The elements of ``text`` from the first ``start`` to the next ``end``."""
    first = text.index(start)
    parsed = Elements()
    parsed.feed(text[first : text.index(end, first)])
    return parsed


def options_of(text: str, name: str) -> list[str]:
    """The values of the options of the select named ``name``."""
    chosen = within(text, f'<select name="{name}">', "</select>")
    return [attrs["value"] for attrs in chosen.having("option")]


def test_the_root_sends_the_browser_to_the_dashboard(client: TestClient) -> None:
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == "/dashboard"


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_html_with_the_policy_and_links_to_the_others(
    client: TestClient, path: str
) -> None:
    _, parsed = page(client, path)
    links = {attrs["href"] for attrs in parsed.having("a")}
    assert set(PAGES) <= links
    assert parsed.having("nav")
    assert parsed.having("main")
    assert parsed.having("footer")
    assert parsed.having("link", rel="stylesheet", href="/dashboard/static/dashboard.css")


def test_the_stylesheet_is_served_by_the_package(client: TestClient) -> None:
    response = client.get("/dashboard/static/dashboard.css")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert "prefers-color-scheme: dark" in response.text


def test_an_exchange_bet_shows_its_net_price_beside_the_quoted_one(seeded: Seeded) -> None:
    store(seeded.client, [barcelona_on_the_exchange()])
    text, _ = page(seeded.client, "/dashboard")
    shown = Text.of(text)
    # EV 0.1 × 11.45 − 1 = +14.5 %, stake 0.25 × 0.145 / 10.45 = 0.35 %, at the quoted 12.
    assert "EV +14.5 %, stake 0.3 % at 12.00 (net 11.450, Betfair Exchange)" in shown
    # A bookmaker without commission: the quoted price alone.
    assert "EV +10.0 %, stake 2.0 % at 2.20 (Bet365)" in shown


def test_an_empty_database_says_how_to_fill_it(client: TestClient) -> None:
    text, parsed = page(client, "/dashboard")
    assert parsed.having("p", class_="empty")
    assert "No upcoming matches" in text
    assert "oddsboost import football-data" in text
    assert "oddsboost fetch football-data" in text
    assert not parsed.having("table", id="upcoming")
    for path in ("/dashboard/model", "/dashboard/track-record"):
        _, parsed = page(client, path)
        assert parsed.having("p", class_="empty"), path
        assert not parsed.having("svg"), path
    # The scheduler runs the logging job, not the server; a rebuild back-fills.
    text, _ = page(client, "/dashboard/track-record")
    assert "<code>oddsboost scheduler</code> runs the job" in text
    assert "oddsboost serve" not in text
    assert "<code>oddsboost track-record rebuild --from DATE</code>" in text


def test_the_rows_are_the_boards_matches_with_its_probabilities(seeded: Seeded) -> None:
    board = seeded.client.get("/upcoming").json()["items"]
    text, parsed = page(seeded.client, "/dashboard")
    rows = [
        int(attrs["data-match-id"]) for attrs in parsed.having("tr") if "data-match-id" in attrs
    ]
    assert rows == [item["match"]["id"] for item in board]
    for kind, key in (("p-home", "home"), ("p-draw", "draw"), ("p-away", "away")):
        shown = [float(attrs["data-value"]) for attrs in parsed.having("td", class_=kind)]
        served = [item["prediction"]["probabilities"][key] for item in board if item["prediction"]]
        assert shown == served, kind
    # Arsenal: Bet&Win's 2.0 / 4.0 / 4.0 served as 50 / 25 / 25 %.
    assert "50.0 %" in text
    assert "25.0 %" in text
    # Value on Arsenal's home at B365's 2.2 (0.5 × 2.2 − 1 = +10.0 %, stake capped at 2 %)
    # and on Barcelona's draw: one bet a match, so Arsenal's away at WH's 4.2 (0.25 × 4.2 − 1
    # = +5.0 %) and Barcelona's home, of lower value, are not flagged.
    valued = parsed.having("td", class_="value")
    assert [attrs["class"] for attrs in valued] == ["p-home value", "p-draw value"]
    assert "EV +10.0 %, stake 2.0 % at 2.20 (Bet365)" in Text.of(text)
    assert "EV +5.0 %" not in text
    for match_id in rows:
        assert parsed.having("a", href=f"/dashboard/matches/{match_id}")
    assert len(parsed.having("svg", class_="bar")) == len(
        [item for item in board if item["prediction"]]
    )
    # Captured an hour before the test began.
    assert "updated 60 min ago" in text or "updated 1 h ago" in text
    assert f"Model version {seeded.version}." in text


def test_the_competition_filter_narrows_the_rows(seeded: Seeded) -> None:
    text, parsed = page(seeded.client, "/dashboard")
    assert options_of(text, "competition") == ["", "E0", "SP1"]
    assert parsed.having("form", id="filters", method="get")
    text, narrowed = page(seeded.client, "/dashboard", competition="SP1")
    rows = [attrs["data-match-id"] for attrs in narrowed.having("tr") if "data-match-id" in attrs]
    assert rows == [str(seeded.ids["Barcelona"])]
    # The options stay every competition of the window, the chosen one selected.
    assert options_of(text, "competition") == ["", "E0", "SP1"]
    assert narrowed.having("option", value="SP1", selected="")
    # A form sent with "all" chosen sends an empty competition.
    _, every = page(seeded.client, "/dashboard", competition="")
    assert len([a for a in every.having("tr") if "data-match-id" in a]) == 3


def test_a_hostile_team_name_is_shown_as_text(seeded: Seeded) -> None:
    item = quote_items(ARSENAL)[0]
    item["match"] = item["match"] | {"home_team": HOSTILE}
    store(seeded.client, [item])
    text, _ = page(seeded.client, "/dashboard")
    assert HOSTILE not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    match_id = next(
        m["id"]
        for m in seeded.client.get("/matches", params={"limit": 100}).json()["items"]
        if m["home_team"] == HOSTILE
    )
    text, _ = page(seeded.client, f"/dashboard/matches/{match_id}")
    assert HOSTILE not in text
    assert "&lt;script&gt;" in text


def test_the_match_page_sets_each_bookmaker_beside_the_ensemble(seeded: Seeded) -> None:
    match_id = seeded.ids["Arsenal"]
    text, parsed = page(seeded.client, f"/dashboard/matches/{match_id}")
    assert parsed.having("table", id="bookmakers")
    # Four bookmakers and the ensemble and consensus rows, three probabilities each.
    cells = [float(attrs["data-value"]) for attrs in parsed.having("td") if "data-value" in attrs]
    assert len(cells) == 3 * 6
    assert cells[:3] == pytest.approx([0.5, 0.25, 0.25])
    # B365 2.2 / 3.4 / 3.6 multiplicatively de-margined: 1/price over Σ 1/price.
    inverse = [1 / 2.2, 1 / 3.4, 1 / 3.6]
    assert [f"{p / sum(inverse) * 100:.1f} %" in text for p in inverse] == [True] * 3
    assert "1.000" in text  # Bet&Win's weight
    # One quote per bookmaker: no history to draw.
    assert not parsed.having("svg", id="price-history")
    assert parsed.having("a", href="/dashboard")


def test_a_second_quote_draws_the_price_history(seeded: Seeded) -> None:
    earlier = quote_items(ARSENAL)[0] | {"home": 2.1, "draw": 3.8, "away": 3.9}
    earlier["captured_at"] = (CAPTURED - dt.timedelta(hours=5)).isoformat()
    store(seeded.client, [earlier])
    _, parsed = page(seeded.client, f"/dashboard/matches/{seeded.ids['Arsenal']}")
    assert parsed.having("svg", class_="chart", id="price-history")
    assert parsed.having("path", class_="line")


def test_a_missing_match_is_a_404_page(client: TestClient) -> None:
    response = client.get("/dashboard/matches/987654")
    assert response.status_code == 404
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CSP
    assert "no match with id 987654" in response.text


def test_an_empty_board_of_one_day_says_one_day(client: TestClient) -> None:
    text, _ = page(client, "/dashboard", days=1)
    assert "No upcoming matches in the next 1 day." in text
    text, _ = page(client, "/dashboard", days=2)
    assert "No upcoming matches in the next 2 days." in text


def test_the_model_page_shows_the_active_version(seeded: Seeded) -> None:
    text, parsed = page(seeded.client, "/dashboard/model")
    assert f"Active: version {seeded.version}" in text
    assert parsed.having("svg", class_="chart", id="weights")
    assert parsed.having("rect", class_="weight")
    # Each bar's label is its code (the space is narrow), its title the name too.
    assert "<title>Bet&amp;Win (BW): 1.000</title>" in text
    assert parsed.having("table", id="versions")
    assert parsed.having("table", id="activations")


def test_the_model_page_says_how_much_of_its_weight_quotes_the_board(seeded: Seeded) -> None:
    # The model trusts Bet&Win alone, which quoted the three matches of the week's board.
    text, parsed = page(seeded.client, "/dashboard/model")
    assert parsed.having("dd", id="weight-present")
    assert (
        "100.0 % of the model's weight quoted the 3 upcoming matches of the next 7 days"
        in " ".join(text.split())
    )
    assert not parsed.having("p", id="weight-warning")


def test_the_model_page_reads_the_board_at_the_boards_moment(seeded: Seeded) -> None:
    # A month on, the week's three matches have all kicked off: the board is empty.
    later = NOW + dt.timedelta(days=30)

    async def a_month_later() -> dt.datetime:
        return later

    cast(FastAPI, seeded.client.app).dependency_overrides[board_moment] = a_month_later
    text, parsed = page(seeded.client, "/dashboard/model")
    assert not parsed.having("dd", id="weight-present")
    text, _ = page(seeded.client, "/dashboard")
    assert "No upcoming matches in the next 7 days." in text


def test_the_dashboard_leaves_the_boards_clock_to_the_boards(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no moment set, the board's check reads the clock when it starts, so polls arriving
    # while one runs share it: the pages pass no moment of their own.
    moments: list[dt.datetime | None] = []
    page_of = UpcomingBoards.page

    async def recorded(
        self: UpcomingBoards,
        query: UpcomingQuery,
        window: PageWindow,
        *,
        now: dt.datetime | None = None,
    ) -> UpcomingPage:
        moments.append(now)
        return await page_of(self, query, window, now=now)

    monkeypatch.setattr(UpcomingBoards, "page", recorded)
    page(seeded.client, "/dashboard")
    page(seeded.client, "/dashboard", competition="E0")
    page(seeded.client, "/dashboard/model")
    # One board a page: the filtered page reads its competitions, it builds no other board.
    assert moments == [None] * 3


def test_the_model_page_warns_when_its_bookmakers_stopped_quoting(migrated_url: str) -> None:
    # Victor Chandler holds 3 of the 4 units of weight and quotes nothing coming: Arsenal's
    # quotes hold Bet&Win's 1/4, Everton's (Bet365 alone) none; on average 1/8.
    weights = {"VC": 3.0, "BW": 1.0}
    store_versions(migrated_url, hand_made_version(weights=weights, method=Method.MULTIPLICATIVE))
    with app_on(migrated_url) as client:
        everton = [item for item in quote_items(EVERTON) if item["bookmaker"] == "B365"]
        store(client, [*quote_items(ARSENAL), *everton])
        text, parsed = page(client, "/dashboard/model")
    (warning,) = parsed.having("p", id="weight-warning")
    assert warning["role"] == "alert"
    shown = " ".join(text.split())
    assert "only 12.5 % of its weight, on average, quoted the upcoming matches" in shown
    assert "(the consensus alone answers the 1 match quoted by none of its weight)" in shown
    assert "12.5 % of the model's weight quoted the 2 upcoming matches of the next 7 days" in shown


def test_the_model_page_lists_the_bookmakers_left_out_of_the_pool(migrated_url: str) -> None:
    reason = "no longer quoting: 0 of the 31 matches of the last 30 days of E0"
    validation = replace(HAND_MADE_VALIDATION, left_out={"LB": reason})
    store_versions(migrated_url, hand_made_version(validation=validation))
    with app_on(migrated_url) as client:
        text, parsed = page(client, "/dashboard/model")
    assert parsed.having("dd", id="left-out")
    assert f"Ladbrokes: {reason}" in Text.of(text)
    assert '<span class="named" title="LB">Ladbrokes</span>' in text
    # No upcoming match: nothing to say of the weight present, nothing to warn of.
    assert not parsed.having("dd", id="weight-present")
    assert not parsed.having("p", id="weight-warning")


def test_the_model_page_shows_the_validation_report_against_the_consensus(
    client: TestClient, session: Session
) -> None:
    report = replace(
        HAND_MADE_VALIDATION,
        rows=400,
        model=Scores(log_loss=0.9812, brier=0.5843, rps=0.1972, accuracy=0.535),
        consensus=Scores(log_loss=0.995, brier=0.5901, rps=0.2003, accuracy=0.52),
    )
    version = hand_made_version(validation=report)
    session.add(version)
    session.flush()
    activate(session, version, by=ActivatedBy.CLI)
    text, parsed = page(client, "/dashboard/model")
    assert parsed.having("table", id="validation")
    shown = [float(attrs["data-value"]) for attrs in parsed.having("td", class_="validation")]
    # Model, consensus, model − consensus; each by log loss, Brier, RPS and accuracy.
    model = [0.9812, 0.5843, 0.1972, 0.535]
    consensus = [0.995, 0.5901, 0.2003, 0.52]
    difference = [-0.0138, -0.0058, -0.0031, 0.015]
    assert shown == pytest.approx([*model, *consensus, *difference])
    for figure in ("0.9812", "0.5843", "0.1972", "53.5 %", "0.9950", "0.5901", "0.2003"):
        assert figure in text
    for signed in ("-0.0138", "-0.0058", "-0.0031", "+1.5 points"):
        assert signed in text
    assert "on 400 held-out matches" in text


# A log made by hand: the served probabilities (away from the bins' edges) and the result
# of four settled matches, and of one not settled yet.
RELIABILITY_LOG = (
    ((0.55, 0.24, 0.21), (1, 0)),
    ((0.55, 0.24, 0.21), (1, 1)),
    ((0.33, 0.32, 0.35), (0, 1)),
    ((0.72, 0.17, 0.11), (2, 0)),
    ((0.9, 0.05, 0.05), None),
)


def log_by_hand(session: Session) -> None:
    for number, (served, goals) in enumerate(RELIABILITY_LOG):
        kickoff = dt.datetime(2026, 3, 2 + number, 15, tzinfo=dt.UTC)
        fixture = Fixture(f"Home {number}", f"Away {number}", kickoff, goals or (0, 0), {})
        match_id = store_match(session, fixture)
        if goals is not None:
            settle(session, match_id, goals)
        session.add(
            PredictionLogEntry(
                match_id=match_id,
                kickoff=kickoff,
                model_version=None,
                served=hand_made_served(served),
            )
        )
    session.flush()


def test_the_model_page_draws_the_reliability_of_what_was_served(
    client: TestClient, session: Session
) -> None:
    log_by_hand(session)
    text, parsed = page(client, "/dashboard/model")
    assert parsed.having("svg", class_="chart", id="reliability")
    assert "4 settled matches" in text
    # Bins a tenth wide, per outcome: (mean served, share that happened, matches).
    # Home: .33 lost; .55 won once in two; .72 won. Draw: .17 not; .24 once in two;
    # .32 not. Away: .11 not; .21 twice not; .35 happened. The unsettled .9 is left out.
    bins = {
        "s0": [(0.33, 0.0, 1), (0.55, 0.5, 2), (0.72, 1.0, 1)],
        "s1": [(0.17, 0.0, 1), (0.24, 0.5, 2), (0.32, 0.0, 1)],
        "s2": [(0.11, 0.0, 1), (0.21, 0.0, 2), (0.35, 1.0, 1)],
    }
    for kind, wanted in bins.items():
        points = parsed.having("circle", class_=kind)
        xs = [charts.LEFT + served * charts.SQUARE for served, _, _ in wanted]
        ys = [charts.TOP + (1 - happened) * charts.SQUARE for _, happened, _ in wanted]
        assert [float(p["cx"]) for p in points] == pytest.approx(xs, abs=0.01), kind
        assert [float(p["cy"]) for p in points] == pytest.approx(ys, abs=0.01), kind
        assert [int(p["data-count"]) for p in points] == [n for _, _, n in wanted], kind
        # A bin of two matches has twice the area of a bin of one.
        radii = {int(p["data-count"]): float(p["r"]) for p in points}
        assert radii[2] == pytest.approx(charts.LARGEST_RADIUS, abs=0.01)
        assert radii[1] == pytest.approx(charts.LARGEST_RADIUS / math.sqrt(2), abs=0.01)
    bottom = charts.TOP + charts.SQUARE
    (diagonal,) = parsed.having("line", class_="diagonal")
    assert [float(diagonal[key]) for key in ("x1", "y1", "x2", "y2")] == [
        charts.LEFT,
        bottom,
        charts.LEFT + charts.SQUARE,
        charts.TOP,
    ]
    assert "happened in 50.0% of 2 matches" in text


def test_the_model_page_says_how_to_log_when_nothing_settled_is(client: TestClient) -> None:
    text, parsed = page(client, "/dashboard/model")
    assert not parsed.having("svg", id="reliability")
    assert "No settled match has a prediction logged at its kickoff yet" in text
    assert "<code>oddsboost track-record rebuild --from DATE</code>" in text


def test_the_track_record_page_scores_what_was_served(
    track_client: TestClient,
    logged: dict[str, int],
    session: Session,
) -> None:
    text, parsed = page(track_client, "/dashboard/track-record")
    assert parsed.having("table", id="scores")
    assert parsed.having("svg", class_="chart", id="log-loss")
    # Served, consensus and PS, the best bookmaker of the window.
    start = text.index('id="log-loss"')
    log_loss = Elements()
    log_loss.feed(text[start : text.index("</figure>", start)])
    assert len(log_loss.having("path", class_="line")) == 3
    assert "best bookmaker (PS)" in text
    assert parsed.having("svg", class_="chart", id="bankroll")
    # Served: M1 home at 0.5, M2 draw at 0.2, M3 away at 0.1; consensus 0.5, 0.2, 0.15.
    served = -(math.log(0.5) + math.log(0.2) + math.log(0.1)) / 3
    consensus = -(math.log(0.5) + math.log(0.2) + math.log(0.15)) / 3
    assert f"{served:.4f}" in text
    assert f"{consensus:.4f}" in text
    assert "3 settled matches" in text
    # The filter keeps to E0; a window before the matches has nothing scored.
    _, before = page(track_client, "/dashboard/track-record", to="2026-02-01", **{"from": ""})
    assert before.having("p", class_="empty")
    # M3's page: the away win the served prediction gave 0.1.
    text, _ = page(track_client, f"/dashboard/matches/{logged['M3']}")
    assert entry_of(session, logged["M3"]).served.probabilities[2] == pytest.approx(0.1)
    assert f"{-math.log(0.1):.4f}" in text
    assert "0–2 (result 2)" in text


def kickoff_cell(text: str, match_id: int) -> str:
    """The kickoff cell's time of a match's row on the upcoming page."""
    row = text.index(f'data-match-id="{match_id}"')
    cell = text.index('<td class="kickoff">', row) + len('<td class="kickoff">')
    return text[cell : text.index("<br>", cell)]


def test_times_are_shown_in_the_zone_asked_for_and_links_keep_it(seeded: Seeded) -> None:
    arsenal = seeded.ids["Arsenal"]
    kickoff = dt.datetime.fromisoformat(seeded.client.get(f"/matches/{arsenal}").json()["kickoff"])
    text, parsed = page(seeded.client, "/dashboard")
    assert kickoff_cell(text, arsenal) == kickoff.strftime("%a %d %b %Y %H:%M UTC")
    assert "Times in UTC" in text

    # Tokyo keeps UTC+9 all year (no summer time), so the shift is known without zoneinfo.
    text, parsed = page(seeded.client, "/dashboard", tz="Asia/Tokyo")
    in_tokyo = (kickoff + dt.timedelta(hours=9)).strftime("%a %d %b %Y %H:%M JST")
    assert kickoff_cell(text, arsenal) == in_tokyo
    assert "Times in Asia/Tokyo" in text
    for path in PAGES:
        assert parsed.having("a", href=f"{path}?tz=Asia%2FTokyo"), path
    assert parsed.having("a", href=f"/dashboard/matches/{arsenal}?tz=Asia%2FTokyo")
    assert parsed.having("input", name="tz", value="Asia/Tokyo")

    text, parsed = page(seeded.client, f"/dashboard/matches/{arsenal}", tz="Asia/Tokyo")
    assert in_tokyo in text
    assert parsed.having("a", href="/dashboard?tz=Asia%2FTokyo")
    _, parsed = page(seeded.client, "/dashboard/track-record", tz="Asia/Tokyo")
    assert parsed.having("input", type="hidden", name="tz", value="Asia/Tokyo")


def test_the_configured_zone_is_the_default(migrated_url: str) -> None:
    store_model(migrated_url)
    with app_on(migrated_url, dashboard_time_zone="Asia/Kolkata") as client:
        arsenal = seed(client)["Arsenal"]
        kickoff = dt.datetime.fromisoformat(client.get(f"/matches/{arsenal}").json()["kickoff"])
        text, parsed = page(client, "/dashboard")
    # India keeps UTC+5:30 all year.
    in_india = (kickoff + dt.timedelta(hours=5, minutes=30)).strftime("%a %d %b %Y %H:%M IST")
    assert kickoff_cell(text, arsenal) == in_india
    assert "Times in Asia/Kolkata" in text
    # Not asked for by the page: the links stay plain.
    assert parsed.having("a", href=f"/dashboard/matches/{arsenal}")


@pytest.mark.parametrize(
    ("moment", "zone", "shown"),
    [
        # London: GMT in winter, BST (UTC+1) from the last Sunday of March.
        (dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC), "Europe/London", "01 Dec 2026 12:00 GMT"),
        (dt.datetime(2026, 7, 1, 12, 0, tzinfo=dt.UTC), "Europe/London", "01 Jul 2026 13:00 BST"),
        # New York: EST (UTC−5) in winter; the day changes.
        (
            dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.UTC),
            "America/New_York",
            "30 Nov 2026 22:00 EST",
        ),
    ],
)
def test_a_time_is_shown_in_its_zone_with_the_zone_named(
    moment: dt.datetime, zone: str, shown: str
) -> None:
    assert charts.shown_time(moment, ZoneInfo(zone)) == shown


def test_a_time_can_carry_its_weekday() -> None:
    moment = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)  # a Tuesday
    assert charts.shown_time(moment, ZoneInfo("UTC"), weekday=True) == "Tue 01 Dec 2026 12:00 UTC"


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        ("/dashboard", {"days": 0}, "query.days"),
        ("/dashboard", {"days": 31}, "query.days"),
        ("/dashboard", {"competition": "E" * 65}, "query.competition"),
        ("/dashboard/track-record", {"from": "tomorrow"}, "query.from"),
        ("/dashboard/track-record", {"from": "2026-03-02", "to": "2026-03-01"}, "query.to"),
        ("/dashboard/matches/abc", {}, "path.match_id"),
        ("/dashboard/matches/0", {}, "path.match_id"),
        ("/dashboard", {"tz": "Mars/Olympus_Mons"}, "query.tz"),
        ("/dashboard/model", {"tz": "../../etc/passwd"}, "query.tz"),
        ("/dashboard/track-record", {"tz": "Europe"}, "query.tz"),
        ("/dashboard/matches/1", {"tz": "utc"}, "query.tz"),
        ("/dashboard", {"refresh": 29}, "query.refresh"),
        ("/dashboard", {"refresh": 3601}, "query.refresh"),
        ("/dashboard/model", {"refresh": "soon"}, "query.refresh"),
        ("/dashboard", {"sort": "best"}, "query.sort"),
        ("/dashboard", {"value_only": "maybe"}, "query.value_only"),
        ("/dashboard", {"bankroll": -5}, "query.bankroll"),
        ("/dashboard/track-record", {"bankroll": "lots"}, "query.bankroll"),
        ("/dashboard", {"min_ev": 1.5}, "query.min_ev"),
        ("/dashboard/matches/1", {"min_ev": -0.1}, "query.min_ev"),
        ("/dashboard", {"bookmakers": "x" * 200}, "query.bookmakers.0"),
        ("/dashboard", {"bookmakers": ["B365"] * 101}, "query.bookmakers"),
    ],
)
def test_bad_parameters_are_problems_naming_them(
    client: TestClient, path: str, params: dict[str, Any], where: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    messages = error_messages(response.json())
    assert len(messages) == 1
    assert messages[0].startswith(f"{where}: "), messages


def test_the_pages_are_read_only(client: TestClient) -> None:
    for path in (*PAGES, "/dashboard/matches/1"):
        response = client.post(path, headers={"X-API-Key": ADMIN_KEY})
        assert response.status_code == 405, path


def test_a_chart_of_one_point_marks_it() -> None:
    chart = charts.line_chart(
        [charts.Series("served", [1.0], [0.5])],
        element_id="log-loss",
        title="one day",
        x_labels=("2026-03-02", "2026-03-02"),
    )
    parsed = Elements()
    parsed.feed(str(chart))
    # Alone on both axes, the point sits in the middle of the plotting area.
    (point,) = parsed.having("circle", class_="point")
    x_middle = (charts.LEFT + charts.WIDTH - charts.RIGHT) / 2
    y_middle = (charts.TOP + charts.HEIGHT - charts.BOTTOM) / 2
    assert (float(point["cx"]), float(point["cy"])) == (x_middle, y_middle)


def path_points(d: str) -> list[tuple[float, float]]:
    """The points of a line's path ``M x,y L x,y …``."""
    return [(float(x), float(y)) for x, y in (point.split(",") for point in d[1:].split(" L"))]


def test_the_log_loss_chart_runs_each_line_over_the_matches_it_scored() -> None:
    day = dt.date(2026, 3, 2)
    days = [
        DayBucket(day, 2, 1.0, 1.2, 1, 0.8, 0, 0.0),
        # The best bookmaker quoted nothing this day: its mean to date stays.
        DayBucket(day + dt.timedelta(days=1), 1, 0.4, 0.6, 0, None, 0, 0.0),
        DayBucket(day + dt.timedelta(days=2), 1, 0.6, 0.8, 1, 0.4, 0, 0.0),
    ]
    chart = str(charts.daily_log_loss(days, "PS"))
    parsed = Elements()
    parsed.feed(chart)
    # Means to date weighted by matches: served 1.0, 2.4/3, 3/4; consensus 1.2, 3/3,
    # 3.8/4; the best bookmaker 0.8, 0.8, 1.2/2 on the matches it quoted.
    expected = {
        "s0": [1.0, 0.8, 0.75],
        "s1": [1.2, 1.0, 0.95],
        "s2": [0.8, 0.8, 0.6],
    }
    low, high = 0.6, 1.2
    bottom = charts.HEIGHT - charts.BOTTOM
    xs = [charts.LEFT, (charts.LEFT + charts.WIDTH - charts.RIGHT) / 2, charts.WIDTH - charts.RIGHT]
    for kind, means in expected.items():
        (line,) = parsed.having("path", class_=kind)
        drawn = path_points(line["d"])
        wanted = [
            (x, bottom - (mean - low) / (high - low) * (bottom - charts.TOP))
            for x, mean in zip(xs, means, strict=True)
        ]
        assert drawn == [pytest.approx(point, abs=0.01) for point in wanted], kind
    assert "best bookmaker (PS)" in chart
    # The axis runs from the lowest mean to the highest.
    assert 'text-anchor="end">1.200</text>' in chart
    assert 'text-anchor="end">0.600</text>' in chart


def test_the_log_loss_chart_without_a_best_bookmaker_has_two_lines() -> None:
    days = [DayBucket(dt.date(2026, 3, 2), 2, 1.0, 1.2, 0, None, 0, 0.0)]
    parsed = Elements()
    parsed.feed(str(charts.daily_log_loss(days, None)))
    assert len(parsed.having("path", class_="line")) == 2


# The page's options: the user's terms, the board's order and filter, the reload period.

OPTIONS = {
    "bookmakers": ["B365", "Pinnacle"],
    "bankroll": "1000",
    "min_ev": "0.05",
    "sort": "ev",
    "value_only": "true",
    "refresh": "120",
    "tz": "Asia/Tokyo",
}


def asked_of(href: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(href).query, keep_blank_values=True)


def form_fields(text: str, form_id: str) -> set[str]:
    """The names of the fields (hidden or not) of the form ``form_id``."""
    form = within(text, f'<form id="{form_id}"', "</form>")
    return {
        attrs["name"]
        for tag in ("input", "select")
        for attrs in form.having(tag)
        if "name" in attrs
    }


@pytest.mark.parametrize("path", [*PAGES, "match"])
def test_every_link_and_form_keeps_the_pages_options(seeded: Seeded, path: str) -> None:
    arsenal = seeded.ids["Arsenal"]
    path = f"/dashboard/matches/{arsenal}" if path == "match" else path
    text, parsed = page(seeded.client, path, **OPTIONS)
    expected = dict(_pairs(OPTIONS))
    control = reload_links(text)
    links = [attrs["href"] for attrs in parsed.having("a") if attrs["href"].startswith("/dash")]
    assert len(links) > len(control)
    for href in links:
        asked = asked_of(href)
        if href in control:
            # The reload control changes the period alone (and keeps the page's own query).
            others = {key: value for key, value in asked.items() if key != "refresh"}
            assert {key: expected[key] for key in others if key in expected} == {
                key: value for key, value in others.items() if key in expected
            }, href
            assert set(expected) - {"refresh"} <= set(others), href
        else:
            assert asked == expected, href
    assert {asked_of(href).get("refresh", ["never"])[0] for href in control} == {
        "60",
        "300",
        "900",
        "never",
    }
    # The navigation keeps them in one order, the defaults left out.
    wanted = urlencode([(key, value) for key, values in _pairs(OPTIONS) for value in values])
    for section in PAGES:
        assert parsed.having("a", href=f"{section}?{wanted}"), section
    if path in ("/dashboard", "/dashboard/track-record"):
        assert set(OPTIONS) <= form_fields(text, "filters")


def _pairs(options: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """``options`` in the order the pages write them."""
    order = ("tz", "bookmakers", "bankroll", "min_ev", "sort", "value_only", "refresh")
    return [
        (key, options[key] if isinstance(options[key], list) else [options[key]]) for key in order
    ]


def reload_links(text: str) -> set[str]:
    """The links of the reload control, which change the period."""
    control = within(text, '<p id="reload"', "</p>")
    return {attrs["href"] for attrs in control.having("a")}


def row_ids(parsed: Elements) -> list[int]:
    return [
        int(attrs["data-match-id"]) for attrs in parsed.having("tr") if "data-match-id" in attrs
    ]


def outcomes_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    """An answer's value of each outcome, home, draw and away: a list in GET /upcoming's
    items, by outcome in POST /predict's answer."""
    value = item["value"]
    if value is None:
        return []
    outcomes = value["outcomes"]
    if isinstance(outcomes, dict):
        return [outcomes[key] for key in ("home", "draw", "away")]
    return list(outcomes)


def best_ev(item: dict[str, Any]) -> float | None:
    """The EV of a board item's best outcome, read from GET /upcoming's answer."""
    found = [outcome["expected_value"] for outcome in outcomes_of(item)]
    return max((ev for ev in found if ev is not None), default=None)


def test_the_board_sorts_by_the_best_outcomes_ev(seeded: Seeded) -> None:
    board = seeded.client.get("/upcoming").json()["items"]
    # Arsenal's home at B365's 2.2 and Barcelona's draw at its 11 are worth +10 % (0.5 × 2.2
    # and 0.1 × 11, less 1), Everton at best 0 (0.4 × 2.5 − 1): last.
    evs = {item["match"]["home_team"]: best_ev(item) for item in board}
    assert evs == {
        "Arsenal": pytest.approx(0.1),
        "Barcelona": pytest.approx(0.1),
        "Everton": pytest.approx(0.0),
    }
    # Highest first; equal ones in the board's order (kickoff).
    ranked = sorted(enumerate(board), key=lambda pair: (-(best_ev(pair[1]) or 0.0), pair[0]))
    _, parsed = page(seeded.client, "/dashboard", sort="ev")
    assert row_ids(parsed) == [item["match"]["id"] for _, item in ranked]
    assert row_ids(parsed)[-1] == seeded.ids["Everton"]
    shown = [float(a["data-ev"]) for a in parsed.having("td", class_="p-home") if "data-ev" in a]
    assert len(shown) == 3
    # By kickoff, the default, is the board's order.
    _, parsed = page(seeded.client, "/dashboard", sort="kickoff")
    assert row_ids(parsed) == [item["match"]["id"] for item in board]
    _, default = page(seeded.client, "/dashboard", sort="")
    assert row_ids(default) == row_ids(parsed)


def test_value_bets_only_keeps_the_matches_with_one(seeded: Seeded) -> None:
    board = seeded.client.get("/upcoming").json()["items"]
    with_bets = [item["match"]["id"] for item in board if item["value_bets"]]
    assert with_bets == [seeded.ids["Arsenal"], seeded.ids["Barcelona"]]
    text, parsed = page(seeded.client, "/dashboard", value_only="true")
    assert row_ids(parsed) == with_bets
    assert parsed.having("input", type="checkbox", name="value_only", checked="")
    assert "2 with a value bet" in Text.of(text)
    # A threshold none reaches: no row, and a way back to every match.
    text, parsed = page(seeded.client, "/dashboard", value_only="true", min_ev="0.5")
    assert row_ids(parsed) == []
    assert parsed.having("p", id="no-value")
    assert parsed.having("a", href="/dashboard?min_ev=0.5")


def test_the_users_bookmakers_and_bankroll_judge_the_board(seeded: Seeded) -> None:
    asked = {"bookmakers": ["WH"], "bankroll": "1000", "min_ev": "0.01"}
    board = seeded.client.get("/upcoming", params=asked).json()
    text, parsed = page(seeded.client, "/dashboard", **asked)
    # At William Hill's prices alone, Arsenal's home at 2.1 and away at 4.2 are both worth
    # +5 % (0.5 × 2.1 and 0.25 × 4.2, less 1): the first, the home, is the one bet, at a
    # quarter Kelly of 0.05 / 1.1 = 1.136 %, 11.36 of 1000 (rounded down to the cent).
    (bet,) = [bet for item in board["items"] for bet in item["value_bets"]]
    assert (bet["outcome"], bet["bookmaker"], bet["stake"]) == ("1", "WH", 11.36)
    assert [a["class"] for a in parsed.having("td", class_="value")] == ["p-home value"]
    shown = Text.of(text)
    assert "EV +5.0 %, stake 1.1 % = 11.36 at 2.10 (William Hill)" in shown
    assert "expected value above +1.0 % at William Hill only" in shown
    assert "of a bankroll of 1,000.00" in shown
    assert board["terms"]["bookmakers"] == ["WH"]
    # The form ticks the bookmaker chosen and shows the bankroll.
    assert parsed.having("input", name="bookmakers", value="WH", checked="")
    assert not parsed.having("input", name="bookmakers", value="B365", checked="")
    assert parsed.having("input", name="bankroll", value="1000.00")
    # Fields left empty by the form are not given.
    _, plain = page(seeded.client, "/dashboard", bankroll="", min_ev="")
    assert [a["class"] for a in plain.having("td", class_="value")] == [
        "p-home value",
        "p-draw value",
    ]


def test_names_are_shown_with_their_codes_in_a_title(seeded: Seeded) -> None:
    # A book of 2.1 / 4 / 4 has a margin (1/2.1 + 1/4 + 1/4 > 1): a line the service takes.
    newcomer = quote_items(ARSENAL)[0] | {"bookmaker": "NEWBOOK", "home": 2.1}
    newcomer["match"] = newcomer["match"] | {"competition": "ZZ9"}
    store(seeded.client, [newcomer])
    text, parsed = page(seeded.client, "/dashboard")
    named = {(a["title"]): a for a in parsed.having("span", class_="named")}
    assert {"E0", "SP1", "ZZ9", "B365", "NEWBOOK"} <= set(named)
    shown = Text.of(text)
    assert '<span class="named" title="E0">Premier League</span>' in text
    assert '<span class="named" title="SP1">La Liga</span>' in text
    assert '<span class="named" title="B365">Bet365</span>' in text
    # Unknown codes are their own names.
    assert '<span class="named" title="ZZ9">ZZ9</span>' in text
    assert '<span class="named" title="NEWBOOK">NEWBOOK</span>' in text
    assert "best 2.10 NEWBOOK" in shown
    assert parsed.having("option", value="E0", title="E0")
    assert "Premier League</option>" in text
    # The stacked bar's legend: what each colour is.
    legend = within(text, '<ul class="legend" id="bar-legend"', "</ul>")
    assert [a["class"] for a in legend.having("span")] == ["key home", "key draw", "key away"]
    assert "1: home win X: draw 2: away win" in shown
    text, _ = page(seeded.client, f"/dashboard/matches/{seeded.ids['Arsenal']}")
    assert '<span class="named" title="E0">Premier League</span>' in text
    assert '<span class="named" title="WH">William Hill</span>' in text


@pytest.mark.parametrize(
    "asked",
    [{}, {"bookmakers": ["B365", "PS"], "bankroll": "1000"}, {"bookmakers": ["WH"]}],
)
def test_the_match_page_shows_the_boards_prices_best_and_ev(
    seeded: Seeded, asked: dict[str, Any]
) -> None:
    arsenal = seeded.ids["Arsenal"]
    (item,) = [
        item
        for item in seeded.client.get("/upcoming", params=asked).json()["items"]
        if item["match"]["id"] == arsenal
    ]
    text, parsed = page(seeded.client, f"/dashboard/matches/{arsenal}", **asked)
    # Every bookmaker's latest prices, as stored.
    rows = {a["data-bookmaker"] for a in parsed.having("tr") if "data-bookmaker" in a}
    assert rows == set(ARSENAL.quotes)
    prices = within(text, '<table id="prices"', "</tbody>")
    for code, quoted in ARSENAL.quotes.items():
        row = within(text, f'<tr data-bookmaker="{code}"', "</tr>")
        assert [float(a["data-price"]) for a in row.having("td") if "data-price" in a] == list(
            quoted
        )
    # The best price of each outcome marked, the EV and stake of each as GET /upcoming says.
    outcomes = outcomes_of(item)
    best = [float(a["data-price"]) for a in prices.having("td", class_="best")]
    assert best == [outcome["price"] for outcome in outcomes]
    evs = [float(a["data-ev"]) for a in parsed.having("td") if "data-ev" in a]
    assert evs == [outcome["expected_value"] for outcome in outcomes]
    # The stakes, as POST /predict gives them by the same terms (the board's list scales
    # them by the day's cap; a match's page, like /predict, does not).
    terms = dict(asked)
    if "bankroll" in terms:
        terms["bankroll"] = float(terms["bankroll"])
    predicted = seeded.client.post("/predict", json={"match_id": arsenal, "value": terms})
    assert predicted.status_code == 200, predicted.text
    staked = [o for o in outcomes_of(predicted.json()) if o["flagged"]]
    stakes = [float(a["data-stake"]) for a in parsed.having("td") if "data-stake" in a]
    assert stakes == [outcome["stake_fraction"] for outcome in staked]
    assert [o["expected_value"] for o in outcomes_of(predicted.json())] == evs
    for outcome in staked:
        if outcome["stake"] is not None:
            assert f"= {outcome['stake']:,.2f}" in text


def test_the_match_page_shows_the_arsenal_prices_by_hand(seeded: Seeded) -> None:
    arsenal = seeded.ids["Arsenal"]
    text, parsed = page(seeded.client, f"/dashboard/matches/{arsenal}")
    prices = within(text, '<table id="prices"', "</tbody>")
    # The best: B365's 2.2 home, BW's 4.0 draw, WH's 4.2 away; served 0.5 / 0.25 / 0.25, so
    # EVs of +10 %, 0 and +5 %; the home is the bet, at the 2 % cap (a quarter Kelly of
    # 0.1 / 1.2 is 2.08 %).
    assert [float(a["data-price"]) for a in prices.having("td", class_="best")] == [2.2, 4.0, 4.2]
    evs = [float(a["data-ev"]) for a in parsed.having("td") if "data-ev" in a]
    assert evs == pytest.approx([0.1, 0.0, 0.05])
    assert [float(a["data-stake"]) for a in parsed.having("td") if "data-stake" in a] == [0.02]


def test_the_match_page_shows_the_flags_history(seeded: Seeded) -> None:
    arsenal = seeded.ids["Arsenal"]
    # B365 moves its home price up: the flag's price improves (an event of the ledger).
    moved = quote_items(ARSENAL)[1] | {"home": 2.3}
    moved["captured_at"] = (CAPTURED + dt.timedelta(minutes=5)).isoformat()
    store(seeded.client, [moved])
    ledger = seeded.client.get("/flags", params={"match_id": arsenal}).json()["items"]
    assert ledger
    text, parsed = page(seeded.client, f"/dashboard/matches/{arsenal}")
    tables = parsed.having("table", class_="flag")
    assert [int(a["data-flag-id"]) for a in tables] == [flag["id"] for flag in ledger]
    for flag in ledger:
        history = within(text, f'<table class="flag" id="flag-{flag["id"]}"', "</table>")
        changes = [a["data-change"] for a in history.having("tr", class_="event")]
        assert changes == [event["change"] for event in flag["events"]]
        assert len(changes) >= 1
    shown = Text.of(text)
    (home,) = [flag for flag in ledger if flag["outcome"] == "1"]
    assert f"Outcome 1 at {home['price']:.2f} (Bet365)" in shown
    # Everton had no value: no flag.
    text, parsed = page(seeded.client, f"/dashboard/matches/{seeded.ids['Everton']}")
    assert (
        seeded.client.get("/flags", params={"match_id": seeded.ids["Everton"]}).json()["items"]
        == []
    )
    assert not parsed.having("table", class_="flag")
    assert "The ledger raised no flag on this match" in text


@pytest.mark.parametrize("path", [*PAGES, "match"])
def test_a_page_reloads_itself_only_when_asked(seeded: Seeded, path: str) -> None:
    path = f"/dashboard/matches/{seeded.ids['Arsenal']}" if path == "match" else path
    _, parsed = page(seeded.client, path)
    assert not parsed.having("meta", **{"http-equiv": "refresh"})
    assert parsed.having("a", href=f"{path}?refresh=300")
    _, parsed = page(seeded.client, path, refresh="300")
    (meta,) = parsed.having("meta", **{"http-equiv": "refresh"})
    assert meta["content"] == "300"
    assert parsed.having("a", href=f"{path}?refresh=300", **{"aria-current": "true"})
    assert parsed.having("a", href=path)  # the control's "never"
    # The page's other links keep reloading.
    assert parsed.having("a", href="/dashboard/model?refresh=300")


def test_the_reload_control_keeps_the_pages_own_filters(seeded: Seeded) -> None:
    text, _ = page(
        seeded.client, "/dashboard", competition="SP1", days="3", unknown="x", refresh="60"
    )
    # The page's filters and options stay; a parameter no page reads does not.
    assert reload_links(text) == {
        "/dashboard?competition=SP1&days=3&refresh=60",
        "/dashboard?competition=SP1&days=3&refresh=300",
        "/dashboard?competition=SP1&days=3&refresh=900",
        "/dashboard?competition=SP1&days=3",
    }


def test_a_line_over_time_runs_from_its_first_moment_to_its_last() -> None:
    start = dt.datetime(2026, 3, 2, 15, tzinfo=dt.UTC)
    moments = [start, start + dt.timedelta(days=1), start + dt.timedelta(days=3)]
    chart = str(
        charts.time_line(
            moments,
            [100.0, 110.0, 90.0],
            ZoneInfo("UTC"),
            name="bankroll",
            element_id="bets-bankroll",
            title="Bankroll",
        )
    )
    parsed = Elements()
    parsed.feed(chart)
    (line,) = parsed.having("path", class_="line")
    # x by time: the second moment a third of the way (1 day of 3); y from 90 (bottom) to 110.
    bottom = charts.HEIGHT - charts.BOTTOM
    width = charts.WIDTH - charts.RIGHT - charts.LEFT
    assert path_points(line["d"]) == [
        pytest.approx((charts.LEFT, bottom - (10 / 20) * (bottom - charts.TOP)), abs=0.01),
        pytest.approx((charts.LEFT + width / 3, charts.TOP), abs=0.01),
        pytest.approx((charts.WIDTH - charts.RIGHT, bottom), abs=0.01),
    ]
    assert parsed.having("svg", id="bets-bankroll")
    assert "02 Mar 2026 15:00 UTC" in chart
    assert "05 Mar 2026 15:00 UTC" in chart


def test_the_match_page_shows_an_exchanges_prices_net_of_its_commission(seeded: Seeded) -> None:
    store(seeded.client, [barcelona_on_the_exchange()])
    barcelona = seeded.ids["Barcelona"]
    text, _ = page(seeded.client, f"/dashboard/matches/{barcelona}")
    exchange = within(text, '<tr data-bookmaker="BFE"', "</tr>")
    # Its draw at 12 pays 1 + 11 × 0.95 = 11.45 net, more than B365's 11: the best.
    assert [float(a["data-price"]) for a in exchange.having("td", class_="best")] == [12.0]
    row = text[text.index('<tr data-bookmaker="BFE"') :]
    shown = Text.of(row[: row.index("</tr>")])
    assert "Betfair Exchange 5.0 % commission" in shown
    # 1 + 0.2 × 0.95 = 1.19; 1 + 11 × 0.95 = 11.45; 1 + 6 × 0.95 = 6.7.
    assert "1.20 net 1.190 12.00 best net 11.450 7.00 net 6.700" in shown
    # A bookmaker without commission: its prices alone.
    bet365 = text[text.index('<tr data-bookmaker="B365"') :]
    assert "net" not in Text.of(bet365[: bet365.index("</tr>")])
