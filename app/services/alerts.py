"""Alerts to webhook receivers, through an outbox.

:func:`queue_alerts` is called by the flag ledger in the transaction that records a flag's
event: it writes one delivery per configured receiver into ``alert_deliveries``, so nothing
is sent for a write that is rolled back and nothing is lost when the process dies before
sending. The ingest never calls the network.

:func:`send_due` is one pass of a sender: it claims the due deliveries (a conditional
update, so two senders of several workers or replicas never both take one), commits the
claim, and for each renews the claim (it must still be its own: a lease that ran out during
a slow batch may have been taken over), posts the message signed (:mod:`app.domain.alerts`),
and records the attempt with its answer, its duration and when the next is due. A receiver
whose attempt failed is passed over for the rest of the pass. :class:`AlertSender` runs
passes in a thread of its own in the server, woken by the commits of its process and looking
every few seconds for those of others (a command, another worker), and deletes the log past
its retention about once an hour (:func:`prune_deliveries`).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import httpx
from sqlalchemy import (
    ColumnElement,
    CursorResult,
    Engine,
    Table,
    and_,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session, aliased, selectinload, sessionmaker

from app import metrics
from app.db.engine import PoolLimits, make_engine, make_session_factory, on_commit, session_scope
from app.db.orm import (
    AlertAttempt,
    AlertDelivery,
    Competition,
    Match,
    Team,
    ValueFlag,
)
from app.domain.alerts import (
    ANSWER_KEPT_CHARACTERS,
    ANSWER_READ_BYTES,
    ERROR_MAX_LENGTH,
    AlertEvent,
    DeliveryStatus,
    FlagAlert,
    Receiver,
    ReceiverKind,
    RetryTerms,
    improved_enough,
    iso,
    message_body,
    signed_headers,
)
from app.domain.flags import Change, FlagChange, Standing
from app.domain.value import ValueTerms, kelly_stake
from app.services.bulk import chunks
from app.services.downloads import bounded_transport, describe
from app.services.pagination import Paged, PageWindow, paginate
from app.settings import Settings

log = logging.getLogger(__name__)

DELIVERIES = cast(Table, AlertDelivery.__table__)
ATTEMPTS = cast(Table, AlertAttempt.__table__)
# Deliveries claimed by one statement of a pass.
CLAIM_BATCH = 20
USER_AGENT = "oddsboost-alerts"


@dataclass(frozen=True, slots=True)
class AlertTerms:
    """What the ledger alerts with: the receivers (none: no alerts), the share by which an
    open flag's net price must improve to be alerted again, and where the service is
    reached for the links."""

    receivers: tuple[Receiver, ...] = ()
    price_improvement: float = 0.0
    public_url: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> AlertTerms:
        return cls(
            settings.alert_receivers(), settings.alert_price_improvement, settings.public_url
        )


@dataclass(frozen=True, slots=True)
class FlagEvent:
    """An event of the ledger that may be alerted: the flag, what happened, and the board's
    view of its outcome then (None: as the flag was raised)."""

    flag_id: int
    event: AlertEvent
    standing: Standing | None = None


# The ledger's changes that are alerted (a withdrawal is not).
ALERTED_CHANGES = {
    FlagChange.RAISED_AGAIN: AlertEvent.RAISED_AGAIN,
    FlagChange.IMPROVED: AlertEvent.IMPROVED,
}


# --- the outbox ------------------------------------------------------------------------------


def queue_alerts(
    session: Session,
    raised: Sequence[int],
    changes: Sequence[Change],
    version: int | None,
    now: dt.datetime,
    terms: AlertTerms,
    value: ValueTerms,
) -> int:
    """Write, in the session's transaction, the deliveries of what the ledger just recorded
    at ``now``: the flags ``raised`` and the ``changes`` applied (a raise again, an
    improvement that beats the last alerted price by the margin). How many were written."""
    if not terms.receivers:
        return 0
    events = [FlagEvent(flag_id, AlertEvent.RAISED) for flag_id in raised]
    events += [
        FlagEvent(change.flag_id, ALERTED_CHANGES[change.change], change.standing)
        for change in changes
        if change.change in ALERTED_CHANGES and change.standing is not None
    ]
    alerts = _flag_alerts(session, _worth_alerting(session, events, terms), version, now, value)
    stored_at = dt.datetime.now(dt.UTC)
    rows = [
        _delivery_row(alert, receiver, terms.public_url, stored_at)
        for alert in alerts
        for receiver in terms.receivers
    ]
    if rows:
        session.execute(insert(DELIVERIES), rows)
        on_commit(session, wake_senders)
    return len(rows)


def _worth_alerting(
    session: Session, events: Sequence[FlagEvent], terms: AlertTerms
) -> list[FlagEvent]:
    """The events but the improvements too small since their flag's last alert."""
    improved = [item.flag_id for item in events if item.event is AlertEvent.IMPROVED]
    last = _last_alerted(session, improved) if improved else {}
    return [
        item
        for item in events
        if item.event is not AlertEvent.IMPROVED
        or (
            item.standing is not None
            and improved_enough(
                item.standing.net_price, last.get(item.flag_id), terms.price_improvement
            )
        )
    ]


