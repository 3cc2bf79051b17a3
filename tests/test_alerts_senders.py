"""Alerts sent by real senders on a database of their own: the server's sender thread, woken
by the ingest's commit, while the ingest never waits for a receiver that hangs; two senders
at once never send one delivery twice; ``oddsboost alerts test``."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import subprocess
import threading
from collections import Counter
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import func, select

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import AlertAttempt, AlertDelivery, Match
from app.domain.alerts import DeliveryStatus
from app.main import create_app
from app.services import refit_runs
from app.services.alerts import (
    Outbox,
    SenderTerms,
    attempt,
    claim_due,
    open_client,
    renew_claim,
    send_due,
)
from app.services.flags import FlagTerms
from app.services.ingest import ingest_batch
from app.settings import Settings
from tests.alert_books import away_flag_batch
from tests.apps import refit_settings_for
from tests.commands import Oddsboost
from tests.flag_books import raise_away_flag
from tests.helpers import wait_until
from tests.webhook_receiver import Reply, webhook_receiver

SECRET = "whsec-0123456789-abcdef"
KICKOFF = "2030-01-12T15:00:00Z"
RAISED = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def sender_settings(database_url: str, *urls: str, **more: object) -> Settings:
    return refit_settings_for(database_url).model_copy(
        update={
            "alert_urls": list(urls),
            "alert_secret": SecretStr(SECRET),
            "alert_timeout_seconds": 1.0,
            "alert_backoff_seconds": 0.2,
            **more,
        }
    )


def statuses(database_url: str) -> list[str]:
    engine = make_engine(database_url)
    try:
        with session_scope(make_session_factory(engine)) as session:
            return list(session.scalars(select(AlertDelivery.status).order_by(AlertDelivery.id)))
    finally:
        engine.dispose()


def test_the_server_sends_as_the_ingest_commits_and_never_makes_it_wait(
    migrated_url: str, admin_headers: dict[str, str]
) -> None:
    with webhook_receiver() as receiver:
        receiver.answer_with(Reply(hang=True))
        # Looks for due deliveries only once a minute: what comes sooner was woken by a commit.
        settings = sender_settings(migrated_url, receiver.url(), alert_poll_seconds=60.0)
        with TestClient(create_app(settings)) as client:
            raise_away_flag(client, admin_headers, KICKOFF, RAISED)
            (first,) = receiver.wait_for(1)
            assert json.loads(first.body)["event"] == "raised"
            assert receiver.hanging.wait(30)
            # The sender is held by the receiver, which has not answered: the next ingest
            # commits and answers all the same (it never calls the network).
            assert not receiver.released.is_set()
            raise_away_flag(client, admin_headers, KICKOFF, RAISED, home_team="Everton")
            assert not receiver.released.is_set()
            # The hung attempt fails at its deadline (1 s) and is tried again (0.2 s later).
            wait_until(
                lambda: statuses(migrated_url) == ["delivered", "delivered"],
                "both alerts delivered",
            )
    homes = sorted(json.loads(request.body)["home"] for request in receiver.received)
    assert homes == ["Arsenal", "Arsenal", "Everton"]


def test_two_senders_at_once_never_send_one_delivery_twice(migrated_url: str) -> None:
    with webhook_receiver() as receiver:
        # Ten receivers (paths of one server) and three flags: thirty deliveries.
        urls = [receiver.url(f"/r{number}") for number in range(10)]
        settings = sender_settings(migrated_url, *urls, alert_sender=False)
        engine = make_engine(migrated_url)
        writes = make_session_factory(engine, for_writes=True)
        for home in ("Arsenal", "Everton", "Fulham"):
            with session_scope(writes) as session:
                batch = away_flag_batch(RAISED - dt.timedelta(hours=1), home=home)
                ingest_batch(
                    session, batch, source="test", now=RAISED, flag_terms=FlagTerms.of(settings)
                )
        terms = SenderTerms.of(settings)
        start = threading.Barrier(2)
        made: list[int] = []

        def sender() -> None:
            own = make_engine(migrated_url)
            outbox = Outbox(make_session_factory(own), make_session_factory(own, for_writes=True))
            try:
                with open_client(terms.timeout_seconds) as client:
                    start.wait()
                    made.append(send_due(outbox, client, terms))
            finally:
                own.dispose()

        threads = [threading.Thread(target=sender) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        sent = Counter(request.headers["X-Oddsboost-Delivery"] for request in receiver.received)
        with session_scope(make_session_factory(engine)) as session:
            ids = list(session.scalars(select(AlertDelivery.id)))
            recorded = session.scalar(select(func.count()).select_from(AlertAttempt))
        engine.dispose()
    assert len(ids) == 30
    assert sent == Counter({str(delivery_id): 1 for delivery_id in ids})
    assert sum(made) == recorded == 30


def test_alerts_test_sends_a_signed_sample_to_each_receiver(oddsboost: Oddsboost) -> None:
    with webhook_receiver() as receiver, webhook_receiver() as broken:
        broken.usual = Reply(500, b"nope")
        env = {
            "ODDSBOOST_ALERT_URLS": f"{receiver.url('/a')},{broken.url('/b')}",
            "ODDSBOOST_ALERT_SECRET": SECRET,
        }
        both = oddsboost.run("alerts", "test", env=env)
        assert both.returncode == 1
        assert f"127.0.0.1:{receiver.port} (webhook): delivered (200)" in both.stdout
        assert f"127.0.0.1:{broken.port} (webhook): failed: answered 500: nope" in both.stdout

        one = oddsboost.run("alerts", "test", "--url", receiver.url("/a"), "--json", env=env)
        assert one.returncode == 0
        (answer,) = json.loads(one.stdout)["receivers"]
        assert (answer["delivered"], answer["status_code"]) == (True, 200)

        other = oddsboost.run("alerts", "test", "--url", receiver.url("/elsewhere"), env=env)
        assert other.returncode == 1
        assert "not one of the entries of ODDSBOOST_ALERT_URLS" in other.stderr

        got = receiver.wait_for(2)
        assert [request.path for request in got] == ["/a", "/a"]
        assert len(broken.received) == 1
    for request in got:
        timestamp = request.headers["X-Oddsboost-Timestamp"]
        digest = hmac.new(SECRET.encode(), f"{timestamp}.".encode() + request.body, hashlib.sha256)
        assert request.headers["X-Oddsboost-Signature"] == f"sha256={digest.hexdigest()}"
        message = json.loads(request.body)
        assert (message["event"], message["flag_id"], message["delivery_id"]) == ("test", 0, 0)


def test_alerts_test_without_receivers_says_so(oddsboost: Oddsboost) -> None:
    result = oddsboost.run("alerts", "test", env={"ODDSBOOST_ALERT_URLS": ""})
    assert result.returncode == 1
    assert "ODDSBOOST_ALERT_URLS is not set" in result.stderr


def test_a_refit_process_queues_alerts_without_being_given_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refit's process is given no secret; it reads its settings (the alerts' receivers
    among them, to queue the alerts of the flags its activation raises) all the same."""
    started: list[dict[str, str]] = []

    class Started:
        def __init__(self, _command: list[str], *, env: dict[str, str], **_options: Any) -> None:
            started.append(env)

        def wait(self) -> int:
            return 0

    settings = sender_settings("sqlite:///refit.db", "https://hooks.example/x")
    monkeypatch.setattr(subprocess, "Popen", Started)
    refit_runs.start_refit_process(settings, 1, RAISED)
    (environment,) = started
    assert "ODDSBOOST_ALERT_SECRET" not in environment
    for name in [name for name in os.environ if name.startswith("ODDSBOOST_")]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        if name.startswith("ODDSBOOST_"):
            monkeypatch.setenv(name, value)
    child = Settings()
    assert [receiver.host for receiver in child.alert_receivers()] == ["hooks.example"]
    assert not child.alert_sender


