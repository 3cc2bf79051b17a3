"""The body of an answer by match_id is written once while the service keeps the answer, and
is byte for byte what the response model writes."""

from __future__ import annotations

import gc
from typing import Any

from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from app.api.schemas.predict import PredictByIdIn, PredictionOut
from app.api.written import WrittenBodies
from app.services.prediction import PredictionAnswer
from app.state import app_state

INLINE = {
    "odds": [
        {"bookmaker": "B365", "home": 2.10, "draw": 3.40, "away": 3.60},
        {"bookmaker": "PS", "home": 2.15, "draw": 3.45, "away": 3.55},
    ]
}


class Kept:
    """An answer as a service keeps it: never changed, compared by identity."""

    def __init__(self, text: str) -> None:
        self.text = text


def test_a_body_is_written_once_per_answer_and_goes_with_it() -> None:
    written: list[str] = []

    def write(answer: Kept) -> bytes:
        written.append(answer.text)
        return answer.text.encode()

    bodies = WrittenBodies(write)
    first, twin = Kept("a"), Kept("a")
    assert bodies.body(first) == bodies.body(first) == b"a"
    assert bodies.body(twin) == b"a"
    assert written == ["a", "a"]  # an equal answer is another answer
    response = bodies.response(first)
    assert (response.body, response.media_type) == (b"a", "application/json")
    del first, twin, response
    gc.collect()
    assert len(bodies._bodies) == 0


def answer_of(client: TestClient, match_id: int) -> PredictionAnswer:
    """The service's answer for ``match_id``: the one it keeps, once a request asked for it."""
    state = app_state(client.app_state)
    portal = client.portal
    assert portal is not None  # the client is open
    (answer,) = portal.call(lambda: state.predictions.answer([match_id]))
    assert isinstance(answer, PredictionAnswer)
    return answer


def framework_body(answer: PredictionAnswer) -> bytes:
    """The body FastAPI writes of the route's return value without the kept body."""
    return TypeAdapter(PredictionOut).dump_json(PredictionOut.model_validate(answer), by_alias=True)


def test_an_answer_by_id_is_the_response_models_body(fitted_client: TestClient) -> None:
    match_id = fitted_client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    first = fitted_client.post("/predict", json={"match_id": match_id})
    again = fitted_client.post("/predict", json={"match_id": match_id})
    answer = answer_of(fitted_client, match_id)
    expected = PredictionOut.model_validate(answer).model_dump_json(by_alias=True).encode()
    assert first.content == again.content == expected == framework_body(answer)
    # The same headers as an inline answer, which the framework writes.
    inline = fitted_client.post("/predict", json=INLINE)
    for response in (first, again):
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.headers["content-length"] == str(len(expected))
        assert sorted(response.headers) == sorted(inline.headers)


def test_an_answer_by_id_with_terms_of_its_own_is_the_response_models_body(
    fitted_client: TestClient,
) -> None:
    match_id = fitted_client.get("/matches", params={"limit": 1}).json()["items"][0]["id"]
    asked: dict[str, Any] = {"match_id": match_id, "value": {"bankroll": 1000.0}}
    own = fitted_client.post("/predict", json=asked)
    plain = fitted_client.post("/predict", json={"match_id": match_id})
    assert own.status_code == plain.status_code == 200
    assert own.json()["value"] != plain.json()["value"]
    state = app_state(fitted_client.app_state)
    portal = fitted_client.portal
    assert portal is not None
    requested = PredictByIdIn.model_validate(asked).value_terms(state.predictions.default_terms)
    (answer,) = portal.call(lambda: state.predictions.answer([match_id], [requested]))
    assert isinstance(answer, PredictionAnswer)
    assert own.content == framework_body(answer)