def _last_alerted(session: Session, flag_ids: Collection[int]) -> dict[int, float]:
    """Each flag's last alerted net price (any receiver: all get the same alerts)."""
    last: dict[int, float] = {}
    for part in chunks(sorted(set(flag_ids))):
        rows = session.execute(
            select(AlertDelivery.flag_id, AlertDelivery.net_price)
            .where(AlertDelivery.flag_id.in_(part))
            .order_by(AlertDelivery.id)
        )
        for flag_id, net_price in rows:
            last[flag_id] = net_price
    return last


def _flag_alerts(
    session: Session,
    events: Sequence[FlagEvent],
    version: int | None,
    now: dt.datetime,
    value: ValueTerms,
) -> list[FlagAlert]:
    """Each event as its message tells it, with its flag's match."""
    rows = {row.id: row for row in _flag_rows(session, [item.flag_id for item in events])}
    alerts = []
    for item in events:
        row = rows[item.flag_id]
        seen = item.standing or Standing(
            row.outcome,
            row.price,
            row.net_price,
            row.bookmaker,
            row.expected_value,
            row.probability,
        )
        stake = kelly_stake(
            seen.expected_value, seen.net_price, value.kelly_fraction, value.stake_cap
        )
        alerts.append(
            FlagAlert(
                event=item.event,
                flag_id=row.id,
                match_id=row.match_id,
                competition=row.competition,
                home=row.home,
                away=row.away,
                kickoff=row.kickoff,
                outcome=seen.outcome,
                bookmaker=seen.bookmaker,
                price=seen.price,
                net_price=seen.net_price,
                expected_value=seen.expected_value,
                probability=seen.probability,
                stake=float(stake),
                value_source=row.value_source,
                model_version=row.model_version if item.standing is None else version,
                at=now,
            )
        )
    return alerts


def _flag_rows(session: Session, flag_ids: Sequence[int]) -> Iterator[Any]:
    home, away = aliased(Team), aliased(Team)
    for part in chunks(sorted(set(flag_ids))):
        yield from session.execute(
            select(
                ValueFlag.id,
                ValueFlag.match_id,
                ValueFlag.outcome,
                ValueFlag.bookmaker,
                ValueFlag.price,
                ValueFlag.net_price,
                ValueFlag.expected_value,
                ValueFlag.probability,
                ValueFlag.value_source,
                ValueFlag.model_version,
                Match.kickoff,
                Competition.code.label("competition"),
                home.name.label("home"),
                away.name.label("away"),
            )
            .join(Match, ValueFlag.match_id == Match.id)
            .join(Competition, Match.competition_id == Competition.id)
            .join(home, Match.home_team_id == home.id)
            .join(away, Match.away_team_id == away.id)
            .where(ValueFlag.id.in_(part))
        )


