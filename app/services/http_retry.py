"""A request to a feed tried again, a bounded number of times, on 429 and 5xx (waiting what
``Retry-After`` asks) and on the failures without an answer the policy says are safe to
send again. Every wait goes through the policy's ``sleep``: a run's, which a stop or the
run's deadline ends, or a test's, which records the waits."""

from __future__ import annotations

import datetime as dt
import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import httpx

from app.domain.wording import counted
from app.services.downloads import Download, describe

Failures = tuple[type[httpx.TransportError], ...]
# Every failure that ends with no answer: a timeout, a connection that failed or broke.
UNANSWERED: Failures = (httpx.TimeoutException, httpx.NetworkError)
# The failures of a request that never reached the server (no connection made, or none
# free): the server cannot have handled it, so sending it again cannot make it count twice.
UNSENT: Failures = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a request is tried: ``backoff`` seconds before the second attempt, doubled
    each time, unless ``Retry-After`` says otherwise; a wait beyond ``max_wait`` ends the
    attempts. Of the failures without an answer, only the ``retried`` ones are retried."""

    attempts: int
    backoff: float
    max_wait: float
    sleep: Callable[[float], None] = time.sleep
    retried: Failures = UNANSWERED

    def wait_after(self, attempt: int) -> float:
        return self.backoff * 2.0 ** (attempt - 1)

    def for_counted_requests(self) -> RetryPolicy:
        """The policy for a request the server counts (against a quota, a bill) once it has
        it, answered in time or not: sent again only if it never left."""
        return replace(self, retried=UNSENT)


# What is retried: a whole download, or a plain answer (the tests').
AnswerT = TypeVar("AnswerT", Download, httpx.Response)


class GaveUpError(Exception):
    """Every attempt got an answer that said "later", or none; the message says the last."""


def retry_after(response: Download | httpx.Response) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number, or an HTTP date: none past
    it), None without one that can be read."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return max(0.0, (moment - dt.datetime.now(dt.UTC)).total_seconds())


def send_with_retries(send: Callable[[], AnswerT], policy: RetryPolicy) -> AnswerT:
    """The first answer that is neither 429 nor 5xx; :class:`GaveUpError` when the attempts
    run out or a wait is too long. A failure the policy does not retry (an answer cut short
    may have been counted against a quota) is raised as it came."""
    for attempt in range(1, policy.attempts + 1):
        try:
            response = send()
        except policy.retried as error:
            why, asked = describe(error), None
        else:
            if response.status_code != httpx.codes.TOO_MANY_REQUESTS and response.status_code < 500:
                return response
            why = f"HTTP {response.status_code} {response.reason_phrase}".strip()
            asked = retry_after(response)
        if attempt == policy.attempts:
            raise GaveUpError(f"{why} ({counted(policy.attempts, 'attempt')})")
        wait = policy.wait_after(attempt) if asked is None else asked
        if wait > policy.max_wait:
            raise GaveUpError(
                f"{why}, and asked to wait {wait:.0f} s, more than the {policy.max_wait:.0f} s "
                "allowed"
            )
        policy.sleep(wait)
    raise AssertionError("unreachable: a policy has at least one attempt")