def test_alerts_deliveries_lists_the_log(migrated_url: str, oddsboost: Oddsboost) -> None:
    settings = sender_settings(migrated_url, "https://hooks.example/x", alert_sender=False)
    engine = make_engine(migrated_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        batch = away_flag_batch(RAISED - dt.timedelta(hours=1))
        ingest_batch(session, batch, source="test", now=RAISED, flag_terms=FlagTerms.of(settings))
    engine.dispose()
    env = {"ODDSBOOST_DATABASE_URL": migrated_url}
    listed = oddsboost.run("alerts", "deliveries", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["items"]
    assert (row["event"], row["host"], row["status"], row["attempts"]) == (
        "raised",
        "hooks.example",
        "pending",
        0,
    )
    table = oddsboost.run("alerts", "deliveries", "--status", "pending", env=env)
    assert "1 delivery" in table.stdout
    assert "hooks.example" in table.stdout
    wrong = oddsboost.run("alerts", "deliveries", "--status", "sent", env=env)
    assert wrong.returncode == 1
    assert "--status must be one of pending, delivered, failed, not 'sent'" in wrong.stderr


def test_a_batch_claimed_longer_than_its_lease_is_sent_once(migrated_url: str) -> None:
    with webhook_receiver() as receiver:
        urls = [receiver.url(f"/r{number}") for number in range(3)]
        settings = sender_settings(migrated_url, *urls, alert_sender=False)
        engine = make_engine(migrated_url)
        try:
            writes = make_session_factory(engine, for_writes=True)
            with session_scope(writes) as session:
                batch = away_flag_batch(RAISED - dt.timedelta(hours=1))
                terms_of_flags = FlagTerms.of(settings)
                ingest_batch(session, batch, source="test", now=RAISED, flag_terms=terms_of_flags)
            terms = SenderTerms.of(settings)
            start = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
            # Sender A claims the three, and is slow: with twenty in a batch at 5 s an
            # attempt, its last is reached 95 s later, past the lease of 4 × 5 + 30 = 50 s.
            first = claim_due(writes, start, terms.lease)
            assert len(first) == 3
            # Sender B looks once the lease ran out, takes them all and sends them.
            later = start + terms.lease + dt.timedelta(seconds=1)
            second = claim_due(writes, later, terms.lease)
            assert [item.id for item in second] == [item.id for item in first]
            with open_client(terms.timeout_seconds) as client:
                assert all(attempt(writes, client, terms, item) for item in second)
                # A reaches them: each claim is confirmed before its POST, lost: none sent.
                assert [attempt(writes, client, terms, item) for item in first] == [None] * 3
            sent = Counter(request.headers["X-Oddsboost-Delivery"] for request in receiver.received)
            with session_scope(make_session_factory(engine)) as session:
                recorded = session.scalar(select(func.count()).select_from(AlertAttempt))
        finally:
            engine.dispose()
    assert sent == Counter({str(item.id): 1 for item in first})
    assert recorded == 3


def test_a_claim_is_renewed_as_each_attempt_starts(migrated_url: str) -> None:
    settings = sender_settings(migrated_url, "https://hooks.example/x", alert_sender=False)
    engine = make_engine(migrated_url)
    try:
        writes = make_session_factory(engine, for_writes=True)
        with session_scope(writes) as session:
            batch = away_flag_batch(RAISED - dt.timedelta(hours=1))
            ingest_batch(
                session, batch, source="test", now=RAISED, flag_terms=FlagTerms.of(settings)
            )
        lease = SenderTerms.of(settings).lease
        start = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
        (claimed,) = claim_due(writes, start, lease)
        # Renewed late in the batch: the lease counts from the attempt's start, so nobody
        # can take the delivery during it.
        moment = start + 2 * lease
        renewed = renew_claim(writes, claimed, moment, lease)
        assert renewed is not None
        assert renewed.until == moment + lease
        assert claim_due(writes, moment + lease - dt.timedelta(seconds=1), lease) == []
        # The old claim is no longer this sender's own: it cannot be renewed again.
        assert renew_claim(writes, claimed, moment, lease) is None
    finally:
        engine.dispose()


def played_long_ago(database_url: str, settings: Settings) -> tuple[int, int]:
    """Two flags' alerts to one receiver, both queued 40 days ago for matches played since:
    Arsenal's delivered, Everton's still pending. Their ids."""
    engine = make_engine(database_url)
    writes = make_session_factory(engine, for_writes=True)
    try:
        with session_scope(writes) as session:
            for home in ("Arsenal", "Everton"):
                batch = away_flag_batch(RAISED - dt.timedelta(hours=1), home=home)
                ingest_batch(
                    session, batch, source="test", now=RAISED, flag_terms=FlagTerms.of(settings)
                )
        with session_scope(writes) as session:
            arsenal, everton = session.scalars(select(AlertDelivery).order_by(AlertDelivery.id))
            long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
            arsenal.status = DeliveryStatus.DELIVERED
            for delivery in (arsenal, everton):
                delivery.created_at = long_ago
                match = session.get(Match, delivery.message["match_id"])
                assert match is not None
                match.kickoff = long_ago + dt.timedelta(days=1)
            return arsenal.id, everton.id
    finally:
        engine.dispose()


def delivery_ids(database_url: str) -> list[int]:
    engine = make_engine(database_url)
    try:
        with session_scope(make_session_factory(engine)) as session:
            return list(session.scalars(select(AlertDelivery.id).order_by(AlertDelivery.id)))
    finally:
        engine.dispose()


def test_alerts_prune_deletes_the_log_past_its_retention(
    migrated_url: str, oddsboost: Oddsboost
) -> None:
    settings = sender_settings(migrated_url, "https://hooks.example/x", alert_sender=False)
    arsenal_id, everton_id = played_long_ago(migrated_url, settings)
    assert delivery_ids(migrated_url) == [arsenal_id, everton_id]
    env = {"ODDSBOOST_DATABASE_URL": migrated_url}
    kept = oddsboost.run("alerts", "prune", "--older-than-days", "41", "--json", env=env)
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout) == {"deleted": 0, "retention_days": 41}
    pruned = oddsboost.run("alerts", "prune", env=env)  # 30 days by default
    assert pruned.returncode == 0, pruned.stderr
    assert "1 delivery deleted (older than 30 days)" in pruned.stdout
    # The pending one stays, whatever its age.
    assert delivery_ids(migrated_url) == [everton_id]


def test_the_server_s_sender_prunes_the_log_unattended(migrated_url: str) -> None:
    with webhook_receiver() as receiver:
        settings = sender_settings(migrated_url, receiver.url(), alert_poll_seconds=60.0)
        _arsenal_id, everton_id = played_long_ago(migrated_url, settings)
        # As it starts the sender sends what is due (Everton's), then prunes (and again
        # once an hour): both are now delivered, queued 40 days ago, of played matches.
        with TestClient(create_app(settings)):
            (sent,) = receiver.wait_for(1)
            wait_until(lambda: delivery_ids(migrated_url) == [], "the log pruned")
    assert sent.headers["X-Oddsboost-Delivery"] == str(everton_id)