def _delivery_row(
    alert: FlagAlert, receiver: Receiver, public_url: str | None, stored_at: dt.datetime
) -> dict[str, Any]:
    return {
        "flag_id": alert.flag_id,
        "event": alert.event,
        "receiver_key": receiver.key,
        "receiver_kind": receiver.kind,
        "host": receiver.host,
        "message": alert.fields(public_url),
        "net_price": alert.net_price,
        "status": DeliveryStatus.PENDING,
        "attempts": 0,
        "created_at": stored_at,
        "next_attempt_at": stored_at,
    }


# --- waking the senders ----------------------------------------------------------------------

_SENDERS: set[threading.Event] = set()
_SENDERS_GUARD = threading.Lock()


def wake_senders() -> None:
    """Wake the senders of this process (called once a transaction with deliveries commits)."""
    with _SENDERS_GUARD:
        waiting = list(_SENDERS)
    for wake in waiting:
        wake.set()


@contextmanager
def _woken_by_commits(wake: threading.Event) -> Iterator[None]:
    with _SENDERS_GUARD:
        _SENDERS.add(wake)
    try:
        yield
    finally:
        with _SENDERS_GUARD:
            _SENDERS.discard(wake)


# --- sending ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SenderTerms:
    """How a sender sends: to which receivers (by key), signed with which secret, tried how
    often, each attempt given how long."""

    receivers: tuple[Receiver, ...]
    secret: str
    retry: RetryTerms = field(default_factory=RetryTerms)
    timeout_seconds: float = 5.0

    @classmethod
    def of(cls, settings: Settings) -> SenderTerms:
        secret = settings.alert_secret
        return cls(
            receivers=settings.alert_receivers(),
            secret="" if secret is None else secret.get_secret_value(),
            retry=settings.alert_retry(),
            timeout_seconds=settings.alert_timeout_seconds,
        )

    @property
    def lease(self) -> dt.timedelta:
        """How long a claim holds: past it, a sender that died is taken over."""
        return dt.timedelta(seconds=4 * self.timeout_seconds + 30)


@dataclass(frozen=True, slots=True)
class Answer:
    """What one attempt got: the answer's status (None: none came) or why it failed, and
    how long it took."""

    status_code: int | None
    error: str | None
    seconds: float

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and not self.error


Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def open_client(timeout_seconds: float) -> httpx.Client:
    """The client of a sender: redirects never followed, no proxy from the environment (only
    the configured URLs are called), no connection kept between attempts."""
    return httpx.Client(
        timeout=httpx.Timeout(timeout_seconds),
        follow_redirects=False,
        trust_env=False,
        transport=bounded_transport(),
        headers={"User-Agent": USER_AGENT},
    )


@dataclass(frozen=True, slots=True)
class Outbox:
    """The sessions a sender works with: ``reads`` looks for due deliveries without taking
    SQLite's write lock, ``writes`` claims them and records the attempts."""

    reads: sessionmaker[Session]
    writes: sessionmaker[Session]


def send_due(
    outbox: Outbox,
    client: httpx.Client,
    terms: SenderTerms,
    clock: Clock = utc_now,
    stopping: threading.Event | None = None,
) -> int:
    """One pass: claim the deliveries due now, send each once and record the attempt, until
    none is due (or ``stopping`` is set: the claims not tried yet are let go). A receiver
    whose attempt failed in this pass is passed over for the rest of it, its other claimed
    deliveries put off until the failed one's next attempt (none: the next pass), so that
    one receiver timing out holds back the others by one attempt at most. How many attempts
    were made."""
    made = 0
    failing: dict[str, dt.datetime | None] = {}
    while stopping is None or not stopping.is_set():
        if not any_due(outbox.reads, clock(), failing):
            break
        claimed = claim_due(outbox.writes, clock(), terms.lease, failing)
        if not claimed:
            break
        made += _send_claimed(outbox.writes, client, terms, claimed, clock, stopping, failing)
    return made


