"""How soon an alert leaves, and what a slow receiver costs the ingest.

For each backend (SQLite always; PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` or
``ODDSBOOST_TEST_DATABASE_URL`` names a server) a real ``oddsboost serve`` runs on a fresh,
migrated database with a webhook receiver on loopback (``tests/webhook_receiver.py``):

* ``FLAGS`` times, one after the other, POST /admin/odds stores the books of a new match
  that raise a flag (those of ``tests/flag_books.py``); the delay is from the delivery being
  stored, in the ingest's transaction (its ``created_at``), to the receiver having the
  message (p50, p95 and the largest);
* then the receiver takes ``SLOW_SECONDS`` to answer each message, and ``POSTS`` more such
  posts are timed in turns with the same posts to a server whose receiver answers at once
  and one with no alerts (each given the same posts before): the first two's ratio says
  whether a slow receiver reaches the ingest, the last what writing the outbox costs it.

Writes ``docs/figures/bench_alerts.json`` (the latest run of each backend) and its block of
``docs/guides/alerts.md`` (``--no-write``: printed only).

Run: ``python benchmarks/bench_alerts.py [--no-write]``
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import select

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import AlertDelivery
from benchmarks import pages
from benchmarks.bench_ingest import fresh_database
from benchmarks.common import ADMIN_KEY, free_port, serve
from benchmarks.pages import Provenance, Record
from tests.webhook_receiver import Reply, webhook_receiver

NAME = "bench_alerts"
PAGE = pages.ROOT / "docs" / "guides" / "alerts.md"
FLAGS = 30
POSTS = 40
SLOW_SECONDS = 2.0
SECRET = "bench-alert-secret-0123456789"
OPTIONS = (
    f"{FLAGS} flags raised one after the other, each by one POST /admin/odds; then "
    f"{POSTS} more timed in turns on three servers (no alerts; a receiver answering at once; "
    f"one answering in {SLOW_SECONDS:g} s), one worker each"
)


class AlertsRun(Record):
    backend: str
    measured: Provenance
    flags: int
    delay_p50_seconds: float
    delay_p95_seconds: float
    delay_max_seconds: float
    posts: int
    post_median_seconds_no_alerts: float
    post_median_seconds_prompt_receiver: float
    post_median_seconds_slow_receiver: float
    slow_receiver_seconds: float


class AlertsFigures(Record):
    runs: dict[str, AlertsRun]


def books(number: int, now: dt.datetime) -> list[dict[str, Any]]:
    """The books of tests/flag_books.py for match ``number``: the away side is flagged."""
    kickoff = (now + dt.timedelta(days=3)).isoformat()
    captured = (now - dt.timedelta(minutes=1)).isoformat()
    match = {
        "competition": "E0",
        "kickoff": kickoff,
        "home_team": f"Home {number}",
        "away_team": f"Away {number}",
    }
    return [
        {"match": match, "bookmaker": code, "home": home, "draw": draw, "away": away,
         "phase": "pre", "captured_at": captured}
        for code, (home, draw, away) in (("PS", (2.0, 4.0, 4.0)), ("B365", (2.5, 5.0, 2.5)))
    ]  # fmt: skip


@contextmanager
def server(url: str, alert_urls: str) -> Iterator[str]:
    port = free_port()
    environment = {
        **os.environ,
        "ODDSBOOST_DATABASE_URL": url,
        "ODDSBOOST_ADMIN_API_KEY": ADMIN_KEY,
        "ODDSBOOST_VALUE_PROBABILITY_SOURCE": "ensemble",
        "ODDSBOOST_WARM_BOARD": "false",
        "ODDSBOOST_ALERT_URLS": alert_urls,
        "ODDSBOOST_ALERT_SECRET": SECRET,
    }
    command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", "1"]
    with serve(command, environment, port, "/health") as base:
        yield base


def post(client: httpx.Client, base: str, number: int) -> float:
    """Seconds POST /admin/odds took to store match ``number``'s books."""
    start = time.perf_counter()
    answer = client.post(
        f"{base}/admin/odds",
        json={"quotes": books(number, dt.datetime.now(dt.UTC))},
        headers={"X-API-Key": ADMIN_KEY},
    )
    seconds = time.perf_counter() - start
    answer.raise_for_status()
    return seconds


