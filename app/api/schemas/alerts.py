"""The delivery log of alerts (GET /alerts/deliveries): each delivery to a receiver, with
its message and every attempt."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field, JsonValue

from app.api.schemas.common import AnswerModel, with_examples
from app.domain.alerts import AlertEvent, DeliveryStatus, ReceiverKind

MESSAGE_EXAMPLE: dict[str, JsonValue] = {
    "event": "raised",
    "flag_id": 4,
    "match_id": 17,
    "competition": "E0",
    "home": "Arsenal",
    "away": "Chelsea",
    "kickoff": "2026-11-22T15:00:00Z",
    "outcome": "2",
    "bookmaker": "B365",
    "price": 4.2,
    "net_price": 4.2,
    "expected_value": 0.05,
    "probability": 0.25,
    "stake": 0.0039,
    "value_source": "PS",
    "model_version": 3,
    "recorded_at": "2026-11-20T09:00:00Z",
    "link": "https://odds.example/dashboard/matches/17",
}

DELIVERY_EXAMPLE: dict[str, JsonValue] = {
    "id": 31,
    "flag_id": 4,
    "event": "raised",
    "receiver_kind": "webhook",
    "host": "hooks.example:8443",
    "status": "delivered",
    "attempts": 2,
    "created_at": "2026-11-20T09:00:00.120000Z",
    "next_attempt_at": None,
    "delivered_at": "2026-11-20T09:00:10.310000Z",
    "message": MESSAGE_EXAMPLE,
    "attempt_log": [
        {
            "number": 1,
            "started_at": "2026-11-20T09:00:00.180000Z",
            "duration_seconds": 0.041,
            "status_code": 500,
            "error": "answered 500: busy",
            "next_attempt_at": "2026-11-20T09:00:10.180000Z",
        },
        {
            "number": 2,
            "started_at": "2026-11-20T09:00:10.270000Z",
            "duration_seconds": 0.038,
            "status_code": 200,
            "error": None,
            "next_attempt_at": None,
        },
    ],
}


class AttemptOut(AnswerModel):
    number: int = Field(description="1 for the first attempt.")
    started_at: dt.datetime
    duration_seconds: float
    status_code: int | None = Field(description="The receiver's answer; null: none came.")
    error: str | None = Field(
        description="Why the attempt failed (a status other than 2xx and the start of the "
        "answer, a redirect not followed, no answer in time, no connection); null: delivered."
    )
    next_attempt_at: dt.datetime | None = Field(description="Null: no attempt follows.")


class DeliveryOut(AnswerModel):
    """One alert to one receiver."""

    model_config = with_examples(DELIVERY_EXAMPLE) | AnswerModel.model_config

    id: int = Field(description="Also the message's `delivery_id` and `X-Oddsboost-Delivery`.")
    flag_id: int
    event: AlertEvent
    receiver_kind: ReceiverKind
    host: str = Field(
        description="The receiver's host (its path, which may hold a token, is never shown)."
    )
    status: DeliveryStatus = Field(
        description="pending: waiting for its next attempt; delivered: answered 2xx; failed: "
        "no attempt left."
    )
    attempts: int
    created_at: dt.datetime = Field(description="When it was stored, with its flag's event.")
    next_attempt_at: dt.datetime | None
    delivered_at: dt.datetime | None
    message: dict[str, Any] = Field(
        description="The message's fields but `delivery_id` and `sent_at`, which each attempt adds."
    )
    attempt_log: list[AttemptOut]
