"""GET /upcoming on the hand-chosen matches of the value-bets tests.

The model trusts Bet&Win alone and de-margines multiplicatively, and Bet&Win quotes books
without margin, so each served probability is 1/price of its line and each fair price is
Bet&Win's own: the figures below are worked out by hand from the prices.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from app.db.engine import make_engine, make_session_factory, session_scope
from app.domain.vocabulary import ActivatedBy, Method
from app.services.model_versions import activate
from app.state import app_state
from tests.helpers import error_messages, hand_made_version, request_statements
from tests.test_value_bets import (
    ARSENAL,
    BARCELONA,
    CAPTURED,
    D1,
    EVERTON,
    NEXT_WEEK,
    NOW,
    Fixture,
    Seeded,
    app_on,
    quote_items,
    seed,
    store,
    store_model,
)

# Stored with one quote, captured five minutes after its kickoff: no usable quote.
QUIET = Fixture("E0", "Quiet", "Silent", D1 + dt.timedelta(hours=20), {"B365": (2.0, 3.5, 4.0)})


def seed_quiet(client: TestClient) -> None:
    late = quote_items(QUIET)[0]
    late["captured_at"] = (QUIET.kickoff + dt.timedelta(minutes=5)).isoformat()
    store(client, [late])


@pytest.fixture
def seeded(migrated_url: str) -> Iterator[Seeded]:
    version = store_model(migrated_url)
    with app_on(migrated_url) as client:
        ids = seed(client)
        seed_quiet(client)
        yield Seeded(client, ids, version, migrated_url)


def upcoming(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/upcoming", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def teams(body: dict[str, Any]) -> list[str]:
    return [item["match"]["home_team"] for item in body["items"]]


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def test_every_match_of_the_week_by_kickoff_with_prediction_value_and_freshness(
    seeded: Seeded,
) -> None:
    body = upcoming(seeded.client)
    # Leeds kicked off an hour ago; Burnley is next week.
    assert teams(body) == ["Arsenal", "Everton", "Quiet", "Barcelona"]
    assert body["total"] == 4
    assert body["model_version"] == seeded.version
    assert body["note"] is None
    arsenal = body["items"][0]
    assert arsenal["match"] == {
        "id": seeded.ids["Arsenal"],
        "competition": "E0",
        "season": "2026/27" if ARSENAL.kickoff.month >= 7 else "2025/26",
        "home_team": "Arsenal",
        "away_team": "Chelsea",
        "kickoff": ARSENAL.kickoff.isoformat().replace("+00:00", "Z"),
    }
    prediction = arsenal["prediction"]
    assert prediction["probabilities"] == pytest.approx({"home": 0.5, "draw": 0.25, "away": 0.25})
    assert prediction["fair_odds"] == pytest.approx({"home": 2.0, "draw": 4.0, "away": 4.0})
    assert (prediction["basis"], prediction["outcome"]) == ("model", "1")
    assert arsenal["reason"] is None
    assert arsenal["model_version"] == seeded.version
    value = arsenal["value"]
    assert value["source"] == "ensemble"
    # Home: B365's 2.2 × 0.5 − 1 = 0.1. Draw: BW's 4.0 is the best, worth 0. Away: WH's 4.2
    # × 0.25 − 1 = 0.05.
    assert [
        (o["outcome"], o["bookmaker"], o["price"], o["flagged"]) for o in value["outcomes"]
    ] == [("1", "B365", 2.2, True), ("X", "BW", 4.0, False), ("2", "WH", 4.2, True)]
    assert [o["expected_value"] for o in value["outcomes"]] == pytest.approx([0.1, 0.0, 0.05])
    assert [(bet["outcome"], bet["bookmaker"]) for bet in arsenal["value_bets"]] == [
        ("1", "B365"),
        ("2", "WH"),
    ]
    assert [bet["stake_fraction"] for bet in arsenal["value_bets"]] == pytest.approx(
        [0.02, 0.25 * 0.05 / 3.2]
    )
    freshness = arsenal["freshness"]
    assert freshness["bookmakers"] == 4
    assert utc(freshness["newest_captured_at"]) == utc(freshness["oldest_captured_at"]) == CAPTURED
    answered_at = utc(body["answered_at"])
    assert freshness["age_seconds"] == pytest.approx((answered_at - CAPTURED).total_seconds())
    assert NOW <= answered_at <= dt.datetime.now(dt.UTC)


def test_a_match_without_a_usable_quote_is_listed_without_a_prediction(seeded: Seeded) -> None:
    everton, quiet = upcoming(seeded.client)["items"][1:3]
    # Everton's B365 quote captured after kickoff is never read: two bookmakers, no value.
    assert everton["freshness"]["bookmakers"] == 2
    assert everton["prediction"]["probabilities"] == pytest.approx(
        {"home": 0.4, "draw": 0.2, "away": 0.4}
    )
    assert everton["value_bets"] == []
    assert [o["flagged"] for o in everton["value"]["outcomes"]] == [False] * 3
    assert quiet["prediction"] is None
    assert quiet["value"] is None
    assert quiet["value_bets"] == []
    assert quiet["model_version"] is None
    assert quiet["reason"].startswith("no usable quote")
    assert quiet["freshness"] == {
        "bookmakers": 0,
        "newest_captured_at": None,
        "oldest_captured_at": None,
        "age_seconds": None,
    }


def test_the_window_the_competition_and_the_pages(seeded: Seeded) -> None:
    client = seeded.client
    assert teams(upcoming(client, competition="SP1")) == ["Barcelona"]
    assert teams(upcoming(client, to=(D1 + dt.timedelta(hours=19)).isoformat())) == [
        "Arsenal",
        "Everton",
    ]
    later = {"from": (NOW + dt.timedelta(days=7, hours=12)).isoformat()}
    assert teams(upcoming(client, **later, to=(NOW + dt.timedelta(days=9)).isoformat())) == [
        NEXT_WEEK.home
    ]
    # A window reaching into the past still lists no match that has kicked off.
    past = upcoming(client, **{"from": (NOW - dt.timedelta(days=2)).isoformat()})
    assert teams(past) == ["Arsenal", "Everton", "Quiet", "Barcelona"]
    pages = [upcoming(client, limit=2, offset=offset) for offset in (0, 2, 4)]
    assert [teams(page) for page in pages] == [["Arsenal", "Everton"], ["Quiet", "Barcelona"], []]
    assert {page["total"] for page in pages} == {4}
    assert (pages[1]["limit"], pages[1]["offset"]) == (2, 2)


def test_the_value_terms_are_those_of_the_value_bets_list(seeded: Seeded) -> None:
    body = upcoming(seeded.client, bookmakers=["William Hill"], bankroll=1000, min_ev=0.04)
    arsenal = body["items"][0]
    # William Hill alone: home 2.1 × 0.5 − 1 = 0.05, away 4.2 × 0.25 − 1 = 0.05.
    assert [(o["bookmaker"], o["price"]) for o in arsenal["value"]["outcomes"]] == [
        ("WH", 2.1),
        ("WH", 3.3),
        ("WH", 4.2),
    ]
    assert {bet["bookmaker"] for bet in arsenal["value_bets"]} == {"WH"}
    assert body["terms"]["bookmakers"] == ["WH"]
    assert body["terms"]["bankroll"] == 1000
    value_bets = seeded.client.get(
        "/value-bets", params={"bookmakers": ["William Hill"], "bankroll": 1000, "min_ev": 0.04}
    ).json()["items"]
    listed = [bet for item in body["items"] for bet in item["value_bets"]]
    assert sorted(listed, key=str) == sorted(value_bets, key=str)


def test_a_new_quote_shows_in_the_next_answer(seeded: Seeded) -> None:
    before = upcoming(seeded.client)["items"][0]
    assert before["value"]["outcomes"][0]["price"] == 2.2
    newer = CAPTURED + dt.timedelta(minutes=30)
    quote = quote_items(ARSENAL)[1] | {"home": 2.5, "captured_at": newer.isoformat()}
    store(seeded.client, [quote])
    after = upcoming(seeded.client)["items"][0]
    # B365's newer 2.5 is worth 0.5 × 2.5 − 1 = 0.25; still four bookmakers.
    assert after["value"]["outcomes"][0]["price"] == 2.5
    assert after["value"]["outcomes"][0]["expected_value"] == pytest.approx(0.25)
    assert after["freshness"]["bookmakers"] == 4
    assert utc(after["freshness"]["newest_captured_at"]) == newer
    assert utc(after["freshness"]["oldest_captured_at"]) == CAPTURED


def test_after_a_new_quote_only_its_match_is_read_again(seeded: Seeded) -> None:
    upcoming(seeded.client, bankroll=1000)
    statements: list[tuple[str, Any]] = []

    def record(*args: Any) -> None:
        statements.append((str(args[2]), args[3]))

    engine = app_state(seeded.client.app_state).engine
    newer = CAPTURED + dt.timedelta(minutes=30)
    store(
        seeded.client, [quote_items(ARSENAL)[1] | {"home": 2.5, "captured_at": newer.isoformat()}]
    )
    event.listen(engine, "before_cursor_execute", record)
    after = upcoming(seeded.client, bankroll=1000)
    event.remove(engine, "before_cursor_execute", record)
    read = [
        list(parameters.values() if isinstance(parameters, dict) else parameters)
        for sql, parameters in statements
        if "FROM odds_quotes JOIN" in sql
    ]
    # The quotes of Arsenal's match alone (the other value: the phase).
    assert read
    assert all(seeded.ids["Arsenal"] in p and len(p) <= 2 for p in read), read
    # What a process that never made the board answers.
    with app_on(seeded.database_url) as fresh:
        anew = upcoming(fresh, bankroll=1000)
    for answer in (after, anew):
        for item in answer["items"]:
            item["freshness"].pop("age_seconds")
        answer.pop("answered_at")
        answer.pop("from")
        answer.pop("to")
    assert after == anew


def test_a_changed_price_of_a_stored_quote_shows_in_the_next_answer(seeded: Seeded) -> None:
    assert upcoming(seeded.client)["items"][3]["value"]["outcomes"][1]["price"] == 11.0
    # The same quote (bookmaker, capture time) sent again with another draw price.
    store(seeded.client, [quote_items(BARCELONA)[1] | {"draw": 12.0}])
    assert upcoming(seeded.client)["items"][3]["value"]["outcomes"][1]["price"] == 12.0


def test_a_model_activation_shows_in_the_next_answer(seeded: Seeded) -> None:
    assert upcoming(seeded.client)["model_version"] == seeded.version
    engine = make_engine(seeded.database_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        version = hand_made_version(weights={"B365": 1.0}, method=Method.MULTIPLICATIVE)
        session.add(version)
        session.flush()
        activate(session, version, by=ActivatedBy.REFIT)
        new_version = version.id
    engine.dispose()
    app_state(seeded.client.app_state).models.refresh()  # what the background task does
    body = upcoming(seeded.client)
    assert body["model_version"] == new_version
    arsenal = body["items"][0]
    assert arsenal["model_version"] == new_version
    # B365's 2.2 / 3.4 / 3.6, de-margined multiplicatively.
    inverse = [1 / 2.2, 1 / 3.4, 1 / 3.6]
    home, draw, away = (p / sum(inverse) for p in inverse)
    assert arsenal["prediction"]["probabilities"] == pytest.approx(
        {"home": home, "draw": draw, "away": away}
    )


def test_a_poll_with_nothing_changed_is_one_query(migrated_url: str) -> None:
    store_model(migrated_url)
    with app_on(migrated_url) as client:
        seed(client)
        first = upcoming(client)
        statements: list[str] = []

        def record(*args: Any) -> None:
            statements.append(str(args[2]))

        event.listen(app_state(client.app_state).engine, "before_cursor_execute", record)
        again = upcoming(client)
    selects = [s for s in request_statements(statements) if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1, selects
    assert again["items"][0]["value"] == first["items"][0]["value"]


def test_the_answers_have_the_documented_shape(seeded: Seeded) -> None:
    from app.api.schemas.upcoming import UpcomingPage

    for params in ({}, {"bankroll": 1000, "bookmakers": "B365,BW"}, {"limit": 1, "offset": 2}):
        body = upcoming(seeded.client, **params)
        # The documented model, read from the written body and written again, gives it back.
        documented = UpcomingPage.model_validate(
            {**body, "kickoff_from": body["from"], "kickoff_to": body["to"], "unfitted": False}
        )
        assert documented.model_dump(mode="json", by_alias=True) == body


def test_polls_within_a_second_get_the_same_answer(seeded: Seeded) -> None:
    from app.services.pagination import PageWindow
    from app.services.upcoming import UpcomingQuery

    state = app_state(seeded.client.app_state)
    query = UpcomingQuery(
        terms=state.settings.value_terms(),
        daily_exposure_cap=state.settings.value_daily_exposure_cap,
    )
    window = PageWindow(limit=50, offset=0)
    moment = dt.datetime.now(dt.UTC).replace(microsecond=100)

    portal = seeded.client.portal
    assert portal is not None  # the client is open

    def page_at(now: dt.datetime) -> Any:
        return portal.call(lambda: state.upcoming.page(query, window, now=now))

    first = page_at(moment)
    assert page_at(moment.replace(microsecond=999_000)) is first
    later = page_at(moment + dt.timedelta(seconds=1))
    assert later is not first
    aged = [item.freshness.age_seconds for item in later.items if item.freshness.age_seconds]
    assert aged, later.items
    assert aged[0] == pytest.approx((moment + dt.timedelta(seconds=1) - CAPTURED).total_seconds())


def test_before_any_fit_the_board_is_the_consensus(migrated_url: str) -> None:
    with app_on(migrated_url) as client:
        seed(client)
        body = upcoming(client)
    assert body["model_version"] is None
    assert "no model has been fitted yet" in body["note"]
    assert {item["prediction"]["basis"] for item in body["items"]} == {"consensus"}
    assert EVERTON.home in teams(body)


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"limit": 0}, "query.limit"),
        ({"offset": -1}, "query.offset"),
        ({"min_ev": 1.5}, "query.min_ev"),
        ({"bankroll": 0}, "query.bankroll"),
        ({"from": "tomorrow"}, "query.from"),
        ({"to": "2026-13-01"}, "query.to"),
        ({"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, "query.to"),
        ({"competition": "E" * 65}, "query.competition"),
        ({"source": ""}, "query.source"),
    ],
)
def test_bad_inputs_are_problems_naming_the_parameter(
    client: TestClient, params: dict[str, Any], where: str
) -> None:
    response = client.get("/upcoming", params=params)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    messages = error_messages(response.json())
    assert len(messages) == 1
    assert messages[0].startswith(f"{where}: "), messages
