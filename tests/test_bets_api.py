"""The bettor's book over HTTP: the admin key, every bad input a 422 naming its field with
nothing written, corrections appended to the trail with their before and after, deletions
that keep the trail, the list's filters and pages, a flag followed, a match not deleted from
under its bets, and team merges that keep them. Real matches of E0 2018/19."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.db.orm import Bet, BetChange
from tests.admin_requests import alias, post_odds
from tests.flag_books import at, book, raise_away_flag
from tests.helpers import count_rows, error_messages, received_at
from tests.placed_bets import SeasonMatch, bet_body, post_bet, season_lines, store_season


@pytest.fixture
def stored(
    client: TestClient, admin_headers: dict[str, str], season_file: Callable[[str], Path]
) -> list[tuple[int, SeasonMatch]]:
    """The first three matches of E0 2018/19 (Man United 2-1 Leicester, Bournemouth 2-0
    Cardiff, Fulham 0-2 Crystal Palace)."""
    return store_season(client, admin_headers, season_lines(season_file("E0_1819"), 3))


@pytest.fixture
def match_id(stored: list[tuple[int, SeasonMatch]]) -> int:
    return stored[0][0]


# --- the admin key ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/bets"),
        ("GET", "/bets"),
        ("GET", "/bets/1"),
        ("PATCH", "/bets/1"),
        ("DELETE", "/bets/1"),
        ("GET", "/bets/1/changes"),
        ("GET", "/bets/not-an-id"),
    ],
)
@pytest.mark.parametrize(("key", "code"), [(None, 401), ("wrong-key", 403)])
def test_the_book_needs_the_admin_key_before_anything_else_is_read(
    client: TestClient, session: Session, method: str, path: str, key: str | None, code: int
) -> None:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["X-API-Key"] = key
    # A body that is not JSON: the key is refused first, whatever the body.
    response = client.request(method, path, content=b"{not json", headers=headers)
    assert response.status_code == code, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert count_rows(session, Bet) == 0


def test_the_book_is_disabled_without_an_admin_key_set(database_url: str, session: Session) -> None:
    from app.settings import Settings
    from tests.apps import build_app

    app = build_app(Settings(database_url=database_url), session)
    with TestClient(app) as client:
        response = client.get("/bets", headers={"X-API-Key": "anything"})
    assert response.status_code == 503


# --- bad input -------------------------------------------------------------------------------


BAD_BODIES: list[tuple[dict[str, Any], list[str | int]]] = [
    ({"match_id": 999_999}, ["body", "match_id"]),
    ({"match_id": "1"}, ["body", "match_id"]),
    ({"outcome": "H"}, ["body", "outcome"]),
    ({"price": "abc"}, ["body", "price"]),
    ({"price": "5/0"}, ["body", "price"]),
    ({"price": 1.0}, ["body", "price"]),
    ({"price": "+50"}, ["body", "price"]),
    ({"price": "1" * 17}, ["body", "price"]),
    ({"price": True}, ["body", "price"]),
    ({"stake": 0}, ["body", "stake"]),
    ({"stake": -5}, ["body", "stake"]),
    ({"stake": "10"}, ["body", "stake"]),
    ({"stake": 1e10}, ["body", "stake"]),
    ({"placed_at": "2099-01-01T00:00:00Z"}, ["body", "placed_at"]),
    ({"placed_at": 1533902400}, ["body", "placed_at"]),
    ({"note": "x" * 501}, ["body", "note"]),
    ({"note": "line\nbreak"}, ["body", "note"]),
    ({"note": ""}, ["body", "note"]),
    ({"bookmaker": ""}, ["body", "bookmaker"]),
    ({"bookmaker": "b" * 65}, ["body", "bookmaker"]),
    ({"bookmaker": "B365\u200b"}, ["body", "bookmaker"]),
    ({"flag_id": 12345}, ["body", "flag_id"]),
    ({"colour": "red"}, ["body", "colour"]),
]


@pytest.mark.parametrize(
    ("change", "loc"),
    BAD_BODIES,
    ids=[str(loc[-1]) + str(i) for i, (_, loc) in enumerate(BAD_BODIES)],
)
def test_every_bad_field_is_a_422_naming_it_and_nothing_is_written(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    match_id: int,
    change: dict[str, Any],
    loc: list[str | int],
) -> None:
    body = bet_body(match_id) | change
    response = client.post("/bets", json=body, headers=admin_headers)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["status"] == 422
    assert [error["loc"][: len(loc)] for error in problem["errors"]] == [loc] * len(
        problem["errors"]
    ), problem
    assert (count_rows(session, Bet), count_rows(session, BetChange)) == (0, 0)


def test_a_missing_field_and_an_unknown_match_are_named_together(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    body = bet_body(999_999, price="5/0")
    response = client.post("/bets", json=body, headers=admin_headers)
    assert error_messages(response.json()) == [
        "body.match_id: no match 999999 is stored",
        "body.price: price '5/0' divides by zero",
    ]
    missing = {key: value for key, value in bet_body(1).items() if key != "stake"}
    response = client.post("/bets", json=missing, headers=admin_headers)
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "stake"]]
    assert count_rows(session, Bet) == 0


def test_a_body_not_sent_as_json_is_refused(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    response = client.post(
        "/bets", content=b"match_id=1", headers={**admin_headers, "Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert count_rows(session, Bet) == 0


# --- recording and reading -------------------------------------------------------------------


def test_a_bet_recorded_is_answered_with_its_match_and_trail(
    client: TestClient, admin_headers: dict[str, str], match_id: int
) -> None:
    bet = post_bet(
        client,
        admin_headers,
        bet_body(match_id, bookmaker="bet365", price=7.5, note="took the early price"),
    )
    assert bet["match"] == {
        "id": match_id,
        "competition": "E0",
        "home_team": "Man United",
        "away_team": "Leicester",
        "kickoff": "2018-08-10T00:00:00Z",  # the file gives no time
        "result": "1",
    }
    # Named by its name, kept as its code; a number as price is kept as written.
    assert (bet["bookmaker"], bet["price"], bet["price_text"]) == ("B365", 7.5, "7.5")
    assert (bet["note"], bet["flag_id"], bet["source"]) == ("took the early price", None, None)
    (created,) = bet["changes"]
    assert (created["change"], created["channel"], created["before"]) == ("created", "api", None)
    assert created["after"]["price_text"] == "7.5"
    read = client.get(f"/bets/{bet['id']}", headers=admin_headers).json()
    assert read == bet


def test_placed_at_defaults_to_when_the_request_arrived(
    client: TestClient, admin_headers: dict[str, str], match_id: int
) -> None:
    moment = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    body = {key: value for key, value in bet_body(match_id).items() if key != "placed_at"}
    with received_at(client, moment):
        bet = post_bet(client, admin_headers, body)
    assert bet["placed_at"] == bet["created_at"] == at(moment)


def test_a_bet_following_a_flag_takes_its_source_and_must_be_its_match_and_outcome(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    kickoff, raised = "2030-01-12T15:00:00Z", dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    raise_away_flag(client, admin_headers, kickoff, raised)
    (flag,) = client.get("/flags").json()["items"]
    match_id, outcome, source = flag["match"]["id"], flag["outcome"], flag["value_source"]
    other = "X" if outcome != "X" else "1"
    body = bet_body(
        match_id, outcome=outcome, price=flag["price"], flag_id=flag["id"], placed_at=at(raised)
    )
    with received_at(client, raised + dt.timedelta(minutes=5)):
        bet = post_bet(client, admin_headers, body)
        wrong = client.post("/bets", json={**body, "outcome": other}, headers=admin_headers)
    assert (bet["flag_id"], bet["source"], bet["status"]) == (flag["id"], source, "open")
    assert error_messages(wrong.json()) == [
        f"body.flag_id: flag {flag['id']} is outcome {outcome} of match {match_id}, "
        f"not outcome {other} of match {match_id}"
    ]
    listed = client.get("/bets", params={"source": source}, headers=admin_headers).json()
    assert [item["id"] for item in listed["items"]] == [bet["id"]]


def test_the_list_filters_and_pages(
    client: TestClient, admin_headers: dict[str, str], stored: list[tuple[int, SeasonMatch]]
) -> None:
    (united, _), (bournemouth, _), _ = stored
    # Man United 2-1 Leicester; Bournemouth 2-0 Cardiff.
    first = post_bet(client, admin_headers, bet_body(united, outcome="1", price=1.6))
    second = post_bet(
        client,
        admin_headers,
        bet_body(bournemouth, bookmaker="WH", placed_at="2018-08-11T09:00:00Z", price="8/5"),
    )
    third = post_bet(
        client,
        admin_headers,
        bet_body(bournemouth, outcome="1", placed_at="2018-08-11T10:00:00Z", price="5/1"),
    )

    def ids(**params: Any) -> list[int]:
        response = client.get("/bets", params=params, headers=admin_headers)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    # Latest placed first.
    assert ids() == [third["id"], second["id"], first["id"]]
    assert ids(status="won") == [third["id"], first["id"]]
    assert ids(status="lost") == [second["id"]]
    assert ids(bookmaker="William Hill") == [second["id"]]
    assert ids(match_id=united) == [first["id"]]
    assert ids(competition="E0") == ids()
    assert ids(competition="SP1") == []
    assert ids(**{"from": "2018-08-11T00:00:00Z"}) == [third["id"], second["id"]]
    assert ids(to="2018-08-11T09:00:00Z") == [second["id"], first["id"]]
    page = client.get("/bets", params={"limit": 1, "offset": 1}, headers=admin_headers).json()
    assert ([item["id"] for item in page["items"]], page["total"]) == ([second["id"]], 3)
    backwards = {"from": "2018-08-12T00:00:00Z", "to": "2018-08-11T00:00:00Z"}
    response = client.get("/bets", params=backwards, headers=admin_headers)
    assert error_messages(response.json()) == ["query.to: must be after `from`"]
    response = client.get("/bets", params={"status": "settled"}, headers=admin_headers)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["query", "status"]


# --- corrections and deletions ---------------------------------------------------------------


def test_a_correction_is_appended_with_its_before_and_after_and_settles_again(
    client: TestClient, admin_headers: dict[str, str], match_id: int
) -> None:
    bet = post_bet(client, admin_headers, bet_body(match_id))
    corrected_at = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
    with received_at(client, corrected_at):
        response = client.patch(
            f"/bets/{bet['id']}",
            json={"outcome": "1", "price": "8/13", "stake": 12.5, "note": "was the home side"},
            headers=admin_headers,
        )
    assert response.status_code == 200, response.text
    corrected = response.json()
    # 12.5 on Man United at 8/13 (1.6154): won, 12.5 × 21/13 = 20.19 back.
    assert (corrected["status"], corrected["price_text"]) == ("won", "8/13")
    assert corrected["returned"] == pytest.approx(12.5 * 21 / 13)
    assert corrected["updated_at"] == at(corrected_at)
    created, change = corrected["changes"]
    assert (change["change"], change["channel"], change["at"]) == (
        "corrected",
        "api",
        at(corrected_at),
    )
    assert change["before"] == created["after"] | {"status": "lost"}
    changed = {key for key in change["after"] if change["after"][key] != change["before"][key]}
    # Its status is the user's (void or not): the settlement that followed is not theirs.
    assert changed == {"outcome", "price", "price_text", "stake", "note"}

    # The same values again: nothing to append.
    again = client.patch(f"/bets/{bet['id']}", json={"stake": 12.5}, headers=admin_headers)
    assert len(again.json()["changes"]) == 2
    # A note removed with null.
    removed = client.patch(f"/bets/{bet['id']}", json={"note": None}, headers=admin_headers)
    assert removed.json()["note"] is None
    assert removed.json()["changes"][-1]["before"]["note"] == "was the home side"


@pytest.mark.parametrize(
    ("patch", "loc"),
    [
        ({"outcome": None}, ["body", "outcome"]),
        ({"stake": 0}, ["body", "stake"]),
        ({"price": "7/0"}, ["body", "price"]),
        ({"status": "won"}, ["body", "status"]),
        ({"placed_at": "2099-01-01T00:00:00Z"}, ["body", "placed_at"]),
        ({"flag_id": 777}, ["body", "flag_id"]),
        ({"match_id": 2}, ["body", "match_id"]),
    ],
)
def test_a_bad_correction_is_a_422_and_changes_nothing(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    match_id: int,
    patch: dict[str, Any],
    loc: list[str | int],
) -> None:
    bet = post_bet(client, admin_headers, bet_body(match_id))
    response = client.patch(f"/bets/{bet['id']}", json=patch, headers=admin_headers)
    assert response.status_code == 422, response.text
    assert [error["loc"][: len(loc)] for error in response.json()["errors"]] == [loc]
    assert client.get(f"/bets/{bet['id']}", headers=admin_headers).json() == bet
    assert count_rows(session, BetChange) == 1


def test_a_deleted_bet_keeps_its_trail(
    client: TestClient, session: Session, admin_headers: dict[str, str], match_id: int
) -> None:
    bet = post_bet(client, admin_headers, bet_body(match_id))
    deleted = client.delete(f"/bets/{bet['id']}", headers=admin_headers)
    assert (deleted.status_code, deleted.content) == (204, b"")
    gone = client.get(f"/bets/{bet['id']}", headers=admin_headers)
    assert gone.status_code == 404
    assert error_messages(gone.json()) == [f"no bet {bet['id']} is stored"]
    trail = client.get(f"/bets/{bet['id']}/changes", headers=admin_headers).json()
    assert [change["change"] for change in trail] == ["created", "deleted"]
    assert trail[1]["before"] == trail[0]["after"] | {"status": "lost"}
    assert trail[1]["after"] is None
    assert (count_rows(session, Bet), count_rows(session, BetChange)) == (0, 2)
    for method in ("DELETE", "PATCH"):
        again = client.request(method, f"/bets/{bet['id']}", json={}, headers=admin_headers)
        assert again.status_code == 404
    assert client.get("/bets/999/changes", headers=admin_headers).status_code == 404


def test_a_path_whose_id_is_no_number_is_no_bet(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    # A bet's path takes digits only, so that /bets/summary and its siblings are never read
    # as a bet: anything else is a path the API does not have.
    response = client.get("/bets/abc", headers=admin_headers)
    assert response.status_code == 404
    assert error_messages(response.json()) == ["nothing at /bets/abc"]


# --- the match under the bets ----------------------------------------------------------------


def test_a_match_with_bets_is_not_deleted_until_they_are(
    client: TestClient, admin_headers: dict[str, str], match_id: int
) -> None:
    first = post_bet(client, admin_headers, bet_body(match_id))
    second = post_bet(client, admin_headers, bet_body(match_id, outcome="X", price="3/1"))
    for force in ("false", "true"):
        refused = client.delete(
            f"/admin/matches/{match_id}", params={"force": force}, headers=admin_headers
        )
        assert refused.status_code == 409
        assert error_messages(refused.json()) == [
            f"match {match_id} has 2 bets ({first['id']}, {second['id']}); it is not deleted "
            "from under them: delete the bets first"
        ]
    for bet in (first, second):
        assert client.delete(f"/bets/{bet['id']}", headers=admin_headers).status_code == 204
    assert client.delete(f"/admin/matches/{match_id}", headers=admin_headers).status_code == 200


def test_a_team_merge_moves_a_folded_match_s_bets_to_its_twin(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    # The same match stored twice under two spellings of a team; a bet on the duplicate.
    kickoff = dt.datetime(2026, 1, 10, 15, 0, tzinfo=dt.UTC)
    captured = kickoff - dt.timedelta(days=1)
    with received_at(client, captured):
        post_odds(
            client,
            admin_headers,
            book(at(kickoff), "B365", (1.57, 3.9, 7.5), captured, home_team="Man United"),
            book(at(kickoff), "WH", (1.57, 3.8, 6.0), captured, home_team="Manchester United"),
        )
    matches = client.get("/matches", params={"date": "2026-01-10"}).json()["items"]
    by_home = {item["home_team"]: item["id"] for item in matches}
    duplicate, twin = by_home["Manchester United"], by_home["Man United"]
    bet = post_bet(client, admin_headers, bet_body(duplicate, placed_at="2026-01-09T10:00:00Z"))

    merged = alias(client, admin_headers, "Manchester United", "Man United")
    assert merged.status_code == 200, merged.text

    moved = client.get(f"/bets/{bet['id']}", headers=admin_headers).json()
    assert (moved["match"]["id"], moved["match"]["home_team"]) == (twin, "Man United")
    change = moved["changes"][-1]
    assert (change["change"], change["channel"]) == ("corrected", "merge")
    assert (change["before"]["match_id"], change["after"]["match_id"]) == (duplicate, twin)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/bets", "GET, POST"),
        ("PUT", "/bets/1", "DELETE, GET, PATCH"),
        # A bet's id is a number: the book's named paths are not bets.
        ("PATCH", "/bets/summary", "GET"),
        ("DELETE", "/bets/export", "GET"),
        ("PATCH", "/bets/import", "POST"),
    ],
)
def test_a_method_not_allowed_names_every_method_of_the_path(
    client: TestClient, admin_headers: dict[str, str], method: str, path: str, allowed: str
) -> None:
    # Two routes share /bets (and three /bets/{id}): each method of any of them is allowed.
    response = client.request(method, path, json={}, headers=admin_headers)
    assert response.status_code == 405
    assert response.headers["Allow"] == allowed
    expected = f"{method} is not allowed on {path}; allowed: {allowed}"
    assert error_messages(response.json()) == [expected]


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    client: TestClient, session: Session, admin_headers: dict[str, str], match_id: int
) -> None:
    # The default limit (ODDSBOOST_BODY_LIMIT_BYTES, 1 MiB): a note of 2 MiB is far over it.
    body = bet_body(match_id, note="x" * (2 * 1024 * 1024))
    response = client.post("/bets", json=body, headers=admin_headers)
    assert response.status_code == 413
    assert count_rows(session, Bet) == 0
