"""Requests to the admin API as the tests write them: a quote of the JSON ingest, a season
file posted, The Odds API's events of tests/fixtures, an alias."""

from __future__ import annotations

import copy
from typing import Any

from fastapi.testclient import TestClient

from tests.odds_api_site import EPL_EVENTS

E0_1819_PRICE_PREFIXES = ("B365", "BW", "IW", "PS", "WH", "VC", "PSC")


def quote(**overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "match": {
            "competition": "E0",
            "kickoff": "2018-08-10T19:00:00Z",
            "home_team": "Man United",
            "away_team": "Leicester",
            "external_id": None,
        },
        "bookmaker": "B365",
        "home": 1.57,
        "draw": 3.9,
        "away": 7.5,
        "phase": "pre",
        "captured_at": None,
    }
    match_overrides = overrides.pop("match", {})
    item.update(overrides)
    item["match"].update(match_overrides)
    return item


def post_csv(client: TestClient, headers: dict[str, str], content: bytes, **params: str) -> Any:
    return client.post(
        "/admin/import/football-data",
        content=content,
        params=params,
        headers={**headers, "Content-Type": "text/csv"},
    )


def odds_api_events() -> list[dict[str, Any]]:
    """The two EPL events of tests/fixtures, a copy of its own for the test to change."""
    return copy.deepcopy(EPL_EVENTS)


def alias(client: TestClient, headers: dict[str, str], name: str, team: str) -> Any:
    return client.post("/admin/teams/aliases", json={"alias": name, "team": team}, headers=headers)


def fixture(
    kickoff: str, *, home: str = "Arsenal", away: str = "Chelsea", **overrides: Any
) -> dict[str, Any]:
    """A quote for one fixture of E0 (unless told otherwise) on a given kickoff."""
    match = {"home_team": home, "away_team": away, "kickoff": kickoff}
    match.update(overrides.pop("match", {}))
    return quote(match=match, **overrides)


def post_odds(client: TestClient, headers: dict[str, str], *quotes: dict[str, Any]) -> Any:
    response = client.post("/admin/odds", json={"quotes": list(quotes)}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def season_file_with_bookmakers(count: int) -> bytes:
    """One match priced by ``count`` bookmakers, pre-match and closing."""
    codes = [f"BK{i}" for i in range(count)]
    prices = [f"{p}{side}" for code in codes for p in (code, f"{code}C") for side in "HDA"]
    header = ",".join(["Div", "Date", "HomeTeam", "AwayTeam", *prices])
    row = ",".join(["E0", "01/03/2019", "A", "B", *["2.5"] * len(prices)])
    return f"{header}\n{row}\n".encode()
