"""POST /predict and /predict/batch, and the model-version endpoints, on real data.

Expected probabilities are computed here independently: the power method is solved with
scipy's root finder, and the weighted mix is written out by hand.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.api.schemas.common import fair_odds
from app.main import create_app
from app.services import caching, prediction
from app.settings import Settings, settings_environment
from app.state import app_state
from tests.apps import ADMIN_KEY, REFIT_UNTIL
from tests.commands import Oddsboost
from tests.helpers import DEADLINE_SECONDS, error_messages, received_at, wait_until
from tests.plugins.predictions import power_probabilities, upcoming_match
from tests.processes import child_environment, running_server

UNTIL = REFIT_UNTIL
INLINE: dict[str, Any] = {
    "home_team": "Arsenal",
    "away_team": "Chelsea",
    "competition": "E0",
    "kickoff": "2026-11-22T15:00:00Z",
    "odds": [
        {"bookmaker": "B365", "home": 2.10, "draw": 3.40, "away": 3.60},
        {"bookmaker": "PS", "home": 2.15, "draw": 3.45, "away": 3.55},
        {"bookmaker": "WH", "home": 2.05, "draw": 3.30, "away": 3.70},
    ],
}


def hand_mix(odds: list[dict[str, Any]], weights: dict[str, float]) -> np.ndarray:
    total, mix = 0.0, np.zeros(3)
    for quote in odds:
        weight = weights.get(quote["bookmaker"])
        if weight is None:
            continue
        mix += weight * power_probabilities(quote["home"], quote["draw"], quote["away"])
        total += weight
    return mix / total


@pytest.fixture
def client(fitted_client: TestClient) -> TestClient:
    """The app on the fitted data (see ``fitted_template``)."""
    return fitted_client


@pytest.fixture
def fitted(client: TestClient) -> dict[str, Any]:
    """The active model version, as the API gives it."""
    response = client.get("/models/active")
    assert response.status_code == 200, response.text
    version: dict[str, Any] = response.json()
    return version


class FakeClock:
    """Stands in for ``time.monotonic``: time passes only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_before_any_model_the_answer_is_the_labelled_consensus(seeded_client: TestClient) -> None:
    response = seeded_client.post("/predict", json=INLINE)
    assert response.status_code == 200
    body = response.json()
    assert body["model"] is None
    assert body["basis"] == "consensus"
    assert "no model has been fitted yet" in body["note"]
    expected = np.mean(
        [power_probabilities(q["home"], q["draw"], q["away"]) for q in INLINE["odds"]], axis=0
    )
    assert [body["probabilities"][k] for k in ("home", "draw", "away")] == pytest.approx(expected)
    assert body["consensus"] == body["probabilities"]
    assert [b["weight"] for b in body["bookmakers"]] == [None, None, None]
    assert seeded_client.get("/models/active").status_code == 404
    assert seeded_client.get("/models").json()["total"] == 0
    too_many = seeded_client.get("/models", params={"limit": 501})
    assert too_many.status_code == 422
    assert error_messages(too_many.json()) == ["query.limit: limit must be at most 500"]


def test_inline_prediction_is_the_weighted_mix(client: TestClient, fitted: dict[str, Any]) -> None:
    weights = {b["code"]: b["weight"] for b in fitted["bookmakers"]}
    odds = [
        {"bookmaker": code, "home": 2.0 + i / 10, "draw": 3.4, "away": 3.8 - i / 10}
        for i, code in enumerate(sorted(weights))
    ] + [{"bookmaker": "NOT_IN_POOL", "home": 2.0, "draw": 3.3, "away": 3.9}]
    body = client.post("/predict", json={"odds": odds}).json()
    probabilities = [body["probabilities"][k] for k in ("home", "draw", "away")]
    assert probabilities == pytest.approx(hand_mix(odds, weights), abs=1e-9)
    assert sum(probabilities) == pytest.approx(1.0)
    assert body["basis"] == "model"
    assert body["model"]["version"] == fitted["id"]
    assert body["model"]["rounds"] == fitted["rounds"]
    assert body["model"]["algorithm"] == "adaboost.m2"
    assert body["outcome"] == "1X2"[int(np.argmax(probabilities))]
    assert [body["fair_odds"][k] for k in ("home", "draw", "away")] == pytest.approx(
        [1 / p for p in probabilities]
    )
    assert body["ignored_bookmakers"] == [
        {"code": "NOT_IN_POOL", "reason": "not in the model's pool of bookmakers"}
    ]
    assert {b["code"]: b["weight"] for b in body["bookmakers"]} == pytest.approx(weights)


