"""The reference lists: /teams in pages, and the counts of /bookmakers and /competitions kept
per worker for a stated time, right after a write when that time is 0."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.services.catalogue import CatalogueCounts
from app.services.ingest import import_football_data
from app.settings import Settings
from tests.apps import build_app
from tests.helpers import csv_rows, error_messages

SeasonFile = Callable[[str], Path]
SEASONS = ("E0_1819", "SP1_1819")


def teams_of(path: Path) -> set[str]:
    header, rows = csv_rows(path)
    home, away = header.index("HomeTeam"), header.index("AwayTeam")
    return {row[home] for row in rows} | {row[away] for row in rows}


def import_seasons(session: Session, season_file: SeasonFile, *names: str) -> None:
    for name in names:
        import_football_data(session, season_file(name).read_bytes())
    session.commit()


@pytest.fixture
def counted_each_time(settings: Settings, session: Session) -> Iterator[TestClient]:
    exact = settings.model_copy(update={"catalogue_counts_seconds": 0.0})
    with TestClient(build_app(exact, session)) as client:
        yield client


def test_teams_come_in_pages_by_name(
    client: TestClient, session: Session, season_file: SeasonFile
) -> None:
    import_seasons(session, season_file, *SEASONS)
    expected = sorted(set().union(*(teams_of(season_file(name)) for name in SEASONS)))
    assert len(expected) == 40  # twenty clubs in each league, none in both

    seen: list[str] = []
    for offset in range(0, 45, 15):
        page = client.get("/teams", params={"limit": 15, "offset": offset}).json()
        assert (page["total"], page["limit"], page["offset"]) == (40, 15, offset)
        seen += [team["name"] for team in page["items"]]
    assert seen == expected
    assert client.get("/teams").json()["limit"] == 100


def test_a_search_is_paginated_too(
    client: TestClient, session: Session, season_file: SeasonFile
) -> None:
    import_seasons(session, season_file, *SEASONS)
    names = set().union(*(teams_of(season_file(name)) for name in SEASONS))
    holding = sorted(name for name in names if "ll" in name.lower())
    assert len(holding) >= 3  # Sevilla, Valladolid, ...: more than one page of two

    first = client.get("/teams", params={"search": "ll", "limit": 2}).json()
    assert first["total"] == len(holding)
    rest = client.get("/teams", params={"search": "LL", "offset": 2}).json()
    assert [t["name"] for t in first["items"] + rest["items"]] == holding


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"limit": 0}, "query.limit"),
        ({"limit": 501}, "query.limit"),
        ({"limit": "many"}, "query.limit"),
        ({"offset": -1}, "query.offset"),
    ],
)
def test_a_bad_page_of_teams_is_a_422_problem(
    client: TestClient, params: dict[str, int | str], where: str
) -> None:
    response = client.get("/teams", params=params)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    (message,) = error_messages(response.json())
    assert message.startswith(f"{where}: ")


def quotes_by_code(client: TestClient) -> dict[str, dict[str, int]]:
    page = client.get("/bookmakers", params={"limit": 500}).json()
    return {b["code"]: b["quotes_by_phase"] for b in page["items"]}


def matches_by_code(client: TestClient) -> dict[str, int]:
    return {c["code"]: c["matches"] for c in client.get("/competitions").json()}


def test_counts_follow_an_import_and_a_deletion_at_once_when_kept_no_time(
    counted_each_time: TestClient,
    session: Session,
    season_file: SeasonFile,
    admin_headers: dict[str, str],
) -> None:
    client = counted_each_time
    import_seasons(session, season_file, "E0_1819")
    before = quotes_by_code(client)
    assert matches_by_code(client) == {"E0": 380}

    import_seasons(session, season_file, "SP1_1819")
    assert matches_by_code(client) == {"E0": 380, "SP1": 380}
    grown = quotes_by_code(client)
    assert all(sum(grown[code].values()) > sum(before[code].values()) for code in before)

    doomed = client.get("/matches", params={"competition": "SP1", "limit": 1}).json()["items"][0]
    # Each bookmaker's quote of each phase on this match (one of each in a season file).
    held = client.get(f"/matches/{doomed['id']}").json()["quotes"]
    assert held
    response = client.delete(f"/admin/matches/{doomed['id']}", headers=admin_headers)
    assert response.status_code == 200, response.text
    assert response.json()["quotes_deleted"] == len(held)

    assert matches_by_code(client) == {"E0": 380, "SP1": 379}
    expected = {code: dict(phases) for code, phases in grown.items()}
    for quote in held:
        expected[quote["bookmaker"]][quote["phase"]] -= 1
    assert quotes_by_code(client) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_counts_are_kept_for_the_stated_time_then_read_again(
    session: Session, season_file: SeasonFile
) -> None:
    clock = Clock()
    counts = CatalogueCounts(fresh_seconds=30, clock=clock)

    def matches() -> dict[str, int]:
        listed = asyncio.run(counts.competitions(session))
        return {summary.competition.code: summary.matches for summary in listed}

    try:
        import_seasons(session, season_file, "E0_1819")
        assert matches() == {"E0": 380}
        import_seasons(session, season_file, "SP1_1819")
        clock.now += 29.9
        # The new competition is listed (the list is read each time), its count not yet.
        assert matches() == {"E0": 380, "SP1": 0}
        clock.now += 0.1
        assert matches() == {"E0": 380, "SP1": 380}
    finally:
        counts.close()
