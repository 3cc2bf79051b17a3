"""GET /value-bets on upcoming matches whose quotes are chosen by hand.

The model trusts Bet&Win alone and de-margines multiplicatively, and Bet&Win quotes books
without margin, so each served probability is 1/price of its line: the expected values and
stakes below are worked out by hand from the prices.

Kickoffs are set relative to the real time of the test (the list shows what has not kicked
off yet): D1 is tomorrow (UTC), D2 the day after.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.optimize import brentq
from sqlalchemy import event

from app.domain.value import exposure_scale
from app.state import app_state
from tests.helpers import error_messages, request_statements
from tests.upcoming_matches import (
    ARSENAL,
    CAPTURED,
    D1,
    D2,
    NOW,
    Seeded,
    app_on,
    barcelona_on_the_exchange,
    quote_items,
    seed,
    store,
    store_model,
)

KELLY, CAP = 0.25, 0.02


def kelly(ev: float, price: float) -> float:
    return min(KELLY * ev / (price - 1), CAP)


@dataclass(frozen=True)
class Expected:
    ev: float
    fraction: float


# The two value bets of the default list, by hand: one a match, its outcome of highest EV.
ARSENAL_HOME = Expected(ev=0.1, fraction=0.02)  # 0.25 × 0.1 / 1.2 = 0.0208, capped
BARCELONA_DRAW = Expected(ev=0.1, fraction=0.25 * 0.1 / 10)


def value_bets(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/value-bets", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def summary(body: dict[str, Any]) -> list[tuple[str, str, str, float]]:
    return [
        (bet["match"]["home_team"], bet["outcome"], bet["bookmaker"], bet["price"])
        for bet in body["items"]
    ]


def test_the_flagged_outcomes_of_the_coming_week_highest_value_first(seeded: Seeded) -> None:
    body = value_bets(seeded.client)
    # Arsenal's home and Barcelona's draw are both worth 0.1 exactly: the earlier kickoff
    # comes first. Arsenal's away at WH's 4.2 (0.25 × 4.2 − 1 = 0.05) and Barcelona's home
    # at 1.3 (0.8 × 1.3 − 1 = 0.04) are above 2 % too, but a match gets one bet, its
    # outcome of highest EV. Everton offers nothing; Leeds kicked off; Burnley is next week.
    assert summary(body) == [
        ("Arsenal", "1", "B365", 2.2),
        ("Barcelona", "X", "B365", 11.0),
    ]
    expected = [ARSENAL_HOME, BARCELONA_DRAW]
    items = body["items"]
    assert [bet["expected_value"] for bet in items] == pytest.approx([e.ev for e in expected])
    assert [bet["probability"] for bet in items] == pytest.approx([0.5, 0.1])
    assert [bet["unscaled_stake_fraction"] for bet in items] == pytest.approx(
        [e.fraction for e in expected]
    )
    assert all(bet["stake_fraction"] <= CAP for bet in items)
    assert [bet["day_scale"] for bet in items] == [1.0] * 2
    assert [bet["stake"] for bet in items] == [None] * 2  # no bankroll given
    first = items[0]
    assert first["match"] == {
        "id": seeded.ids["Arsenal"],
        "competition": "E0",
        "home_team": "Arsenal",
        "away_team": "Chelsea",
        "kickoff": ARSENAL.kickoff.isoformat().replace("+00:00", "Z"),
    }
    assert dt.datetime.fromisoformat(first["captured_at"]) == CAPTURED
    assert {(bet["source"], bet["basis"], bet["model_version"]) for bet in items} == {
        ("ensemble", "model", seeded.version)
    }
    assert body["model_version"] == seeded.version
    assert body["note"] is None
    assert body["total"] == 2
    assert body["terms"] == {
        "min_ev": 0.02,
        "kelly_fraction": 0.25,
        "stake_cap": 0.02,
        "daily_exposure_cap": 0.1,
        "source": "ensemble",
        "bookmakers": None,
        "bankroll": None,
    }
    window = [dt.datetime.fromisoformat(body[key]) for key in ("from", "to")]
    assert window[1] - window[0] == dt.timedelta(days=7)
    assert NOW <= window[0] <= dt.datetime.now(dt.UTC)


def test_a_later_quote_is_never_used_and_a_match_without_value_gives_nothing(
    seeded: Seeded,
) -> None:
    # B365's 3.0 on Everton was stamped after kickoff: 0.4 × 3.0 − 1 = 0.2 if it were taken.
    body = value_bets(seeded.client, min_ev=0)
    assert "Everton" not in {bet["match"]["home_team"] for bet in body["items"]}


def test_an_outcome_is_listed_only_above_min_ev(seeded: Seeded) -> None:
    # 0.1 and 0.1 are above 0.06; Arsenal's away (0.05) and Barcelona's home (0.04) are not.
    assert summary(value_bets(seeded.client, min_ev=0.06)) == [
        ("Arsenal", "1", "B365", 2.2),
        ("Barcelona", "X", "B365", 11.0),
    ]
    assert value_bets(seeded.client, min_ev=0.2)["items"] == []
    assert value_bets(seeded.client, min_ev=0.06)["terms"]["min_ev"] == 0.06


def test_only_the_bookmakers_allowed_are_chosen(seeded: Seeded) -> None:
    # William Hill alone: Arsenal's home at 2.1 and its away at 4.2 are each worth 0.05, and
    # the match gets one bet of the two; Barcelona has no WH quote. The served 0.5 and 0.25
    # are exact, so 0.5 × 2.1 − 1 and 0.25 × 4.2 − 1 are the same float: a tie, which the
    # rule breaks by the order 1, X, 2, so the home side is the bet.
    body = value_bets(seeded.client, bookmakers=["William Hill"])
    assert {bet["bookmaker"] for bet in body["items"]} == {"WH"}
    [bet] = body["items"]
    assert summary(body) == [("Arsenal", "1", "WH", 2.1)]
    assert bet["expected_value"] == pytest.approx(0.05)
    assert bet["unscaled_stake_fraction"] == pytest.approx(0.25 * 0.05 / 1.1)
    assert body["terms"]["bookmakers"] == ["WH"]
    assert summary(value_bets(seeded.client, bookmakers=["wh"])) == summary(body)
    # With Bet365 too, B365's home at 2.2 (0.1) is Arsenal's best.
    spelled = value_bets(seeded.client, bookmakers=["wh", "bet365"])
    assert summary(spelled) == [("Arsenal", "1", "B365", 2.2), ("Barcelona", "X", "B365", 11.0)]
    assert spelled["terms"]["bookmakers"] == ["B365", "WH"]
    assert value_bets(seeded.client, bookmakers=["Nobody"])["items"] == []


def test_an_exchange_bet_is_shown_quoted_and_net_of_its_commission(seeded: Seeded) -> None:
    store(seeded.client, [barcelona_on_the_exchange()])
    body = value_bets(seeded.client, bankroll=1000)
    [barcelona] = [bet for bet in body["items"] if bet["match"]["home_team"] == "Barcelona"]
    fraction = 0.25 * 0.145 / 10.45  # 0.0034689…
    assert (barcelona["outcome"], barcelona["bookmaker"]) == ("X", "BFE")
    assert (barcelona["price"], barcelona["net_price"]) == (12.0, pytest.approx(11.45))
    assert barcelona["expected_value"] == pytest.approx(0.145)
    assert barcelona["unscaled_stake_fraction"] == pytest.approx(fraction)
    assert barcelona["stake"] == 3.46  # 3.4689… rounded down to the cent
    # A bookmaker without commission: the net price is the quoted one.
    [arsenal] = [bet for bet in body["items"] if bet["match"]["home_team"] == "Arsenal"]
    assert arsenal["net_price"] == arsenal["price"] == 2.2


def test_a_bankroll_gives_stakes_in_money(seeded: Seeded) -> None:
    body = value_bets(seeded.client, bankroll=1000)
    # 0.02 and 0.0025 of 1000.
    assert [bet["stake"] for bet in body["items"]] == [20.0, 2.5]
    assert [(day["day"], day["bets"], day["stake"]) for day in body["days"]] == [
        (D1.date().isoformat(), 1, 20.0),
        (D2.date().isoformat(), 1, 2.5),
    ]
    assert body["terms"]["bankroll"] == 1000


def test_a_day_over_its_exposure_cap_has_every_stake_scaled(migrated_url: str) -> None:
    cap = 0.02 / 1.5  # 0.01333…
    store_model(migrated_url)
    with app_on(migrated_url, value_daily_exposure_cap=cap) as client:
        seed(client)
        body = value_bets(client, bankroll=1000)
    d1 = ARSENAL_HOME.fraction  # 0.02: over the cap
    d2 = BARCELONA_DRAW.fraction  # 0.0025: within it
    scale_1 = cap / d1  # 0.6666…
    assert [day["day"] for day in body["days"]] == [D1.date().isoformat(), D2.date().isoformat()]
    assert [day["unscaled_exposure"] for day in body["days"]] == pytest.approx([d1, d2])
    assert [day["scale"] for day in body["days"]] == pytest.approx([scale_1, 1.0])
    assert [day["exposure"] for day in body["days"]] == pytest.approx([cap, d2])
    items = body["items"]
    assert [bet["day_scale"] for bet in items] == pytest.approx([scale_1, 1.0])
    assert [bet["unscaled_stake_fraction"] for bet in items] == pytest.approx([0.02, 0.0025])
    assert [bet["stake_fraction"] for bet in items] == pytest.approx([0.02 * scale_1, 0.0025])
    # 13.333…, rounded down, stays within the day's 13.33…; 2.5 is not scaled.
    assert [bet["stake"] for bet in items] == [13.33, 2.5]
    assert [day["stake"] for day in body["days"]] == pytest.approx([13.33, 2.5])
    assert body["terms"]["daily_exposure_cap"] == cap


def test_the_cap_is_applied_over_the_whole_list_so_pages_agree(migrated_url: str) -> None:
    store_model(migrated_url)
    with app_on(migrated_url, value_daily_exposure_cap=0.01) as client:
        seed(client)
        whole = value_bets(client)
        pages = [value_bets(client, limit=1, offset=offset) for offset in range(3)]
    assert whole["items"][0]["day_scale"] == pytest.approx(0.5)  # the cap changed a stake
    assert [page["items"] for page in pages] == [[bet] for bet in whole["items"]] + [[]]
    assert {page["total"] for page in pages} == {2}
    assert all(page["days"] == whole["days"] for page in pages)
    assert (pages[1]["limit"], pages[1]["offset"]) == (1, 1)


def test_the_window_and_the_competition_filter_the_matches(seeded: Seeded) -> None:
    tomorrow_only = value_bets(seeded.client, to=D2.isoformat())
    assert {bet["match"]["home_team"] for bet in tomorrow_only["items"]} == {"Arsenal"}
    from_d2 = value_bets(seeded.client, **{"from": D2.isoformat()})
    assert {bet["match"]["home_team"] for bet in from_d2["items"]} == {"Barcelona"}
    spain = value_bets(seeded.client, competition="SP1")
    assert {bet["match"]["competition"] for bet in spain["items"]} == {"SP1"}
    assert len(spain["items"]) == 1
    # Nine days ahead reaches next week's match; a window that starts in the past still
    # lists no match that has kicked off.
    longer = value_bets(
        seeded.client,
        to=(NOW + dt.timedelta(days=9)).isoformat(),
        **{"from": (NOW - dt.timedelta(days=1)).isoformat()},
    )
    teams = {bet["match"]["home_team"] for bet in longer["items"]}
    assert teams == {"Arsenal", "Barcelona", "Burnley"}
    # Burnley: 0.5 × 2.3 − 1 = 0.15, the best value of all.
    assert longer["items"][0]["match"]["home_team"] == "Burnley"
    assert longer["items"][0]["expected_value"] == pytest.approx(0.15)


def test_the_probability_and_its_source_are_recorded_with_every_bet(seeded: Seeded) -> None:
    # Pinnacle's line on Arsenal: 1/1.9, 1/3.2, 1/3.5 normalised (the model's multiplicative
    # method). Barcelona has no Pinnacle quote: PS alone gives it no value, the chain
    # PS,ensemble falls back to the model's probabilities.
    implied = np.array([1 / 1.9, 1 / 3.2, 1 / 3.5])
    line = implied / implied.sum()  # 0.4680…, 0.2779…, 0.2541…
    alone = value_bets(seeded.client, source="PS", bookmakers=["B365", "WH"])
    assert {(bet["match"]["home_team"], bet["outcome"]) for bet in alone["items"]} == {
        ("Arsenal", "2")
    }
    body = value_bets(seeded.client, source="pinnacle,ENSEMBLE", bookmakers=["B365", "WH"])
    by_bet = {(bet["match"]["home_team"], bet["outcome"]): bet for bet in body["items"]}
    # 0.4680 × 2.2 − 1 = 0.0297 and 0.2541 × 4.2 − 1 = 0.0671 are above 0.02: Arsenal's
    # one bet is the away win, of higher EV.
    assert set(by_bet) == {("Arsenal", "2"), ("Barcelona", "X")}
    away = by_bet["Arsenal", "2"]
    assert away["source"] == "PS"
    assert away["probability"] == pytest.approx(line[2])
    assert away["expected_value"] == pytest.approx(line[2] * 4.2 - 1)
    assert away["unscaled_stake_fraction"] == pytest.approx(kelly(line[2] * 4.2 - 1, 4.2))
    assert line[0] * 2.2 - 1 > 0.02
    draw = by_bet["Barcelona", "X"]
    assert (draw["source"], draw["probability"]) == ("ensemble", pytest.approx(0.1))
    assert body["terms"]["source"] == "PS,ensemble"
    assert [bet["expected_value"] for bet in body["items"]] == sorted(
        (bet["expected_value"] for bet in body["items"]), reverse=True
    )


def test_the_ensemble_source_is_read_in_any_letter_case_as_predict_reads_it(
    seeded: Seeded,
) -> None:
    shouted = value_bets(seeded.client, source="ENSEMBLE")
    assert shouted["terms"]["source"] == "ensemble"
    assert shouted["items"] == value_bets(seeded.client)["items"]
    # /predict reads the same terms the same way.
    predicted = seeded.client.post(
        "/predict", json={"match_id": seeded.ids["Arsenal"], "value": {"source": "ENSEMBLE"}}
    )
    assert predicted.json()["value"]["terms"]["source"] == shouted["terms"]["source"]


def power_line(home: float, draw: float, away: float) -> np.ndarray:
    implied = 1.0 / np.array([home, draw, away])
    k = brentq(lambda k: (implied**k).sum() - 1.0, 0.5, 5.0, xtol=1e-14)
    return np.asarray(implied**k)


def test_before_any_fit_value_is_judged_from_the_consensus_and_said_so(migrated_url: str) -> None:
    with app_on(migrated_url) as client:
        store(client, quote_items(ARSENAL))
        body = value_bets(client, bookmakers=["B365"])
    # The consensus: the mean of the four bookmakers' lines, de-margined by the power method
    # (the setting's), solved here with scipy's root finder.
    consensus = np.mean([power_line(*prices) for prices in ARSENAL.quotes.values()], axis=0)
    prices = ARSENAL.quotes["B365"]
    worth = [p * price - 1 for p, price in zip(consensus, prices, strict=True)]
    listed = [(o, ev) for o, ev in zip(("1", "X", "2"), worth, strict=True) if ev > 0.02]
    assert listed, "the chosen prices leave some value over the consensus"
    # One bet a match: the outcome of highest EV.
    best = max(listed, key=lambda pair: pair[1])
    assert [bet["outcome"] for bet in body["items"]] == [best[0]]
    assert [bet["expected_value"] for bet in body["items"]] == pytest.approx([best[1]])
    assert {(bet["basis"], bet["model_version"]) for bet in body["items"]} == {("consensus", None)}
    assert body["model_version"] is None
    assert "no model has been fitted yet" in body["note"]


def test_the_list_reads_the_matches_in_a_fixed_number_of_queries(migrated_url: str) -> None:
    store_model(migrated_url)
    with app_on(migrated_url, predict_cache_seconds=0) as client:
        seed(client)
        statements: list[str] = []

        def record(*args: Any) -> None:
            statements.append(str(args[2]))

        event.listen(app_state(client.app_state).engine, "before_cursor_execute", record)
        assert value_bets(client)["total"] == 2
    selects = [s for s in request_statements(statements) if s.lstrip().upper().startswith("SELECT")]
    # The board's stamp, the matches, their quotes: however many matches there are.
    assert len(selects) == 3, selects


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"limit": 0}, "query.limit"),
        ({"limit": 501}, "query.limit"),
        ({"offset": -1}, "query.offset"),
        ({"min_ev": -0.01}, "query.min_ev"),
        ({"min_ev": 1.5}, "query.min_ev"),
        ({"min_ev": "nan"}, "query.min_ev"),
        ({"min_ev": "high"}, "query.min_ev"),
        ({"bankroll": 0}, "query.bankroll"),
        ({"bankroll": -100}, "query.bankroll"),
        ({"bankroll": "inf"}, "query.bankroll"),
        ({"from": "tomorrow"}, "query.from"),
        ({"to": "2026-13-01"}, "query.to"),
        ({"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, "query.to"),
        ({"competition": "E" * 65}, "query.competition"),
        ({"bookmakers": ["B365", " "]}, "query.bookmakers.1"),
        ({"bookmakers": [f"B{i}" for i in range(101)]}, "query.bookmakers"),
        ({"source": ""}, "query.source"),
        ({"source": "P\x01S"}, "query.source"),
    ],
)
def test_bad_inputs_are_problems_naming_the_parameter(
    client: TestClient, params: dict[str, Any], where: str
) -> None:
    response = client.get("/value-bets", params=params)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    messages = error_messages(response.json())
    assert len(messages) == 1
    assert messages[0].startswith(f"{where}: "), messages


def test_the_exposure_scale_by_hand() -> None:
    assert exposure_scale(0.08, 0.1) == 1.0
    assert exposure_scale(0.1, 0.1) == 1.0
    assert exposure_scale(0.0, 0.1) == 1.0
    assert exposure_scale(0.125, 0.1) == pytest.approx(0.8)
    np.testing.assert_allclose(
        exposure_scale(np.array([0.0, 0.05, 0.2, 0.4]), 0.1), [1.0, 1.0, 0.5, 0.25]
    )