def test_bookmakers_are_named_by_code_or_listed_name_in_any_letter_case(
    client: TestClient, fitted: dict[str, Any]
) -> None:
    listed = {b["code"]: b["name"] for b in client.get("/bookmakers").json()["items"]}
    assert (listed["PS"], listed["WH"]) == ("Pinnacle", "William Hill")
    spellings = ["b365", listed["PS"].upper(), listed["WH"].lower()]
    spelled = [
        {**quote, "bookmaker": name} for quote, name in zip(INLINE["odds"], spellings, strict=True)
    ]
    body = client.post("/predict", json={**INLINE, "odds": spelled}).json()
    as_coded = client.post("/predict", json=INLINE).json()
    assert [b["code"] for b in body["bookmakers"]] == ["B365", "PS", "WH"]
    assert body["ignored_bookmakers"] == []
    assert body["probabilities"] == as_coded["probabilities"]
    assert body["bookmakers"] == as_coded["bookmakers"]
    weights = {b["code"]: b["weight"] for b in fitted["bookmakers"]}
    assert [b["weight"] for b in body["bookmakers"]] == pytest.approx(
        [weights["B365"], weights["PS"], weights["WH"]]
    )
    # One bookmaker named twice, however it is spelled, is refused.
    twice = [INLINE["odds"][0], {**INLINE["odds"][1], "bookmaker": "Bet365"}]
    response = client.post("/predict", json={"odds": twice})
    assert response.status_code == 422
    assert any("more than once" in message for message in error_messages(response.json()))


def test_prediction_by_match_id_uses_the_stored_quotes(
    client: TestClient, fitted: dict[str, Any]
) -> None:
    weights = {b["code"]: b["weight"] for b in fitted["bookmakers"]}
    match = client.get(
        "/matches", params={"competition": "SP1", "order": "desc", "limit": 1}
    ).json()["items"][0]
    detail = client.get(f"/matches/{match['id']}").json()
    pre = [
        {"bookmaker": q["bookmaker"], "home": q["home"], "draw": q["draw"], "away": q["away"]}
        for q in detail["quotes"]
        if q["phase"] == "pre"
    ]
    body = client.post("/predict", json={"match_id": match["id"]}).json()
    assert body["match"]["id"] == match["id"]
    assert body["quotes"] == {"phase": "pre", "fallback": False}
    assert body["match"]["home_team"] == match["home_team"]
    assert [body["probabilities"][k] for k in ("home", "draw", "away")] == pytest.approx(
        hand_mix(pre, weights), abs=1e-9
    )
    assert sorted(b["code"] for b in body["bookmakers"]) == sorted(
        q["bookmaker"] for q in pre if q["bookmaker"] in weights
    )


def test_a_match_without_quotes_of_the_models_phase_is_predicted_from_its_latest_ones(
    committing_client: TestClient, fitted: dict[str, Any]
) -> None:
    # The prediction service reads on connections of its own: the quotes must be committed.
    client = committing_client
    weights = {b["code"]: b["weight"] for b in fitted["bookmakers"]}
    assert fitted["phase"] == "pre"
    match_id = upcoming_match(
        client,
        [
            ("B365", (2.5, 3.3, 2.9), "2030-01-04T12:00:00Z"),
            ("B365", (2.2, 3.4, 3.3), "2030-01-05T14:55:00Z"),  # the latest before kickoff
            ("B365", (9.0, 5.0, 1.2), "2030-01-05T15:20:00Z"),  # in play: never used
            ("WH", (2.3, 3.3, 3.2), None),  # undated
        ],
        "closing",
    )
    response = client.post("/predict", json={"match_id": match_id})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["quotes"] == {"phase": "closing", "fallback": True}
    assert body["model"]["phase"] == "pre"
    used = [
        {"bookmaker": "B365", "home": 2.2, "draw": 3.4, "away": 3.3},
        {"bookmaker": "WH", "home": 2.3, "draw": 3.3, "away": 3.2},
    ]
    assert [body["probabilities"][k] for k in ("home", "draw", "away")] == pytest.approx(
        hand_mix(used, weights), abs=1e-9
    )
    assert [b["code"] for b in body["bookmakers"]] == ["B365", "WH"]
    batch = client.post("/predict/batch", json={"items": [{"match_id": match_id}, INLINE]})
    first, inline = batch.json()["results"]
    assert first["prediction"] == body
    assert inline["prediction"]["quotes"] is None  # the sender's odds


