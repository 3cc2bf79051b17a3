"""Capture times the service can believe.

A quote's ``captured_at`` later than the moment the service received it, plus a small skew
for a sender's clock running ahead, is refused: 422 naming the field at the admin API, a
skipped and reported quote in a file or a feed. A quote stored with such a time (before the
check, or written by hand) counts as captured when it arrived: it never outranks a quote
captured after that, its age is never negative and it is never "updated 0 min ago".

The moments below are chosen around the real time of the test where the service reads the
clock (a match must be upcoming to be listed), and injected where the boundary matters.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.api.deps import received_now
from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, OddsQuote, PredictionLogEntry
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.tables import MatchTable, QuoteTable
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Phase
from app.main import create_app
from app.services import track_record
from app.services.ingest import ingest_batch
from app.settings import Settings
from tests.apps import ADMIN_KEY, build_app, refit_settings_for
from tests.commands import Oddsboost
from tests.helpers import count_rows

UTC = dt.UTC
ROOT = Path(__file__).resolve().parents[1]
# The README and the docs pages, whose examples show capture times.
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# An injected moment of receipt, and the skew the tests that inject it allow.
RECEIVED = dt.datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SKEW = dt.timedelta(minutes=2)
Prices = tuple[float, float, float]
# Bet365's price from the future, and its newer real one (the issue's figures).
FUTURE_PRICES: Prices = (2.3, 3.3, 3.2)
NEWER_PRICES: Prices = (1.5, 4.2, 6.5)


def stamp(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def parsed(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def quote_item(
    kickoff: dt.datetime, captured: dt.datetime | None, *, bookmaker: str = "B365"
) -> dict[str, Any]:
    home, draw, away = NEWER_PRICES
    return {
        "match": {
            "competition": "E0",
            "kickoff": stamp(kickoff),
            "home_team": "Arsenal",
            "away_team": "Chelsea",
        },
        "bookmaker": bookmaker,
        "home": home,
        "draw": draw,
        "away": away,
        "captured_at": None if captured is None else stamp(captured),
    }


def now() -> dt.datetime:
    return dt.datetime.now(UTC).replace(microsecond=0)


# --- refused as it arrives ------------------------------------------------------------------


def test_a_quote_captured_in_the_future_is_refused_naming_its_field(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    moment = now()
    kickoff = moment + dt.timedelta(days=5)
    items = [
        quote_item(kickoff, moment - dt.timedelta(hours=1)),
        quote_item(kickoff, moment + dt.timedelta(days=3), bookmaker="WH"),
    ]
    response = client.post("/admin/odds", json={"quotes": items}, headers=admin_headers)
    assert response.status_code == 422, response.text
    errors = response.json()["errors"]
    assert [error["loc"] for error in errors] == [["body", "quotes", 1, "captured_at"]]
    assert "in the future" in errors[0]["msg"]
    assert (count_rows(session, OddsQuote), count_rows(session, Match)) == (0, 0)


def test_a_capture_time_may_be_ahead_of_the_receipt_by_the_skew_and_no_more(
    settings: Settings, session: Session
) -> None:
    skewed = settings.model_copy(update={"capture_skew_seconds": SKEW.total_seconds()})
    app = build_app(skewed, session)
    app.dependency_overrides[received_now] = lambda: RECEIVED
    kickoff = RECEIVED + dt.timedelta(days=5)
    headers = {"X-API-Key": ADMIN_KEY}
    with TestClient(app) as client:
        beyond = quote_item(kickoff, RECEIVED + SKEW + dt.timedelta(seconds=1))
        refused = client.post("/admin/odds", json={"quotes": [beyond]}, headers=headers)
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["msg"] == (
            "2026-11-21T12:02:01Z is in the future: later than the moment the prices were "
            "received, 2026-11-21T12:00:00Z, by more than the 120 s allowed for a clock "
            "running ahead"
        )
        within = quote_item(kickoff, RECEIVED + SKEW)
        accepted = client.post("/admin/odds", json={"quotes": [within]}, headers=headers)
        assert accepted.status_code == 200, accepted.text
    stored = session.scalars(select(OddsQuote)).one()
    assert (stored.captured_at, stored.received_at) == (RECEIVED + SKEW, RECEIVED)


def odds_api_events(kickoff: dt.datetime, updates: list[dt.datetime]) -> list[dict[str, Any]]:
    """One event of The Odds API whose bookmakers updated their h2h prices at ``updates``:
    each lists a totals market, then the h2h market; the first bookmaker dates its h2h
    market, the others only themselves."""
    outcomes = [
        {"name": "Arsenal", "price": 2.1},
        {"name": "Chelsea", "price": 3.6},
        {"name": "Draw", "price": 3.4},
    ]
    bookmakers: list[dict[str, Any]] = []
    keys = ("pinnacle", "bet365", "williamhill")
    for index, (key, updated) in enumerate(zip(keys, updates, strict=True)):
        h2h: dict[str, Any] = {"key": "h2h", "outcomes": outcomes}
        if index == 0:
            h2h["last_update"] = stamp(updated)
        markets = [{"key": "totals", "outcomes": []}, h2h]
        bookmakers.append(
            {"key": key, "title": key, "last_update": stamp(updated), "markets": markets}
        )
    return [
        {
            "id": "e912304de2b2ce35b473ce2ecd3d1502",
            "sport_key": "soccer_epl",
            "commence_time": stamp(kickoff),
            "home_team": "Arsenal",
            "away_team": "Chelsea",
            "bookmakers": bookmakers,
        }
    ]


def test_the_odds_api_import_refuses_prices_updated_in_the_future(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    moment = now()
    future = moment + dt.timedelta(days=3)
    events = odds_api_events(
        moment + dt.timedelta(days=10), [future, future, moment - dt.timedelta(hours=1)]
    )
    response = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert response.status_code == 422, response.text
    assert [error["loc"] for error in response.json()["errors"]] == [
        ["body", 0, "bookmakers", 0, "markets", 1, "last_update"],
        ["body", 0, "bookmakers", 1, "last_update"],
    ]
    assert count_rows(session, OddsQuote) == 0


@pytest.fixture
def oddsboost(monkeypatch: pytest.MonkeyPatch) -> Oddsboost:
    return Oddsboost(monkeypatch)


def test_a_file_import_skips_and_reports_a_price_updated_in_the_future(
    oddsboost: Oddsboost, migrated_url: str, tmp_path: Path
) -> None:
    moment = now()
    events = odds_api_events(
        moment + dt.timedelta(days=10),
        [moment + dt.timedelta(minutes=10), moment - dt.timedelta(hours=2), moment],
    )
    path = tmp_path / "response.json"
    path.write_text(json.dumps(events))
    env = {"ODDSBOOST_DATABASE_URL": migrated_url}
    result = oddsboost.run("import", "the-odds-api", str(path), "--json", env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)["total"]
    assert report["quotes_inserted"] == 2
    [skipped] = report["skipped"]
    assert (skipped["where"], skipped["field"]) == ("[0].bookmakers[0]", "last_update")
    assert "in the future" in skipped["reason"]
    # The setting is the file import's too: an hour of skew lets the price in.
    lenient = {**env, "ODDSBOOST_CAPTURE_SKEW_SECONDS": "3600"}
    again = oddsboost.run("import", "the-odds-api", str(path), "--json", env=lenient)
    assert json.loads(again.stdout)["total"]["quotes_inserted"] == 1


# --- stored before: counted as captured when received ----------------------------------------


def legacy_quote(
    session: Session,
    *,
    kickoff: dt.datetime,
    captured: dt.datetime,
    received: dt.datetime,
    prices: Prices = FUTURE_PRICES,
) -> None:
    """A Bet365 quote of Arsenal - Chelsea stored as the service stored one before capture
    times were checked: ``captured`` however far past ``received``."""
    home, draw, away = prices
    batch = IngestBatch(
        matches=[MatchRecord("E0", "Arsenal", "Chelsea", kickoff)],
        quotes=[QuoteRecord(0, "B365", Phase.PRE, home, draw, away, captured_at=received)],
    )
    ingest_batch(session, batch, source="a test", now=received)
    session.execute(update(OddsQuote).values(captured_at=captured))
    session.flush()


@pytest.fixture
def database(migrated_url: str) -> Iterator[tuple[str, Session]]:
    """A database of the test's own (the prediction service reads on connections of its
    own) and a session that commits on it."""
    engine = make_engine(migrated_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        yield migrated_url, session
    engine.dispose()


def served_home_price(client: TestClient, match_id: int) -> tuple[float, str | None]:
    answer = client.post("/predict", json={"match_id": match_id})
    assert answer.status_code == 200, answer.text
    home = answer.json()["value"]["outcomes"]["home"]
    assert home["bookmaker"] == "B365"
    return home["price"], home["captured_at"]


def test_a_stored_quote_from_the_future_never_outranks_a_newer_one(
    database: tuple[str, Session],
) -> None:
    url, session = database
    moment = now()
    kickoff = moment + dt.timedelta(days=5)
    legacy_quote(
        session,
        kickoff=kickoff,
        captured=moment + dt.timedelta(days=3),
        received=moment - dt.timedelta(hours=2),
    )
    session.commit()
    newer = moment - dt.timedelta(hours=1)
    with TestClient(create_app(refit_settings_for(url))) as client:
        stored = client.post(
            "/admin/odds",
            json={"quotes": [quote_item(kickoff, newer)]},
            headers={"X-API-Key": ADMIN_KEY},
        )
        assert stored.status_code == 200, stored.text
        match_id = client.get("/matches").json()["items"][0]["id"]
        price, captured = served_home_price(client, match_id)
        assert (price, parsed(captured or "")) == (NEWER_PRICES[0], newer)
        [latest] = client.get(f"/matches/{match_id}").json()["quotes"]
        assert (latest["home"], parsed(latest["captured_at"])) == (NEWER_PRICES[0], newer)
        [item] = client.get("/upcoming").json()["items"]
        assert item["value"]["outcomes"][0]["price"] == NEWER_PRICES[0]
        assert parsed(item["freshness"]["newest_captured_at"]) == newer


def test_a_stored_quote_from_the_future_is_as_old_as_its_receipt(
    database: tuple[str, Session],
) -> None:
    url, session = database
    moment = now()
    received = moment - dt.timedelta(hours=2)
    legacy_quote(
        session,
        kickoff=moment + dt.timedelta(days=5),
        captured=moment + dt.timedelta(days=3),
        received=received,
    )
    session.commit()
    with TestClient(create_app(refit_settings_for(url))) as client:
        body = client.get("/upcoming").json()
        freshness = body["items"][0]["freshness"]
        assert parsed(freshness["newest_captured_at"]) == received
        assert freshness["age_seconds"] == (parsed(body["answered_at"]) - received).total_seconds()
        assert freshness["age_seconds"] >= 2 * 3600
        page = client.get("/dashboard").text
        assert "updated 2 h ago" in page
        assert "updated 0 min ago" not in page
        match_id = body["items"][0]["match"]["id"]
        [shown] = client.get(f"/matches/{match_id}").json()["quotes"]
        assert (parsed(shown["captured_at"]), parsed(shown["received_at"])) == (received, received)


def test_a_quote_stamped_after_kickoff_but_received_before_was_held_at_kickoff(
    session: Session, settings: Settings
) -> None:
    kickoff = dt.datetime(2026, 11, 1, 15, 0, tzinfo=UTC)
    received = kickoff - dt.timedelta(hours=2)
    legacy_quote(
        session, kickoff=kickoff, captured=kickoff + dt.timedelta(hours=1), received=received
    )
    logged = track_record.log_kickoffs(session, settings, now=kickoff + dt.timedelta(hours=3))
    assert logged == track_record.LogCount(written=1)
    entry = session.scalars(select(PredictionLogEntry)).one()
    assert [(q.bookmaker, q.captured_at) for q in entry.served.quotes] == [("B365", received)]


def test_the_latest_valid_quote_is_chosen_by_capture_times_never_later_than_receipt() -> None:
    received = dt.datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    kickoff = received + dt.timedelta(days=5)
    matches = MatchTable.from_columns(
        ids=[7], kickoff=[kickoff], result=[None], competition=["E0"], season=["2026/27"]
    )
    hour = dt.timedelta(hours=1)
    quotes = QuoteTable.from_columns(
        matches,
        match_ids=[7, 7, 7],
        bookmaker=["B365", "B365", "WH"],
        phase=["pre", "pre", "pre"],
        # Bet365 stamped three days ahead, then an hour later a real quote; William Hill
        # stamped after kickoff, received a day before it.
        captured_at=[received + dt.timedelta(days=3), received + hour, kickoff + hour],
        received_at=[received, received + hour, kickoff - dt.timedelta(days=1)],
        prices=[FUTURE_PRICES, NEWER_PRICES, NEWER_PRICES],
    )
    chosen = select_latest_valid(matches, quotes, Phase.PRE)
    assert sorted(chosen.tolist()) == [1, 2]
    assert quotes.captured_at.tolist() == [
        received.timestamp(),
        (received + hour).timestamp(),
        (kickoff - dt.timedelta(days=1)).timestamp(),
    ]
    undated = QuoteTable.from_columns(
        matches,
        match_ids=[7],
        bookmaker=["B365"],
        phase=["pre"],
        captured_at=[None],
        received_at=[received],
        prices=[FUTURE_PRICES],
    )
    assert np.isnan(undated.captured_at).all()


# --- the examples the service documents ------------------------------------------------------

CAPTURE_FIELDS = ("captured_at", "last_update", "newest_captured_at", "oldest_captured_at")
CAPTURE_IN_TEXT = re.compile(
    r'"(?:' + "|".join(CAPTURE_FIELDS) + r')"\s*:\s*"(?P<moment>[0-9][^"]*)"'
)


def example_captures(node: Any) -> Iterator[str]:
    """Every capture time written in a JSON document's values."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CAPTURE_FIELDS and isinstance(value, str):
                yield value
            else:
                yield from example_captures(value)
    elif isinstance(node, list):
        for item in node:
            yield from example_captures(item)


def test_no_documented_example_captures_a_price_in_the_future(settings: Settings) -> None:
    text = "\n".join(path.read_text() for path in DOCUMENTS)
    in_readme = [match["moment"] for match in CAPTURE_IN_TEXT.finditer(text)]
    in_api_docs = list(example_captures(create_app(settings).openapi()))
    assert in_readme
    assert in_api_docs
    moment = dt.datetime.now(UTC)
    future = [text for text in in_readme + in_api_docs if parsed(text) > moment]
    assert future == []
