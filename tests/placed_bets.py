"""What the bettor's book's tests share: real matches of a season file, stored through the
admin API, and the closing probabilities worked out independently of the service.

The matches are the first rows of football-data.co.uk's E0 2018/19 file, byte for byte; the
figures the tests expect are worked out from the prices read here with the csv module.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.admin_requests import post_csv


@dataclass(frozen=True)
class SeasonMatch:
    """One row of a season file: its teams, goals and Pinnacle's prices."""

    home_team: str
    away_team: str
    home_goals: int
    away_goals: int
    pinnacle: tuple[float, float, float]  # PSH, PSD, PSA: before the match
    pinnacle_close: tuple[float, float, float]  # PSCH, PSCD, PSCA


def season_lines(path: Path, rows: int) -> bytes:
    """The header and the first ``rows`` matches of a season file, as stored."""
    lines = path.read_bytes().splitlines(keepends=True)
    return b"".join(lines[: rows + 1])


def season_matches(content: bytes) -> list[SeasonMatch]:
    found: list[SeasonMatch] = []
    for row in csv.DictReader(io.StringIO(content.decode("utf-8-sig"))):
        found.append(
            SeasonMatch(
                row["HomeTeam"],
                row["AwayTeam"],
                int(row["FTHG"]),
                int(row["FTAG"]),
                (float(row["PSH"]), float(row["PSD"]), float(row["PSA"])),
                (float(row["PSCH"]), float(row["PSCD"]), float(row["PSCA"])),
            )
        )
    return found


def store_season(
    client: TestClient, headers: dict[str, str], content: bytes
) -> list[tuple[int, SeasonMatch]]:
    """Import ``content`` through the admin API; each of its matches with its stored id."""
    imported = post_csv(client, headers, content)
    assert imported.status_code == 200, imported.text
    stored = []
    for match in season_matches(content):
        listed = client.get(
            "/matches", params={"home_team": match.home_team, "away_team": match.away_team}
        ).json()
        (item,) = listed["items"]
        stored.append((int(item["id"]), match))
    return stored


def power_probabilities(prices: tuple[float, ...]) -> list[float]:
    """The power method, solved by bisection (not the service's Newton): the k with
    sum((1/price)^k) = 1, each outcome's probability (1/price)^k."""
    low, high = 0.5, 2.0
    for _ in range(200):
        k = (low + high) / 2
        total = sum((1 / price) ** k for price in prices)
        # The sum falls as k grows (every 1/price is below 1).
        if total > 1:
            low = k
        else:
            high = k
    k = (low + high) / 2
    return [(1 / price) ** k for price in prices]


def bet_body(match_id: int, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "match_id": match_id,
        "outcome": "2",
        "bookmaker": "B365",
        "price": "13/2",
        "stake": 10,
        "placed_at": "2018-08-10T12:00:00Z",
    }
    body.update(overrides)
    return body


def post_bet(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/bets", json=body, headers=headers)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    assert response.headers["Location"] == f"/bets/{answer['id']}"
    return answer
