"""Alerts: the message a webhook receives when the flag ledger raises a flag (or raises it
again, or its price improves by the operator's margin), how it is signed, how each kind of
receiver is addressed, and when a failed delivery is tried again.

Pure: no database, no network. The outbox (:mod:`app.services.alerts`) stores what is to be
sent and the sender posts the bytes built here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SIGNATURE_HEADER = "X-Oddsboost-Signature"
TIMESTAMP_HEADER = "X-Oddsboost-Timestamp"
DELIVERY_HEADER = "X-Oddsboost-Delivery"
EVENT_HEADER = "X-Oddsboost-Event"
SIGNATURE_SCHEME = "sha256"
MATCH_PAGE = "/dashboard/matches/{match_id}"
# What of a receiver's answer is read (the rest is not) and kept in the delivery log.
ANSWER_READ_BYTES = 64 * 1024
ANSWER_KEPT_CHARACTERS = 200
ERROR_MAX_LENGTH = 200
HOST_MAX_LENGTH = 255
TELEGRAM_CHAT = "chat_id"


class AlertEvent(StrEnum):
    """Why a message is sent: a flag raised, raised again after a withdrawal, or its price
    improved by at least the margin since its last alert; ``test``: a sample."""

    RAISED = "raised"
    RAISED_AGAIN = "raised_again"
    IMPROVED = "improved"
    TEST = "test"


class DeliveryStatus(StrEnum):
    """Where a delivery stands: waiting for its (next) attempt, answered 2xx, or given up."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class ReceiverKind(StrEnum):
    """The body a receiver takes: oddsboost's JSON message, or a chat's own shape."""

    WEBHOOK = "webhook"
    DISCORD = "discord"
    TELEGRAM = "telegram"


@dataclass(frozen=True, slots=True)
class Receiver:
    """One configured receiver: its kind, the URL posted to (a chat's target taken out of
    it), the Telegram chat (None for others), and ``key``, which names it in the outbox
    without storing its URL (a chat's token sits in the URL)."""

    kind: ReceiverKind
    url: str
    chat: str | None
    key: str

    @property
    def host(self) -> str:
        """What logs and the delivery log show of the receiver: its host, never its path."""
        return urlsplit(self.url).netloc.rpartition("@")[2][:HOST_MAX_LENGTH]


def read_receiver(entry: str) -> Receiver:
    """A configured entry: an http(s) URL, optionally prefixed ``discord:`` or ``telegram:``
    (a Telegram URL carries ``?chat_id=`` for the chat). ValueError says what is wrong
    without repeating the entry (its URL may hold a token)."""
    text = entry.strip()
    kind = ReceiverKind.WEBHOOK
    for prefixed in (ReceiverKind.DISCORD, ReceiverKind.TELEGRAM):
        if text.lower().startswith(f"{prefixed}:"):
            kind, text = prefixed, text[len(prefixed) + 1 :]
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "not an http(s) URL with a host (an entry is https://HOST/PATH, optionally "
            "prefixed discord: or telegram:)"
        )
    if any(character.isspace() for character in text) or parts.fragment:
        raise ValueError("a URL with a space or a #fragment")
    if parts.username is not None or parts.password is not None:
        raise ValueError("a URL with a user or password (put the secret in ODDSBOOST_ALERT_SECRET)")
    chat = None
    if kind is ReceiverKind.TELEGRAM:
        query = parse_qsl(parts.query, keep_blank_values=True)
        chats = [value for name, value in query if name == TELEGRAM_CHAT and value]
        if len(chats) != 1:
            raise ValueError("a telegram: URL needs one ?chat_id= (the chat the bot writes to)")
        chat = chats[0]
        rest = urlencode([(name, value) for name, value in query if name != TELEGRAM_CHAT])
        text = urlunsplit(parts._replace(query=rest))
    key = hashlib.sha256(f"{kind}:{text}:{chat}".encode()).hexdigest()
    return Receiver(kind, text, chat, key)


@dataclass(frozen=True, slots=True)
class FlagAlert:
    """What a message says about a flag: the event and the flag's terms at that moment."""

    event: AlertEvent
    flag_id: int
    match_id: int
    competition: str
    home: str
    away: str
    kickoff: dt.datetime
    outcome: str
    bookmaker: str
    price: float
    net_price: float
    expected_value: float
    probability: float
    stake: float  # a share of the bankroll (Kelly, scaled and capped by the value terms)
    value_source: str
    model_version: int | None
    at: dt.datetime  # when the ledger recorded the event

    def fields(self, public_url: str | None) -> dict[str, Any]:
        """The message's fields but its delivery's (JSON-ready)."""
        return {
            "event": str(self.event),
            "flag_id": self.flag_id,
            "match_id": self.match_id,
            "competition": self.competition,
            "home": self.home,
            "away": self.away,
            "kickoff": iso(self.kickoff),
            "outcome": self.outcome,
            "bookmaker": self.bookmaker,
            "price": self.price,
            "net_price": self.net_price,
            "expected_value": self.expected_value,
            "probability": self.probability,
            "stake": self.stake,
            "value_source": self.value_source,
            "model_version": self.model_version,
            "recorded_at": iso(self.at),
            "link": match_link(self.match_id, public_url),
        }


