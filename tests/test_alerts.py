"""Alerts through the outbox: flags raised by real ingests queue one delivery per receiver in
the ingest's transaction; a sender's pass (driven here, one call at a time) posts each signed
message to real receivers on loopback and records every attempt: retries after a 500, a
receiver that hangs, a redirect never followed; nothing for a rolled-back ingest; the secret
in no log line; the delivery log through the API.

The flags are raised by the books of tests/flag_books.py (their figures worked out there).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Connection, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.orm import AlertAttempt, AlertDelivery, ValueFlagEvent
from app.logs import logging_config
from app.services import alerts
from app.services.alerts import Outbox, SenderTerms, open_client, send_due
from app.services.flags import FlagTerms
from app.services.ingest import ingest_batch
from app.settings import ConfigurationError, Settings, get_settings
from tests.admin_requests import post_odds
from tests.alert_books import away_flag_batch
from tests.apps import refit_settings_for
from tests.flag_books import book, raise_away_flag
from tests.helpers import count_rows, error_messages, json_handler, received_at, written
from tests.webhook_receiver import Reply, WebhookReceiver, webhook_receiver

SECRET = "whsec-0123456789-abcdef"
KICKOFF = "2030-01-12T15:00:00Z"
RAISED = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
# A moment well after every attempt's retry is due (the longest first wait is 10 s).
LATER = dt.timedelta(hours=2)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as receiving:
        yield receiving


@pytest.fixture
def settings(database_url: str, receiver: WebhookReceiver) -> Settings:
    """Two receivers (two paths of one server); the app queues alerts and the tests send
    them, one pass at a time."""
    return alert_settings(database_url, receiver.url("/one"), receiver.url("/two"))


def alert_settings(database_url: str, *urls: str, **more: Any) -> Settings:
    return refit_settings_for(database_url).model_copy(
        update={
            "alert_urls": list(urls),
            "alert_secret": SecretStr(SECRET),
            "alert_sender": False,
            "alert_timeout_seconds": 1.0,
            **more,
        }
    )


@pytest.fixture
def outbox(connection: Connection) -> Outbox:
    """The sender's sessions on the test's connection: its claims and records are savepoints
    of the test's transaction, so the sender sees what the ingest wrote."""
    sessions = sessionmaker(
        bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
    )
    return Outbox(sessions, sessions)


def send(outbox: Outbox, settings: Settings, moment: dt.datetime | None = None) -> int:
    """One pass of the sender at ``moment`` (now if None)."""
    terms = SenderTerms.of(settings)
    with open_client(terms.timeout_seconds) as client:
        if moment is None:
            return send_due(outbox, client, terms)
        return send_due(outbox, client, terms, lambda: moment)


def deliveries(session: Session) -> list[AlertDelivery]:
    session.expire_all()
    return list(session.scalars(select(AlertDelivery).order_by(AlertDelivery.id)))


def attempts(session: Session) -> list[AlertAttempt]:
    return list(session.scalars(select(AlertAttempt).order_by(AlertAttempt.id)))