def _send_claimed(
    sessions: sessionmaker[Session],
    client: httpx.Client,
    terms: SenderTerms,
    claimed: Sequence[Claimed],
    clock: Clock,
    stopping: threading.Event | None,
    failing: dict[str, dt.datetime | None],
) -> int:
    """Send ``claimed`` in turn, passing over the receivers in ``failing`` (each with when
    its failed delivery is tried next) and adding those that fail now. Whatever is not
    tried, by a stop, an error or a failing receiver, is let go. How many attempts were
    made."""
    made = 0
    left = list(claimed)
    configured = {receiver.key for receiver in terms.receivers}
    try:
        while left and (stopping is None or not stopping.is_set()):
            delivery = left[0]
            if delivery.receiver_key in failing:
                _let_go(sessions, [delivery], failing[delivery.receiver_key])
                del left[0]
                continue
            # Taken off first: if the attempt raises after its POST, the claim is not let
            # go but runs out, as it does when the process dies there.
            del left[0]
            tried = attempt(sessions, client, terms, delivery, clock)
            if tried is None:
                continue
            made += 1
            if not tried.answer.delivered and delivery.receiver_key in configured:
                failing[delivery.receiver_key] = tried.retry_at
    finally:
        _let_go_safely(sessions, left)
    return made


def _let_go_safely(sessions: sessionmaker[Session], claimed: Sequence[Claimed]) -> None:
    """:func:`_let_go`, never raising over an error already on its way (the claims then run
    out by themselves)."""
    if not claimed:
        return
    try:
        _let_go(sessions, claimed)
    except Exception:
        log.exception("could not let go of %d claimed alert deliveries", len(claimed))


def _let_go(
    sessions: sessionmaker[Session],
    claimed: Sequence[Claimed],
    put_off_until: dt.datetime | None = None,
) -> None:
    """Give up the claims of ``claimed`` (not tried): another sender may take them at once,
    or from ``put_off_until`` if given."""
    values: dict[str, Any] = {"claimed_until": None}
    if put_off_until is not None:
        values["next_attempt_at"] = put_off_until
    with session_scope(sessions) as session:
        for delivery in claimed:
            session.execute(
                update(DELIVERIES)
                .where(DELIVERIES.c.id == delivery.id, DELIVERIES.c.claimed_until == delivery.until)
                .values(**values)
            )


def _due(now: dt.datetime, passed_over: Collection[str] = ()) -> ColumnElement[bool]:
    free = or_(DELIVERIES.c.claimed_until.is_(None), DELIVERIES.c.claimed_until <= now)
    due = and_(
        DELIVERIES.c.status == DeliveryStatus.PENDING,
        DELIVERIES.c.next_attempt_at <= now,
        free,
    )
    if passed_over:
        return and_(due, DELIVERIES.c.receiver_key.not_in(sorted(passed_over)))
    return due


