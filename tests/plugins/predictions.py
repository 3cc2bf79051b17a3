"""Predictions on the fitted data: the app whose writes are committed (the fixture
``committing_client``), an upcoming match stored with the quotes a test chooses, and the
power method's probabilities solved independently, with scipy's root finder."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.optimize import brentq

from app.main import create_app
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.helpers import received_at


def power_probabilities(home: float, draw: float, away: float) -> np.ndarray:
    implied = 1.0 / np.array([home, draw, away])
    k = brentq(lambda k: (implied**k).sum() - 1.0, 0.5, 5.0, xtol=1e-14)
    return np.asarray(implied**k)


@pytest.fixture
def committing_client(fitted_url: str) -> Iterator[TestClient]:
    """The app with its own sessions on fitted data of its own: what a request writes is
    committed, so the prediction service, which reads on connections of its own, sees it."""
    with TestClient(create_app(refit_settings_for(fitted_url))) as client:
        yield client


def upcoming_match(
    client: TestClient,
    quotes: list[tuple[str, tuple[float, float, float], str | None]],
    phase: str,
) -> int:
    """An upcoming match (Arsenal - Chelsea, kickoff 2030-01-05 15:00 UTC) whose only
    quotes are ``quotes`` (bookmaker, prices, captured_at) of ``phase``."""
    match = {
        "competition": "E0",
        "kickoff": "2030-01-05T15:00:00Z",
        "home_team": "Arsenal",
        "away_team": "Chelsea",
    }
    items = [
        {"match": match, "bookmaker": code, "home": home, "draw": draw, "away": away}
        | {"phase": phase, "captured_at": captured_at}
        for code, (home, draw, away), captured_at in quotes
    ]
    # Sent after the last of them was captured: none is from the future.
    with received_at(client, dt.datetime(2030, 1, 5, 16, 0, tzinfo=dt.UTC)):
        stored = client.post(
            "/admin/odds", json={"quotes": items}, headers={"X-API-Key": ADMIN_KEY}
        )
    assert stored.status_code == 200, stored.text
    upcoming = client.get("/matches", params={"status": "upcoming"}).json()["items"]
    match_id: int = next(m["id"] for m in upcoming if m["home_team"] == "Arsenal")
    return match_id
