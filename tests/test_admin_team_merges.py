"""Admin aliases: one match from many sources, team merges with their preview, confirmation
and undo, and the team search."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import Match, OddsQuote, PredictionLogEntry, Team, TeamAlias
from app.services.track_record import log_matches
from app.settings import Settings
from tests.admin_requests import E0_1819_PRICE_PREFIXES, alias, odds_api_events, post_csv, quote
from tests.helpers import count_rows, csv_rows, error_messages

SeasonFile = Callable[[str], Path]


# --- aliases: one match, many sources -------------------------------------------------------


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

    teams = client.get("/teams", params={"search": "manchester"}).json()["items"]
    assert teams == [
        {"id": twin.home_team_id, "name": "Man United", "aliases": ["Manchester United"]}
    ]
    # New data under the alias now lands on the merged match.
    again = client.post(
        "/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers
    ).json()
    assert again["matches_created"] == 0


def test_a_merge_keeps_the_prediction_logged_for_the_folded_match(
    client: TestClient,
    admin_headers: dict[str, str],
    season_file: SeasonFile,
    session: Session,
    settings: Settings,
) -> None:
    client.post("/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers)
    external_id = "0a3f5e1c9b2d4e6f8a7b6c5d4e3f2a1b"
    folded = session.scalars(select(Match).where(Match.external_id == external_id)).one()
    assert log_matches(session, settings, [(folded.id, folded.kickoff)]).written == 1
    session.commit()
    logged = session.scalars(select(PredictionLogEntry)).one()
    served, version, logged_at = logged.served, logged.model_version, logged.logged_at
    post_csv(client, admin_headers, season_file("E0_1819").read_bytes())

    alias(client, admin_headers, "Manchester United", "Man United")
    merged = alias(client, admin_headers, "Leicester City", "Leicester").json()
    assert merged["matches_merged"] == 1

    session.expire_all()
    twin = session.scalars(select(Match).where(Match.external_id == external_id)).one()
    assert twin.id != folded.id  # the season file's match stayed, the feed's folded into it
    kept = session.scalars(select(PredictionLogEntry)).one()
    assert (kept.match_id, kept.served, kept.model_version, kept.logged_at) == (
        twin.id,
        served,
        version,
        logged_at,
    )


def test_a_merge_keeps_the_twins_own_logged_prediction(
    client: TestClient,
    admin_headers: dict[str, str],
    season_file: SeasonFile,
    session: Session,
    settings: Settings,
) -> None:
    client.post("/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers)
    post_csv(client, admin_headers, season_file("E0_1819").read_bytes())
    alias(client, admin_headers, "Manchester United", "Man United")
    folded, twin = session.scalars(
        select(Match)
        .join(Team, Team.id == Match.away_team_id)
        .where(Team.name.in_(["Leicester City", "Leicester"]))
        .where(Match.kickoff < dt.datetime(2018, 8, 11, tzinfo=dt.UTC))
        .order_by(Team.name.desc())
    ).all()
    assert folded.external_id is not None
    assert twin.external_id is None
    both = [(folded.id, folded.kickoff), (twin.id, twin.kickoff)]
    assert log_matches(session, settings, both).written == 2
    session.commit()
    twin_served = session.scalars(
        select(PredictionLogEntry.served).where(PredictionLogEntry.match_id == twin.id)
    ).one()

    merged = alias(client, admin_headers, "Leicester City", "Leicester")
    assert merged.status_code == 200
    assert merged.json()["matches_merged"] == 1

    session.expire_all()
    kept = session.scalars(select(PredictionLogEntry)).one()
    assert (kept.match_id, kept.served) == (twin.id, twin_served)


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


@pytest.mark.parametrize("sent_as", ["AC%2FDC%20United", "AC/DC United"])
def test_an_alias_with_a_slash_is_deleted_over_the_api(
    client: TestClient, admin_headers: dict[str, str], session: Session, sent_as: str
) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert alias(client, admin_headers, "AC/DC United", "Man United").status_code == 200
    path = f"/admin/teams/aliases/{sent_as}"
    assert client.delete(path, headers=admin_headers).status_code == 204
    assert count_rows(session, TeamAlias) == 0
    gone = client.delete(path, headers=admin_headers)
    assert gone.status_code == 404
    assert error_messages(gone.json()) == ["no alias 'AC/DC United'"]


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


def test_team_search_treats_wildcards_literally(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert client.get("/teams", params={"search": "_"}).json()["items"] == []
    assert client.get("/teams", params={"search": "%"}).json()["items"] == []
    found = client.get("/teams", params={"search": "UNITED"}).json()["items"]
    assert [t["name"] for t in found] == ["Man United"]


# --- team merges: preview, confirmation, undo ----------------------------------------------------


def team_quotes(path: Path, team: str) -> int:
    """The complete price triples of a team's rows in a season file, counted with csv."""
    header, rows = csv_rows(path)
    home, away = header.index("HomeTeam"), header.index("AwayTeam")
    prefixes = E0_1819_PRICE_PREFIXES  # the same bookmakers in every 2018/19 file
    positions = [[header.index(prefix + side) for side in "HDA"] for prefix in prefixes]
    return sum(
        all(row[p].strip() and float(row[p]) > 1.0 for p in triple)
        for row in rows
        if team in (row[home], row[away])
        for triple in positions
    )