def expected_signature(timestamp: str, body: bytes) -> str:
    """Computed here as a receiver would: HMAC-SHA256 of ``timestamp.body`` under the secret."""
    digest = hmac.new(SECRET.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def test_a_raised_flag_sends_one_signed_message_to_each_receiver(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    queued = deliveries(session)
    assert [(item.event, item.host, item.status) for item in queued] == [
        ("raised", f"127.0.0.1:{receiver.port}", "pending")
    ] * 2
    assert send(outbox, settings) == 2

    got = receiver.wait_for(2)
    assert sorted(request.path for request in got) == ["/one", "/two"]
    for request in got:
        assert request.headers["X-Oddsboost-Signature"] == expected_signature(
            request.headers["X-Oddsboost-Timestamp"], request.body
        )
        message = json.loads(request.body)
        assert request.headers["X-Oddsboost-Delivery"] == str(message["delivery_id"])
        # tests/flag_books.py: the away side at PS's 4.0, p = 0.325, EV = 0.3; the stake is
        # 0.25 × 0.3 / (4 − 1) = 0.025 Kelly, capped at the default 0.02.
        assert {key: message[key] for key in ("event", "competition", "home", "away")} == {
            "event": "raised",
            "competition": "E0",
            "home": "Arsenal",
            "away": "Chelsea",
        }
        assert (message["outcome"], message["bookmaker"], message["price"]) == ("2", "PS", 4.0)
        assert message["expected_value"] == pytest.approx(0.3)
        assert message["probability"] == pytest.approx(0.325)
        assert message["stake"] == pytest.approx(0.02)
        assert (message["kickoff"], message["value_source"]) == (KICKOFF, "ensemble")
        assert message["link"] == f"/dashboard/matches/{message['match_id']}"
        assert message["flag_id"] == queued[0].flag_id
    sent = deliveries(session)
    assert [(item.status, item.attempts) for item in sent] == [("delivered", 1)] * 2
    assert [(row.number, row.status_code, row.error) for row in attempts(session)] == [
        (1, 200, None)
    ] * 2
    # Sent: nothing is due any more.
    assert send(outbox, settings) == 0


def test_the_match_page_shows_each_alert_of_its_flags_and_changes_when_one_is_sent(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    outbox: Outbox,
    settings: Settings,
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    (flag_id,) = {item.flag_id for item in deliveries(session)}
    match_id = deliveries(session)[0].message["match_id"]
    queued = client.get(f"/dashboard/matches/{match_id}")
    assert queued.status_code == 200
    # Two receivers, nothing sent yet: both queued; no receiver's address on a public page.
    assert queued.text.count('data-status="pending"') == 2
    assert "127.0.0.1" not in queued.text

    assert send(outbox, settings) == 2
    sent = client.get(f"/dashboard/matches/{match_id}")
    assert sent.headers["ETag"] != queued.headers["ETag"]
    assert f'<p class="alerts" data-flag-id="{flag_id}">' in sent.text
    assert sent.text.count('data-status="delivered"') == 2
    assert "raised, to a webhook receiver: delivered" in sent.text


def improve(client: TestClient, headers: dict[str, str], moment: dt.datetime, away: float) -> None:
    """PS's away price moved to ``away`` (B365's book as raised)."""
    captured = moment - dt.timedelta(minutes=1)
    with received_at(client, moment):
        post_odds(
            client,
            headers,
            book(KICKOFF, "PS", (2.0, 4.0, away), captured),
            book(KICKOFF, "B365", (2.5, 5.0, 2.5), captured),
        )


def test_an_improvement_is_alerted_past_the_margin_only(
    client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    assert len(deliveries(session)) == 2  # raised: 4.0
    # 4.1 beats 4.0 by 2.5 %: below the 5 % margin, an event but no alert.
    improve(client, admin_headers, RAISED + dt.timedelta(hours=1), 4.1)
    # 4.25 beats the last alerted 4.0 by 6.25 %: alerted (against 4.1 it would be 3.7 %).
    improve(client, admin_headers, RAISED + dt.timedelta(hours=2), 4.25)
    # 4.4 beats the last alerted 4.25 by 3.5 %: not alerted.
    improve(client, admin_headers, RAISED + dt.timedelta(hours=3), 4.4)
    events = [
        tuple(row) for row in session.execute(select(ValueFlagEvent.change, ValueFlagEvent.price))
    ]
    assert events == [("improved", 4.1), ("improved", 4.25), ("improved", 4.4)]
    alerted = [(item.event, item.net_price) for item in deliveries(session)]
    assert alerted == [("raised", 4.0)] * 2 + [("improved", 4.25)] * 2


def test_a_margin_of_zero_alerts_no_improvement(
    session: Session, admin_headers: dict[str, str], database_url: str, receiver: WebhookReceiver
) -> None:
    from tests.apps import build_app

    settings = alert_settings(database_url, receiver.url(), alert_price_improvement=0.0)
    with TestClient(build_app(settings, session)) as client:
        raise_away_flag(client, admin_headers, KICKOFF, RAISED)
        improve(client, admin_headers, RAISED + dt.timedelta(hours=1), 5.0)
    assert [item.event for item in deliveries(session)] == ["raised"]


def test_a_receiver_answering_500_then_200_is_tried_again_and_each_attempt_recorded(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    receiver.answer_with(Reply(500, b"busy"), Reply(500, b"busy"))
    start = now_utc()
    assert send(outbox, settings, start) == 2
    first = deliveries(session)
    assert [(item.status, item.attempts) for item in first] == [("pending", 1)] * 2
    # The retry waits 10 s less up to a quarter: due between 7.5 and 10 s after the attempt.
    for item in first:
        assert item.next_attempt_at is not None
        wait = (item.next_attempt_at - start).total_seconds()
        assert 7.5 <= wait <= 10.0
    assert send(outbox, settings, start + dt.timedelta(seconds=5)) == 0  # not due yet
    assert send(outbox, settings, start + LATER) == 2
    assert [(item.status, item.attempts) for item in deliveries(session)] == [("delivered", 2)] * 2
    log = [(row.delivery_id, row.number, row.status_code, row.error) for row in attempts(session)]
    one, two = (item.id for item in first)
    assert sorted(log) == [
        (one, 1, 500, "answered 500: busy"),
        (one, 2, 200, None),
        (two, 1, 500, "answered 500: busy"),
        (two, 2, 200, None),
    ]
    # The same delivery id both times: a receiver drops the copy it may already have.
    ids = [request.headers["X-Oddsboost-Delivery"] for request in receiver.received]
    assert sorted(ids) == sorted([str(one), str(one), str(two), str(two)])


def test_a_delivery_failing_every_attempt_ends_failed(
    session: Session, admin_headers: dict[str, str], database_url: str, outbox: Outbox
) -> None:
    from tests.apps import build_app

    with webhook_receiver() as receiver:
        receiver.usual = Reply(503, b"down")
        settings = alert_settings(database_url, receiver.url(), alert_attempts=3)
        with TestClient(build_app(settings, session)) as client:
            raise_away_flag(client, admin_headers, KICKOFF, RAISED)
        moment = now_utc()
        for _ in range(4):
            send(outbox, settings, moment)
            moment += LATER
    (delivery,) = deliveries(session)
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 3, None)
    assert [row.status_code for row in attempts(session)] == [503, 503, 503]
    assert attempts(session)[-1].next_attempt_at is None


def test_a_hanging_receiver_fails_the_attempt_at_its_deadline_and_is_tried_again(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
) -> None:
    receiver.answer_with(Reply(hang=True), Reply(hang=True))
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    # The ingest committed with the receivers never called: sending is the sender's.
    assert receiver.received == []
    assert len(deliveries(session)) == 2
    start = now_utc()
    assert send(outbox, settings, start) == 2
    assert [(row.status_code, row.error) for row in attempts(session)] == [
        (None, "no answer in time")
    ] * 2
    # ODDSBOOST_ALERT_TIMEOUT_SECONDS is 1: the attempt ended then, not when released.
    assert all(0.9 <= row.duration_seconds < 30 for row in attempts(session))
    assert send(outbox, settings, start + LATER) == 2
    assert [item.status for item in deliveries(session)] == ["delivered"] * 2


def test_a_redirect_is_a_failed_attempt_and_its_target_is_never_called(
    session: Session, admin_headers: dict[str, str], database_url: str, outbox: Outbox
) -> None:
    from tests.apps import build_app

    with webhook_receiver() as receiver, webhook_receiver() as elsewhere:
        receiver.usual = Reply(302, b"", location=elsewhere.url("/steal"))
        settings = alert_settings(database_url, receiver.url())
        with TestClient(build_app(settings, session)) as client:
            raise_away_flag(client, admin_headers, KICKOFF, RAISED)
        moment = now_utc()
        send(outbox, settings, moment)
        send(outbox, settings, moment + LATER)
        assert len(receiver.received) == 2
        assert elsewhere.received == []
    (delivery,) = deliveries(session)
    assert (delivery.status, delivery.attempts) == ("pending", 2)
    errors = [(row.status_code, row.error) for row in attempts(session)]
    where = f"127.0.0.1:{elsewhere.port}"
    assert errors == [(302, f"redirected (to {where}); not followed")] * 2


def test_a_rolled_back_ingest_queues_and_sends_nothing(
    session: Session, outbox: Outbox, receiver: WebhookReceiver, settings: Settings
) -> None:
    batch = away_flag_batch(RAISED - dt.timedelta(hours=1))
    woken: list[bool] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(alerts, "wake_senders", lambda: woken.append(True))
        work = session.begin_nested()
        ingest_batch(session, batch, source="test", now=RAISED, flag_terms=FlagTerms.of(settings))
        assert count_rows(session, AlertDelivery) == 2  # queued in the ingest's transaction
        work.rollback()
    assert count_rows(session, AlertDelivery) == 0
    assert woken == []
    assert send(outbox, settings) == 0
    assert receiver.received == []


def test_the_secret_and_the_receivers_paths_are_in_no_log_line(
    session: Session, admin_headers: dict[str, str], database_url: str, outbox: Outbox
) -> None:
    from tests.apps import build_app

    token = "token-9f8e7d6c5b4a"
    with webhook_receiver() as receiver:
        receiver.answer_with(Reply(500, b"busy"), Reply(hang=True))
        settings = alert_settings(database_url, receiver.url(f"/webhooks/1/{token}"))
        handler, buffer = json_handler(settings)
        root = logging.getLogger()
        root.addHandler(handler)
        # Everything written, as at the lowest level: the service's own logger levels only.
        levels = {name: logging.getLogger(name).level for name in ("", *SERVICE_LEVELS)}
        root.setLevel(logging.DEBUG)
        for name, level in SERVICE_LEVELS.items():
            logging.getLogger(name).setLevel(level)
        try:
            with TestClient(build_app(settings, session)) as client:
                raise_away_flag(client, admin_headers, KICKOFF, RAISED)
            moment = now_utc()
            send(outbox, settings, moment)
            send(outbox, settings, moment + LATER)
        finally:
            root.removeHandler(handler)
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
    lines = written(buffer)
    failures = [line for line in lines if "alert delivery" in line["message"]]
    assert len(failures) == 2  # the 500 and the hang, each logged
    text = buffer.getvalue()
    assert SECRET not in text
    assert token not in text


SERVICE_LEVELS = {
    name: logger["level"]
    for name, logger in logging_config(Settings())["loggers"].items()
    if "level" in logger
}


def test_an_unusable_receiver_url_is_refused_at_start_without_repeating_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ODDSBOOST_ALERT_URLS", "https://ok.example/hook,ftp://h.example/tok-123")
    monkeypatch.setenv("ODDSBOOST_ALERT_SECRET", SECRET)
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError) as refused:
            get_settings()
    finally:
        get_settings.cache_clear()
    (problem,) = refused.value.problems
    assert problem.startswith("ODDSBOOST_ALERT_URLS: entry 2 is not an http(s) URL")
    assert "tok-123" not in problem


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("hooks.example/x", "is not an http(s) URL"),
        ("telegram:https://api.telegram.org/botT/sendMessage", "needs one ?chat_id="),
        ("https://user:pw@hooks.example/x", "with a user or password"),
    ],
)
def test_each_unusable_entry_is_refused_with_why(entry: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        Settings(alert_urls=[entry], alert_secret=SECRET)


def test_receivers_without_a_secret_are_refused() -> None:
    with pytest.raises(ValueError, match="ODDSBOOST_ALERT_SECRET is not"):
        Settings(alert_urls=["https://hooks.example/x"])
    # A process that only queues them (a refit's, given no secret) needs none.
    queuing = Settings(alert_urls=["https://hooks.example/x"], alert_sender=False)
    assert [receiver.host for receiver in queuing.alert_receivers()] == ["hooks.example"]


def test_discord_and_telegram_receivers_get_their_own_body_shape(
    session: Session, admin_headers: dict[str, str], database_url: str, outbox: Outbox
) -> None:
    from tests.apps import build_app

    with webhook_receiver() as receiver:
        discord = "discord:" + receiver.url("/api/webhooks/1/abc")
        telegram = "telegram:" + receiver.url("/botT0K/sendMessage?chat_id=-1001")
        settings = alert_settings(database_url, discord, telegram)
        with TestClient(build_app(settings, session)) as client:
            raise_away_flag(client, admin_headers, KICKOFF, RAISED)
        send(outbox, settings)
        got = {request.path: json.loads(request.body) for request in receiver.wait_for(2)}
    # Discord's webhook takes {"content": text}; Telegram's sendMessage {"chat_id", "text"}.
    assert list(got["/api/webhooks/1/abc"]) == ["content"]
    assert got["/botT0K/sendMessage"]["chat_id"] == "-1001"
    text = got["/botT0K/sendMessage"]["text"]
    assert text.startswith("raised: Arsenal v Chelsea (E0, kickoff 2030-01-12T15:00:00Z)")
    assert "outcome 2 at 4.0 with PS" in text
    assert got["/api/webhooks/1/abc"]["content"] == text


def test_the_delivery_log_needs_the_admin_key_and_shows_each_attempt(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
) -> None:
    assert client.get("/alerts/deliveries").status_code == 401
    wrong = client.get("/alerts/deliveries", headers={"X-API-Key": "x" * 20})
    assert wrong.status_code == 403
    assert wrong.headers["content-type"] == "application/problem+json"
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    receiver.answer_with(Reply(500, b"busy"))
    send(outbox, settings)
    page = client.get("/alerts/deliveries", headers=admin_headers).json()
    assert (page["total"], page["limit"], page["offset"]) == (2, 50, 0)
    newest, oldest = page["items"]
    assert newest["id"] > oldest["id"]
    by_status = {item["status"]: item for item in page["items"]}
    assert set(by_status) == {"pending", "delivered"}
    failed = by_status["pending"]["attempt_log"]
    assert [(row["number"], row["status_code"]) for row in failed] == [(1, 500)]
    assert by_status["pending"]["host"] == f"127.0.0.1:{receiver.port}"
    assert by_status["pending"]["message"]["outcome"] == "2"
    pending = client.get(
        "/alerts/deliveries", params={"status": "pending", "limit": 1}, headers=admin_headers
    ).json()
    assert [item["id"] for item in pending["items"]] == [by_status["pending"]["id"]]
    flag_id = newest["flag_id"]
    none = client.get(
        "/alerts/deliveries", params={"flag_id": flag_id + 1}, headers=admin_headers
    ).json()
    assert none["total"] == 0
    bad = client.get("/alerts/deliveries", params={"status": "sent"}, headers=admin_headers)
    assert bad.status_code == 422
    assert bad.headers["content-type"] == "application/problem+json"
    assert any("status" in message for message in error_messages(bad.json()))


def test_a_sender_stopping_lets_go_of_the_deliveries_it_has_not_tried(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    stopping = threading.Event()
    moment = now_utc()
    readings: list[dt.datetime] = []

    def clock() -> dt.datetime:
        # Read to look for due deliveries, to claim them, then as the first attempt starts:
        # the stop comes during the first attempt.
        readings.append(moment)
        if len(readings) == 3:
            stopping.set()
        return moment

    terms = SenderTerms.of(settings)
    with open_client(terms.timeout_seconds) as http:
        assert send_due(outbox, http, terms, clock, stopping) == 1
    first, second = deliveries(session)
    assert (first.status, first.claimed_until) == ("delivered", None)
    # Not tried, and free at once for another sender (not held until the claim runs out).
    assert (second.status, second.attempts, second.claimed_until) == ("pending", 0, None)
    assert send(outbox, settings, moment) == 1
    assert len(receiver.received) == 2


def test_a_pass_that_raises_lets_go_of_the_claims_it_has_not_tried(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    raise_away_flag(client, admin_headers, KICKOFF, RAISED, home_team="Everton")
    moment = now_utc()
    readings: list[dt.datetime] = []

    def clock() -> dt.datetime:
        # Read to look, to claim, as the first attempt starts, then as the second starts:
        # the database (say) fails there, before the second is sent.
        readings.append(moment)
        if len(readings) == 4:
            raise RuntimeError("the database went away")
        return moment

    terms = SenderTerms.of(settings)
    with open_client(terms.timeout_seconds) as http, pytest.raises(RuntimeError):
        send_due(outbox, http, terms, clock)
    first, second, third, fourth = deliveries(session)
    assert (first.status, first.claimed_until) == ("delivered", None)
    # The one under way when it raised may have been sent (it is not, here, but a raise
    # after its POST looks the same): its claim runs out by itself, as if the process died.
    assert (second.status, second.attempts) == ("pending", 0)
    assert second.claimed_until == moment + terms.lease
    # Those not reached are let go at once, for any sender.
    assert [(item.attempts, item.claimed_until) for item in (third, fourth)] == [(0, None)] * 2
    assert send(outbox, settings, moment) == 2
    assert len(receiver.received) == 3


def test_a_receiver_that_times_out_holds_back_no_other_receiver(
    session: Session, admin_headers: dict[str, str], database_url: str, outbox: Outbox
) -> None:
    from tests.apps import build_app

    homes = ["Arsenal", "Everton", "Fulham", "Brentford", "Burnley"]
    homes += ["Wolves", "Watford", "Southampton", "Newcastle", "Leeds"]
    with webhook_receiver() as dead, webhook_receiver() as healthy:
        dead.usual = Reply(hang=True)
        settings = alert_settings(database_url, dead.url(), healthy.url())
        with TestClient(build_app(settings, session)) as client:
            for home in homes:
                raise_away_flag(client, admin_headers, KICKOFF, RAISED, home_team=home)
        queued = deliveries(session)
        assert len(queued) == 20  # ten flags, two receivers
        moment = now_utc()
        # One pass: the dead receiver's first delivery waits for its deadline (1 s) and
        # fails; its nine others are put off until that one's retry, not tried one by one
        # (9 more seconds); the healthy receiver gets its ten in the same pass.
        assert send(outbox, settings, moment) == 11
        assert len(healthy.wait_for(10)) == 10
        assert len(dead.received) == 1
        on_dead = [item for item in deliveries(session) if item.host == f"127.0.0.1:{dead.port}"]
        tried = [item for item in on_dead if item.attempts == 1]
        assert len(tried) == 1
        assert tried[0].next_attempt_at is not None
        retry_at = tried[0].next_attempt_at
        assert [(item.status, item.next_attempt_at, item.claimed_until) for item in on_dead] == [
            ("pending", retry_at, None)
        ] * 10
        # Nothing is due before the retry; at it, the receiver is back and all ten leave.
        assert send(outbox, settings, retry_at - dt.timedelta(seconds=1)) == 0
        dead.usual = Reply()
        assert send(outbox, settings, retry_at) == 10
    assert [item.status for item in deliveries(session)] == ["delivered"] * 20
    assert len(dead.received) == 11


def test_deliveries_past_their_retention_are_pruned_with_their_attempts(
    client: TestClient,
    session: Session,
    admin_headers: dict[str, str],
    receiver: WebhookReceiver,
    outbox: Outbox,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raise_away_flag(client, admin_headers, KICKOFF, RAISED)
    receiver.answer_with(Reply(500, b"busy"))
    assert send(outbox, settings) == 2  # one delivered, one to be tried again
    raise_away_flag(client, admin_headers, KICKOFF, RAISED, home_team="Everton")
    assert send(outbox, settings) == 2  # the second flag's two, delivered
    # Queued now (the wall clock: 2026 or so), their match kicks off on 12 January 2030.
    retention = dt.timedelta(days=30)
    kickoff = dt.datetime(2030, 1, 12, 15, tzinfo=dt.UTC)
    # Before the kickoff nothing goes, however old: a flag may still be alerted, measured
    # against its last alerted price.
    assert alerts.prune_deliveries(outbox.writes, kickoff - LATER, retention) == 0
    # Nor within the retention: queued less than ten years before 2030.
    ten_years = dt.timedelta(days=3650)
    assert alerts.prune_deliveries(outbox.writes, kickoff + LATER, ten_years) == 0
    # After it: the three delivered go (one transaction each, batches of one here); the
    # pending one stays, whatever its age.
    monkeypatch.setattr(alerts, "PRUNE_BATCH", 1)
    # A sender deletes a backlog a few batches at a time: two of one here, then the rest.
    assert alerts.prune_deliveries(outbox.writes, kickoff + LATER, retention, None, 2) == 2
    assert alerts.prune_deliveries(outbox.writes, kickoff + LATER, retention) == 1
    (left,) = deliveries(session)
    assert (left.status, left.attempts) == ("pending", 1)
    assert [row.delivery_id for row in attempts(session)] == [left.id]
