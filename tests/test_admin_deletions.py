"""Admin deletion of a match: its quotes go with it, and a match a model was trained on needs
force."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import Match, OddsQuote, Team
from tests.admin_requests import fixture, post_odds
from tests.helpers import count_rows, error_messages, hand_made_version

SeasonFile = Callable[[str], Path]


# --- DELETE /admin/matches/{id} ------------------------------------------------------------------


def stored_version(session: Session, start: dt.datetime, end: dt.datetime) -> int:
    """A model version trained on the matches that kicked off in [start, end)."""
    version = hand_made_version(window_start=start, window_end=end)
    session.add(version)
    session.commit()
    return version.id


def test_deleting_a_match_takes_its_quotes_and_nothing_else(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    post_odds(
        client,
        admin_headers,
        fixture("2018-11-10T15:00:00Z"),
        fixture("2018-11-10T15:00:00Z", bookmaker="PS"),
        fixture("2018-11-11T15:00:00Z", home="Everton", away="Fulham"),
    )
    doomed = session.scalars(
        select(Match.id).where(Match.home_team.has(Team.name == "Arsenal"))
    ).one()
    response = client.delete(f"/admin/matches/{doomed}", headers=admin_headers)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "id": doomed,
        "competition": "E0",
        "season": "2018/19",
        "kickoff": "2018-11-10T15:00:00Z",
        "home_team": "Arsenal",
        "away_team": "Chelsea",
        "quotes_deleted": 2,
        "model_versions": [],
    }
    assert client.get(f"/matches/{doomed}").status_code == 404
    assert count_rows(session, Match) == count_rows(session, OddsQuote) == 1
    again = client.delete(f"/admin/matches/{doomed}", headers=admin_headers)
    assert again.status_code == 404
    assert error_messages(again.json()) == [f"no match with id {doomed}"]


def test_a_match_a_model_was_trained_on_needs_force(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    post_odds(client, admin_headers, fixture("2018-11-10T15:00:00Z"))
    (match_id,) = session.scalars(select(Match.id)).all()
    version = stored_version(
        session, dt.datetime(2016, 6, 1, tzinfo=dt.UTC), dt.datetime(2019, 6, 1, tzinfo=dt.UTC)
    )
    # A version whose window ended before the kickoff was not trained on it.
    stored_version(
        session, dt.datetime(2015, 6, 1, tzinfo=dt.UTC), dt.datetime(2018, 11, 10, tzinfo=dt.UTC)
    )
    refused = client.delete(f"/admin/matches/{match_id}", headers=admin_headers)
    assert refused.status_code == 409
    (message,) = error_messages(refused.json())
    assert f"match {match_id} is inside the data window of model version {version}" in message
    assert "?force=true" in message
    assert count_rows(session, Match) == count_rows(session, OddsQuote) == 1
    forced = client.delete(
        f"/admin/matches/{match_id}", params={"force": "true"}, headers=admin_headers
    )
    assert forced.status_code == 200
    assert forced.json()["model_versions"] == [version]
    assert count_rows(session, Match) == count_rows(session, OddsQuote) == 0


@pytest.mark.parametrize("match_id", ["0", "-1", "abc", "2147483648"])
def test_deleting_an_id_that_cannot_be_one_is_422(
    client: TestClient, admin_headers: dict[str, str], match_id: str
) -> None:
    response = client.delete(f"/admin/matches/{match_id}", headers=admin_headers)
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("path.match_id: ")


def test_deleting_a_match_needs_the_key(client: TestClient) -> None:
    assert client.delete("/admin/matches/1").status_code == 401
