"""A bettor's matchday, end to end: the two-league matchday of :mod:`tests.matchday` played
by the scheduler's jobs against local servers in the real formats (Football-Data.co.uk and
The Odds API), with a local webhook receiver configured for alerts and a real
``oddsboost serve`` on the same database.

The morning's prices raise flags; each flag leaves as a signed alert (the receiver checks
the signature with its own HMAC); the user records a bet on one alerted flag through the
API, at the price the alert gave, typed as a fraction; the evening's season files bring the
results, which settle the bet with its return and its CLV against Pinnacle's live close;
and the dashboard, in a real browser at a desktop's and a phone's width, shows the flag,
its alert and the bet, and nothing on any page reaches past the screen's sides.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, ViewportSize
from pydantic import SecretStr
from sqlalchemy import Engine

from app.db.engine import make_engine, make_session_factory
from app.services.alerts import Outbox, SenderTerms, open_client, send_due
from app.services.run_bounds import Stop
from app.services.scheduling import build_scheduler
from app.settings import Settings
from tests.apps import ADMIN_KEY
from tests.football_data_site import Site
from tests.matchday import (
    OUTCOMES,
    Matchday,
    MatchdayRow,
    SeasonFile,
    SteppedScheduler,
    at,
    build_matchday,
    live_settings,
    power_fair,
    script_prices,
    serve_results,
    serve_season_so_far,
    years_ahead,
)
from tests.odds_api_site import FakeOddsApi
from tests.plugins.browser import PHONES, VIEWPORT, Watched, fits, screenshot
from tests.processes import Server, child_environment, running_server
from tests.webhook_receiver import Received, WebhookReceiver, webhook_receiver

SECRET = "a matchday's alert secret"
ADMIN = {"X-API-Key": ADMIN_KEY}
STAKE = 10.0
LETTERS = {"H": "1", "D": "X", "A": "2"}
# A desktop and a phone.
SCREENS = (VIEWPORT, PHONES[0])


def bettor_settings(settings: Settings, receiver: WebhookReceiver, server: Server) -> Settings:
    """The matchday's settings with the receiver as the one alert URL; links to the server."""
    return settings.model_copy(
        update={
            "alert_urls": [receiver.url()],
            "alert_secret": SecretStr(SECRET),
            "alert_sender": False,
            "public_url": server.base_url,
        }
    )


def serving(settings: Settings) -> Settings:
    """The server's settings: the matchday's database, key and value terms, no feeds (the
    scheduler runs them)."""
    return Settings(
        database_url=settings.database_url,
        admin_api_key=settings.admin_api_key,
        model_refresh_seconds=settings.model_refresh_seconds,
    )


def send_alerts(engine: Engine, settings: Settings, moment: dt.datetime) -> int:
    """One pass of the alert sender at the scheduler's ``moment``, as a server's sender
    makes it: what is due is claimed, posted and recorded."""
    outbox = Outbox(make_session_factory(engine), make_session_factory(engine, for_writes=True))
    terms = SenderTerms.of(settings)
    with open_client(terms.timeout_seconds) as client:
        return send_due(outbox, client, terms, lambda: moment)


def verified(request: Received) -> dict[str, Any]:
    """The message of ``request``, once its signature is checked here: HMAC-SHA256 under the
    secret of the timestamp header, a dot and the body, as the alerts guide documents."""
    headers = {name.lower(): value for name, value in request.headers.items()}
    signed = headers["x-oddsboost-timestamp"].encode() + b"." + request.body
    expected = "sha256=" + hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["x-oddsboost-signature"], expected)
    message: dict[str, Any] = json.loads(request.body)
    assert headers["x-oddsboost-delivery"] == str(message["delivery_id"])
    return message


def fraction_of(price: float) -> str:
    """A decimal price as a bettor types it in fractional odds: 2.1 is 11/10."""
    odds = Fraction(price - 1).limit_denominator(100)
    assert float(odds) + 1 == pytest.approx(price, abs=1e-9)
    return f"{odds.numerator}/{odds.denominator}"


def row_of_match(matchday: Matchday, match: dict[str, Any]) -> MatchdayRow:
    return {(m.home, m.away): m for m in matchday.matches}[(match["home"], match["away"])]