def any_due(
    sessions: sessionmaker[Session], now: dt.datetime, passed_over: Collection[str] = ()
) -> bool:
    """Whether a delivery is due and free, but those of the receivers ``passed_over`` (a
    read: most looks find none)."""
    with session_scope(sessions) as session:
        statement = select(DELIVERIES.c.id).where(_due(now, passed_over)).limit(1)
        return session.scalar(statement) is not None


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery a sender holds until ``until``."""

    id: int
    event: str
    receiver_key: str
    message: dict[str, Any]
    attempts: int
    created_at: dt.datetime
    until: dt.datetime


def claim_due(
    sessions: sessionmaker[Session],
    now: dt.datetime,
    lease: dt.timedelta,
    passed_over: Collection[str] = (),
) -> list[Claimed]:
    """Claim (and commit the claim of) up to :data:`CLAIM_BATCH` due deliveries no other
    sender holds, but those of the receivers ``passed_over``. The update re-checks the
    conditions of each row it takes, after any other sender's claim of it committed: a row
    is claimed once."""
    until = now + lease
    due = _due(now, passed_over)
    candidates = (
        select(DELIVERIES.c.id)
        .where(due)
        .order_by(DELIVERIES.c.next_attempt_at)
        .limit(CLAIM_BATCH)
        # PostgreSQL: rows another sender is claiming are passed over, not waited for
        # (SQLite has one writer at a time and no such clause).
        .with_for_update(skip_locked=True)
    )
    statement = (
        update(DELIVERIES)
        .where(DELIVERIES.c.id.in_(candidates.scalar_subquery()), due)
        .values(claimed_until=until)
        .returning(
            DELIVERIES.c.id,
            DELIVERIES.c.event,
            DELIVERIES.c.receiver_key,
            DELIVERIES.c.message,
            DELIVERIES.c.attempts,
            DELIVERIES.c.created_at,
        )
    )
    with session_scope(sessions) as session:
        rows = session.execute(statement).all()
    claimed = [
        Claimed(
            row.id, row.event, row.receiver_key, row.message, row.attempts, row.created_at, until
        )
        for row in rows
    ]
    return sorted(claimed, key=lambda item: item.id)


def renew_claim(
    sessions: sessionmaker[Session], delivery: Claimed, now: dt.datetime, lease: dt.timedelta
) -> Claimed | None:
    """The claim of ``delivery`` renewed to ``now + lease`` if it still holds (committed):
    nobody took the delivery over since it was claimed, so an attempt starting now is the
    only one. None: the claim was lost (the lease ran out and another sender took it, or
    sent it already)."""
    until = now + lease
    with session_scope(sessions) as session:
        renewed = session.execute(
            update(DELIVERIES)
            .where(
                DELIVERIES.c.id == delivery.id,
                DELIVERIES.c.claimed_until == delivery.until,
                DELIVERIES.c.status == DeliveryStatus.PENDING,
            )
            .values(claimed_until=until)
        )
        kickoff = session.scalar(
            select(Match.kickoff).where(Match.id == delivery.message.get("match_id"))
        )
    if cast(CursorResult[Any], renewed).rowcount != 1:
        log.warning("alert delivery %d was taken over before its attempt; not sent", delivery.id)
        return None
    # The match's kickoff as the message leaves: a feed may have moved it (or told its time)
    # since the flag's event was queued.
    message = delivery.message if kickoff is None else {**delivery.message, "kickoff": iso(kickoff)}
    return replace(delivery, until=until, message=message)


@dataclass(frozen=True, slots=True)
class Attempted:
    """An attempt made: what it got, and when the next is due (None: no other)."""

    answer: Answer
    retry_at: dt.datetime | None


def attempt(
    sessions: sessionmaker[Session],
    client: httpx.Client,
    terms: SenderTerms,
    delivery: Claimed,
    clock: Clock = utc_now,
) -> Attempted | None:
    """Send ``delivery`` once to its receiver and record the attempt, if its claim still
    holds (renewed first, see :func:`renew_claim`); None: it was lost and nothing sent."""
    number = delivery.attempts + 1
    started = clock()
    held = renew_claim(sessions, delivery, started, terms.lease)
    if held is None:
        return None
    if number == 1:
        metrics.observe_alert_delay((started - held.created_at).total_seconds())
    receiver = next((item for item in terms.receivers if item.key == held.receiver_key), None)
    if receiver is None:
        answer = Answer(None, "the receiver is no longer configured", 0.0)
        _record(sessions, held, number, started, answer, None)
        return Attempted(answer, None)
    body = message_body(receiver.kind, held.message, held.id, started, receiver.chat)
    headers = signed_headers(terms.secret, body, held.id, held.event, started)
    answer = post(client, receiver, body, headers, terms.timeout_seconds)
    retry_at = None
    if not answer.delivered and number < terms.retry.attempts:
        retry_at = started + dt.timedelta(seconds=terms.retry.wait_after(number))
    _record(sessions, held, number, started, answer, retry_at)
    return Attempted(answer, retry_at)


def post(
    client: httpx.Client,
    receiver: Receiver,
    body: bytes,
    headers: dict[str, str],
    timeout_seconds: float,
) -> Answer:
    """POST ``body`` to the receiver's URL and no other: a redirect is a failed attempt. At
    most :data:`ANSWER_READ_BYTES` of the answer are read, within ``timeout_seconds``."""
    began = time.monotonic()
    try:
        with client.stream("POST", receiver.url, content=body, headers=headers) as response:
            excerpt = _read_some(response, began + timeout_seconds)
    except httpx.HTTPError as error:
        # Never the URL: a chat's token sits in it.
        reason = describe(error).replace(receiver.url, receiver.host)
        return Answer(None, reason[:ERROR_MAX_LENGTH], time.monotonic() - began)
    seconds = time.monotonic() - began
    status = response.status_code
    if 300 <= status < 400:
        where = urlsplit(response.headers.get("location", "")).netloc or "the same host"
        return Answer(status, f"redirected (to {where}); not followed", seconds)
    if not 200 <= status < 300:
        return Answer(status, f"answered {status}: {excerpt}"[:ERROR_MAX_LENGTH], seconds)
    return Answer(status, None, seconds)


def _read_some(response: httpx.Response, deadline: float) -> str:
    """The start of the answer, read no further than :data:`ANSWER_READ_BYTES` or the
    deadline."""
    read = bytearray()
    for chunk in response.iter_raw():
        read += chunk
        if len(read) >= ANSWER_READ_BYTES or time.monotonic() > deadline:
            break
    text = read[:ANSWER_KEPT_CHARACTERS].decode("utf-8", "replace")
    return " ".join(text.split())


def _record(
    sessions: sessionmaker[Session],
    delivery: Claimed,
    number: int,
    started: dt.datetime,
    answer: Answer,
    retry_at: dt.datetime | None,
) -> None:
    result: Literal["delivered", "retry", "failed"]
    if answer.delivered:
        status, result = DeliveryStatus.DELIVERED, "delivered"
    elif retry_at is not None:
        status, result = DeliveryStatus.PENDING, "retry"
    else:
        status, result = DeliveryStatus.FAILED, "failed"
    with session_scope(sessions) as session:
        # Only while the claim holds: a sender whose lease ran out has lost the delivery.
        updated = session.execute(
            update(DELIVERIES)
            .where(DELIVERIES.c.id == delivery.id, DELIVERIES.c.claimed_until == delivery.until)
            .values(
                status=status,
                attempts=number,
                next_attempt_at=retry_at,
                claimed_until=None,
                delivered_at=started if answer.delivered else None,
            )
        )
        if cast(CursorResult[Any], updated).rowcount != 1:
            log.warning(
                "alert delivery %d was taken over before its attempt was recorded", delivery.id
            )
            return
        session.execute(
            insert(ATTEMPTS).values(
                delivery_id=delivery.id,
                number=number,
                started_at=started,
                duration_seconds=answer.seconds,
                status_code=answer.status_code,
                error=answer.error,
                next_attempt_at=retry_at,
            )
        )
    metrics.count_alert_attempt(result)
    if not answer.delivered:
        log.warning(
            "alert delivery %d attempt %d failed: %s",
            delivery.id,
            number,
            answer.error,
            extra={"delivery_id": delivery.id, "result": result},
        )


# --- retention -------------------------------------------------------------------------------

# Deliveries deleted by one transaction of a prune, and how often a server's sender prunes.
PRUNE_BATCH = 500
# The batches a sender deletes in one pass at most, so that alerts keep leaving meanwhile.
SENDER_PRUNE_BATCHES = 4
PRUNE_EVERY = dt.timedelta(hours=1)


def _prunable(now: dt.datetime, retention: dt.timedelta) -> ColumnElement[bool]:
    """Delivered or failed, queued before ``now - retention``, of a match that has kicked
    off (its flag is alerted no more, so its last alerted price is not needed)."""
    kicked_off = (
        select(ValueFlag.id).join(Match, ValueFlag.match_id == Match.id).where(Match.kickoff <= now)
    )
    return and_(
        DELIVERIES.c.status.in_([DeliveryStatus.DELIVERED, DeliveryStatus.FAILED]),
        DELIVERIES.c.created_at < now - retention,
        DELIVERIES.c.flag_id.in_(kicked_off.scalar_subquery()),
    )


def prune_deliveries(
    sessions: sessionmaker[Session],
    now: dt.datetime,
    retention: dt.timedelta,
    stopping: threading.Event | None = None,
    most_batches: int | None = None,
) -> int:
    """Delete the deliveries past ``retention`` (see :func:`_prunable`) and their attempts,
    at most :data:`PRUNE_BATCH` per transaction (each committed on its own, so no write
    waits long), until none is left, ``most_batches`` were deleted or ``stopping`` is set.
    How many were deleted."""
    pruned = 0
    batches = 0
    while (stopping is None or not stopping.is_set()) and batches != most_batches:
        batches += 1
        with session_scope(sessions) as session:
            ids = list(
                session.scalars(
                    select(DELIVERIES.c.id)
                    .where(_prunable(now, retention))
                    .order_by(DELIVERIES.c.id)
                    .limit(PRUNE_BATCH)
                    # PostgreSQL: rows another sender is pruning are left to it.
                    .with_for_update(skip_locked=True)
                )
            )
            if ids:
                session.execute(delete(ATTEMPTS).where(ATTEMPTS.c.delivery_id.in_(ids)))
                session.execute(delete(DELIVERIES).where(DELIVERIES.c.id.in_(ids)))
        pruned += len(ids)
        if len(ids) < PRUNE_BATCH:
            break
    return pruned


class AlertSender:
    """Sends the due deliveries from a thread of its own, on a connection of its own (never
    one a request waits for): woken by a commit of this process that wrote some, and every
    ``poll_seconds`` for those of other processes."""

    def __init__(self, settings: Settings) -> None:
        self._terms = SenderTerms.of(settings)
        self._poll = settings.alert_poll_seconds
        self._retention = dt.timedelta(days=settings.alert_retention_days)
        self._pruned_at: dt.datetime | None = None
        self._engine: Engine = make_engine(
            settings.database_url,
            sqlite_busy_timeout_seconds=settings.sqlite_busy_timeout_seconds,
            pool=PoolLimits(1, 0, settings.database_pool_timeout_seconds),
        )
        self._outbox = Outbox(
            make_session_factory(self._engine), make_session_factory(self._engine, for_writes=True)
        )
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="alert-sender", daemon=True)

    def start(self) -> AlertSender:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the attempt under way (if any), waiting for it as long as it may take."""
        self._stopping.set()
        self._wake.set()
        self._thread.join(3 * self._terms.timeout_seconds + 5)
        self._engine.dispose()

    def _run(self) -> None:
        with _woken_by_commits(self._wake), open_client(self._terms.timeout_seconds) as client:
            while not self._stopping.is_set():
                self._wake.clear()
                try:
                    send_due(self._outbox, client, self._terms, stopping=self._stopping)
                    self._prune_now_and_then()
                except Exception:
                    log.exception("could not send the due alerts; trying again shortly")
                self._wake.wait(self._poll)

    def _prune_now_and_then(self) -> None:
        """Delete the deliveries past their retention, once every :data:`PRUNE_EVERY`."""
        now = utc_now()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY:
            return
        pruned = prune_deliveries(
            self._outbox.writes, now, self._retention, self._stopping, SENDER_PRUNE_BATCHES
        )
        # A backlog (a retention shortened) is deleted a few batches a pass, between sends.
        if pruned < SENDER_PRUNE_BATCHES * PRUNE_BATCH:
            self._pruned_at = now
        if pruned:
            log.info("deleted %d alert deliveries past their retention", pruned)