def test_only_bookmakers_outside_the_pool_give_the_labelled_consensus(
    client: TestClient, fitted: dict[str, Any]
) -> None:
    body = client.post(
        "/predict", json={"odds": [{"bookmaker": "NEWBOOK", "home": 2.0, "draw": 3.3, "away": 3.9}]}
    ).json()
    assert body["basis"] == "consensus"
    assert body["model"]["version"] == fitted["id"]
    assert "none of the quoted bookmakers has weight in the model" in body["note"]
    assert [body["probabilities"][k] for k in ("home", "draw", "away")] == pytest.approx(
        power_probabilities(2.0, 3.3, 3.9)
    )


def test_bookmakers_with_no_weight_give_the_labelled_consensus(
    client: TestClient, fitted: dict[str, Any]
) -> None:
    weightless = [b["code"] for b in fitted["bookmakers"] if b["weight"] == 0][:2]
    assert weightless, "the fitted version gives every bookmaker some weight"
    odds = [
        {"bookmaker": code, "home": 2.0 + i / 10, "draw": 3.3, "away": 3.9 - i / 10}
        for i, code in enumerate(weightless)
    ]
    body = client.post("/predict", json={"odds": odds}).json()
    assert body["basis"] == "consensus"
    assert "has weight" in body["note"]
    assert [b["weight"] for b in body["bookmakers"]] == [0.0] * len(weightless)
    assert body["probabilities"] == body["consensus"]


def test_errors(committing_client: TestClient) -> None:
    assert committing_client.post("/predict", json={"match_id": 999_999}).status_code == 404
    bad_price = committing_client.post(
        "/predict", json={"odds": [{"bookmaker": "B365", "home": 0.95, "draw": 3.4, "away": 3.6}]}
    )
    assert bad_price.status_code == 422
    error = bad_price.json()["errors"][0]
    assert error["loc"] == ["body", "odds", 0]
    assert "bookmaker 'B365', home" in error["msg"]
    both = committing_client.post("/predict", json={"match_id": 1, "odds": INLINE["odds"]})
    assert both.status_code == 422
    assert committing_client.post("/predict", json={}).status_code == 422
    twice = committing_client.post("/predict", json={"odds": INLINE["odds"][:1] * 2})
    assert "appears more than once" in twice.json()["errors"][0]["msg"]
    for not_an_id in (True, "3", 3.0):
        loose = committing_client.post("/predict", json={"match_id": not_an_id})
        assert loose.status_code == 422, not_an_id
        assert loose.json()["errors"][0]["loc"] == ["body", "match_id"]
    text_price = [{"bookmaker": "B365", "home": "2.1", "draw": 3.4, "away": 3.6}]
    assert committing_client.post("/predict", json={"odds": text_price}).status_code == 422
    # A match with no usable quote: its only one was captured after kickoff.
    future = {
        "quotes": [
            {
                "match": {
                    "competition": "E0",
                    "kickoff": "2030-01-01T15:00:00Z",
                    "home_team": "A",
                    "away_team": "B",
                },
                "bookmaker": "B365",
                "home": 2.0,
                "draw": 3.0,
                "away": 4.0,
                "phase": "closing",
                "captured_at": "2030-01-01T15:30:00Z",
            }
        ]
    }
    with received_at(committing_client, dt.datetime(2030, 1, 1, 16, 0, tzinfo=dt.UTC)):
        committing_client.post("/admin/odds", json=future, headers={"X-API-Key": ADMIN_KEY})
    future_id = committing_client.get("/matches", params={"status": "upcoming"}).json()["items"][0][
        "id"
    ]
    no_quote = committing_client.post("/predict", json={"match_id": future_id})
    assert no_quote.status_code == 422
    assert error_messages(no_quote.json()) == [
        f"match {future_id} has no usable quote: no quote of any phase captured before kickoff"
    ]


