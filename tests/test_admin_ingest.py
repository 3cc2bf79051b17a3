"""Admin ingest: the admin key, strict JSON odds and results, season files and The Odds
API's events, their limits, look-alike names and rescheduled fixtures."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import Bookmaker, Match, OddsQuote, Team, TeamAlias
from app.settings import Settings
from tests.admin_requests import (
    E0_1819_PRICE_PREFIXES,
    alias,
    fixture,
    odds_api_events,
    post_csv,
    post_odds,
    quote,
    season_file_with_bookmakers,
)
from tests.apps import ADMIN_KEY, build_app
from tests.football_data_site import EXTRA_FIXTURES, MAIN_FIXTURES
from tests.helpers import count_complete_triples, count_rows, error_messages
from tests.odds_api_site import FIXTURES

SeasonFile = Callable[[str], Path]


# --- auth --------------------------------------------------------------------------------


def test_missing_key_is_401(client: TestClient) -> None:
    response = client.post("/admin/odds", json={"quotes": [quote()]})
    assert response.status_code == 401
    assert "X-API-Key" in response.json()["detail"]


def test_wrong_key_is_403(client: TestClient) -> None:
    response = client.post("/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": "nope"})
    assert response.status_code == 403


def test_right_key_is_accepted(client: TestClient, admin_headers: dict[str, str]) -> None:
    response = client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert response.status_code == 200


def test_admin_api_is_disabled_without_a_key(database_url: str, session: Session) -> None:
    app = build_app(Settings(database_url=database_url, admin_api_key=None), session)
    with TestClient(app) as client:
        response = client.post(
            "/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": "x"}
        )
    assert response.status_code == 503
    assert response.json()["detail"] == "admin API disabled: set ODDSBOOST_ADMIN_API_KEY"


def test_bad_input_is_not_checked_before_auth(client: TestClient) -> None:
    # An anonymous caller learns nothing about validation: auth comes first.
    response = client.post("/admin/odds", json={"quotes": "nonsense"})
    assert response.status_code == 401


# --- POST /admin/odds ------------------------------------------------------------------


def test_odds_create_everything_then_are_idempotent(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    payload = {
        "quotes": [
            quote(),
            quote(bookmaker="PS", home=1.58, draw=3.93, away=7.5),
            quote(bookmaker="PS", phase="closing", home=1.55, draw=4.07, away=7.69),
        ]
    }
    first = client.post("/admin/odds", json=payload, headers=admin_headers).json()
    assert (first["matches_created"], first["quotes_inserted"], first["skipped"]) == (1, 3, [])
    assert count_rows(session, Team) == 2
    assert {b.code for b in session.scalars(select(Bookmaker))} == {"B365", "PS"}

    second = client.post("/admin/odds", json=payload, headers=admin_headers).json()
    assert second["matches_created"] == second["quotes_inserted"] == 0
    assert second["matches_unchanged"] == 1
    assert second["quotes_unchanged"] == 3
    assert count_rows(session, OddsQuote) == 3


def test_a_corrected_price_updates_the_quote(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    report = client.post(
        "/admin/odds", json={"quotes": [quote(home=1.6)]}, headers=admin_headers
    ).json()
    assert (report["quotes_updated"], report["quotes_inserted"]) == (1, 0)
    assert session.scalars(select(OddsQuote.home)).all() == [1.6]


def test_quotes_with_different_capture_times_are_kept_apart(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    quotes = [
        quote(captured_at="2018-08-09T10:00:00Z", home=1.60),
        quote(captured_at="2018-08-10T10:00:00Z", home=1.55),
        quote(captured_at=None, home=1.70),
    ]
    report = client.post("/admin/odds", json={"quotes": quotes}, headers=admin_headers).json()
    assert report["quotes_inserted"] == 3
    match_id = client.get("/matches").json()["items"][0]["id"]
    detail = client.get(f"/matches/{match_id}").json()
    # The latest dated quote wins; an undated quote counts as older than any dated one.
    assert [(q["bookmaker"], q["home"]) for q in detail["quotes"]] == [("B365", 1.55)]


def test_one_invalid_item_rejects_the_whole_request(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    payload = {
        "quotes": [
            quote(),
            quote(bookmaker="PS", home=0.95),
            quote(bookmaker="WH", match={"home_team": "Arsenal", "away_team": "Arsenal"}),
        ]
    }
    response = client.post("/admin/odds", json=payload, headers=admin_headers)
    assert response.status_code == 422
    errors = response.json()["errors"]
    locations = [error["loc"] for error in errors]
    assert ["body", "quotes", 1, "home"] in locations
    assert ["body", "quotes", 2, "match"] in locations
    assert all("input" not in error for error in errors)
    assert count_rows(session, Match) == count_rows(session, Team) == 0


INVALID_QUOTES = [
    ({"home": 1.0}, ["home"], "greater than 1.0"),
    ({"draw": 0}, ["draw"], "greater than 1.0"),
    ({"away": 1000.01}, ["away"], "maximum"),
    ({"home": "evens"}, ["home"], "valid number"),
    ({"home": None}, ["home"], "valid number"),
    ({"phase": "live"}, ["phase"], "'pre' or 'closing'"),
    ({"bookmaker": ""}, ["bookmaker"], "at least 1 character"),
    ({"bookmaker": "Bet 365"}, ["bookmaker"], "pattern"),
    ({"captured_at": "yesterday"}, ["captured_at"], "datetime"),
    ({"colour": "red"}, ["colour"], "Extra inputs"),
    ({"match": {"home_team": "   "}}, ["match", "home_team"], "team name is empty"),
    ({"match": {"away_team": "x" * 101}}, ["match", "away_team"], "longer than 100"),
    ({"match": {"away_team": "Man United"}}, ["match"], "must differ"),
    ({"match": {"kickoff": "10/08/2018"}}, ["match", "kickoff"], "datetime"),
    ({"match": {"competition": ""}}, ["match", "competition"], "at least 1 character"),
    ({"match": {"stadium": "Old Trafford"}}, ["match", "stadium"], "Extra inputs"),
]


@pytest.mark.parametrize(("change", "where", "message"), INVALID_QUOTES)
def test_each_validation_rule(
    client: TestClient,
    admin_headers: dict[str, str],
    change: dict[str, Any],
    where: list[str],
    message: str,
) -> None:
    response = client.post(
        "/admin/odds",
        json={"quotes": [quote(), quote(**copy.deepcopy(change))]},
        headers=admin_headers,
    )
    assert response.status_code == 422
    errors = response.json()["errors"]
    matching = [e for e in errors if e["loc"] == ["body", "quotes", 1, *where]]
    assert matching, errors
    assert message in matching[0]["msg"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_prices_are_rejected(
    client: TestClient, admin_headers: dict[str, str], literal: str
) -> None:
    body = json.dumps({"quotes": [quote()]}).replace('"home": 1.57', f'"home": {literal}')
    response = client.post(
        "/admin/odds", content=body, headers={**admin_headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "quotes", 0, "home"]


def test_a_missing_price_is_rejected(client: TestClient, admin_headers: dict[str, str]) -> None:
    item = quote()
    del item["draw"]
    response = client.post("/admin/odds", json={"quotes": [item]}, headers=admin_headers)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "quotes", 0, "draw"]
    assert response.json()["errors"][0]["msg"] == "Field required"


def test_empty_and_malformed_bodies(client: TestClient, admin_headers: dict[str, str]) -> None:
    assert client.post("/admin/odds", json={"quotes": []}, headers=admin_headers).status_code == 422
    malformed = client.post(
        "/admin/odds",
        content=b'{"quotes": [',
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert malformed.status_code == 422
    assert malformed.json()["errors"][0]["type"] == "json_invalid"


def test_timestamps_without_offset_are_utc(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"kickoff": "2018-08-10T21:00:00+02:00"})]},
        headers=admin_headers,
    )
    report = client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"kickoff": "2018-08-10T19:00:00"})]},
        headers=admin_headers,
    ).json()
    assert report["matches_unchanged"] == 1  # the same instant, written two ways
    match = session.scalars(select(Match)).one()
    assert match.kickoff == dt.datetime(2018, 8, 10, 19, 0, tzinfo=dt.UTC)
    assert match.season == "2018/19"


def test_names_are_stored_verbatim(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    hostile, apostrophe = "'; DROP TABLE matches; --", "O'Higgins"
    report = client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"home_team": f"  {hostile} ", "away_team": apostrophe})]},
        headers=admin_headers,
    ).json()
    assert report["matches_created"] == 1
    items = client.get("/matches").json()["items"]
    assert (items[0]["home_team"], items[0]["away_team"]) == (hostile, apostrophe)
    assert count_rows(session, Match) == 1


# --- POST /admin/results -----------------------------------------------------------------


def test_results_by_id_and_by_identity(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post(
        "/admin/odds",
        json={
            "quotes": [
                quote(),
                quote(
                    match={
                        "home_team": "Newcastle",
                        "away_team": "Tottenham",
                        "kickoff": "2018-08-11T11:30:00Z",
                    }
                ),
            ]
        },
        headers=admin_headers,
    )
    ids = {m.home_team.name: m.id for m in session.scalars(select(Match))}
    payload = {
        "results": [
            {"match_id": ids["Man United"], "home_goals": 2, "away_goals": 1},
            {
                "match": {
                    "competition": "E0",
                    "kickoff": "2018-08-11T11:30:00Z",
                    "home_team": "Newcastle",
                    "away_team": "Tottenham",
                },
                "home_goals": 1,
                "away_goals": 2,
            },
            {"match_id": 999_999, "home_goals": 0, "away_goals": 0},
            {
                "match": {
                    "competition": "E0",
                    "kickoff": "2018-08-11T11:30:00Z",
                    "home_team": "Nobody",
                    "away_team": "Tottenham",
                },
                "home_goals": 0,
                "away_goals": 0,
            },
        ]
    }
    report = client.post("/admin/results", json=payload, headers=admin_headers).json()
    assert report["results_set"] == 2
    assert {(s["where"], s["reason"]) for s in report["skipped"]} == {
        ("results[2]", "no match with id 999999"),
        ("results[3].match", "no such match: unknown team 'Nobody'"),
    }
    results = {
        m.home_team.name: (m.home_goals, m.away_goals, m.result)
        for m in session.scalars(select(Match))
    }
    assert results == {"Man United": (2, 1, "1"), "Newcastle": (1, 2, "2")}

    again = client.post("/admin/results", json=payload, headers=admin_headers).json()
    assert (again["results_set"], again["matches_unchanged"]) == (0, 2)

    draw = {"results": [{"match_id": ids["Man United"], "home_goals": 1, "away_goals": 1}]}
    corrected = client.post("/admin/results", json=draw, headers=admin_headers).json()
    assert (corrected["results_set"], corrected["matches_updated"]) == (1, 1)
    assert session.get(Match, ids["Man United"]).result == "X"  # type: ignore[union-attr]


def test_a_future_match_cannot_be_settled(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    kickoff = (dt.datetime.now(dt.UTC) + dt.timedelta(days=3)).isoformat()
    client.post(
        "/admin/odds", json={"quotes": [quote(match={"kickoff": kickoff})]}, headers=admin_headers
    )
    match_id = client.get("/matches").json()["items"][0]["id"]
    report = client.post(
        "/admin/results",
        json={"results": [{"match_id": match_id, "home_goals": 1, "away_goals": 0}]},
        headers=admin_headers,
    ).json()
    assert report["results_set"] == 0
    assert "in the future" in report["skipped"][0]["reason"]


@pytest.mark.parametrize(
    ("item", "where"),
    [
        ({"home_goals": 1, "away_goals": 0}, ["body", "results", 0]),
        (
            {"match_id": 1, "match": quote()["match"], "home_goals": 1, "away_goals": 0},
            ["body", "results", 0],
        ),
        ({"match_id": 1, "home_goals": -1, "away_goals": 0}, ["body", "results", 0, "home_goals"]),
        ({"match_id": 1, "home_goals": 1.5, "away_goals": 0}, ["body", "results", 0, "home_goals"]),
        ({"match_id": 0, "home_goals": 1, "away_goals": 0}, ["body", "results", 0, "match_id"]),
    ],
)
def test_invalid_results(
    client: TestClient, admin_headers: dict[str, str], item: dict[str, Any], where: list[Any]
) -> None:
    response = client.post("/admin/results", json={"results": [item]}, headers=admin_headers)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == where


# --- POST /admin/import/football-data -----------------------------------------------------


def test_import_real_season_file(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile, session: Session
) -> None:
    path = season_file("E0_1819")
    expected_quotes = sum(count_complete_triples(path, p) for p in E0_1819_PRICE_PREFIXES)
    report = post_csv(client, admin_headers, path.read_bytes()).json()
    assert report["matches_created"] == 380
    assert report["results_set"] == 380
    assert report["quotes_inserted"] == expected_quotes
    assert report["skipped"] == []
    assert count_rows(session, OddsQuote) == expected_quotes

    again = post_csv(client, admin_headers, path.read_bytes()).json()
    assert again["matches_unchanged"] == 380
    assert again["quotes_unchanged"] == expected_quotes
    assert again["matches_created"] == again["quotes_inserted"] == again["results_set"] == 0


def test_import_as_multipart_upload(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> None:
    response = client.post(
        "/admin/import/football-data",
        files={"file": ("I1_0203.csv", season_file("I1_0203").read_bytes(), "text/csv")},
        headers=admin_headers,
    )
    assert response.status_code == 200
    assert response.json()["matches_created"] == 306


def test_corrected_file_updates_the_changed_price_and_result(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile, session: Session
) -> None:
    original = season_file("E0_1819").read_bytes()
    post_csv(client, admin_headers, original)
    # The first row reads "...,Man United,Leicester,2,1,H,...,1.57,3.9,7.5,...".
    corrected = original.replace(b"Man United,Leicester,2,1,H", b"Man United,Leicester,3,1,H", 1)
    corrected = corrected.replace(b",1.57,3.9,7.5,", b",1.61,3.9,7.5,", 1)
    assert corrected != original
    report = post_csv(client, admin_headers, corrected).json()
    assert (report["quotes_updated"], report["quotes_inserted"]) == (1, 0)
    assert (report["results_set"], report["matches_updated"], report["matches_unchanged"]) == (
        1,
        1,
        379,
    )
    first = session.scalars(select(Match).order_by(Match.kickoff, Match.id)).first()
    assert first is not None
    assert first.home_goals == 3
    b365 = session.scalars(
        select(OddsQuote)
        .join(Bookmaker)
        .where(OddsQuote.match_id == first.id, Bookmaker.code == "B365")
    ).one()
    assert (b365.home, b365.draw, b365.away) == (1.61, 3.9, 7.5)


def test_invalid_price_in_file_is_reported_by_row_and_column(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> None:
    report = post_csv(client, admin_headers, season_file("E1_1213").read_bytes()).json()
    assert report["matches_created"] == 552
    assert [(s["where"], s["field"]) for s in report["skipped"]] == [("row 532", "B365H")]


def test_season_can_be_given(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> None:
    # The file's matches are of 2002/03; the season given names every one of them.
    post_csv(client, admin_headers, season_file("I1_0203").read_bytes(), season="2003/04")
    listed = client.get("/matches", params={"season": "2003/04"}).json()
    assert listed["total"] == 306


def test_fixture_files_import_as_upcoming_matches_in_each_league_s_season(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    main = post_csv(client, admin_headers, MAIN_FIXTURES).json()
    extra = post_csv(client, admin_headers, EXTRA_FIXTURES).json()
    assert (main["matches_created"], main["quotes_inserted"], main["results_set"]) == (3, 3, 0)
    assert (extra["matches_created"], extra["quotes_inserted"], extra["results_set"]) == (4, 1, 0)
    items = client.get("/matches", params={"limit": 10}).json()["items"]
    assert {(m["competition"], m["season"], m["result"]) for m in items} == {
        ("E0", "2026/27", None),
        ("SP1", "2026/27", None),
        ("SC0", "2026/27", None),
        ("BRA", "2026", None),
        ("NOR", "2026", None),
        ("AUT", "2026/27", None),
        ("MEX", "2026/27", None),
    }
    assert client.get("/matches", params={"status": "settled"}).json()["total"] == 0


@pytest.mark.parametrize("season", ["banana", "x; DROP", "Serie A 02-03", "2018/20"])
def test_a_season_that_is_not_one_is_422_and_relabels_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    season_file: SeasonFile,
    session: Session,
    season: str,
) -> None:
    response = post_csv(client, admin_headers, season_file("I1_0203").read_bytes(), season=season)
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("query.season: ")
    assert f"season {season!r} is not YYYY/YY" in message
    assert count_rows(session, Match) == 0


def test_a_season_in_json_follows_the_same_rule(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    response = client.post(
        "/admin/odds",
        json={"quotes": [quote(), quote(bookmaker="PS", match={"season": "banana"})]},
        headers=admin_headers,
    )
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("body.quotes.1.match.season: ")
    assert "YYYY/YY (two consecutive years, e.g. 2018/19)" in message
    assert count_rows(session, Match) == 0


@pytest.mark.parametrize(
    ("match", "refused"),
    [
        ({"season": "2018"}, "season '2018' is a calendar year, but E0 plays over two years"),
        (
            {"competition": "BRA", "season": "2018/19"},
            "season '2018/19' runs over two years, but BRA plays within a calendar year",
        ),
    ],
)
def test_a_season_in_json_is_in_the_form_its_competition_plays(
    client: TestClient,
    admin_headers: dict[str, str],
    session: Session,
    match: dict[str, str],
    refused: str,
) -> None:
    response = client.post(
        "/admin/odds", json={"quotes": [quote(), quote(match=match)]}, headers=admin_headers
    )
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith(f"body.quotes.1.match.season: Value error, {refused}"), message
    assert count_rows(session, Match) == 0
    results = client.post(
        "/admin/results",
        json={
            "results": [{"match": quote(match=match)["match"], "home_goals": 1, "away_goals": 0}]
        },
        headers=admin_headers,
    )
    assert results.status_code == 422
    (message,) = error_messages(results.json())
    assert message.startswith(f"body.results.0.match.season: Value error, {refused}"), message


@pytest.mark.parametrize(
    ("competition", "season"),
    [("E0", "2018/19"), ("BRA", "2018"), ("FRIENDLY", "2018"), ("FRIENDLY", "2018/19")],
)
def test_a_season_in_json_in_its_competitions_form_or_of_a_free_code_is_stored(
    client: TestClient,
    admin_headers: dict[str, str],
    session: Session,
    competition: str,
    season: str,
) -> None:
    match = {"competition": competition, "season": season}
    response = client.post(
        "/admin/odds", json={"quotes": [quote(match=match)]}, headers=admin_headers
    )
    assert response.status_code == 200, response.text
    assert session.scalars(select(Match.season)).all() == [season]


def test_a_calendar_year_for_a_premier_league_file_is_422_and_relabels_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    season_file: SeasonFile,
    session: Session,
) -> None:
    response = post_csv(client, admin_headers, season_file("E0_1819").read_bytes(), season="2019")
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message == (
        "query.season: season '2019' is a calendar year, but E0 plays over two years, "
        "as 2018/19 or 2019/20"
    )
    assert count_rows(session, Match) == 0


def test_empty_body_and_non_season_files_are_422(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    empty = post_csv(client, admin_headers, b"")
    assert empty.status_code == 422
    (message,) = error_messages(empty.json())
    assert message.startswith("body: the request body is empty")
    other = post_csv(client, admin_headers, b"name,age\nann,3\n")
    assert other.status_code == 422
    assert "not a football-data.co.uk file" in other.json()["detail"]
    form = client.post(
        "/admin/import/football-data", data={"note": "x"}, files={}, headers=admin_headers
    )
    assert form.status_code == 422


def test_an_extra_league_s_fixture_is_the_match_its_results_file_settles(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """The fixture's season is the one the league's own file names, so the result (played a
    day late) settles the fixture instead of adding a second match."""
    post_csv(client, admin_headers, EXTRA_FIXTURES)
    results = (
        b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA\r\n"
        b"Brazil,Serie A,2026,30/11/2026,19:00,Flamengo,Santos,2,0,H,1.72,3.6,4.9\r\n"
    )
    report = post_csv(client, admin_headers, results).json()
    assert (report["matches_created"], report["matches_rescheduled"]) == (0, 1)
    (match,) = client.get("/matches", params={"competition": "BRA"}).json()["items"]
    assert (match["season"], match["result"], match["kickoff"][:10]) == ("2026", "1", "2026-11-30")


def test_a_json_body_sent_as_a_season_file_names_the_right_endpoint(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post(
        "/admin/import/football-data",
        content=(FIXTURES / "the_odds_api_epl.json").read_bytes(),
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert "/admin/import/the-odds-api" in message


# --- POST /admin/import/the-odds-api -------------------------------------------------------


def test_import_the_odds_api(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    response = client.post(
        "/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers
    )
    report = response.json()
    assert response.status_code == 200
    assert (report["matches_created"], report["quotes_inserted"]) == (2, 3)
    assert [(s["where"], "in-play" in s["reason"]) for s in report["skipped"]] == [
        ("[0].bookmakers[2]", True)
    ]
    stored = {
        (q.bookmaker.code, q.home, q.draw, q.away, q.captured_at)
        for q in session.scalars(select(OddsQuote))
    }
    assert ("PS", 1.56, 4.1, 7.4, dt.datetime(2018, 8, 10, 18, 55, tzinfo=dt.UTC)) in stored
    assert ("UNIBET_EU", 1.55, 4.0, 7.0, dt.datetime(2018, 8, 10, 12, 0, tzinfo=dt.UTC)) in stored
    assert ("BFE", 4.8, 3.75, 1.87, dt.datetime(2018, 8, 11, 9, 0, tzinfo=dt.UTC)) in stored
    assert {m.external_id for m in session.scalars(select(Match))} == {
        "0a3f5e1c9b2d4e6f8a7b6c5d4e3f2a1b",
        "1b4a6f2d0c3e5f7a9b8c7d6e5f4a3b2c",
    }
    again = client.post(
        "/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers
    ).json()
    assert (again["matches_unchanged"], again["quotes_unchanged"]) == (2, 3)


def test_a_quote_no_bookmaker_would_offer_is_skipped_at_every_ingest(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> None:
    events = odds_api_events()
    for outcome in events[0]["bookmakers"][0]["markets"][0]["outcomes"]:
        outcome["price"] = 1.01
    odds_api = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert odds_api.status_code == 200
    skipped = {(s["where"], s["field"]): s["reason"] for s in odds_api.json()["skipped"]}
    assert "overround +1.970" in skipped[("[0].bookmakers[0]", "outcomes")]
    assert odds_api.json()["quotes_inserted"] == 2
    posted = client.post(
        "/admin/odds",
        json={"quotes": [quote(home=10.0, draw=10.0, away=10.0), quote(bookmaker="WH")]},
        headers=admin_headers,
    )
    assert posted.status_code == 200
    assert [(s["where"], s["field"]) for s in posted.json()["skipped"]] == [
        ("quotes[0]", "home/draw/away")
    ]
    assert "overround -0.700" in posted.json()["skipped"][0]["reason"]
    assert posted.json()["quotes_inserted"] == 1
    # The first row of E0 2018/19 with Bet365's prices all at 1.01.
    content = season_file("E0_1819").read_bytes().replace(b",1.57,3.9,7.5,", b",1.01,1.01,1.01,", 1)
    report = post_csv(client, admin_headers, content).json()
    assert [(s["where"], s["field"]) for s in report["skipped"]] == [("row 2", "B365H/B365D/B365A")]
    assert report["rows_read"] == 380


def test_the_odds_api_payload_is_validated_strictly(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    events = odds_api_events()
    events[1]["bookmakers"][0]["markets"][0]["outcomes"][1]["price"] = 0.9
    response = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert response.status_code == 422
    # "h2h" is the tag of the market kind that is read strictly.
    assert response.json()["errors"][0]["loc"] == [
        "body",
        1,
        "bookmakers",
        0,
        "markets",
        0,
        "h2h",
        "outcomes",
        1,
        "price",
    ]
    assert count_rows(session, Match) == 0


def test_the_odds_api_keys_are_codes_sent_as_json(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    events = odds_api_events()
    events[1]["sport_key"] = "soccer epl"
    response = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert response.status_code == 422
    (error,) = response.json()["errors"]
    assert (error["loc"], "pattern" in error["msg"]) == (["body", 1, "sport_key"], True)
    assert count_rows(session, Match) == 0


def test_every_admin_list_takes_at_most_the_configured_number_of_items(
    database_url: str, session: Session, admin_headers: dict[str, str]
) -> None:
    one_item = Settings(database_url=database_url, admin_api_key=ADMIN_KEY, admin_items_max=1)
    results = [{"match_id": 1, "home_goals": 1, "away_goals": 0}] * 2
    with TestClient(build_app(one_item, session)) as client:
        for path, body, where in (
            ("/admin/import/the-odds-api", odds_api_events(), "body"),
            ("/admin/odds", {"quotes": [quote(), quote(bookmaker="PS")]}, "body.quotes"),
            ("/admin/results", {"results": results}, "body.results"),
        ):
            response = client.post(path, json=body, headers=admin_headers)
            assert response.status_code == 422, path
            assert error_messages(response.json()) == [
                f"{where}: at most 1 item per request, got 2"
            ]
        assert (
            client.post(
                "/admin/import/the-odds-api", json=odds_api_events()[:1], headers=admin_headers
            ).json()["matches_created"]
            == 1
        )


def test_a_flood_of_empty_events_is_refused_in_few_words(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    flood = client.post("/admin/import/the-odds-api", json=[{}] * 20_000, headers=admin_headers)
    assert flood.status_code == 422
    assert len(flood.content) < 1_000
    (message,) = error_messages(flood.json())
    assert "at most 10000 items" in message
    # Under the cap, each empty event lacks five fields: the answer lists the first hundred.
    many = client.post("/admin/import/the-odds-api", json=[{}] * 1_000, headers=admin_headers)
    assert many.status_code == 422
    messages = error_messages(many.json())
    assert len(messages) == 101
    assert messages[0] == "body.0.id: Field required"
    assert messages[-1] == "4900 more errors not shown"


def test_a_report_lists_the_first_hundred_skipped_items_and_counts_them_all(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    rows = "".join(f"E0,{day % 28 + 1:02d}/13/2019,A{day},B{day}\n" for day in range(250))
    report = post_csv(client, admin_headers, ("Div,Date,HomeTeam,AwayTeam\n" + rows).encode())
    body = report.json()
    assert (body["rows_read"], body["skipped_total"], len(body["skipped"])) == (250, 250, 100)
    assert [s["where"] for s in body["skipped"]] == [f"row {n}" for n in range(2, 102)]


def test_a_rescheduled_event_moves_its_match(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    events = odds_api_events()[1:]
    client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    events[0]["commence_time"] = "2018-08-12T15:00:00Z"
    for bookmaker in events[0]["bookmakers"]:
        bookmaker["last_update"] = "2018-08-12T09:00:00Z"
        for market in bookmaker["markets"]:
            market["last_update"] = "2018-08-12T09:00:00Z"
    report = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers).json()
    assert (report["matches_updated"], report["matches_created"], report["quotes_inserted"]) == (
        1,
        0,
        1,
    )
    match = session.scalars(select(Match)).one()
    assert match.kickoff == dt.datetime(2018, 8, 12, 15, 0, tzinfo=dt.UTC)


def test_prices_of_ignored_markets_are_not_checked(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    events = odds_api_events()
    events[1]["bookmakers"][0]["markets"][1]["outcomes"][0]["price"] = 1000.5  # h2h_lay
    response = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert response.status_code == 200
    assert response.json()["quotes_inserted"] == 3


def test_one_external_id_for_two_matches_in_a_batch(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    payload = {
        "quotes": [
            quote(match={"external_id": "evt-1"}),
            quote(match={"external_id": "evt-1", "kickoff": "2018-08-11T19:00:00Z"}),
        ]
    }
    report = client.post("/admin/odds", json=payload, headers=admin_headers).json()
    assert (report["matches_created"], report["quotes_inserted"]) == (1, 1)
    assert [(s["where"], s["field"]) for s in report["skipped"]] == [("quotes[1]", "external_id")]
    assert "also given to a different match (quotes[0])" in report["skipped"][0]["reason"]


def test_an_external_id_of_another_stored_match_is_refused(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"external_id": "evt-1"})]},
        headers=admin_headers,
    )
    other = quote(
        match={"home_team": "Arsenal", "away_team": "Chelsea", "external_id": "evt-1"}, home=1.6
    )
    report = client.post("/admin/odds", json={"quotes": [other]}, headers=admin_headers).json()
    assert report["quotes_inserted"] == 0
    assert "belongs to stored match" in report["skipped"][0]["reason"]
    assert session.scalars(select(OddsQuote.home)).all() == [1.57]


def test_a_second_external_id_for_a_stored_match_is_reported(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"external_id": "evt-1"})]},
        headers=admin_headers,
    )
    report = client.post(
        "/admin/odds",
        json={"quotes": [quote(bookmaker="PS", match={"external_id": "evt-2"})]},
        headers=admin_headers,
    ).json()
    assert report["quotes_inserted"] == 1  # the quote is still the same match's
    assert "already has external id 'evt-1'" in report["skipped"][0]["reason"]
    assert session.scalars(select(Match.external_id)).all() == ["evt-1"]


def test_duplicate_quotes_in_one_request_are_reported(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    report = client.post(
        "/admin/odds", json={"quotes": [quote(), quote(home=1.6)]}, headers=admin_headers
    ).json()
    assert report["quotes_inserted"] == 1
    assert report["skipped"][0]["where"] == "quotes[1]"
    assert "the first one was kept" in report["skipped"][0]["reason"]
    assert session.scalars(select(OddsQuote.home)).all() == [1.57]


@pytest.mark.parametrize(
    "change",
    [
        {"match": {"kickoff": "9999-12-31T12:00:00Z"}},
        {"match": {"kickoff": "0001-01-01T00:30:00+01:00"}},
        {"match": {"kickoff": "1899-12-31T23:59:59Z"}},
        {"captured_at": "2100-01-01T00:00:00Z"},
        {"match": {"home_team": "Man\x00United"}},
        {"match": {"competition": "E" * 65}},
        {"match": {"external_id": "x" * 101}},
        {"match": {"season": "S" * 17}},
    ],
)
def test_values_the_database_could_not_hold_are_422(
    client: TestClient, admin_headers: dict[str, str], change: dict[str, Any]
) -> None:
    response = client.post("/admin/odds", json={"quotes": [quote(**change)]}, headers=admin_headers)
    assert response.status_code == 422, response.text


def test_a_nul_character_anywhere_in_an_admin_request_is_422(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    nul = "a\x00b"
    bodies: list[tuple[str, Any]] = [
        ("/admin/odds", {"quotes": [quote(match={"external_id": nul})]}),
        ("/admin/odds", {"quotes": [quote(match={"season": nul})]}),
        ("/admin/odds", {"quotes": [quote(bookmaker=nul)]}),
        ("/admin/teams/aliases", {"alias": nul, "team": "Man United"}),
    ]
    events = odds_api_events()
    events[0]["bookmakers"][0]["title"] = nul
    bodies.append(("/admin/import/the-odds-api", events))
    events = odds_api_events()
    events[0]["id"] = nul
    bodies.append(("/admin/import/the-odds-api", events))
    for path, body in bodies:
        response = client.post(path, json=body, headers=admin_headers)
        assert response.status_code == 422, (path, response.text)
    season = post_csv(client, admin_headers, b"Div,Date,HomeTeam,AwayTeam\n", season="a\x00b")
    assert season.status_code == 422
    header = post_csv(
        client,
        admin_headers,
        b"Div,Date,HomeTeam,AwayTeam,X\x00H,X\x00D,X\x00A\nE0,01/03/2019,A,B,2,3,4\n",
    )
    assert header.status_code == 422
    assert "control characters" in error_messages(header.json())[0]
    alias_path = client.delete("/admin/teams/aliases/a%00b", headers=admin_headers)
    assert alias_path.status_code == 422
    assert count_rows(session, Match) == 0
    assert count_rows(session, Bookmaker) == 0


def test_lone_surrogate_in_a_name_is_422(client: TestClient, admin_headers: dict[str, str]) -> None:
    body = json.dumps({"quotes": [quote()]}).replace('"Leicester"', '"Leicester \\ud800"')
    response = client.post(
        "/admin/odds", content=body, headers={**admin_headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert "not valid Unicode" in response.json()["errors"][0]["msg"]


@pytest.mark.parametrize(
    "params",
    [{"from": "0001-01-01T00:30:00+01:00"}, {"to": "9999-12-31T00:00:00"}, {"offset": str(2**40)}],
)
def test_out_of_range_query_parameters_are_422(client: TestClient, params: dict[str, str]) -> None:
    assert client.get("/matches", params=params).status_code == 422


@pytest.mark.parametrize("match_id", ["3000000000", "99999999999999999999"])
def test_out_of_range_ids_are_422(
    client: TestClient, admin_headers: dict[str, str], match_id: str
) -> None:
    assert client.get(f"/matches/{match_id}").status_code == 422
    results = f'{{"results": [{{"match_id": {match_id}, "home_goals": 1, "away_goals": 0}}]}}'
    response = client.post(
        "/admin/results",
        content=results,
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422


def test_a_file_may_name_at_most_a_hundred_bookmakers(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    refused = post_csv(client, admin_headers, season_file_with_bookmakers(101))
    assert refused.status_code == 422
    assert error_messages(refused.json()) == [
        "101 bookmakers in one import; at most 100 are accepted"
    ]
    assert count_rows(session, Bookmaker) == 0
    accepted = post_csv(client, admin_headers, season_file_with_bookmakers(100)).json()
    assert accepted["quotes_inserted"] == 200
    assert count_rows(session, Bookmaker) == 100


def test_a_request_may_name_at_most_a_hundred_bookmakers(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    quotes = [quote(bookmaker=f"BK{i}") for i in range(101)]
    refused = client.post("/admin/odds", json={"quotes": quotes}, headers=admin_headers)
    assert refused.status_code == 422
    assert error_messages(refused.json()) == [
        "101 bookmakers in one import; at most 100 are accepted"
    ]
    assert count_rows(session, Bookmaker) == 0
    events = odds_api_events()
    events[0]["bookmakers"] = [
        {**events[0]["bookmakers"][0], "key": f"book{i}", "title": f"Book {i}"} for i in range(101)
    ]
    response = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert response.status_code == 422
    assert count_rows(session, Bookmaker) == 0


def test_odd_season_files_are_reported_row_by_row(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    content = (
        b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG,B365H,B365D,B365A\n"
        b"E0,31/12/9999,A,B,1,0,2,3,4\n" + b"E" * 70 + b",01/03/2019,A,B,1,0,2,3,4\n"
        b"E0,01/03/2019,A\x00x,B,1,0,2,3,4\n"
        b"E0,02/03/2019,C,D,1,0,2,3,4\n"
    )
    report = post_csv(client, admin_headers, content).json()
    assert report["matches_created"] == 1
    assert [(s["where"], s["field"]) for s in report["skipped"]] == [
        ("row 2", "Date"),
        ("row 3", "Div"),
        ("row 4", "HomeTeam"),
    ]


def test_a_broken_csv_quote_is_a_format_error(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    content = b'Div,Date,HomeTeam,AwayTeam\nE0,01/03/2019,"A' + b"x" * 200_000 + b"\n"
    response = post_csv(client, admin_headers, content)
    assert response.status_code == 422
    assert "not a readable CSV file" in response.json()["detail"]


def test_a_blank_season_means_derive_it(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> None:
    content = season_file("I1_0203").read_bytes()
    post_csv(client, admin_headers, content)
    for blank in ("", "   "):
        report = post_csv(client, admin_headers, content, season=blank).json()
        assert report["matches_unchanged"] == 306
    assert post_csv(client, admin_headers, content, season="x" * 17).status_code == 422


def test_blank_season_and_odd_external_ids_in_json(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    report = client.post(
        "/admin/odds", json={"quotes": [quote(match={"season": "  "})]}, headers=admin_headers
    ).json()
    assert report["matches_created"] == 1
    assert session.scalars(select(Match.season)).all() == ["2018/19"]
    bad = client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"external_id": "evt\n1"})]},
        headers=admin_headers,
    )
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["loc"] == ["body", "quotes", 0, "match", "external_id"]


@pytest.mark.parametrize(
    ("competition", "kickoff", "season"),
    [
        ("E0", "2018-05-10T19:00:00Z", "2017/18"),  # August to July
        ("BRA", "2018-05-10T19:00:00Z", "2018"),  # a calendar year, as Brazil's own file says
        ("AUT", "2018-07-20T19:00:00Z", "2018/19"),  # July to June
        ("JPN", "2026-03-01T06:00:00Z", "2026"),  # Japan's last calendar year
        ("JPN", "2026-08-15T11:00:00Z", "2026/27"),
        ("XYZ", "2018-05-10T19:00:00Z", "2017/18"),  # a code of no league of ours
    ],
)
def test_a_season_not_given_is_the_one_its_league_names_the_kickoff_in(
    client: TestClient,
    admin_headers: dict[str, str],
    session: Session,
    competition: str,
    kickoff: str,
    season: str,
) -> None:
    match = {"competition": competition, "kickoff": kickoff}
    odds = client.post("/admin/odds", json={"quotes": [quote(match=match)]}, headers=admin_headers)
    assert odds.status_code == 200, odds.text
    assert session.scalars(select(Match.season)).all() == [season]
    # The season derived is one the season check takes, given back for the same match.
    again = quote(match={**match, "season": season})
    report = client.post("/admin/odds", json={"quotes": [again]}, headers=admin_headers).json()
    assert report["matches_unchanged"] == 1


# --- look-alike names ------------------------------------------------------------------------

BAYERN_NFC = "Bayern M\u00fcnchen"
BAYERN_NFD = "Bayern Mu\u0308nchen"


def test_a_name_in_either_unicode_form_is_one_team(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    first = quote(match={"competition": "D1", "home_team": BAYERN_NFC, "away_team": "Hertha"})
    again = quote(match={"competition": "D1", "home_team": BAYERN_NFD, "away_team": "Hertha"})
    client.post("/admin/odds", json={"quotes": [first]}, headers=admin_headers)
    report = client.post("/admin/odds", json={"quotes": [again]}, headers=admin_headers).json()
    assert (report["matches_created"], report["matches_unchanged"]) == (0, 1)
    assert session.scalars(select(Team.name).order_by(Team.name)).all() == [BAYERN_NFC, "Hertha"]


@pytest.mark.parametrize("character", ["\u200b", "\ufeff", "\u202e", "\u2028"])
def test_an_invisible_character_in_a_json_name_is_422(
    client: TestClient, admin_headers: dict[str, str], session: Session, character: str
) -> None:
    hidden = quote(match={"home_team": f"Man{character}United"})
    response = client.post("/admin/odds", json={"quotes": [hidden]}, headers=admin_headers)
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("body.quotes.0.match.home_team: ")
    assert f"U+{ord(character):04X}" in message
    assert count_rows(session, Team) == 0


def test_look_alike_names_in_a_season_file(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    # A byte-order mark at the start of the file is its encoding, not part of a name.
    content = (
        "\ufeffDiv,Date,HomeTeam,AwayTeam,FTHG,FTAG,B365H,B365D,B365A\n"
        f"D1,24/08/2018,{BAYERN_NFC},Hoffenheim,3,1,1.2,7,13\n"
        f"D1,15/09/2018,Hertha,{BAYERN_NFD},2,0,6,4.5,1.5\n"
        "D1,22/09/2018,Hertha\u200b,Hoffenheim,1,1,2,3,4\n"
    ).encode()
    report = post_csv(client, admin_headers, content).json()
    assert report["matches_created"] == 2
    assert [(s["where"], s["field"]) for s in report["skipped"]] == [("row 4", "HomeTeam")]
    assert "U+200B ZERO WIDTH SPACE" in report["skipped"][0]["reason"]
    names = session.scalars(select(Team.name).order_by(Team.name)).all()
    assert names == [BAYERN_NFC, "Hertha", "Hoffenheim"]


def test_a_bookmaker_title_in_either_form_and_odds_api_names(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    events = odds_api_events()[1:]
    # The feed spells the teams decomposed, in the event and in its outcomes alike.
    events[0]["home_team"] = "Newcastle Unite\u0301d"
    for bookmaker in events[0]["bookmakers"]:
        for market in bookmaker["markets"]:
            for outcome in market["outcomes"]:
                if outcome["name"] == "Newcastle United":
                    outcome["name"] = "Newcastle Unite\u0301d"
    events[0]["bookmakers"][0]["title"] = "Be\u0301tfair"
    report = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers).json()
    assert (report["matches_created"], report["quotes_inserted"]) == (1, 1)
    assert "Newcastle Unit\u00e9d" in session.scalars(select(Team.name)).all()
    assert session.scalars(select(Bookmaker.name)).all() == ["B\u00e9tfair"]


def test_an_alias_in_another_unicode_form_is_the_same_name(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post(
        "/admin/odds",
        json={"quotes": [quote(match={"competition": "D1", "home_team": BAYERN_NFC})]},
        headers=admin_headers,
    )
    same = alias(client, admin_headers, BAYERN_NFD, BAYERN_NFC)
    assert same.status_code == 409
    assert "already the team's own name" in error_messages(same.json())[0]
    added = alias(client, admin_headers, "FC Bayern Mu\u0308nchen", BAYERN_NFD)
    assert added.json()["alias"] == "FC Bayern M\u00fcnchen"
    assert session.scalars(select(TeamAlias.alias)).all() == ["FC Bayern M\u00fcnchen"]
    removed = client.delete("/admin/teams/aliases/FC Bayern Mu\u0308nchen", headers=admin_headers)
    assert removed.status_code == 204
    assert count_rows(session, TeamAlias) == 0
    hidden = alias(client, admin_headers, "Bayern\u202e", BAYERN_NFC)
    assert hidden.status_code == 422
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in error_messages(hidden.json())[0]


# --- rescheduled fixtures ----------------------------------------------------------------------


def test_a_fixture_on_a_new_date_moves_its_match_with_its_quotes(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    post_odds(client, admin_headers, fixture("2018-11-10T15:00:00Z"))
    moved = post_odds(client, admin_headers, fixture("2019-02-27T19:45:00Z", bookmaker="PS"))
    assert (moved["matches_created"], moved["matches_updated"]) == (0, 1)
    assert moved["matches_rescheduled"] == 1
    match = session.scalars(select(Match)).one()
    assert match.kickoff == dt.datetime(2019, 2, 27, 19, 45, tzinfo=dt.UTC)
    assert match.season == "2018/19"
    detail = client.get(f"/matches/{match.id}").json()
    assert [q["bookmaker"] for q in detail["quotes"]] == ["B365", "PS"]
    again = post_odds(client, admin_headers, fixture("2019-02-27T19:45:00Z", bookmaker="PS"))
    assert (again["matches_unchanged"], again["matches_rescheduled"]) == (1, 0)


@pytest.mark.parametrize(
    ("home", "away", "announced", "played"),
    [
        # The file's first row; announced for 5 August, before the file's first date.
        ("Man United", "Leicester", "2018-08-05T15:00:00Z", dt.date(2018, 8, 10)),
        # Announced for 2 December, a date among the file's other matches.
        ("Arsenal", "Chelsea", "2018-12-02T16:00:00Z", dt.date(2019, 1, 19)),
    ],
)
def test_a_season_file_moves_a_fixture_stored_on_another_date(
    client: TestClient,
    admin_headers: dict[str, str],
    season_file: SeasonFile,
    session: Session,
    home: str,
    away: str,
    announced: str,
    played: dt.date,
) -> None:
    post_odds(client, admin_headers, fixture(announced, home=home, away=away, bookmaker="BF"))
    report = post_csv(client, admin_headers, season_file("E0_1819").read_bytes()).json()
    assert (report["matches_created"], report["matches_updated"]) == (379, 1)
    assert report["matches_rescheduled"] == 1
    assert report["results_set"] == 380
    assert count_rows(session, Match) == 380
    match = session.scalars(
        select(Match).where(
            Match.home_team.has(Team.name == home), Match.away_team.has(Team.name == away)
        )
    ).one()
    assert match.kickoff_date == played
    assert match.result is not None
    codes = set(
        session.scalars(
            select(Bookmaker.code).join(OddsQuote).where(OddsQuote.match_id == match.id)
        )
    )
    assert {"BF", "B365", "PS"} <= codes


def test_the_odds_api_moves_a_fixture_stored_by_another_source(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    # Event [1] of the file is Newcastle United v Tottenham Hotspur on 11 August 2018.
    post_odds(
        client,
        admin_headers,
        fixture("2018-08-04T14:00:00Z", home="Newcastle United", away="Tottenham Hotspur"),
    )
    events = odds_api_events()[1:]
    report = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers).json()
    assert (report["matches_created"], report["matches_rescheduled"]) == (0, 1)
    match = session.scalars(select(Match)).one()
    assert match.kickoff == dt.datetime(2018, 8, 11, 11, 30, tzinfo=dt.UTC)
    assert match.external_id == "1b4a6f2d0c3e5f7a9b8c7d6e5f4a3b2c"
    assert count_rows(session, OddsQuote) == 2


def test_a_rescheduled_event_counts_as_rescheduled(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    events = odds_api_events()[1:]
    client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    events[0]["commence_time"] = "2018-08-12T15:00:00Z"
    report = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers).json()
    assert (report["matches_updated"], report["matches_rescheduled"]) == (1, 1)


def test_a_result_named_on_the_new_date_moves_the_fixture(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    post_odds(client, admin_headers, fixture("2018-11-10T15:00:00Z"))
    named = {
        "competition": "E0",
        "kickoff": "2019-02-27T19:45:00Z",
        "home_team": "Arsenal",
        "away_team": "Chelsea",
    }
    payload = {"results": [{"match": named, "home_goals": 2, "away_goals": 0}]}
    report = client.post("/admin/results", json=payload, headers=admin_headers).json()
    assert report["skipped"] == []
    assert (report["results_set"], report["matches_updated"], report["matches_rescheduled"]) == (
        1,
        1,
        1,
    )
    match = session.scalars(select(Match)).one()
    assert (match.kickoff, match.result) == (dt.datetime(2019, 2, 27, 19, 45, tzinfo=dt.UTC), "1")
    again = client.post("/admin/results", json=payload, headers=admin_headers).json()
    assert (again["matches_unchanged"], again["matches_rescheduled"]) == (1, 0)


def test_a_result_on_a_new_date_in_the_future_moves_nothing(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    post_odds(client, admin_headers, fixture("2018-11-10T15:00:00Z"))
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=400)).replace(microsecond=0)
    named = {"competition": "E0", "kickoff": later.isoformat(), "season": "2018/19"}
    named |= {"home_team": "Arsenal", "away_team": "Chelsea"}
    payload = {"results": [{"match": named, "home_goals": 2, "away_goals": 0}]}
    report = client.post("/admin/results", json=payload, headers=admin_headers).json()
    assert (report["results_set"], report["matches_rescheduled"]) == (0, 0)
    assert "in the future" in report["skipped"][0]["reason"]
    match = session.scalars(select(Match)).one()
    assert (match.kickoff_date, match.result) == (dt.date(2018, 11, 10), None)


def test_a_played_match_is_not_moved_by_a_second_meeting(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    # The Scottish Premiership plays a pair twice at the same home ground in a season: a
    # settled match has been played, and a fixture on another date is the next meeting.
    post_odds(client, admin_headers, fixture("2018-09-02T11:00:00Z", match={"competition": "SC0"}))
    settle = {
        "results": [
            {"match_id": session.scalars(select(Match.id)).one(), "home_goals": 1, "away_goals": 0}
        ]
    }
    client.post("/admin/results", json=settle, headers=admin_headers)
    report = post_odds(
        client, admin_headers, fixture("2019-03-31T12:00:00Z", match={"competition": "SC0"})
    )
    assert (report["matches_created"], report["matches_rescheduled"]) == (1, 0)
    assert count_rows(session, Match) == 2


def test_two_meetings_of_one_pair_are_never_taken_for_a_move(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    scottish = {"competition": "SC0"}
    # Two meetings in one batch: both are new matches, neither moves the stored one.
    post_odds(client, admin_headers, fixture("2018-09-02T11:00:00Z", match=scottish))
    both = post_odds(
        client,
        admin_headers,
        fixture("2018-12-29T12:00:00Z", match=scottish),
        fixture("2019-03-31T12:00:00Z", match=scottish),
    )
    assert (both["matches_created"], both["matches_rescheduled"]) == (2, 0)
    # Three stored meetings: a fourth date is a fourth match.
    fourth = post_odds(client, admin_headers, fixture("2019-05-12T12:00:00Z", match=scottish))
    assert (fourth["matches_created"], fourth["matches_rescheduled"]) == (1, 0)
    assert count_rows(session, Match) == 4


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # Another competition: a league match and a cup tie of the same pair.
        ({}, {"competition": "FAC"}),
        # Another season: the fixture of the next season.
        ({}, {"kickoff": "2019-09-14T14:00:00Z"}),
        # The source names two events: two matches.
        ({"external_id": "evt-1"}, {"external_id": "evt-2"}),
    ],
    ids=["competition", "season", "external-id"],
)
def test_a_fixture_moves_only_within_its_competition_and_season(
    client: TestClient,
    admin_headers: dict[str, str],
    session: Session,
    first: dict[str, Any],
    second: dict[str, Any],
) -> None:
    post_odds(client, admin_headers, fixture("2018-11-10T15:00:00Z", match=first))
    other = {"kickoff": "2019-02-27T19:45:00Z", **second}
    report = post_odds(client, admin_headers, fixture(other.pop("kickoff"), match=other))
    assert (report["matches_created"], report["matches_rescheduled"]) == (1, 0)
    assert count_rows(session, Match) == 2