def matches_of(session: Session, team: str) -> int:
    session.expire_all()
    return len(
        session.scalars(
            select(Match.id).where(
                (Match.home_team.has(Team.name == team)) | (Match.away_team.has(Team.name == team))
            )
        ).all()
    )


@pytest.fixture
def two_leagues(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> tuple[Path, Path]:
    paths = season_file("E0_1819"), season_file("SP1_1819")
    for path in paths:
        assert post_csv(client, admin_headers, path.read_bytes()).status_code == 200
    return paths


def test_merging_teams_of_two_leagues_asks_for_confirmation(
    client: TestClient,
    admin_headers: dict[str, str],
    session: Session,
    two_leagues: tuple[Path, Path],
) -> None:
    getafe_quotes = team_quotes(two_leagues[1], "Getafe")
    refused = alias(client, admin_headers, "Getafe", "Arsenal")
    assert refused.status_code == 409
    (message,) = error_messages(refused.json())
    assert "2018/19: 'Getafe' in SP1, 'Arsenal' in E0" in message
    assert 'send "confirm": true' in message
    preview = refused.json()["preview"]
    # A 20-team league season: 38 matches each; none of Getafe's has a twin at Arsenal.
    assert preview == {
        "merged_team": "Getafe",
        "team": "Arsenal",
        "matches_moved": 38,
        "matches_merged": 0,
        "quotes_moved_with_matches": getafe_quotes,
        "quotes_moved": 0,
        "quotes_dropped": 0,
        "competitions": [{"competition": "SP1", "season": "2018/19", "matches": 38}],
        "clashes": [{"season": "2018/19", "merged_team": ["SP1"], "team": ["E0"]}],
        "needs_confirmation": True,
    }
    assert (matches_of(session, "Getafe"), count_rows(session, TeamAlias)) == (38, 0)

    confirmed = client.post(
        "/admin/teams/aliases",
        json={"alias": "Getafe", "team": "Arsenal", "confirm": True},
        headers=admin_headers,
    )
    assert confirmed.status_code == 200, confirmed.text
    merged = confirmed.json()
    assert (merged["merged_team"], merged["matches_moved"], merged["dry_run"]) == (
        True,
        38,
        False,
    )
    assert merged["preview"] == {**preview}
    assert (matches_of(session, "Getafe"), matches_of(session, "Arsenal")) == (0, 76)


@pytest.mark.usefixtures("two_leagues")
def test_a_dry_run_shows_the_merge_and_changes_nothing(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    response = client.post(
        "/admin/teams/aliases",
        json={"alias": "Getafe", "team": "Arsenal", "dry_run": True},
        headers=admin_headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["dry_run"], body["created"], body["merged_team"]) == (True, False, False)
    assert body["preview"]["matches_moved"] == 38
    assert body["preview"]["needs_confirmation"] is True
    assert (matches_of(session, "Getafe"), count_rows(session, TeamAlias)) == (38, 0)


@pytest.mark.usefixtures("two_leagues")
def test_unalias_undoes_a_merge(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    sp1_match = client.get("/matches", params={"competition": "SP1", "limit": 500}).json()
    getafe_ids = {
        m["id"] for m in sp1_match["items"] if "Getafe" in (m["home_team"], m["away_team"])
    }
    client.post(
        "/admin/teams/aliases",
        json={"alias": "Getafe", "team": "Arsenal", "confirm": True},
        headers=admin_headers,
    )
    undone = client.delete("/admin/teams/aliases/Getafe", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    assert undone.json() == {
        "alias": "Getafe",
        "team": "Arsenal",
        "restored_team": True,
        "matches_moved_back": 38,
        "not_moved_back": [],
        "merged_matches": [],
        "aliases_moved_back": [],
    }
    assert (matches_of(session, "Getafe"), matches_of(session, "Arsenal")) == (38, 38)
    after = client.get("/matches", params={"competition": "SP1", "limit": 500}).json()
    assert {m["id"] for m in after["items"] if "Getafe" in (m["home_team"], m["away_team"])} == (
        getafe_ids
    )
    assert count_rows(session, TeamAlias) == 0
    assert client.delete("/admin/teams/aliases/Getafe", headers=admin_headers).status_code == 404


def test_unalias_says_which_matches_keep_the_quotes_of_both(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile, session: Session
) -> None:
    client.post("/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers)
    post_csv(client, admin_headers, season_file("E0_1819").read_bytes())
    # The Odds API's Man Utd has an alias of its own, which moves with it.
    assert alias(client, admin_headers, "Man Utd", "Manchester United").status_code == 200
    moved = alias(client, admin_headers, "Leicester City", "Leicester").json()
    assert moved["matches_moved"] == 1
    merged = alias(client, admin_headers, "Manchester United", "Man United").json()
    assert (merged["matches_merged"], merged["quotes_moved"]) == (1, 2)
    twin = session.scalars(
        select(Match.id).where(Match.external_id == "0a3f5e1c9b2d4e6f8a7b6c5d4e3f2a1b")
    ).one()

    undone = client.delete("/admin/teams/aliases/Manchester United", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    body = undone.json()
    assert (body["restored_team"], body["matches_moved_back"]) == (True, 0)
    assert body["merged_matches"] == [twin]
    assert body["aliases_moved_back"] == ["Man Utd"]
    aliases = {a.alias: a.team.name for a in session.scalars(select(TeamAlias))}
    assert aliases == {"Man Utd": "Manchester United", "Leicester City": "Leicester"}
    # The match that had moved to Leicester was then merged away: nothing to move back.
    gone = client.delete("/admin/teams/aliases/Leicester City", headers=admin_headers).json()
    assert gone["restored_team"] is True
    assert gone["matches_moved_back"] == 0
    assert [item["match_id"] for item in gone["not_moved_back"]] == [None]
    assert "no longer stored" in gone["not_moved_back"][0]["reason"]


def test_an_alias_without_a_merge_is_removed_with_no_content(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    client.post("/admin/odds", json={"quotes": [quote()]}, headers=admin_headers)
    assert alias(client, admin_headers, "Man Utd", "Man United").json()["preview"] is None
    removed = client.delete("/admin/teams/aliases/Man Utd", headers=admin_headers)
    assert (removed.status_code, removed.content) == (204, b"")


def test_a_merge_within_one_competition_needs_no_confirmation(
    client: TestClient, admin_headers: dict[str, str], season_file: SeasonFile
) -> None:
    client.post("/admin/import/the-odds-api", json=odds_api_events(), headers=admin_headers)
    post_csv(client, admin_headers, season_file("E0_1819").read_bytes())
    merged = alias(client, admin_headers, "Manchester United", "Man United")
    assert merged.status_code == 200
    preview = merged.json()["preview"]
    assert (preview["needs_confirmation"], preview["clashes"]) == (False, [])
    assert preview["competitions"] == [{"competition": "E0", "season": "2018/19", "matches": 1}]