@pytest.mark.usefixtures("fitted")
@pytest.mark.parametrize(("price", "shown"), [(1.01, "+1.970"), (10.0, "-0.700")])
def test_a_quote_no_bookmaker_would_offer_is_refused(
    client: TestClient, price: float, shown: str
) -> None:
    absurd = {"bookmaker": "WH", "home": price, "draw": price, "away": price}
    response = client.post("/predict", json={"odds": [*INLINE["odds"][:2], absurd]})
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("body.odds.2: ")
    assert f"bookmaker 'WH': overround {shown} is outside -0.05 to +0.50" in message
    batch = client.post("/predict/batch", json={"items": [{"odds": [absurd]}, INLINE]}).json()
    assert [r["status"] for r in batch["results"]] == [422, 200]


@pytest.mark.usefixtures("fitted")
def test_batch_keeps_order_and_isolates_errors(client: TestClient) -> None:
    match_id = client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    items = [
        {"match_id": match_id},
        {"odds": [{"bookmaker": "B365", "home": 0.5, "draw": 3.4, "away": 3.6}]},
        {"match_id": 999_999},
        {"colour": "red"},
        INLINE,
    ]
    response = client.post("/predict/batch", json={"items": items})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["index"], r["status"]) for r in results] == [
        (0, 200),
        (1, 422),
        (2, 404),
        (3, 422),
        (4, 200),
    ]
    assert results[0]["prediction"] == client.post("/predict", json=items[0]).json()
    assert results[4]["prediction"] == client.post("/predict", json=INLINE).json()
    assert error_messages(results[2]["error"]) == ["no match with id 999999"]
    assert results[1]["error"]["errors"][0]["loc"] == ["odds", 0]


def test_a_batch_item_lists_at_most_a_hundred_errors(client: TestClient) -> None:
    # Each of the 100 quotes has three prices that are not numbers: 300 errors.
    wrong = {
        "odds": [{"bookmaker": f"B{i}", "home": "x", "draw": "x", "away": "x"} for i in range(100)]
    }
    (result,) = client.post("/predict/batch", json={"items": [wrong]}).json()["results"]
    assert result["status"] == 422
    assert len(result["error"]["errors"]) == 101
    assert result["error"]["errors"][0]["loc"] == ["odds", 0, "home"]
    assert result["error"]["errors"][-1] == {
        "loc": [],
        "msg": "200 more errors not shown",
        "type": "too_many_errors",
    }


def test_batch_size_limit(seeded_settings: Settings) -> None:
    small = seeded_settings.model_copy(update={"predict_batch_max": 2})
    with TestClient(create_app(small)) as client:
        response = client.post("/predict/batch", json={"items": [INLINE] * 3})
    assert response.status_code == 422
    (message,) = error_messages(response.json())
    assert message.startswith("body.items: at most 2 items")


def test_model_endpoints(client: TestClient, fitted: dict[str, Any]) -> None:
    listed = client.get("/models").json()
    assert listed["total"] == 1
    assert listed["items"][0] == fitted
    assert client.get(f"/models/{fitted['id']}").json() == fitted
    assert client.get("/models/999").status_code == 404
    assert fitted["status"] == "active"
    assert set(fitted["validation"]["model"]) == {"log_loss", "brier", "rps", "accuracy"}


