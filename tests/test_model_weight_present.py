"""How much of the model's weight quoted a match: said with each answer, 0 (and the
consensus) when none of it did, and counted in /metrics below one half."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.domain.ensemble import Ensemble
from app.domain.prediction import FEW_QUOTES, QuotedOdds, predict_matches
from app.domain.vocabulary import Basis, Method, Phase
from app.services.caching import AnswerCache
from app.state import app_state
from tests.upcoming_matches import (
    D1,
    Fixture,
    Seeded,
    quote_items,
    store,
)

# Weights as a fit gives them (some none at all): 5.78 in all.
POOL = ("B365", "BW", "IW", "PS", "WH", "VC", "LB")
ENSEMBLE = Ensemble(
    bookmakers=POOL,
    weights=np.array([1.87, 0.0, 0.41, 2.35, 0.0, 1.03, 0.12]),
    method=Method.POWER,
    phase=Phase.PRE,
    rounds=50,
    version=3,
)
LINE = (2.1, 3.4, 3.6)


def quoted_by(*codes: str) -> list[QuotedOdds]:
    return [QuotedOdds(code, *LINE) for code in codes]


# (quoting bookmakers, share by hand, basis)
SHARES = [
    (("B365", "PS"), (1.87 + 2.35) / 5.78, Basis.MODEL),
    # A bookmaker outside the pool adds nothing.
    (("VC", "XX"), 1.03 / 5.78, Basis.MODEL),
    (POOL, 1.0, Basis.MODEL),
    # Only bookmakers without weight: none of the model's weight, the consensus.
    (("BW", "WH"), 0.0, Basis.CONSENSUS),
    (("XX",), 0.0, Basis.CONSENSUS),
]


@pytest.mark.parametrize(("codes", "share", "basis"), SHARES)
def test_the_share_of_the_model_s_weight_that_quoted_the_match(
    codes: tuple[str, ...], share: float, basis: Basis
) -> None:
    (alone,) = predict_matches([quoted_by(*codes)], ENSEMBLE, Method.POWER)
    assert alone.model_weight_present == pytest.approx(share, abs=1e-12)
    assert alone.basis == basis
    # In a batch large enough for numpy, the same share.
    many = [quoted_by(*POOL)] * (FEW_QUOTES // len(POOL) + 1) + [quoted_by(*codes)]
    in_batch = predict_matches(many, ENSEMBLE, Method.POWER)[-1]
    assert in_batch.model_weight_present == alone.model_weight_present


def test_without_a_model_there_is_no_share() -> None:
    (prediction,) = predict_matches([quoted_by("B365", "PS")], None, Method.POWER)
    assert prediction.model_weight_present is None
    assert prediction.basis == Basis.CONSENSUS


def counter(client: TestClient, name: str, **labels: str) -> float:
    """A counter's value in a scrape of /metrics (0 before its first count)."""
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


ALL = "oddsboost_model_predictions_total"
UNDER_HALF = "oddsboost_model_predictions_under_half_weight_total"


def counts(client: TestClient, served_by: str) -> tuple[float, float]:
    return counter(client, ALL, served_by=served_by), counter(
        client, UNDER_HALF, served_by=served_by
    )


def inline(codes: list[str]) -> dict[str, Any]:
    home, draw, away = LINE
    odds = [{"bookmaker": c, "home": home, "draw": draw, "away": away} for c in codes]
    return {"odds": odds}


def test_each_answer_of_the_fitted_model_says_its_share(fitted_client: TestClient) -> None:
    ensemble = app_state(fitted_client.app_state).models.snapshot().ensemble
    assert ensemble is not None
    weights = dict(zip(ensemble.bookmakers, (float(w) for w in ensemble.weights), strict=True))
    total = sum(weights.values())
    heaviest = max(weights, key=weights.__getitem__)
    unweighted = [code for code, weight in weights.items() if weight == 0.0] or ["XX"]
    before = counts(fitted_client, "predict")

    heavy = fitted_client.post("/predict", json=inline([heaviest])).json()
    assert heavy["model_weight_present"] == pytest.approx(weights[heaviest] / total)
    assert heavy["basis"] == "model"
    none = fitted_client.post("/predict", json=inline(unweighted)).json()
    assert (none["model_weight_present"], none["basis"]) == (0.0, "consensus")
    everyone = fitted_client.post("/predict", json=inline(list(weights))).json()
    assert everyone["model_weight_present"] == pytest.approx(1.0)

    # A stored match: the share of the weights of the bookmakers it lists as used.
    match_id = fitted_client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    stored = fitted_client.post("/predict", json={"match_id": match_id}).json()
    present = sum(used["weight"] for used in stored["bookmakers"])
    assert stored["model_weight_present"] == pytest.approx(present / total)

    shares = [heavy, none, everyone, stored]
    under_half = sum(answer["model_weight_present"] < 0.5 for answer in shares)
    assert counts(fitted_client, "predict") == (before[0] + 4, before[1] + under_half)


def test_without_a_model_the_share_is_null_and_not_counted(seeded_client: TestClient) -> None:
    before = counts(seeded_client, "predict")
    answer = seeded_client.post("/predict", json=inline(["B365", "PS"])).json()
    assert (answer["model_weight_present"], answer["basis"]) == (None, "consensus")
    assert counts(seeded_client, "predict") == before


# Quoted by William Hill alone, outside the model's pool.
UNWEIGHTED = Fixture("E0", "Newcastle", "Spurs", D1 + dt.timedelta(hours=14), {"WH": LINE})


def test_the_board_says_each_match_s_share_and_counts_what_it_predicts(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A body kept by the route would answer without the board being asked: none is kept
    # (each read of this clock is a second later).
    clock = itertools.count().__next__
    kept = AnswerCache[bytes](0.5, clock=clock)
    monkeypatch.setattr(app_state(seeded.client.app_state).upcoming_bodies, "kept", kept)
    client = seeded.client
    store(client, quote_items(UNWEIGHTED))
    before = counts(client, "board")
    body = client.get("/upcoming").json()
    shares = {
        item["match"]["home_team"]: (
            item["prediction"]["model_weight_present"],
            item["prediction"]["basis"],
        )
        for item in body["items"]
    }
    # Arsenal, Everton and Barcelona are quoted by Bet&Win: all of the model's weight.
    assert shares == {
        "Arsenal": (1.0, "model"),
        "Everton": (1.0, "model"),
        "Newcastle": (0.0, "consensus"),
        "Barcelona": (1.0, "model"),
    }
    assert counts(client, "board") == (before[0] + 4, before[1] + 1)
    # Served again unchanged: made once, counted once.
    client.get("/upcoming")
    assert counts(client, "board") == (before[0] + 4, before[1] + 1)
