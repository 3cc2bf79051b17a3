"""Public read API: listing with filters and pagination, match detail, reference lists."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.services.ingest import import_football_data
from tests.helpers import count_complete_triples, csv_rows, error_messages

SeasonFile = Callable[[str], Path]


@pytest.fixture
def two_seasons(session: Session, season_file: SeasonFile) -> None:
    for name in ("E0_1819", "SP1_1819"):
        import_football_data(session, season_file(name).read_bytes())
    session.commit()


@pytest.mark.usefixtures("two_seasons")
def test_pages_cover_every_match_exactly_once(client: TestClient) -> None:
    seen: list[int] = []
    offset = 0
    while True:
        page = client.get("/matches", params={"limit": 150, "offset": offset}).json()
        assert page["total"] == 760
        assert page["limit"] == 150
        assert page["offset"] == offset
        if not page["items"]:
            break
        seen.extend(item["id"] for item in page["items"])
        offset += 150
    assert len(seen) == len(set(seen)) == 760


@pytest.mark.usefixtures("two_seasons")
def test_matches_are_ordered_by_kickoff(client: TestClient) -> None:
    params: dict[str, str | int] = {"competition": "E0", "limit": 500}
    ascending = client.get("/matches", params=params).json()["items"]
    kickoffs = [item["kickoff"] for item in ascending]
    assert len(kickoffs) == 380
    assert kickoffs == sorted(kickoffs)
    descending = client.get("/matches", params={**params, "order": "desc"}).json()["items"]
    assert [item["kickoff"] for item in descending] == sorted(kickoffs, reverse=True)


@pytest.mark.usefixtures("two_seasons")
def test_filters(client: TestClient, season_file: SeasonFile) -> None:
    def total(**params: str) -> int:
        response = client.get("/matches", params=params)
        assert response.status_code == 200, response.text
        count: int = response.json()["total"]
        return count

    assert total(competition="E0") == 380
    assert total(competition="SP1") == 380
    assert total(competition="XX") == 0
    assert total(season="2018/19") == 760
    assert total(status="settled") == 760
    assert total(status="upcoming") == 0
    # Independent count: E0 rows dated in August 2018, read with the csv module.
    header, rows = csv_rows(season_file("E0_1819"))
    august = sum(1 for row in rows if row[header.index("Date")].endswith("/08/2018"))
    assert total(competition="E0", **{"from": "2018-08-01", "to": "2018-08-31T23:59:59"}) == august
    assert total(**{"from": "2018-08-10T00:00:00Z", "to": "2018-08-10T00:00:00Z"}) == 1


def test_upcoming_and_unsettled(client: TestClient, admin_headers: dict[str, str]) -> None:
    now = dt.datetime.now(dt.UTC)
    quotes = []
    for home, kickoff in (
        ("Future", now + dt.timedelta(days=2)),
        ("Past", now - dt.timedelta(days=2)),
    ):
        quotes.append(
            {
                "match": {
                    "competition": "E0",
                    "kickoff": kickoff.isoformat(),
                    "home_team": home,
                    "away_team": "Away",
                },
                "bookmaker": "B365",
                "home": 2.0,
                "draw": 3.4,
                "away": 3.8,
            }
        )
    client.post("/admin/odds", json={"quotes": quotes}, headers=admin_headers)
    upcoming = client.get("/matches", params={"status": "upcoming"}).json()["items"]
    unsettled = client.get("/matches", params={"status": "unsettled"}).json()["items"]
    assert [(m["home_team"], m["status"]) for m in upcoming] == [("Future", "upcoming")]
    assert [(m["home_team"], m["status"]) for m in unsettled] == [("Past", "unsettled")]


@pytest.mark.usefixtures("two_seasons")
def test_match_detail_has_the_latest_quote_per_bookmaker_and_phase(client: TestClient) -> None:
    first = client.get("/matches", params={"competition": "E0", "limit": 1}).json()["items"][0]
    detail = client.get(f"/matches/{first['id']}").json()
    assert (detail["home_team"], detail["away_team"], detail["result"]) == (
        "Man United",
        "Leicester",
        "1",
    )
    assert [(q["bookmaker"], q["phase"]) for q in detail["quotes"]] == [
        ("B365", "pre"),
        ("BW", "pre"),
        ("IW", "pre"),
        ("PS", "pre"),
        ("VC", "pre"),
        ("WH", "pre"),
        ("PS", "closing"),
    ]
    assert detail["quotes"][0]["bookmaker_name"] == "Bet365"


@pytest.mark.parametrize("path", ["/matches/999999", "/matches/2147483647"])
def test_unknown_match_is_404(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.json()["detail"].startswith("no match with id")


def test_invalid_listing_parameters(client: TestClient) -> None:
    assert client.get("/matches", params={"limit": 501}).status_code == 422
    assert "at most 500" in client.get("/matches", params={"limit": 501}).json()["detail"]
    assert client.get("/matches", params={"limit": 0}).status_code == 422
    assert client.get("/matches", params={"offset": -1}).status_code == 422
    assert client.get("/matches", params={"status": "live"}).status_code == 422
    assert client.get("/matches", params={"from": "last week"}).status_code == 422
    assert client.get("/matches/abc").status_code == 422
    assert client.get("/matches/0").status_code == 422


@pytest.mark.usefixtures("two_seasons")
def test_bookmakers_and_competitions(client: TestClient, season_file: SeasonFile) -> None:
    bookmakers = {b["code"]: b for b in client.get("/bookmakers").json()["items"]}
    assert set(bookmakers) == {"B365", "BW", "IW", "PS", "WH", "VC"}
    expected_b365 = sum(
        count_complete_triples(season_file(n), "B365") for n in ("E0_1819", "SP1_1819")
    )
    assert bookmakers["B365"]["quotes"] == expected_b365
    assert bookmakers["B365"]["quotes_by_phase"] == {"pre": expected_b365, "closing": 0}

    def both_seasons(prefix: str) -> int:
        return sum(count_complete_triples(season_file(n), prefix) for n in ("E0_1819", "SP1_1819"))

    expected_ps = both_seasons("PS") + both_seasons("PSC")
    assert bookmakers["PS"] == {
        "code": "PS",
        "name": "Pinnacle",
        "quotes": expected_ps,
        "quotes_by_phase": {"pre": both_seasons("PS"), "closing": both_seasons("PSC")},
    }
    assert client.get("/competitions").json() == [
        {"code": "E0", "name": None, "matches": 380},
        {"code": "SP1", "name": None, "matches": 380},
    ]


def test_empty_database_lists_nothing(client: TestClient) -> None:
    assert client.get("/matches").json() == {"items": [], "total": 0, "limit": 50, "offset": 0}
    assert client.get("/bookmakers").json() == {"items": [], "total": 0, "limit": 100, "offset": 0}
    assert client.get("/teams").json() == {"items": [], "total": 0, "limit": 100, "offset": 0}


def test_a_competition_filter_takes_every_code_the_database_holds(client: TestClient) -> None:
    # Codes are stored up to 64 characters; the filter must accept as much, and no more.
    longest = "X" * 64
    answer = client.get("/matches", params={"competition": longest})
    assert answer.status_code == 200
    assert answer.json()["total"] == 0
    assert client.get("/matches", params={"competition": longest + "X"}).status_code == 422


@pytest.mark.parametrize("season", ["banana", "x; DROP", "2018/2019", "18/19"])
def test_a_season_filter_that_is_not_a_season_is_422(client: TestClient, season: str) -> None:
    response = client.get("/matches", params={"season": season})
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("query.season: ")
    assert "YYYY/YY (two consecutive years, e.g. 2018/19) or YYYY (a calendar year" in message


@pytest.mark.usefixtures("two_seasons")
def test_a_season_filter_in_either_form(client: TestClient) -> None:
    assert client.get("/matches", params={"season": "2018/19"}).json()["total"] == 760
    assert client.get("/matches", params={"season": "2018"}).json()["total"] == 0
    # Blank means not given, as it does for an import.
    assert client.get("/matches", params={"season": " "}).json()["total"] == 760


@pytest.mark.usefixtures("two_seasons")
def test_bookmakers_come_in_pages_like_matches(client: TestClient) -> None:
    codes = ["B365", "BW", "IW", "PS", "VC", "WH"]  # by code
    first = client.get("/bookmakers", params={"limit": 4}).json()
    assert (first["total"], first["limit"], first["offset"]) == (6, 4, 0)
    assert [b["code"] for b in first["items"]] == codes[:4]
    rest = client.get("/bookmakers", params={"limit": 4, "offset": 4}).json()
    assert [b["code"] for b in rest["items"]] == codes[4:]
    assert client.get("/bookmakers", params={"limit": 501}).status_code == 422
    assert client.get("/bookmakers", params={"offset": -1}).status_code == 422


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        ("/matches", {"competition": "\x00"}, "query.competition"),
        ("/matches", {"season": "a\x00b"}, "query.season"),
        ("/teams", {"search": "\x00"}, "query.search"),
        ("/bookmakers", {"unused\x00": "1"}, "query.unused\x00"),
        ("/matches/%00", {}, "path"),
    ],
)
def test_a_nul_character_in_a_query_or_path_is_422(
    client: TestClient, path: str, params: dict[str, str], where: str
) -> None:
    # PostgreSQL cannot hold a NUL in text: it is refused where it comes in, on every backend.
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    (message,) = error_messages(response.json())
    assert message.startswith(f"{where}: ")
    assert "NUL" in message


@pytest.mark.usefixtures("two_seasons")
def test_a_match_is_found_by_its_teams_and_day_in_any_letter_case(client: TestClient) -> None:
    found = client.get(
        "/matches",
        params={"home_team": "MAN UNITED", "away_team": "leicester", "date": "2018-08-10"},
    ).json()
    assert [(m["home_team"], m["away_team"], m["kickoff"][:10]) for m in found["items"]] == [
        ("Man United", "Leicester", "2018-08-10")
    ]
    assert found["total"] == 1
    # The day before and the day after hold no match of theirs.
    for day in ("2018-08-09", "2018-08-11"):
        params = {"home_team": "Man United", "date": day}
        assert client.get("/matches", params=params).json()["total"] == 0


@pytest.mark.usefixtures("two_seasons")
def test_a_team_filter_counts_every_match_it_played_on_that_side(
    client: TestClient, season_file: SeasonFile
) -> None:
    header, rows = csv_rows(season_file("E0_1819"))
    home_games = sum(1 for row in rows if row[header.index("HomeTeam")] == "Arsenal")
    away_games = sum(1 for row in rows if row[header.index("AwayTeam")] == "Arsenal")
    assert client.get("/matches", params={"home_team": "arsenal"}).json()["total"] == home_games
    assert client.get("/matches", params={"away_team": "Arsenal"}).json()["total"] == away_games
    # A day of the file: its matches, read with the csv module (dates are dd/mm/yyyy).
    on_day = sum(1 for row in rows if row[header.index("Date")] == "01/09/2018")
    assert on_day > 1
    assert (
        client.get("/matches", params={"date": "2018-09-01", "competition": "E0"}).json()["total"]
        == on_day
    )


@pytest.mark.usefixtures("two_seasons")
def test_a_team_is_found_by_its_alias_and_an_unknown_one_finds_nothing(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    added = client.post(
        "/admin/teams/aliases",
        json={"alias": "Manchester United", "team": "Man United"},
        headers=admin_headers,
    )
    assert added.status_code == 200, added.text
    by_alias = client.get(
        "/matches", params={"home_team": "manchester united", "date": "2018-08-10"}
    ).json()
    assert [m["home_team"] for m in by_alias["items"]] == ["Man United"]
    nobody = client.get("/matches", params={"home_team": "Nobody FC"})
    assert nobody.status_code == 200
    assert nobody.json()["items"] == []


@pytest.mark.parametrize(
    "day", ["2018-02-30", "10/08/2018", "yesterday", "0", "1533859200", "9999-12-31", "1899-12-31"]
)
def test_a_day_that_is_no_calendar_day_is_refused(client: TestClient, day: str) -> None:
    response = client.get("/matches", params={"date": day})
    assert response.status_code == 422
    assert [message.split(":")[0] for message in error_messages(response.json())] == ["query.date"]