# --- the delivery log ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeliveryFilter:
    status: DeliveryStatus | None = None
    flag_id: int | None = None


def list_deliveries(
    session: Session, filters: DeliveryFilter, window: PageWindow
) -> Paged[AlertDelivery]:
    """The deliveries, newest first, each with its attempts."""
    statement = (
        select(AlertDelivery)
        .options(selectinload(AlertDelivery.attempt_log))
        .order_by(AlertDelivery.id.desc())
    )
    if filters.status is not None:
        statement = statement.where(AlertDelivery.status == filters.status)
    if filters.flag_id is not None:
        statement = statement.where(AlertDelivery.flag_id == filters.flag_id)
    return paginate(session, statement, window)


@dataclass(frozen=True, slots=True)
class DeliverySummary:
    """A delivery on one line: its last attempt's answer (the error, or the status) only."""

    id: int
    flag_id: int
    event: str
    host: str
    status: str
    attempts: int
    last_answer: str | None

    @classmethod
    def of(cls, delivery: AlertDelivery) -> DeliverySummary:
        last = delivery.attempt_log[-1] if delivery.attempt_log else None
        answer = None if last is None else (last.error or str(last.status_code))
        return cls(
            delivery.id,
            delivery.flag_id,
            str(delivery.event),
            delivery.host,
            str(delivery.status),
            delivery.attempts,
            answer,
        )


