"""Upcoming matches whose quotes are chosen by hand, the model version that serves them, and
databases seeded with both, for the tests of the value bets, the board and the dashboard.

The model trusts Bet&Win alone and de-margines multiplicatively, and Bet&Win quotes books
without margin, so each served probability is 1/price of its line.

Kickoffs are set relative to the real time of the test (the lists show what has not kicked
off yet): D1 is tomorrow (UTC), D2 the day after.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from app.domain.vocabulary import Method
from app.main import create_app
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.databases import Databases
from tests.helpers import hand_made_version, store_versions

NOW = dt.datetime.now(dt.UTC)
TOMORROW = (NOW + dt.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
D1 = TOMORROW
D2 = TOMORROW + dt.timedelta(days=1)
CAPTURED = NOW.replace(microsecond=0) - dt.timedelta(hours=1)
Prices = tuple[float, float, float]


@dataclass(frozen=True)
class Fixture:
    competition: str
    home: str
    away: str
    kickoff: dt.datetime
    quotes: dict[str, Prices]


# Served (Bet&Win, no margin): 0.5 / 0.25 / 0.25. B365's 2.2 is worth 0.5 × 2.2 − 1 = 0.1 on
# the home side; WH's 4.2 is worth 0.25 × 4.2 − 1 = 0.05 on the away side. Pinnacle's prices
# are never the best; its own line, used with source=PS, is its prices' 1/price normalised.
ARSENAL = Fixture(
    "E0",
    "Arsenal",
    "Chelsea",
    D1 + dt.timedelta(hours=12),
    {
        "BW": (2.0, 4.0, 4.0),
        "B365": (2.2, 3.4, 3.6),
        "WH": (2.1, 3.3, 4.2),
        "PS": (1.9, 3.2, 3.5),
    },
)


# Served 0.4 / 0.2 / 0.4 and no price above 1/p: no value at all.
EVERTON = Fixture(
    "E0",
    "Everton",
    "Fulham",
    D1 + dt.timedelta(hours=18),
    {"BW": (2.5, 5.0, 2.5), "B365": (2.4, 4.8, 2.45)},
)


# Served 0.8 / 0.1 / 0.1: B365's 1.3 is worth 0.04, its 11 is worth 0.1.
BARCELONA = Fixture(
    "SP1",
    "Barcelona",
    "Sevilla",
    D2 + dt.timedelta(hours=15),
    {"BW": (1.25, 10.0, 10.0), "B365": (1.3, 11.0, 8.0)},
)


# Value everywhere, but it kicked off an hour ago.
KICKED_OFF = Fixture(
    "E0",
    "Leeds",
    "Wolves",
    NOW - dt.timedelta(hours=1),
    {"BW": (2.0, 4.0, 4.0), "B365": (3.0, 5.0, 5.0)},
)


# Value, but eight days ahead: outside the default window of a week.
NEXT_WEEK = Fixture(
    "E0",
    "Burnley",
    "Watford",
    NOW + dt.timedelta(days=8),
    {"BW": (2.0, 4.0, 4.0), "B365": (2.3, 3.4, 3.6)},
)
FIXTURES = (ARSENAL, EVERTON, BARCELONA, KICKED_OFF, NEXT_WEEK)


def quote_items(fixture: Fixture) -> list[dict[str, Any]]:
    match = {
        "competition": fixture.competition,
        "kickoff": fixture.kickoff.isoformat(),
        "home_team": fixture.home,
        "away_team": fixture.away,
    }
    captured = min(CAPTURED, fixture.kickoff - dt.timedelta(hours=1))
    return [
        {"match": match, "bookmaker": code, "home": home, "draw": draw, "away": away}
        | {"captured_at": captured.isoformat()}
        for code, (home, draw, away) in fixture.quotes.items()
    ]


def barcelona_on_the_exchange() -> dict[str, Any]:
    """Betfair Exchange (5 % commission by default) on Barcelona: its draw at 12 pays
    1 + 11 × 0.95 = 11.45 net, more than B365's 11, so it is the draw's best price; served
    0.1, it is worth 0.1 × 11.45 − 1 = 0.145 (0.2 on the quoted 12), a quarter-Kelly stake
    of 0.25 × 0.145 / 10.45 = 0.0034689…. Its home and away are never the best."""
    return quote_items(BARCELONA)[1] | {"bookmaker": "BFE", "home": 1.2, "draw": 12.0, "away": 7.0}


def store(client: TestClient, items: list[dict[str, Any]]) -> None:
    stored = client.post("/admin/odds", json={"quotes": items}, headers={"X-API-Key": ADMIN_KEY})
    assert stored.status_code == 200, stored.text


def seed(client: TestClient) -> dict[str, int]:
    """Every fixture stored, and a price better than any other stamped after Everton's
    kickoff (refused: that is still to come, so it is never used); the ids of the matches
    by home team."""
    store(client, [item for fixture in FIXTURES for item in quote_items(fixture)])
    late = quote_items(EVERTON)[1] | {"home": 3.0, "draw": 4.0, "away": 2.2}
    late["captured_at"] = (EVERTON.kickoff + dt.timedelta(minutes=5)).isoformat()
    refused = client.post("/admin/odds", json={"quotes": [late]}, headers={"X-API-Key": ADMIN_KEY})
    assert refused.status_code == 422, refused.text
    matches = client.get("/matches", params={"limit": 100}).json()["items"]
    return {match["home_team"]: match["id"] for match in matches}


def store_model(database_url: str) -> int:
    """A committed, active version that trusts Bet&Win alone, de-margining multiplicatively."""
    (version_id,) = store_versions(
        database_url, hand_made_version(weights={"BW": 1.0}, method=Method.MULTIPLICATIVE)
    )
    return version_id


def app_on(database_url: str, **settings: Any) -> TestClient:
    return TestClient(create_app(refit_settings_for(database_url).model_copy(update=settings)))


@dataclass(frozen=True)
class Seeded:
    client: TestClient
    ids: dict[str, int]
    version: int
    database_url: str


@dataclass(frozen=True)
class SeededTemplate:
    """A sealed database holding the model and the seeded matches, and their ids."""

    url: str
    ids: dict[str, int]
    version: int


def seeded_template(
    databases: Databases,
    migrated_template: str,
    more: Callable[[TestClient], None] | None = None,
) -> SeededTemplate:
    """The model stored and every fixture seeded (then ``more``) once, for each test of a
    module to copy: storing them again for each test took longer than a copy."""
    template = databases.copy(migrated_template)
    version = store_model(template)
    with app_on(template) as client:
        ids = seed(client)
        if more is not None:
            more(client)
    databases.seal(template)
    return SeededTemplate(template, ids, version)


@contextmanager
def seeded_copy(databases: Databases, template: SeededTemplate) -> Iterator[Seeded]:
    """The app with its own sessions on a copy of ``template`` of its own (the prediction
    service reads on connections of its own, so what a test stores must be committed)."""
    database = databases.copy(template.url)
    try:
        with app_on(database) as client:
            yield Seeded(client, dict(template.ids), template.version, database)
    finally:
        databases.drop(database)
