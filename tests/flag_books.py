"""Books that raise a flag through the real ingest path, shared by the flag ledger's tests.

Books without margin are used where a figure is worked out by hand: their fair line is
1/price (power's exponent is 1), and with no model the served probability is the mean of the
bookmakers' fair lines.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi.testclient import TestClient

from tests.admin_requests import post_odds, quote
from tests.helpers import received_at


def at(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def book(
    kickoff: str,
    bookmaker: str,
    prices: tuple[float, float, float],
    captured: dt.datetime,
    **match: str,
) -> dict[str, Any]:
    """A quote of Arsenal v Chelsea in E0, unless ``match`` names other teams."""
    home, draw, away = prices
    named = {"competition": "E0", "home_team": "Arsenal", "away_team": "Chelsea", **match}
    return quote(
        match={**named, "kickoff": kickoff},
        bookmaker=bookmaker,
        home=home,
        draw=draw,
        away=away,
        captured_at=at(captured),
    )


def raise_away_flag(
    client: TestClient, headers: dict[str, str], kickoff: str, moment: dt.datetime, **match: str
) -> None:
    """PS 2, 4, 4 (fair 1/2, 1/4, 1/4) and B365 2.5, 5, 2.5 (fair 2/5, 1/5, 2/5): served
    0.45, 0.225, 0.325, so the away side at PS's 4.0 has EV 0.325 × 4 − 1 = 0.3, above the
    home side's 0.45 × 2.5 − 1 and the draw's 0.225 × 5 − 1 (both 0.125)."""
    captured = moment - dt.timedelta(hours=1)
    with received_at(client, moment):
        post_odds(
            client,
            headers,
            book(kickoff, "PS", (2.0, 4.0, 4.0), captured, **match),
            book(kickoff, "B365", (2.5, 5.0, 2.5), captured, **match),
        )


def season_file(home: str, away: str, goals: tuple[int, int], close: tuple[float, ...]) -> bytes:
    """An E0 season file of one match on 10 January 2026 at 15:00 with its result and
    Pinnacle's closing prices."""
    result = "H" if goals[0] > goals[1] else "A" if goals[0] < goals[1] else "D"
    header = "Div,Date,Time,HomeTeam,AwayTeam,FTHG,FTAG,FTR,PSCH,PSCD,PSCA"
    row = f"E0,10/01/2026,15:00,{home},{away},{goals[0]},{goals[1]},{result}," + ",".join(
        str(price) for price in close
    )
    return f"{header}\n{row}\n".encode()