@pytest.mark.slow
def test_a_running_server_picks_up_a_new_version_without_restart(
    refit_settings: Settings, oddsboost: Oddsboost, tmp_path: Path
) -> None:
    environment = child_environment(refit_settings, ODDSBOOST_MODEL_REFRESH_SECONDS="0.5")
    with running_server(environment, tmp_path / "server.log", "--workers", "2") as server:
        predict_url = f"{server.base_url}/predict"
        assert httpx.post(predict_url, json=INLINE).json()["model"] is None
        refit = oddsboost.run(
            "refit", "--until", UNTIL.isoformat(), env=settings_environment(refit_settings)
        )
        assert refit.returncode == 0, refit.stderr
        # Every request keeps succeeding while both workers switch to the new version.
        answers: list[int | None] = []

        def switched() -> bool:
            response = httpx.post(predict_url, json=INLINE, timeout=5)
            assert response.status_code == 200
            model = response.json()["model"]
            answers.append(None if model is None else model["version"])
            return answers[-8:] == [1] * 8

        wait_until(switched, "both workers answered with the new version")
        assert server.returncode is None  # the same server, never restarted


@pytest.mark.usefixtures("fitted")
def test_answers_match_the_documented_schemas(client: TestClient) -> None:
    from app.api.schemas.predict import BatchOut, PredictionOut

    match_id = client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    for body in (INLINE, {"match_id": match_id}):
        PredictionOut.model_validate(client.post("/predict", json=body).json())
    batch = client.post("/predict/batch", json={"items": [INLINE, {"match_id": 0}]}).json()
    BatchOut.model_validate(batch)
    schema = client.get("/openapi.json").json()
    body_schema = schema["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    # Either kind of request, each a schema of the document's own.
    components = schema["components"]["schemas"]
    by_id, inline = (components[kind["$ref"].rsplit("/", 1)[-1]] for kind in body_schema["oneOf"])
    assert (by_id["required"], inline["required"]) == (["match_id"], ["odds"])
    assert {"match_id", "odds", "home_team"} <= set(by_id["properties"]) & set(inline["properties"])
    response_ref = schema["paths"]["/predict"]["post"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    assert response_ref == {"$ref": "#/components/schemas/PredictionOut"}


def newer_quote(match: dict[str, Any], prices: tuple[float, float, float], captured_at: str) -> Any:
    home, draw, away = prices
    identity = {k: match[k] for k in ("competition", "kickoff", "home_team", "away_team")}
    quote = {"match": identity, "bookmaker": "B365", "home": home, "draw": draw, "away": away}
    return {"quotes": [{**quote, "captured_at": captured_at}]}


def b365_probabilities(answer: dict[str, Any]) -> dict[str, float]:
    probabilities: dict[str, float] = next(b for b in answer["bookmakers"] if b["code"] == "B365")[
        "probabilities"
    ]
    return probabilities


def test_answers_by_id_are_reused_for_the_cache_time(
    refit_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"X-API-Key": ADMIN_KEY}
    # The answers' cache tells the time by this clock: it moves only when the test moves it.
    clock = FakeClock()
    monkeypatch.setattr(prediction, "AnswerCache", partial(caching.AnswerCache, clock=clock))
    # Within the cache time the answer is reused.
    lasting = refit_settings.model_copy(update={"predict_cache_seconds": 3600})
    with TestClient(create_app(lasting)) as client:
        match = client.get("/matches", params={"limit": 1}).json()["items"][0]
        first = client.post("/predict", json={"match_id": match["id"]}).json()
        newer = newer_quote(match, (9.0, 5.0, 1.2), "2015-08-01T12:00:00Z")
        client.post("/admin/odds", json=newer, headers=headers)
        assert client.post("/predict", json={"match_id": match["id"]}).json() == first
    # Once the cache time has passed, the answer is computed again from the newest quote.
    quick = refit_settings.model_copy(update={"predict_cache_seconds": 0.5})
    with TestClient(create_app(quick)) as client:
        cached = client.post("/predict", json={"match_id": match["id"]}).json()
        assert b365_probabilities(cached) == pytest.approx(
            dict(zip(("home", "draw", "away"), power_probabilities(9.0, 5.0, 1.2), strict=True))
        )
        newest = newer_quote(match, (10.0, 6.0, 1.15), "2015-08-02T12:00:00Z")
        client.post("/admin/odds", json=newest, headers=headers)
        clock.advance(0.4)
        assert client.post("/predict", json={"match_id": match["id"]}).json() == cached
        expected = dict(
            zip(("home", "draw", "away"), power_probabilities(10.0, 6.0, 1.15), strict=True)
        )
        clock.advance(0.2)
        answer = client.post("/predict", json={"match_id": match["id"]}).json()
        assert b365_probabilities(answer) == pytest.approx(expected)
    uncached = refit_settings.model_copy(update={"predict_cache_seconds": 0})
    with TestClient(create_app(uncached)) as client:
        match_id = client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
        answer = client.post("/predict", json={"match_id": match_id}).json()
        b365 = next(b for b in answer["bookmakers"] if b["code"] == "B365")
        assert b365["probabilities"]["away"] > 0.7  # the newer quote, at once


def test_predictions_read_neither_the_model_nor_inline_odds_from_the_database(
    fitted_settings: Settings,
) -> None:
    from sqlalchemy import event

    # Neither the model nor the kept answer may expire mid-test on a slow machine.
    quiet = fitted_settings.model_copy(
        update={"model_refresh_seconds": 3600, "predict_cache_seconds": 3600}
    )
    with TestClient(create_app(quiet)) as client:
        match_id = client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
        client.post("/predict", json={"match_id": match_id})  # warms the answer cache
        statements: list[str] = []

        def record(*args: Any) -> None:
            statements.append(str(args[2]))

        event.listen(app_state(client.app_state).engine, "before_cursor_execute", record)
        for _ in range(5):
            assert client.post("/predict", json=INLINE).json()["model"]["version"] == 1
            assert client.post("/predict", json={"match_id": match_id}).status_code == 200
        assert statements == []
        client.post("/predict", json={"match_id": match_id + 1})  # not cached: reads quotes
        assert statements
        assert not any("model_versions" in statement for statement in statements)


@pytest.mark.usefixtures("fitted")
def test_database_outage_fails_only_what_needs_the_database(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.exc import OperationalError

    from app.services import prediction

    def unreachable(*_args: Any, **_kwargs: Any) -> Any:
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    monkeypatch.setattr(prediction, "stored_matches", unreachable)
    by_id = client.post("/predict", json={"match_id": 424242})
    assert by_id.status_code == 503
    assert "database is not reachable" in by_id.json()["detail"]
    batch = client.post("/predict/batch", json={"items": [{"match_id": 424242}, INLINE]}).json()
    assert [r["status"] for r in batch["results"]] == [503, 200]


@pytest.mark.usefixtures("fitted")
def test_a_large_batch_does_not_hold_up_other_requests(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from app.services import prediction

    big = {"items": [{"odds": INLINE["odds"] * 1}] * 1000}
    app = client.app
    # The batch's computation is held until the small request has been answered.
    computing, release = threading.Event(), threading.Event()
    compute = prediction._predict

    def held(pending: list[Any], *args: Any) -> list[Any]:
        if len(pending) > prediction.ON_LOOP_MAX:
            computing.set()
            assert release.wait(DEADLINE_SECONDS), "the small request was never answered"
        return compute(pending, *args)

    monkeypatch.setattr(prediction, "_predict", held)

    async def started_app(scope: Any, receive: Any, send: Any) -> None:
        # httpx runs no lifespan: each request gets the state the client's lifespan built.
        await app({**scope, "state": dict(client.app_state)}, receive, send)

    async def race() -> tuple[int, bool, int]:
        transport = httpx.ASGITransport(app=started_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            batch = asyncio.create_task(http.post("/predict/batch", json=big))
            deadline = time.monotonic() + DEADLINE_SECONDS
            while not computing.is_set():
                assert not batch.done(), batch.result().text
                assert time.monotonic() < deadline, "the batch never started computing"
                await asyncio.sleep(0.01)
            small = await http.post("/predict", json=INLINE)
            batch_still_computing = not batch.done()
            release.set()
            return small.status_code, batch_still_computing, (await batch).status_code

    small_status, batch_still_computing, batch_status = asyncio.run(race())
    # The batch is computed in the thread pool: the small request is not queued behind it.
    assert small_status == 200
    assert batch_still_computing
    assert batch_status == 200


def test_fair_odds_stay_finite_for_an_outcome_given_no_chance() -> None:
    assert fair_odds((0.5, 0.25, 0.25)) == (2.0, 4.0, 4.0)
    assert fair_odds((1.0, 0.0, 0.0)) == (1.0, 1e12, 1e12)
