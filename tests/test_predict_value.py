"""The value of each outcome in the answers of /predict and /predict/batch, on hand-computed
examples.

The examples use books without margin (1/home + 1/draw + 1/away = 1), whose de-margined
probabilities are 1/price under every method, so each expected value and stake below is
worked out by hand from the prices alone.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import jsonschema_rs
import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from app.api.schemas.predict import BatchOut, PredictIn, PredictionOut, ValueIn
from tests.documented import accepts, documented, resolved
from tests.helpers import error_messages
from tests.plugins.predictions import power_probabilities, upcoming_match

OUTCOMES = ("home", "draw", "away")
# PS's book has no margin: de-margined, it says 0.5, 0.25, 0.25.
FAIR_PS = {"bookmaker": "PS", "home": 2.0, "draw": 4.0, "away": 4.0}
B365 = {"bookmaker": "B365", "home": 2.2, "draw": 3.6, "away": 3.5}
WH = {"bookmaker": "WH", "home": 2.1, "draw": 3.5, "away": 3.6}
ODDS = [FAIR_PS, B365, WH]


@pytest.fixture
def client(fitted_client: TestClient) -> TestClient:
    return fitted_client


def predict(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/predict", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def outcomes(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [answer["value"]["outcomes"][outcome] for outcome in OUTCOMES]


def test_value_from_a_bookmakers_line_by_hand(client: TestClient) -> None:
    terms = {"source": "PS", "kelly_fraction": 0.2, "bankroll": 500}
    answer = predict(client, {"odds": ODDS, "value": terms})
    value = answer["value"]
    assert value["terms"] == {
        "source": "PS",
        "bookmakers": None,
        "min_ev": 0.02,
        "kelly_fraction": 0.2,
        "stake_cap": 0.02,
        "bankroll": 500.0,
    }
    assert value["source_used"] == "PS"
    home, draw, away = outcomes(answer)
    # Home: PS says 0.5; the best price is B365's 2.2. EV 0.5 × 2.2 − 1 = 0.1; a fifth of
    # the Kelly stake 0.1 / 1.2 is 0.0166667, under the cap of 0.02; of 500, 8.33.
    assert home["probability"] == pytest.approx(0.5)
    assert (home["price"], home["bookmaker"], home["captured_at"]) == (2.2, "B365", None)
    assert home["expected_value"] == pytest.approx(0.1)
    assert home["stake_fraction"] == pytest.approx(0.2 * 0.1 / 1.2)
    assert home["stake"] == 8.33
    assert home["flagged"] is True
    # Draw and away: PS's own 4.0 is the best price; 0.25 × 4.0 − 1 = 0: no value.
    for outcome in (draw, away):
        assert (outcome["price"], outcome["bookmaker"]) == (4.0, "PS")
        assert outcome["probability"] == pytest.approx(0.25)
        assert outcome["expected_value"] == pytest.approx(0.0)
        assert (outcome["stake_fraction"], outcome["stake"], outcome["flagged"]) == (
            0.0,
            0.0,
            False,
        )
    # The source named another way is the same bookmaker.
    renamed = predict(client, {"odds": ODDS, "value": {**terms, "source": "pinnacle"}})
    assert renamed["value"]["outcomes"] == value["outcomes"]
    assert renamed["value"]["terms"]["source"] == "PS"


def test_a_source_that_did_not_quote_the_match_gives_no_value_or_its_next_link(
    client: TestClient,
) -> None:
    answer = predict(client, {"odds": [B365, WH], "value": {"source": "PS", "min_ev": 0}})
    assert answer["value"]["terms"]["source"] == "PS"
    assert answer["value"]["source_used"] is None
    for outcome in outcomes(answer):
        assert (outcome["probability"], outcome["expected_value"]) == (None, None)
        assert (outcome["stake_fraction"], outcome["flagged"]) == (0.0, False)
    assert [o["price"] for o in outcomes(answer)] == [2.2, 3.6, 3.6]
    chained = predict(client, {"odds": [B365, WH], "value": {"source": "pinnacle, Ensemble"}})
    assert chained["value"]["terms"]["source"] == "PS,ensemble"
    assert chained["value"]["source_used"] == "ensemble"
    used = [outcome["probability"] for outcome in outcomes(chained)]
    assert used == [chained["probabilities"][outcome] for outcome in OUTCOMES]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("PS,,consensus", "a value source has an empty link"),
        ("PS,XYZ", "unknown value source 'XYZ'"),
        ("PS,Pinnacle", "a value source names PS twice"),
        ("PS,B365,WH,BW,IW,consensus", "a value source has at most 5 links"),
        ("", "a value source has an empty link"),
    ],
)
def test_a_bad_source_chain_is_a_422_naming_the_field(
    client: TestClient, source: str, message: str
) -> None:
    response = client.post("/predict", json={"odds": ODDS, "value": {"source": source}})
    assert response.status_code == 422, response.text
    assert any(message in text for text in error_messages(response.json())), response.text
    listed = client.get("/value-bets", params={"source": source})
    assert listed.status_code == 422, listed.text
    assert any(message in text for text in error_messages(listed.json())), listed.text


# Two books without margin from bookmakers outside the model's pool: the served prediction
# is their consensus, the mean of (0.5, 0.25, 0.25) and (0.4, 0.2, 0.4): 0.45, 0.225, 0.325.
OUTSIDE_POOL = [
    {"bookmaker": "NEWBOOK", "home": 2.0, "draw": 4.0, "away": 4.0},
    {"bookmaker": "OTHERBOOK", "home": 2.5, "draw": 5.0, "away": 2.5},
]


def test_value_from_the_served_prediction_with_the_default_terms_by_hand(
    client: TestClient,
) -> None:
    answer = predict(client, {"odds": OUTSIDE_POOL})
    assert answer["basis"] == "consensus"
    value = answer["value"]
    assert value["terms"] == {
        "source": "ensemble",
        "bookmakers": None,
        "min_ev": 0.02,
        "kelly_fraction": 0.25,
        "stake_cap": 0.02,
        "bankroll": None,
    }
    assert value["source_used"] == "ensemble"
    home, draw, away = outcomes(answer)
    assert [home["probability"], draw["probability"], away["probability"]] == pytest.approx(
        [0.45, 0.225, 0.325]
    )
    assert [(o["price"], o["bookmaker"]) for o in (home, draw, away)] == [
        (2.5, "OTHERBOOK"),
        (5.0, "OTHERBOOK"),
        (4.0, "NEWBOOK"),
    ]
    # EV: 0.45 × 2.5 − 1 = 0.125, 0.225 × 5 − 1 = 0.125, 0.325 × 4 − 1 = 0.3, all above
    # 2 %: one bet a match, the away win of highest EV, is flagged and staked.
    # A quarter of Kelly: 0.3 / 3 / 4 = 0.025 → capped at 0.02. No bankroll: no stake in money.
    assert [o["expected_value"] for o in (home, draw, away)] == pytest.approx([0.125, 0.125, 0.3])
    assert [o["stake_fraction"] for o in (home, draw, away)] == pytest.approx([0.0, 0.0, 0.02])
    assert [o["stake"] for o in (home, draw, away)] == [None, None, None]
    assert [o["flagged"] for o in (home, draw, away)] == [False, False, True]


def test_a_bankroll_gives_stakes_in_money_and_the_cap_holds(client: TestClient) -> None:
    answer = predict(client, {"odds": OUTSIDE_POOL, "value": {"bankroll": 1000}})
    # Only the away win (EV 0.3, the highest) is staked: 0.02 × 1000.
    assert [o["stake"] for o in outcomes(answer)] == [0.0, 0.0, 20.0]
    tight = predict(client, {"odds": OUTSIDE_POOL, "value": {"bankroll": 1000, "stake_cap": 0.005}})
    assert [o["stake_fraction"] for o in outcomes(tight)] == [0.0, 0.0, 0.005]
    assert [o["stake"] for o in outcomes(tight)] == [0.0, 0.0, 5.0]
    # Full Kelly with no cap to speak of: 0.3 / 3.
    full = predict(
        client,
        {"odds": OUTSIDE_POOL, "value": {"bankroll": 1000, "kelly_fraction": 1, "stake_cap": 1}},
    )
    assert [o["stake"] for o in outcomes(full)] == [0.0, 0.0, 100.0]
    # Without NEWBOOK's away price the home win is the best: OTHERBOOK's 2.5 away pays
    # 0.325 × 2.5 − 1 < 0. Home 2.5 and draw 5.0 give 0.125 each; the home win is the first.
    # Full Kelly on it: 0.125 / 1.5 = 0.0833.
    other = predict(
        client,
        {
            "odds": OUTSIDE_POOL,
            "value": {
                "bankroll": 1000,
                "kelly_fraction": 1,
                "stake_cap": 1,
                "bookmakers": ["OTHERBOOK"],
            },
        },
    )
    assert [o["expected_value"] for o in outcomes(other)] == pytest.approx([0.125, 0.125, -0.1875])
    assert [o["flagged"] for o in outcomes(other)] == [True, False, False]
    # Above its threshold only: the draw's 0.125 and the home win's 0.125 are not above 0.2.
    picky = predict(client, {"odds": OUTSIDE_POOL, "value": {"bankroll": 1000, "min_ev": 0.2}})
    assert [o["flagged"] for o in outcomes(picky)] == [False, False, True]
    assert [o["stake"] for o in outcomes(picky)] == [0.0, 0.0, 20.0]


def test_only_the_bookmakers_one_can_bet_with_are_considered(client: TestClient) -> None:
    answer = predict(client, {"odds": ODDS, "value": {"bookmakers": ["william hill"]}})
    assert answer["value"]["terms"]["bookmakers"] == ["WH"]
    home, draw, away = outcomes(answer)
    assert {o["bookmaker"] for o in (home, draw, away)} == {"WH"}
    assert [o["price"] for o in (home, draw, away)] == [2.1, 3.5, 3.6]
    # The served probabilities at WH's prices: p × price − 1 for each.
    served = [answer["probabilities"][outcome] for outcome in OUTCOMES]
    assert [o["expected_value"] for o in (home, draw, away)] == pytest.approx(
        [served[0] * 2.1 - 1, served[1] * 3.5 - 1, served[2] * 3.6 - 1]
    )
    two = predict(client, {"odds": ODDS, "value": {"bookmakers": ["Bet365", "wh"]}})
    assert two["value"]["terms"]["bookmakers"] == ["B365", "WH"]
    assert [(o["bookmaker"], o["price"]) for o in outcomes(two)] == [
        ("B365", 2.2),
        ("B365", 3.6),
        ("WH", 3.6),
    ]
    # A bookmaker that did not quote the match offers nothing: no price, nothing flagged.
    nobody = predict(client, {"odds": ODDS, "value": {"bookmakers": ["Nobody Bet"]}})
    assert nobody["value"]["terms"]["bookmakers"] == ["nobody bet"]
    for outcome in outcomes(nobody):
        assert outcome["price"] is None
        assert outcome["bookmaker"] is None
        assert outcome["expected_value"] is None
        assert (outcome["stake_fraction"], outcome["flagged"]) == (0.0, False)


def test_a_match_without_value_flags_nothing(client: TestClient) -> None:
    # One book with a margin, outside the pool: the served prediction is its own de-margined
    # line, and each price pays less than it is worth.
    book = {"bookmaker": "NEWBOOK", "home": 1.9, "draw": 3.8, "away": 3.8}
    answer = predict(client, {"odds": [book], "value": {"bankroll": 1000, "min_ev": 0}})
    expected = power_probabilities(1.9, 3.8, 3.8)
    evs = [expected[0] * 1.9 - 1, expected[1] * 3.8 - 1, expected[2] * 3.8 - 1]
    assert max(evs) < 0
    assert [o["expected_value"] for o in outcomes(answer)] == pytest.approx(evs)
    assert [(o["flagged"], o["stake_fraction"], o["stake"]) for o in outcomes(answer)] == [
        (False, 0.0, 0.0)
    ] * 3


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def test_a_stored_match_is_valued_at_prices_captured_before_kickoff_only(
    committing_client: TestClient,
) -> None:
    client = committing_client
    match_id = upcoming_match(
        client,
        [
            ("B365", (2.5, 3.3, 2.9), "2030-01-03T12:00:00Z"),  # superseded by B365's next
            ("B365", (2.2, 3.4, 3.3), "2030-01-04T12:00:00Z"),
            ("WH", (2.3, 3.3, 3.2), "2030-01-05T14:00:00Z"),
            ("PS", (2.0, 4.0, 4.0), "2030-01-05T14:30:00Z"),
            ("WH", (3.0, 3.4, 2.6), "2030-01-05T15:10:00Z"),  # after kickoff: never used
        ],
        "pre",
    )
    by_default = predict(client, {"match_id": match_id})
    home, draw, away = outcomes(by_default)
    assert (home["price"], home["bookmaker"]) == (2.3, "WH")
    assert at(home["captured_at"]) == at("2030-01-05T14:00:00+00:00")
    assert (draw["price"], draw["bookmaker"], away["price"], away["bookmaker"]) == (
        4.0,
        "PS",
        4.0,
        "PS",
    )
    assert home["probability"] == by_default["probabilities"]["home"]
    assert home["expected_value"] == pytest.approx(by_default["probabilities"]["home"] * 2.3 - 1)

    # PS's line says 0.5 for a home win: 0.5 × 2.3 − 1 = 0.15; a quarter of the Kelly stake
    # 0.15 / 1.3 is 0.0288, capped at 0.02: 5.0 of 250. At the late 3.0 it would be 0.5.
    own = predict(client, {"match_id": match_id, "value": {"source": "PS", "bankroll": 250}})
    home, draw, away = outcomes(own)
    assert (home["price"], home["bookmaker"]) == (2.3, "WH")
    assert home["expected_value"] == pytest.approx(0.15)
    assert (home["stake_fraction"], home["stake"], home["flagged"]) == (0.02, 5.0, True)
    assert [draw["flagged"], away["flagged"]] == [False, False]
    # The answer by the default terms is still the one kept, and served again unchanged.
    assert predict(client, {"match_id": match_id}) == by_default
    assert {k: v for k, v in own.items() if k != "value"} == {
        k: v for k, v in by_default.items() if k != "value"
    }
    # A request's terms that are the settings' own give the kept answer.
    assert predict(client, {"match_id": match_id, "value": {"min_ev": 0.02}}) == by_default


def test_each_batch_item_carries_its_own_value(client: TestClient) -> None:
    match_id = client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    items: list[dict[str, Any]] = [
        {"odds": OUTSIDE_POOL, "value": {"bankroll": 1000}},
        {"match_id": match_id},
        {"odds": OUTSIDE_POOL},
        {"odds": ODDS, "value": {"source": "PS", "kelly_fraction": 0.2, "bankroll": 500}},
        {"match_id": match_id, "value": {"bankroll": 100}},
    ]
    response = client.post("/predict/batch", json={"items": items})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [result["status"] for result in results] == [200] * 5
    for item, result in zip(items, results, strict=True):
        assert result["prediction"] == predict(client, item)
    stakes = [[o["stake"] for o in outcomes(r["prediction"])] for r in results]
    assert stakes[0] == [0.0, 0.0, 20.0]
    assert stakes[2] == [None, None, None]
    assert stakes[3] == [8.33, 0.0, 0.0]
    assert results[4]["prediction"]["value"]["terms"]["bankroll"] == 100.0
    assert results[1]["prediction"]["value"]["terms"]["bankroll"] is None
    BatchOut.model_validate(response.json())


BAD_VALUES: list[tuple[dict[str, Any], list[str | int]]] = [
    ({"bankroll": 0}, ["bankroll"]),
    ({"bankroll": -50}, ["bankroll"]),
    ({"bankroll": "100"}, ["bankroll"]),
    ({"bankroll": 1e13}, ["bankroll"]),
    ({"min_ev": -0.01}, ["min_ev"]),
    ({"min_ev": 1.5}, ["min_ev"]),
    ({"kelly_fraction": 0}, ["kelly_fraction"]),
    ({"kelly_fraction": 1.01}, ["kelly_fraction"]),
    ({"stake_cap": 0}, ["stake_cap"]),
    ({"stake_cap": 2}, ["stake_cap"]),
    ({"source": ""}, ["source"]),
    ({"source": 7}, ["source"]),
    ({"bookmakers": []}, ["bookmakers"]),
    ({"bookmakers": "B365"}, ["bookmakers"]),
    ({"bookmakers": ["B365", "  "]}, ["bookmakers", 1]),
    ({"stake": 10}, ["stake"]),
]


@pytest.mark.parametrize(("value", "loc"), BAD_VALUES)
def test_bad_value_terms_are_refused_naming_the_field(
    client: TestClient, value: dict[str, Any], loc: list[str | int]
) -> None:
    response = client.post("/predict", json={"odds": ODDS, "value": value})
    assert response.status_code == 422, response.text
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "value", *loc]]
    batch = client.post(
        "/predict/batch", json={"items": [{"odds": ODDS}, {"odds": ODDS, "value": value}]}
    )
    first, second = batch.json()["results"]
    assert (first["status"], second["status"]) == (200, 422)
    assert [error["loc"] for error in second["error"]["errors"]] == [["value", *loc]]


def test_value_must_be_an_object(client: TestClient) -> None:
    response = client.post("/predict", json={"match_id": 1, "value": [1000]})
    assert response.status_code == 422
    assert error_messages(response.json())[0].startswith("body.value: ")


def test_answers_with_value_match_the_documented_schemas(client: TestClient) -> None:
    match_id = client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    terms = {"bankroll": 1000, "bookmakers": ["B365", "PS"], "source": "PS"}
    for body in (
        {"odds": OUTSIDE_POOL, "value": {"bankroll": 1000}},
        {"odds": ODDS, "value": {"bookmakers": ["Nobody Bet"]}},
        {"match_id": match_id, "value": terms},
    ):
        PredictionOut.model_validate(predict(client, body))
    document = client.get("/openapi.json").json()
    schema = document["components"]["schemas"]["PredictionOut"]
    validator = jsonschema_rs.Draft202012Validator(
        resolved(schema, document["components"]["schemas"]), validate_formats=True
    )
    answer = predict(client, {"match_id": match_id, "value": terms})
    assert [error.message for error in validator.iter_errors(answer)] == []


# A value object, and whether the API takes it: its documented schema must say the same.
VALUE_AGREEMENT: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    ({"bankroll": 1000, "min_ev": 0, "kelly_fraction": 1, "stake_cap": 1}, True),
    ({"bookmakers": ["B365", "Bet&Win"], "source": "ensemble"}, True),
    ({"bankroll": 1e12}, True),
    *((value, False) for value, _ in BAD_VALUES),
]


def test_the_documented_value_schema_accepts_what_the_api_accepts(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schema = documented(document, ValueIn.__name__)
    assert schema is not None
    validator = jsonschema_rs.Draft202012Validator(
        resolved(schema, document["components"]["schemas"]), validate_formats=True
    )
    wrong = [
        (value, taken)
        for value, taken in VALUE_AGREEMENT
        if (accepts(ValueIn, value), validator.is_valid(value)) != (taken, taken)
    ]
    assert not wrong
    # The API docs say what a value bet is worth, and what it is not: in the answer's
    # schema and in every route that judges value.
    routes = document["paths"]
    for description in (
        json.dumps(document["components"]["schemas"]["PredictionOut"]),
        routes["/predict"]["post"]["description"],
        routes["/value-bets"]["get"]["description"],
        routes["/upcoming"]["get"]["description"],
    ):
        for said in ("an estimate", "few hundred bets is mostly noise", "limit or close accounts"):
            assert said in description
    request = TypeAdapter(PredictIn).validate_python({"match_id": 1, "value": {}})
    assert request.value == ValueIn()


def test_an_exchanges_price_is_shown_quoted_and_net_of_its_commission(
    client: TestClient,
) -> None:
    exchange = {"bookmaker": "BFE", "home": 2.3, "draw": 3.5, "away": 3.3}
    terms = {"source": "PS", "bookmakers": ["Betfair Exchange"]}
    answer = predict(client, {"odds": [FAIR_PS, exchange], "value": terms})
    home, draw, away = outcomes(answer)
    # 5 % on net winnings: 1 + 1.3 × 0.95 = 2.235, 1 + 2.5 × 0.95 = 3.375, 1 + 2.3 × 0.95
    # = 3.185. PS's line 0.5 / 0.25 / 0.25 makes the home win worth 0.5 × 2.235 − 1 = 0.1175.
    assert [(o["bookmaker"], o["price"]) for o in (home, draw, away)] == [
        ("BFE", 2.3),
        ("BFE", 3.5),
        ("BFE", 3.3),
    ]
    assert [o["net_price"] for o in (home, draw, away)] == pytest.approx([2.235, 3.375, 3.185])
    assert [o["expected_value"] for o in (home, draw, away)] == pytest.approx(
        [0.1175, 0.25 * 3.375 - 1, 0.25 * 3.185 - 1]
    )
    # A quarter Kelly 0.1175 / 1.235 / 4 = 0.0238, capped at 0.02.
    assert [o["flagged"] for o in (home, draw, away)] == [True, False, False]
    assert home["stake_fraction"] == 0.02
    # A bookmaker without commission: net_price is the price.
    plain = predict(client, {"odds": ODDS, "value": {"bookmakers": ["WH"]}})
    assert [o["net_price"] for o in outcomes(plain)] == [o["price"] for o in outcomes(plain)]