def match_link(match_id: int, public_url: str | None) -> str:
    """The match's dashboard page: absolute under ``public_url``, else the path alone."""
    path = MATCH_PAGE.format(match_id=match_id)
    return path if public_url is None else public_url.rstrip("/") + path


def improved_enough(net_price: float, last_alerted: float | None, margin: float) -> bool:
    """Whether a better net price is worth another alert: the margin is on (above 0) and the
    price beats the last alerted one by at least that share of it (no alert yet: it does)."""
    if margin <= 0:
        return False
    return last_alerted is None or net_price >= last_alerted * (1.0 + margin) - 1e-12


def message_body(
    kind: ReceiverKind,
    fields: Mapping[str, Any],
    delivery_id: int,
    sent_at: dt.datetime,
    chat: str | None = None,
) -> bytes:
    """The exact bytes posted: oddsboost's message (compact JSON, keys sorted), or a chat's
    shape holding its text."""
    message = {**fields, "delivery_id": delivery_id, "sent_at": iso(sent_at)}
    if kind is ReceiverKind.DISCORD:
        shaped: dict[str, Any] = {"content": chat_text(message)}
    elif kind is ReceiverKind.TELEGRAM:
        shaped = {"chat_id": chat, "text": chat_text(message)}
    else:
        shaped = message
    return json.dumps(shaped, sort_keys=True, separators=(",", ":")).encode()


def chat_text(message: Mapping[str, Any]) -> str:
    """The message as a few lines for a person reading a chat."""
    title = "TEST: " if message["event"] == AlertEvent.TEST else ""
    return (
        f"{title}{message['event']}: {message['home']} v {message['away']} "
        f"({message['competition']}, kickoff {message['kickoff']})\n"
        f"outcome {message['outcome']} at {message['price']} with {message['bookmaker']} "
        f"(net {message['net_price']}), EV {message['expected_value']:+.1%}, "
        f"p {message['probability']:.3f}, stake {message['stake']:.2%} of bankroll\n"
        f"source {message['value_source']}, model {message['model_version']}\n"
        f"{message['link']}"
    )


def signed_text(timestamp: str, body: bytes) -> bytes:
    """What the signature covers: the timestamp header's value, a dot, then the body."""
    return timestamp.encode() + b"." + body


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=`` and the hex HMAC-SHA256 of :func:`signed_text` under ``secret``."""
    digest = hmac.new(secret.encode(), signed_text(timestamp, body), hashlib.sha256)
    return f"{SIGNATURE_SCHEME}={digest.hexdigest()}"


def signed_headers(
    secret: str, body: bytes, delivery_id: int, event: str, sent_at: dt.datetime
) -> dict[str, str]:
    """The headers of one attempt: JSON, the signature, its timestamp (Unix seconds), the
    delivery (a receiver's key for dropping a message it already has) and the event."""
    timestamp = str(int(sent_at.timestamp()))
    return {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: signature(secret, timestamp, body),
        TIMESTAMP_HEADER: timestamp,
        DELIVERY_HEADER: str(delivery_id),
        EVENT_HEADER: event,
    }


@dataclass(frozen=True, slots=True)
class RetryTerms:
    """How often a delivery is tried: ``attempts`` in all, the n-th retry after
    ``backoff × 2^(n−1)`` seconds (at most ``max_wait``), each wait shortened by up to a
    quarter at random so that receivers coming back are not met by every sender at once."""

    attempts: int = 6
    backoff: float = 10.0
    max_wait: float = 3600.0

    def wait_after(self, attempt: int, draw: float | None = None) -> float:
        """Seconds before the attempt after ``attempt`` (1 for the first); ``draw`` in [0, 1)
        replaces the random one."""
        jitter = random.random() if draw is None else draw  # not a secret: jitter
        full = min(self.backoff * 2.0 ** (attempt - 1), self.max_wait)
        return full * (1.0 - 0.25 * jitter)


def iso(moment: dt.datetime) -> str:
    """A moment as a message writes it: ISO 8601 in UTC, with a ``Z``."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
