"""GET /upcoming on the hand-chosen matches of the value-bets tests.

The model trusts Bet&Win alone and de-margines multiplicatively, and Bet&Win quotes books
without margin, so each served probability is 1/price of its line and each fair price is
Bet&Win's own: the figures below are worked out by hand from the prices.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response
from sqlalchemy import event, func, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, OddsQuote
from app.domain.vocabulary import ActivatedBy, Method
from app.services import upcoming as upcoming_service
from app.services.caching import AnswerCache
from app.services.ingest import MatchIdentity, ResultItem, settle_results
from app.services.matches import delete_match
from app.services.model_versions import activate
from app.services.queries import MatchFilter
from app.services.teams import add_alias, remove_alias
from app.state import BODY_SECONDS, app_state
from tests.databases import Databases
from tests.helpers import error_messages, hand_made_version, request_statements
from tests.upcoming_matches import (
    ARSENAL,
    BARCELONA,
    CAPTURED,
    D1,
    D2,
    EVERTON,
    NEXT_WEEK,
    NOW,
    Fixture,
    Seeded,
    SeededTemplate,
    app_on,
    barcelona_on_the_exchange,
    quote_items,
    seed,
    seeded_template,
    store,
    store_model,
)

# Stored with no quote: its only one was a book no bookmaker offers (an overround of +0.54),
# skipped as the match was stored: no usable quote.
QUIET = Fixture("E0", "Quiet", "Silent", D1 + dt.timedelta(hours=20), {"B365": (1.05, 3.0, 4.0)})


def seed_quiet(client: TestClient) -> None:
    store(client, quote_items(QUIET))


@pytest.fixture(scope="module")
def board_template(databases: Databases, migrated_template: str) -> SeededTemplate:
    """What ``seeded`` copies: the matches of the value-bets tests, and the quiet one."""
    return seeded_template(databases, migrated_template, more=seed_quiet)


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
    assert prediction["model_weight_present"] == 1.0  # Bet&Win quoted it: all the weight
    assert arsenal["reason"] is None
    assert arsenal["model_version"] == seeded.version
    value = arsenal["value"]
    assert value["source"] == "ensemble"
    # Home: B365's 2.2 × 0.5 − 1 = 0.1. Draw: BW's 4.0 is the best, worth 0. Away: WH's 4.2
    # × 0.25 − 1 = 0.05, above 2 % too, but a match gets one bet: the home win, of higher EV.
    assert [
        (o["outcome"], o["bookmaker"], o["price"], o["flagged"]) for o in value["outcomes"]
    ] == [("1", "B365", 2.2, True), ("X", "BW", 4.0, False), ("2", "WH", 4.2, False)]
    assert [o["expected_value"] for o in value["outcomes"]] == pytest.approx([0.1, 0.0, 0.05])
    assert [(bet["outcome"], bet["bookmaker"]) for bet in arsenal["value_bets"]] == [("1", "B365")]
    assert [bet["stake_fraction"] for bet in arsenal["value_bets"]] == pytest.approx([0.02])
    freshness = arsenal["freshness"]
    assert freshness["bookmakers"] == 4
    assert utc(freshness["newest_captured_at"]) == utc(freshness["oldest_captured_at"]) == CAPTURED
    answered_at = utc(body["answered_at"])
    assert freshness["age_seconds"] == pytest.approx((answered_at - CAPTURED).total_seconds())
    assert NOW <= answered_at <= dt.datetime.now(dt.UTC)


def test_a_match_without_a_usable_quote_is_listed_without_a_prediction(seeded: Seeded) -> None:
    everton, quiet = upcoming(seeded.client)["items"][1:3]
    # Everton's B365 quote stamped after kickoff was refused: two bookmakers, no value.
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


def test_an_exchange_bet_shows_its_quoted_and_its_net_price(seeded: Seeded) -> None:
    store(seeded.client, [barcelona_on_the_exchange()])
    items = upcoming(seeded.client)["items"]
    [barcelona] = [item for item in items if item["match"]["home_team"] == "Barcelona"]
    [bet] = barcelona["value_bets"]
    assert (bet["outcome"], bet["bookmaker"], bet["price"]) == ("X", "BFE", 12.0)
    assert bet["net_price"] == pytest.approx(11.45)
    assert bet["expected_value"] == pytest.approx(0.145)
    assert bet["unscaled_stake_fraction"] == pytest.approx(0.25 * 0.145 / 10.45)
    draw = barcelona["value"]["outcomes"][1]
    assert (draw["price"], draw["net_price"]) == (12.0, pytest.approx(11.45))


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
        if "FROM latest_quotes JOIN odds_quotes" in sql
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


def test_the_watermark_is_the_newest_quote_receipt_and_match_change(seeded: Seeded) -> None:
    engine = app_state(seeded.client.app_state).engine
    week = dt.timedelta(days=7)
    with session_scope(make_session_factory(engine)) as session:
        newest = (
            session.scalar(select(func.max(OddsQuote.received_at))),
            session.scalar(select(func.max(Match.updated_at))),
        )
        assert None not in newest
        # Whichever match comes first in the window (Leeds, which kicked off, is left out).
        for competition in (None, "E0", "SP1"):
            filters = MatchFilter(competition=competition, kickoff_from=NOW, kickoff_to=NOW + week)
            revisions, watermark = upcoming_service.window_watermark(session, filters, NOW)
            stamps, stamped = upcoming_service.match_stamps(session, filters, NOW)
            assert revisions
            assert revisions == tuple((stamp[0], stamp[5]) for stamp in stamps)
            assert watermark == stamped == newest
        # An empty window depends on nothing but which matches enter it.
        later = MatchFilter(kickoff_from=NOW + 2 * week, kickoff_to=NOW + 3 * week)
        assert upcoming_service.window_watermark(session, later, NOW) == ((), (None, None))
        assert upcoming_service.match_stamps(session, later, NOW) == ((), (None, None))


def test_the_answers_have_the_documented_shape(seeded: Seeded) -> None:
    from app.api.schemas.upcoming import UpcomingPage

    for params in ({}, {"bankroll": 1000, "bookmakers": "B365,BW"}, {"limit": 1, "offset": 2}):
        body = upcoming(seeded.client, **params)
        # The documented model, read from the written body and written again, gives it back.
        documented = UpcomingPage.model_validate(
            {**body, "kickoff_from": body["from"], "kickoff_to": body["to"], "unfitted": False}
        )
        assert documented.model_dump(mode="json", by_alias=True) == body


def test_polls_within_a_second_get_the_same_answer(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The kept bodies tell the time by this clock: it moves only when the test moves it.
    clock = [0.0]
    bodies = AnswerCache[bytes](BODY_SECONDS, clock=lambda: clock[0])
    monkeypatch.setattr(app_state(seeded.client.app_state).upcoming_bodies, "kept", bodies)
    first = seeded.client.get("/upcoming")
    clock[0] += 0.9
    assert seeded.client.get("/upcoming").content == first.content
    clock[0] += 0.2
    later = seeded.client.get("/upcoming").json()
    assert later["answered_at"] != first.json()["answered_at"]
    aged = [item["freshness"]["age_seconds"] for item in later["items"]]
    answered_at = utc(later["answered_at"])
    assert aged[0] == pytest.approx((answered_at - CAPTURED).total_seconds())


def test_before_any_fit_the_board_is_the_consensus(migrated_url: str) -> None:
    with app_on(migrated_url) as client:
        seed(client)
        body = upcoming(client)
    assert body["model_version"] is None
    assert "no model has been fitted yet" in body["note"]
    assert {item["prediction"]["basis"] for item in body["items"]} == {"consensus"}
    assert {item["prediction"]["model_weight_present"] for item in body["items"]} == {None}
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


# What each kind of write does to the board, and how the next answer shows it. Each runs on
# the seeded database with the app's own write sessions, as the admin API and the commands do.
Change = Callable[[Seeded], None]


def _in_a_write_session(seeded: Seeded, work: Callable[[Session], object]) -> None:
    with session_scope(app_state(seeded.client.app_state).write_sessions) as session:
        work(session)


def new_quote(seeded: Seeded) -> None:
    newer = CAPTURED + dt.timedelta(minutes=30)
    store(
        seeded.client, [quote_items(ARSENAL)[1] | {"home": 2.5, "captured_at": newer.isoformat()}]
    )


def changed_price(seeded: Seeded) -> None:
    store(seeded.client, [quote_items(BARCELONA)[1] | {"draw": 12.0}])


def new_match(seeded: Seeded) -> None:
    store(seeded.client, quote_items(ENTERING))


def rescheduled(seeded: Seeded) -> None:
    moved = quote_items(ARSENAL)[0]
    moved["match"] = moved["match"] | {"kickoff": (ARSENAL.kickoff + LATER).isoformat()}
    store(seeded.client, [moved])


def settled_after_a_move(seeded: Seeded) -> None:
    # Played two hours ago, not on the day it was stored for: moved back and settled.
    played = MatchIdentity("E0", EVERTON.home, EVERTON.away, NOW - dt.timedelta(hours=2))
    item = ResultItem(home_goals=1, away_goals=0, match=played)
    _in_a_write_session(seeded, lambda session: settle_results(session, [item], source="test"))


def team_merged(seeded: Seeded) -> None:
    # Fulham was another source's name for Chelsea: Everton's match is now against Chelsea.
    _in_a_write_session(
        seeded, lambda session: add_alias(session, alias="Fulham", team="Chelsea", confirm=True)
    )


def merge_undone(seeded: Seeded) -> None:
    _in_a_write_session(seeded, lambda session: remove_alias(session, "Fulham"))


def deleted(seeded: Seeded) -> None:
    match_id = seeded.ids[EVERTON.home]
    _in_a_write_session(seeded, lambda session: delete_match(session, match_id))


def activated(seeded: Seeded) -> None:
    with session_scope(app_state(seeded.client.app_state).write_sessions) as session:
        version = hand_made_version(weights={"B365": 1.0}, method=Method.MULTIPLICATIVE)
        session.add(version)
        session.flush()
        activate(session, version, by=ActivatedBy.REFIT)
    app_state(seeded.client.app_state).models.refresh()


LATER = dt.timedelta(hours=2)
# Quoted only once the board is being polled.
ENTERING = Fixture("E0", "Newcastle", "Spurs", D2 + dt.timedelta(hours=12), {"BW": (2.0, 4.0, 4.0)})


def arsenal(body: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = next(i for i in body["items"] if i["match"]["home_team"] == "Arsenal")
    return item


SHOWN: dict[str, Callable[[dict[str, Any]], object]] = {
    "new_quote": lambda body: arsenal(body)["value"]["outcomes"][0]["price"] == 2.5,
    "changed_price": lambda body: body["items"][-1]["value"]["outcomes"][1]["price"] == 12.0,
    "new_match": lambda body: "Newcastle" in teams(body),
    "rescheduled": lambda body: utc(arsenal(body)["match"]["kickoff"]) == ARSENAL.kickoff + LATER,
    "settled_after_a_move": lambda body: EVERTON.home not in teams(body),
    "team_merged": lambda body: body["items"][1]["match"]["away_team"] == "Chelsea",
    "merge_undone": lambda body: body["items"][1]["match"]["away_team"] == "Fulham",
    "deleted": lambda body: EVERTON.home not in teams(body),
    # B365 alone, de-margined multiplicatively: 1/2.2 of 1/2.2 + 1/3.4 + 1/3.6.
    "activated": lambda body: (
        arsenal(body)["prediction"]["probabilities"]["home"]
        == pytest.approx((1 / 2.2) / (1 / 2.2 + 1 / 3.4 + 1 / 3.6))
    ),
}
CHANGES: dict[str, Change] = {
    "new_quote": new_quote,
    "changed_price": changed_price,
    "new_match": new_match,
    "rescheduled": rescheduled,
    "settled_after_a_move": settled_after_a_move,
    "team_merged": team_merged,
    "merge_undone": merge_undone,
    "deleted": deleted,
    "activated": activated,
}


@pytest.fixture
def watermark_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watermark trusted as soon as a stamp read saw it: every poll after the first
    takes the cheap check, whatever was written just before."""
    monkeypatch.setattr(upcoming_service, "SETTLED_AFTER", dt.timedelta(0))