def delays(url: str, arrivals: dict[str, float]) -> list[float]:
    """Per delivery, seconds from being stored to arriving (wall clock, one machine)."""
    engine = make_engine(url)
    with session_scope(make_session_factory(engine)) as session:
        stored = dict(session.execute(select(AlertDelivery.id, AlertDelivery.created_at)).all())
    engine.dispose()
    return [arrivals[str(key)] - stored[key].timestamp() for key in map(int, arrivals)]


def measure(kind: str, server_url: str | None) -> AlertsRun:
    before = pages.load_average()
    arrivals: dict[str, float] = {}
    timed: dict[str, list[float]] = {"none": [], "prompt": [], "slow": []}
    with (
        fresh_database(kind, server_url) as url,
        fresh_database(kind, server_url) as prompt_url,
        fresh_database(kind, server_url) as plain_url,
        webhook_receiver() as receiver,
        webhook_receiver() as prompt,
        server(url, receiver.url()) as base,
        server(prompt_url, prompt.url()) as prompt_base,
        server(plain_url, "") as plain_base,
        httpx.Client(timeout=120) as client,
    ):
        bases = {"slow": base, "prompt": prompt_base, "none": plain_base}
        for number in range(FLAGS):
            post(client, base, number)
            (*_, got) = receiver.wait_for(number + 1)
            arrivals[got.headers["X-Oddsboost-Delivery"]] = got.at
            # The same posts to the others: the same database before each timed post.
            post(client, prompt_base, number)
            post(client, plain_base, number)
        receiver.usual = Reply(delay_seconds=SLOW_SECONDS)
        # Taken in turns, so that the machine's load weighs on each alike.
        for number in range(FLAGS, FLAGS + POSTS):
            for way, served in bases.items():
                timed[way].append(post(client, served, number))
        measured = sorted(delays(url, arrivals))
    return AlertsRun(
        backend=kind,
        measured=pages.provenance(before, OPTIONS),
        flags=len(measured),
        delay_p50_seconds=statistics.median(measured),
        delay_p95_seconds=statistics.quantiles(measured, n=20)[18],
        delay_max_seconds=measured[-1],
        posts=POSTS,
        post_median_seconds_no_alerts=statistics.median(timed["none"]),
        post_median_seconds_prompt_receiver=statistics.median(timed["prompt"]),
        post_median_seconds_slow_receiver=statistics.median(timed["slow"]),
        slow_receiver_seconds=SLOW_SECONDS,
    )


def render_block(figures: AlertsFigures | None) -> str:
    """The Markdown between the markers of ``bench_alerts``."""
    if figures is None or not figures.runs:
        return f"No figures yet: run `.venv/bin/python benchmarks/{NAME}.py` to measure them.\n"
    lines = [
        *(
            f"* {pages.backend_title(run.backend)}: {pages.provenance_line(run.measured)}"
            for run in figures.runs.values()
        ),
        "",
        "| backend | alerts | stored → received p50 | p95 | largest |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {pages.backend_title(run.backend)} | {run.flags} | "
            f"{run.delay_p50_seconds * 1e3:.0f} ms | {run.delay_p95_seconds * 1e3:.0f} ms | "
            f"{run.delay_max_seconds * 1e3:.0f} ms |"
            for run in figures.runs.values()
        ),
        "",
        "| backend | POST /admin/odds (median) with no alerts | alerts, receiver answering at "
        "once | alerts, receiver answering in 2 s | slow ÷ at once |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in figures.runs.values():
        ratio = run.post_median_seconds_slow_receiver / run.post_median_seconds_prompt_receiver
        lines.append(
            f"| {pages.backend_title(run.backend)} | "
            f"{run.post_median_seconds_no_alerts * 1e3:.0f} ms | "
            f"{run.post_median_seconds_prompt_receiver * 1e3:.0f} ms | "
            f"{run.post_median_seconds_slow_receiver * 1e3:.0f} ms | {ratio:.2f} |"
        )
    return "\n".join(lines) + "\n"


def load_figures() -> AlertsFigures | None:
    return pages.load_record(AlertsFigures, pages.figures_file(NAME))


def main() -> None:
    pages.measure_backends(NAME, PAGE, AlertsFigures, measure, render_block)


if __name__ == "__main__":
    main()