def check_alerts(
    receiver: WebhookReceiver, sent: int, flags: dict[int, dict[str, Any]], server: Server
) -> list[dict[str, Any]]:
    """Every alert arrived signed, for a flag of the ledger, at the flag's terms, with a link
    to its match page on the server."""
    messages = [verified(request) for request in receiver.wait_for(sent)]
    assert len(receiver.received) == sent
    for message in messages:
        flag = flags[message["flag_id"]]
        assert message["match_id"] == flag["match"]["id"]
        assert message["outcome"] == flag["outcome"]
        assert message["link"] == f"{server.base_url}/dashboard/matches/{message['match_id']}"
        # The kickoff as the message left, though a flag raised in the close season was
        # queued when the fixtures knew only the day.
        assert dt.datetime.fromisoformat(message["kickoff"]) == dt.datetime.fromisoformat(
            flag["match"]["kickoff"]
        )
        if message["event"] == "raised":
            assert (message["bookmaker"], message["price"]) == (flag["bookmaker"], flag["price"])
            assert message["expected_value"] == pytest.approx(flag["expected_value"])
    return messages


def record_bet(server: Server, message: dict[str, Any]) -> dict[str, Any]:
    """The user backs the alerted outcome at the alert's price, typed as a fraction."""
    answer = httpx.post(
        f"{server.base_url}/bets",
        headers=ADMIN,
        json={
            "match_id": message["match_id"],
            "outcome": message["outcome"],
            "bookmaker": message["bookmaker"],
            "price": fraction_of(message["price"]),
            "stake": STAKE,
            "flag_id": message["flag_id"],
            "note": "from the alert",
        },
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    bet: dict[str, Any] = answer.json()
    assert bet["status"] == "open"
    assert bet["price"] == pytest.approx(message["price"], abs=1e-9)
    assert bet["source"] == message["value_source"]
    return bet


def check_settled(server: Server, bet_id: int, row: MatchdayRow) -> dict[str, Any]:
    """The bet settled by the evening's results: won or lost by the file's result, its
    return, and its CLV against Pinnacle's close (power de-margined here, by Brent's
    method), a live close captured in the morning."""
    answer = httpx.get(f"{server.base_url}/bets/{bet_id}", headers=ADMIN, timeout=30)
    assert answer.status_code == 200, answer.text
    bet: dict[str, Any] = answer.json()
    won = bet["outcome"] == LETTERS[row.result]
    assert bet["status"] == ("won" if won else "lost")
    assert bet["returned"] == pytest.approx(STAKE * bet["price"] if won else 0.0)
    assert bet["profit"] == pytest.approx(bet["returned"] - STAKE)
    fair = power_fair(row.closing)[OUTCOMES.index(bet["outcome"])]
    assert bet["closing_probability"] == pytest.approx(fair, abs=1e-9)
    assert bet["clv"] == pytest.approx(bet["price"] * fair - 1, abs=1e-9)
    assert bet["close"]["origin"] == "live"
    return bet


def flags_by_id(server: Server) -> dict[int, dict[str, Any]]:
    answer = httpx.get(f"{server.base_url}/flags", params={"limit": 100}, timeout=30)
    assert answer.status_code == 200, answer.text
    return {flag["id"]: flag for flag in answer.json()["items"]}


def shown(
    browser: Browser, screen: ViewportSize, url: str, directory: Path, name: str
) -> tuple[Page, Watched]:
    """``url`` in a fresh page at ``screen``'s size, signed in as the bettor (the admin key
    as the password, as a browser asks for it), loaded clean and fitting the screen."""
    context = browser.new_context(
        viewport=screen, http_credentials={"username": "bettor", "password": ADMIN_KEY}
    )
    page = context.new_page()
    watched = Watched()
    watched.attach(page)
    answer = page.goto(url)
    assert answer is not None, url
    assert answer.status == 200, url
    watched.assert_clean()
    fits(page)
    screenshot(page, directory, f"{name}-{screen['width']}")
    return page, watched


def check_morning_pages(
    browser: Browser, server: Server, message: dict[str, Any], bet_id: int, directory: Path
) -> None:
    """The alert's link opens the match page: the alerted outcome valued as a bet, the flag
    with its history and its delivered alert. The bets page lists the bet, open. (The
    board's page lists the next 30 days at most, and this matchday lies years ahead.)"""
    for screen in SCREENS:
        match, _ = shown(browser, screen, message["link"], directory, "match")
        side = OUTCOMES.index(message["outcome"])
        assert match.locator("td.value[data-ev]").count() == 1
        valued = match.locator("tr.expected-value > td").nth(side)
        assert valued.get_attribute("class") == "value"
        assert match.locator(f"#flag-{message['flag_id']}").is_visible()
        alerts = match.locator(f'p.alerts[data-flag-id="{message["flag_id"]}"]')
        assert alerts.locator('[data-status="delivered"]').count() >= 1
        bets, _ = shown(browser, screen, f"{server.base_url}/dashboard/bets", directory, "bets")
        assert bets.locator(f'tr[data-bet-id="{bet_id}"]').get_attribute("data-status") == "open"


def check_evening_page(
    browser: Browser, server: Server, bet: dict[str, Any], directory: Path
) -> None:
    """The bets page shows the bet settled, with its CLV, and the bankroll curve drawn."""
    for screen in SCREENS:
        page, _ = shown(browser, screen, f"{server.base_url}/dashboard/bets", directory, "book")
        row = page.locator(f'tr[data-bet-id="{bet["id"]}"]')
        assert row.get_attribute("data-status") == bet["status"]
        assert row.locator("td.clv").inner_text() == f"{bet['clv'] * 100:+.1f} %"
        assert page.locator("#clv").get_attribute("data-value") is not None
        assert page.locator("#curves svg").count() >= 1


@pytest.mark.slow
def test_a_flag_alerts_the_bettor_whose_bet_settles_with_its_clv_and_shows_on_the_dashboard(
    migrated_url: str,
    season_file: SeasonFile,
    sites: tuple[Site, FakeOddsApi, str, str],
    stepped_scheduler: SteppedScheduler,
    browser: Browser,
    tmp_path: Path,
) -> None:
    football_data, odds_api, fd_base, api_base = sites
    matchday = build_matchday(season_file, years_ahead(dt.datetime.now(dt.UTC)))
    serve_season_so_far(football_data, matchday)
    engine = make_engine(migrated_url)
    plain = live_settings(migrated_url, fd_base, api_base)
    with (
        webhook_receiver() as receiver,
        running_server(child_environment(serving(plain)), tmp_path / "server.log") as server,
    ):
        settings = bettor_settings(plain, receiver, server)
        scheduler = stepped_scheduler
        eve, morning = matchday.day - dt.timedelta(days=1), at(matchday.day, 8)
        scheduler.clock.now = at(dt.date(2018 + matchday.years, 7, 1), 18)
        build_scheduler(engine, settings, stop=Stop(), clock=scheduler.clock, into=scheduler)
        scheduler.start()

        # 1. The close season: last season's files and the fixtures. The eve: this season's
        # files so far, the evening's prices and the night's refit; then the morning's prices
        # raise flags.
        script_prices(odds_api, matchday, morning - dt.timedelta(hours=14), closing=False)
        scheduler.run_until(scheduler.clock.now)
        scheduler.wake_at(at(eve, 18))
        scheduler.run_until(at(matchday.day, 7))
        script_prices(odds_api, matchday, morning, closing=True)
        scheduler.run_until(morning)

        # 2. The flags leave as signed alerts, one per flag event worth one.
        sent = send_alerts(engine, settings, morning)
        assert sent > 0
        messages = check_alerts(receiver, sent, flags_by_id(server), server)

        # 3. The user backs the outcome of an alert whose flag still stands, as the alert
        # priced it; the dashboard shows the flag, its alert and the bet.
        flags = flags_by_id(server)
        message = next(
            m
            for m in messages
            if m["event"] == "raised" and flags[m["flag_id"]]["status"] == "open"
        )
        bet = record_bet(server, message)
        check_morning_pages(browser, server, message, bet["id"], tmp_path)

        # 4. The evening: the season files hold the results, which settle the bet.
        serve_results(football_data, matchday)
        scheduler.run_until(at(matchday.day, 19))
        settled = check_settled(server, bet["id"], row_of_match(matchday, message))
        check_evening_page(browser, server, settled, tmp_path)
    engine.dispose()