def polled(
    client: TestClient, path: str = "/upcoming", **headers: str
) -> tuple[Response, list[str]]:
    """One poll of the default board (or another page that shows it), and the SELECT
    statements it ran."""
    statements: list[str] = []

    def record(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = app_state(client.app_state).engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        response = client.get(path, headers=headers)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    selects = [s for s in request_statements(statements) if s.lstrip().upper().startswith("SELECT")]
    return response, selects


def reads_quotes_per_match(selects: list[str]) -> bool:
    return any("count(" in select.lower() for select in selects)


# What is written before the board is polled.
PREPARED: dict[str, Change] = {"merge_undone": team_merged}


@pytest.mark.usefixtures("watermark_trusted")
@pytest.mark.parametrize("kind", list(CHANGES))
def test_each_kind_of_write_shows_in_the_next_poll_after_cheap_ones(
    seeded: Seeded, kind: str
) -> None:
    if kind in PREPARED:
        PREPARED[kind](seeded)
    first, _ = polled(seeded.client)
    again, selects = polled(seeded.client)
    # Unchanged: one query that reads no quote of a match, and the same tag.
    assert len(selects) == 1, selects
    assert not reads_quotes_per_match(selects), selects
    assert again.headers["etag"] == first.headers["etag"]
    assert first.headers["etag"].startswith('W/"')
    assert not SHOWN[kind](again.json())
    CHANGES[kind](seeded)
    after, _ = polled(seeded.client)
    assert SHOWN[kind](after.json()), after.json()
    assert after.headers["etag"] != first.headers["etag"]
    # What a process that never made a board answers.
    with app_on(seeded.database_url) as fresh:
        anew = fresh.get("/upcoming")
    assert anew.headers["etag"] == after.headers["etag"]
    assert comparable(anew.json()) == comparable(after.json())


def comparable(body: dict[str, Any]) -> dict[str, Any]:
    """The body without what is as of its answer."""
    for item in body["items"]:
        item["freshness"].pop("age_seconds")
    return {key: value for key, value in body.items() if key not in ("answered_at", "from", "to")}


@pytest.mark.usefixtures("watermark_trusted")
def test_a_match_that_kicks_off_leaves_the_next_poll(seeded: Seeded) -> None:
    from app.services.pagination import PageWindow
    from app.services.upcoming import UpcomingQuery

    state = app_state(seeded.client.app_state)
    query = UpcomingQuery(
        terms=state.settings.value_terms(),
        daily_exposure_cap=state.settings.value_daily_exposure_cap,
    )
    window = PageWindow(limit=50, offset=0)
    portal = seeded.client.portal
    assert portal is not None  # the client is open

    def home_teams_at(now: dt.datetime) -> list[str | None]:
        page = portal.call(lambda: state.upcoming.page(query, window, now=now))
        return [item.match.home_team for item in page.items]

    before = ARSENAL.kickoff - dt.timedelta(seconds=1)
    assert home_teams_at(before)[0] == "Arsenal"
    assert home_teams_at(before)[0] == "Arsenal"
    assert home_teams_at(ARSENAL.kickoff)[0] == "Everton"


def test_if_none_match_gets_304_without_a_body_while_nothing_changed(seeded: Seeded) -> None:
    first = seeded.client.get("/upcoming")
    etag = first.headers["etag"]
    unchanged = seeded.client.get("/upcoming", headers={"If-None-Match": etag})
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged.headers["etag"] == etag
    # Among others, and compared weakly.
    listed = f'W/"other", {etag.removeprefix("W/")}'
    assert seeded.client.get("/upcoming", headers={"If-None-Match": listed}).status_code == 304
    assert seeded.client.get("/upcoming", headers={"If-None-Match": "*"}).status_code == 304
    other = seeded.client.get("/upcoming", headers={"If-None-Match": 'W/"other"'})
    assert other.status_code == 200
    assert other.headers["etag"] == etag
    # Another page, window or terms: another answer, another tag.
    for params in ({"limit": 2}, {"competition": "E0"}, {"bankroll": 1000}):
        asked = seeded.client.get("/upcoming", params=params, headers={"If-None-Match": etag})
        assert asked.status_code == 200
        assert asked.headers["etag"] != etag
    new_quote(seeded)
    changed = seeded.client.get("/upcoming", headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag


def test_the_ensemble_source_in_capitals_is_the_same_answer_and_tag(seeded: Seeded) -> None:
    plain = seeded.client.get("/upcoming")
    shouted = seeded.client.get("/upcoming", params={"source": "ENSEMBLE"})
    assert shouted.json()["terms"]["source"] == "ensemble"
    assert shouted.headers["etag"] == plain.headers["etag"]


def test_the_api_document_lists_304(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/upcoming"]["get"]
    assert "304" in operation["responses"]
    assert "if-none-match" in {parameter["name"].lower() for parameter in operation["parameters"]}


@pytest.mark.usefixtures("watermark_trusted")
def test_the_dashboard_page_reloaded_reuses_its_board(seeded: Seeded) -> None:
    first, selects = polled(seeded.client, "/dashboard")
    assert first.status_code == 200
    assert reads_quotes_per_match(selects)
    again, selects = polled(seeded.client, "/dashboard")
    assert again.status_code == 200
    assert not reads_quotes_per_match(selects), selects
