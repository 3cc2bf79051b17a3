"""A closed-loop load client that keeps every request's latency and status.

``clients`` tasks each send a request, wait for its answer, and send the next one, until
``seconds`` have passed; a request that stalls (connecting, sending or waiting for its
answer) for longer than ``timeout`` seconds is abandoned and counted as a timeout at that
latency. Nothing is sampled or bucketed: the
percentiles are read, by nearest rank, from every request that ended, so a few slow answers
among many fast ones show in the tail as they happened (``wrk``'s histogram was found to
overstate that tail; it is kept for throughput only).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

# Statuses of answers that never came: a timeout, and a failed connection, read or write.
TIMED_OUT = -1
TRANSPORT_FAILED = -2


@dataclass(frozen=True)
class Call:
    """One request to send: its method, its path (with its query) and its JSON body."""

    method: str
    path: str
    body: Any = None


@dataclass(frozen=True)
class Sample:
    """One request that ended: how long it took, in seconds, and its status (or why none)."""

    seconds: float
    status: int


@dataclass
class Samples:
    """Every request of a run that ended, and how long the run sent requests for."""

    kept: list[Sample] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, seconds: float, status: int) -> None:
        self.kept.append(Sample(seconds, status))


@dataclass(frozen=True)
class LatencySummary:
    """A run summed up: requests ended, their rate, latencies in ms, what went wrong."""

    requests: int
    per_second: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    server_errors: int
    unavailable: int
    other_errors: int


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``share`` (0-100) of
    ``values`` at or below it."""
    if not values:
        raise ValueError("no values to take a percentile of")
    if not 0 < share <= 100:
        raise ValueError(f"a percentile is in (0, 100], not {share}")
    ordered = sorted(values)
    rank = math.ceil(share / 100 * len(ordered))
    return ordered[rank - 1]


def summarize(samples: Samples) -> LatencySummary:
    """``samples`` as requests, rate, nearest-rank p50, p99 and max, and errors: 5xx
    answers (and of them the 503s, a server turning work away), apart from timeouts,
    failed connections and 4xx answers."""
    milliseconds = [sample.seconds * 1e3 for sample in samples.kept]
    statuses = [sample.status for sample in samples.kept]
    if not milliseconds:
        return LatencySummary(0, 0.0, math.nan, math.nan, math.nan, 0, 0, 0)
    return LatencySummary(
        requests=len(milliseconds),
        per_second=len(milliseconds) / samples.seconds if samples.seconds > 0 else math.nan,
        p50_ms=percentile(milliseconds, 50),
        p99_ms=percentile(milliseconds, 99),
        max_ms=max(milliseconds),
        server_errors=sum(1 for status in statuses if 500 <= status <= 599),
        unavailable=statuses.count(503),
        other_errors=sum(1 for status in statuses if status < 200 or 400 <= status <= 499),
    )


async def _send(client: httpx.AsyncClient, call: Call) -> int:
    try:
        answer = await client.request(call.method, call.path, json=call.body)
    except httpx.TimeoutException:
        return TIMED_OUT
    except httpx.TransportError:
        return TRANSPORT_FAILED
    return answer.status_code


async def _client_loop(
    client: httpx.AsyncClient,
    next_call: Callable[[], Call],
    until: float,
    timeout: float,
    samples: Samples,
) -> None:
    """One closed-loop client: the next request only once the last one ended; the first
    one whatever the time, so that every client sends at least one."""
    while True:
        started = time.monotonic()
        status = await _send(client, next_call())
        elapsed = time.monotonic() - started
        samples.add(min(elapsed, timeout) if status == TIMED_OUT else elapsed, status)
        if time.monotonic() >= until:
            return


async def closed_loop(
    base: str,
    next_call: Callable[[], Call],
    *,
    clients: int,
    seconds: float,
    timeout: float,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Samples:
    """``clients`` closed-loop clients sending ``next_call()`` to ``base`` for ``seconds``;
    a request started before the end still runs to its answer or its ``timeout``."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    samples = Samples()
    async with httpx.AsyncClient(
        base_url=base, timeout=timeout, limits=limits, transport=transport
    ) as client:
        started = time.monotonic()
        until = started + seconds
        await asyncio.gather(
            *(_client_loop(client, next_call, until, timeout, samples) for _ in range(clients))
        )
        samples.seconds = time.monotonic() - started
    return samples


def run_closed_loop(
    base: str, next_call: Callable[[], Call], *, clients: int, seconds: float, timeout: float
) -> LatencySummary:
    """``closed_loop`` run to its end and summed up."""
    return summarize(
        asyncio.run(closed_loop(base, next_call, clients=clients, seconds=seconds, timeout=timeout))
    )
