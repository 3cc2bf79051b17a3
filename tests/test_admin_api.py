"""Admin API: auth, strict JSON ingest of odds and results, file imports, aliases."""

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
from tests.conftest import build_app
from tests.helpers import count_complete_triples, count_rows, error_messages

FIXTURES = Path(__file__).parent / "fixtures"
E0_1819_PRICE_PREFIXES = ("B365", "BW", "IW", "PS", "WH", "VC", "PSC")

SeasonFile = Callable[[str], Path]


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
    post_csv(client, admin_headers, season_file("I1_0203").read_bytes(), season="Serie A 02-03")
    listed = client.get("/matches", params={"season": "Serie A 02-03"}).json()
    assert listed["total"] == 306


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


# --- POST /admin/import/the-odds-api -------------------------------------------------------


def odds_api_events() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((FIXTURES / "the_odds_api_epl.json").read_text())
    return loaded


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


# --- aliases: one match, many sources -------------------------------------------------------


def alias(client: TestClient, headers: dict[str, str], name: str, team: str) -> Any:
    return client.post("/admin/teams/aliases", json={"alias": name, "team": team}, headers=headers)


def test_aliases_set_before_import_join_two_sources(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile, session: Session
) -> None:
    post_csv(client, admin_headers, season_file("E0_1819").read_bytes())
    for name, team in [
        ("Manchester United", "Man United"),
        ("Leicester City", "Leicester"),
        ("Newcastle United", "Newcastle"),
        ("Tottenham Hotspur", "Tottenham"),
    ]:
        assert alias(client, admin_headers, name, team).json()["created"] is True
    report = client.post(
        "/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers
    ).json()
    assert report["matches_created"] == 0
    assert report["matches_updated"] == 2  # each gained its external id
    assert count_rows(session, Match) == 380
    match_id = session.scalars(
        select(Match.id).where(Match.external_id == "0a3f5e1c9b2d4e6f8a7b6c5d4e3f2a1b")
    ).one()
    detail = client.get(f"/matches/{match_id}").json()
    assert (detail["home_team"], detail["away_team"]) == ("Man United", "Leicester")
    pre = [q["bookmaker"] for q in detail["quotes"] if q["phase"] == "pre"]
    assert pre == ["B365", "BW", "IW", "PS", "UNIBET_EU", "VC", "WH"]
    # Pinnacle from both sources: the dated Odds API quote is the latest.
    pinnacle = next(q for q in detail["quotes"] if q["bookmaker"] == "PS" and q["phase"] == "pre")
    assert pinnacle["home"] == 1.56


def test_alias_after_import_merges_the_duplicate_team(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile, session: Session
) -> None:
    client.post("/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers)
    post_csv(client, admin_headers, season_file("E0_1819").read_bytes())
    assert count_rows(session, Match) == 382  # the same two matches under other names

    merged = alias(client, admin_headers, "Manchester United", "Man United").json()
    assert merged["merged_team"] is True
    assert merged["matches_moved"] == 1  # Man United v Leicester City: no twin yet
    merged = alias(client, admin_headers, "Leicester City", "Leicester").json()
    assert (merged["matches_merged"], merged["quotes_moved"]) == (1, 2)
    assert count_rows(session, Match) == 381
    assert session.scalar(select(Team).where(Team.name == "Manchester United")) is None
    twin = session.scalars(
        select(Match).where(Match.external_id == "0a3f5e1c9b2d4e6f8a7b6c5d4e3f2a1b")
    ).one()
    assert (twin.home_team.name, twin.away_team.name, twin.result) == (
        "Man United",
        "Leicester",
        "1",
    )
    assert twin.kickoff == dt.datetime(2018, 8, 10, 19, 0, tzinfo=dt.UTC)  # the known time wins
    codes = {
        q.bookmaker.code
        for q in session.scalars(select(OddsQuote).where(OddsQuote.match_id == twin.id))
    }
    assert {"PS", "UNIBET_EU", "B365"} <= codes

    teams = client.get("/teams", params={"search": "manchester"}).json()
    assert teams == [
        {"id": twin.home_team_id, "name": "Man United", "aliases": ["Manchester United"]}
    ]
    # New data under the alias now lands on the merged match.
    again = client.post(
        "/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers
    ).json()
    assert again["matches_created"] == 0


def test_alias_errors(client: TestClient, admin_headers: dict[str, str], session: Session) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert alias(client, admin_headers, "Man Utd", "Nobody").status_code == 404
    assert alias(client, admin_headers, "Man United", "Man United").status_code == 409
    assert alias(client, admin_headers, "Man Utd", "Man United").status_code == 200
    assert alias(client, admin_headers, "Man Utd", "Man United").json()["created"] is False
    conflict = alias(client, admin_headers, "Man Utd", "Leicester")
    assert conflict.status_code == 409
    assert "already an alias of 'Man United'" in conflict.json()["detail"]
    # A team cannot be merged into the team it plays against.
    clash = alias(client, admin_headers, "Leicester", "Man United")
    assert clash.status_code == 409
    assert count_rows(session, Team) == 2
    assert client.delete("/admin/teams/aliases/Man Utd", headers=admin_headers).status_code == 204
    assert client.delete("/admin/teams/aliases/Man Utd", headers=admin_headers).status_code == 404
    assert count_rows(session, TeamAlias) == 0


def test_prices_of_ignored_markets_are_not_checked(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    events = odds_api_events()
    events[1]["bookmakers"][0]["markets"][1]["outcomes"][0]["price"] = 1000.5  # h2h_lay
    response = client.post("/admin/import/the-odds-api", json=events, headers=admin_headers)
    assert response.status_code == 200
    assert response.json()["quotes_inserted"] == 3


def test_a_reversed_alias_is_a_conflict(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert alias(client, admin_headers, "MU", "Man United").status_code == 200
    reversed_alias = alias(client, admin_headers, "Man United", "MU")
    assert reversed_alias.status_code == 409
    assert count_rows(session, Match) == 1
    assert count_rows(session, OddsQuote) == 1
    # An alias of an alias resolves to the team.
    chained = alias(client, admin_headers, "Man Utd", "MU").json()
    assert (chained["alias"], chained["team"]) == ("Man Utd", "Man United")


def test_a_failed_merge_undoes_what_it_had_moved(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    # Leicester's first match moves to Man United, then the merge meets Man United v
    # Leicester, which cannot become a team playing itself: everything is rolled back.
    first = quote(
        match={"home_team": "Leicester", "away_team": "Wolves", "kickoff": "2018-08-01T19:00:00Z"}
    )
    client.post("/admin/odds", json={"quotes": [first, quote()]}, headers=admin_headers)
    clash = alias(client, admin_headers, "Leicester", "Man United")
    assert clash.status_code == 409
    session.expire_all()
    homes = {m.home_team.name for m in session.scalars(select(Match))}
    assert homes == {"Leicester", "Man United"}
    assert count_rows(session, Team) == 3


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
        match={"home_team": "Arsenal", "away_team": "Chelsea", "external_id": "evt-1"}, home=2.2
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


def test_team_search_treats_wildcards_literally(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert client.get("/teams", params={"search": "_"}).json() == []
    assert client.get("/teams", params={"search": "%"}).json() == []
    assert [t["name"] for t in client.get("/teams", params={"search": "UNITED"}).json()] == [
        "Man United"
    ]


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