@dataclass(frozen=True, slots=True)
class FlagAlertState:
    """What became of one alert of a flag, as a public page may show it: the event, the
    receiver's kind (never its address), where its delivery stands and its attempts."""

    event: AlertEvent
    kind: ReceiverKind
    status: DeliveryStatus
    attempts: int
    queued_at: dt.datetime
    delivered_at: dt.datetime | None


def alerts_of_flags(
    session: Session, flag_ids: Collection[int]
) -> dict[int, tuple[FlagAlertState, ...]]:
    """The alerts of each of ``flag_ids`` that has any, oldest first."""
    found: dict[int, list[FlagAlertState]] = {}
    for part in chunks(sorted(flag_ids)):
        rows = session.execute(
            select(
                AlertDelivery.flag_id,
                AlertDelivery.event,
                AlertDelivery.receiver_kind,
                AlertDelivery.status,
                AlertDelivery.attempts,
                AlertDelivery.created_at,
                AlertDelivery.delivered_at,
            )
            .where(AlertDelivery.flag_id.in_(part))
            .order_by(AlertDelivery.id)
        )
        for flag_id, event, kind, status, attempts, queued_at, delivered_at in rows:
            state = FlagAlertState(event, kind, status, attempts, queued_at, delivered_at)
            found.setdefault(flag_id, []).append(state)
    return {flag_id: tuple(states) for flag_id, states in found.items()}


# --- a test message --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TestAnswer:
    """What a receiver answered a test message."""

    host: str
    kind: str
    answer: Answer


def sample_alert(now: dt.datetime) -> FlagAlert:
    """A made-up flag for a test message (flag and match 0, so no receiver takes it for one)."""
    return FlagAlert(
        event=AlertEvent.TEST,
        flag_id=0,
        match_id=0,
        competition="E0",
        home="Arsenal",
        away="Chelsea",
        kickoff=now + dt.timedelta(days=2),
        outcome="2",
        bookmaker="B365",
        price=4.2,
        net_price=4.2,
        expected_value=0.05,
        probability=0.25,
        stake=0.0039,
        value_source="PS",
        model_version=None,
        at=now,
    )


def send_test(
    terms: SenderTerms,
    public_url: str | None,
    only: Receiver | None = None,
    clock: Clock = utc_now,
) -> list[TestAnswer]:
    """Send a sample message, signed, to every receiver (or ``only``), once each; nothing is
    stored."""
    receivers = terms.receivers if only is None else (only,)
    answers = []
    with open_client(terms.timeout_seconds) as client:
        for receiver in receivers:
            now = clock()
            fields = sample_alert(now).fields(public_url)
            body = message_body(receiver.kind, fields, 0, now, receiver.chat)
            headers = signed_headers(terms.secret, body, 0, AlertEvent.TEST, now)
            answer = post(client, receiver, body, headers, terms.timeout_seconds)
            answers.append(TestAnswer(receiver.host, receiver.kind, answer))
    return answers
