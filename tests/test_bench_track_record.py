"""The harness of ``benchmarks/bench_track_record.py``: how a run's requests are
counted (a request that times out is an error, never a wait), wrk against a local server
that answers, fails or never answers, and the SQL copy that makes the ten-times log."""

from __future__ import annotations

import datetime as dt
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Competition, Match, OddsQuote, PredictionLogEntry
from app.services import track_record
from benchmarks.bench_track_record import (
    MemoryWatch,
    RunSettings,
    WrkRequests,
    copy_under_codes,
    run_wrk,
    summarised,
    tree_kib,
)
from tests.apps import refit_settings_for


def test_answers_are_ranked_by_latency_and_only_2xx_ones_succeed() -> None:
    requests = WrkRequests(
        latencies_ms=[30.0, 10.0, 20.0, 40.0],
        statuses=[200, 204, 503, 302],
        pending_ms=[],
        socket_errors=0,
    )

    outcome = summarised(requests, timeout_seconds=2)

    # Nearest rank of 10, 20, 30, 40: the 2nd for the median, the 4th for the 99th.
    assert (outcome.requests, outcome.median_ms, outcome.p99_ms) == (4, 20.0, 40.0)
    assert outcome.errors == 2  # the 503 and the 302
    assert outcome.unfinished == 0


def test_a_request_unanswered_past_the_timeout_is_an_error_slower_than_every_answer() -> None:
    requests = WrkRequests(
        latencies_ms=[10.0, 20.0, 2500.0],  # the last one answered after the 2 s timeout
        statuses=[200, 200, 200],
        pending_ms=[3000.0, 500.0],  # still waiting at the end: past the timeout, and not
        socket_errors=1,
    )

    outcome = summarised(requests, timeout_seconds=2)

    # Ended: 10, 20 and two past the timeout; the one waiting 0.5 s is neither.
    assert outcome.requests == 4
    assert outcome.median_ms == 20.0
    assert outcome.p99_ms is None  # the 4th rank is a request past the timeout
    assert outcome.errors == 3  # answered late, unanswered past the timeout, the socket error
    assert outcome.unfinished == 1


def test_no_request_ended_has_no_percentiles() -> None:
    outcome = summarised(WrkRequests([], [], [300.0], 0), timeout_seconds=2)

    assert (outcome.requests, outcome.median_ms, outcome.errors, outcome.unfinished) == (
        0,
        None,
        0,
        1,
    )


class Handler(BaseHTTPRequestHandler):
    """/ok answers 200, /fail 503; /never holds the request until the server closes."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/never":
            self.release.wait()
            return
        status = 200 if self.path == "/ok" else 503
        body = b"{}"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def local_server() -> Iterator[str]:
    Handler.release = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Handler.release.set()
    server.shutdown()
    server.server_close()


needs_wrk = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
RUN = RunSettings(duration_seconds=3, timeout_seconds=1, memory_guard_mb=1024)


@pytest.mark.slow
@needs_wrk
@pytest.mark.parametrize(("path", "answers_fail"), [("/ok", False), ("/fail", True)])
def test_wrk_times_every_request_and_counts_failed_answers(
    local_server: str, path: str, answers_fail: bool
) -> None:
    requests = run_wrk(local_server, path, 2, RUN, threading.Event())
    outcome = summarised(requests, RUN.timeout_seconds)

    assert outcome.requests > 0
    assert outcome.median_ms is not None
    assert outcome.errors == (outcome.requests if answers_fail else 0)


@pytest.mark.slow
@needs_wrk
def test_wrk_ends_when_the_server_never_answers_and_counts_each_request_as_an_error(
    local_server: str,
) -> None:
    requests = run_wrk(local_server, "/never", 2, RUN, threading.Event())
    outcome = summarised(requests, RUN.timeout_seconds)

    # Each of the 2 connections sent one request and waited the whole 3 s run for it.
    assert requests.latencies_ms == []
    assert len(requests.pending_ms) == 2
    assert (outcome.requests, outcome.median_ms, outcome.errors) == (2, None, 2)


# Holds a block of this many bytes for each line it reads ("free": drops them), and says
# "ok" once done: a process whose memory the test moves step by step.
ALLOCATOR = """
import sys
held = []
print("ok", flush=True)
for line in sys.stdin:
    if line.strip() == "free":
        held.clear()
    else:
        held.append(b"\\x01" * int(line))  # written, so every page is resident
    print("ok", flush=True)
"""
BLOCK = 50_000_000


@pytest.fixture
def allocator() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", ALLOCATOR],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ok\n"
    yield process
    process.kill()
    process.wait()


def tell(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(f"{line}\n")
    process.stdin.flush()


def ask(process: subprocess.Popen[str], line: str) -> None:
    tell(process, line)
    assert process.stdout is not None
    assert process.stdout.readline() == "ok\n"


@pytest.mark.slow
def test_the_peak_counts_memory_held_only_between_two_samples(
    allocator: subprocess.Popen[str],
) -> None:
    with MemoryWatch(allocator.pid, guard_kib=10**9) as watch:
        ask(allocator, str(BLOCK))
        ask(allocator, "free")  # given back before the run ends: only the peak saw it

    extra_kib = watch.peak_kib() - watch.baseline_kib
    # The block, and little else the interpreter allocated meanwhile; the kernel's RSS
    # counters lag by a few pages, so within 1 MiB below.
    assert BLOCK / 1024 - 1024 <= extra_kib <= BLOCK / 1024 + 10 * 1024
    assert not watch.tripped.is_set()


@pytest.mark.slow
def test_a_process_past_the_memory_guard_is_killed(allocator: subprocess.Popen[str]) -> None:
    guard_kib = tree_kib(allocator.pid) + 20 * 1024

    with MemoryWatch(allocator.pid, guard_kib) as watch:
        tell(allocator, str(BLOCK))  # killed before it can answer
        assert watch.tripped.wait(timeout=60)

    assert allocator.wait(timeout=60) == -signal.SIGKILL


def counts(session: Session) -> tuple[int, int, int]:
    return tuple(  # type: ignore[return-value]
        session.scalar(select(func.count()).select_from(model)) or 0
        for model in (Competition, Match, OddsQuote)
    )


@pytest.mark.slow
def test_the_tenfold_log_copies_every_match_and_quote_under_new_codes(seeded_url: str) -> None:
    settings = refit_settings_for(seeded_url)
    engine = make_engine(seeded_url)
    factory = make_session_factory(engine, for_writes=True)
    window = {
        "kickoff_from": dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
        "kickoff_to": dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
        "now": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    }
    with session_scope(factory) as session:
        first = track_record.rebuild(session, settings, **window)
        competitions, matches, quotes = counts(session)
        largest_match = session.scalar(select(func.max(Match.id)))

    copy_under_codes(seeded_url, 3)

    with session_scope(factory) as session:
        assert counts(session) == (3 * competitions, 3 * matches, 3 * quotes)
        codes = set(session.scalars(select(Competition.code)))
        assert {"E0", "E0-copy1", "E0-copy2", "SP1", "SP1-copy1", "SP1-copy2"} <= codes
        # The same rebuild logs the copies as it logged the originals, and only them.
        again = track_record.rebuild(session, settings, **window)
        assert again == track_record.LogCount(
            written=2 * first.written,
            already_logged=first.written,
            without_quotes=3 * first.without_quotes,
        )
        entries = session.scalar(select(func.count()).select_from(PredictionLogEntry))
        assert entries == 3 * first.written
        # A match stored later takes an id after every copy's (PostgreSQL's sequence moved on).
        assert largest_match is not None
        played = session.execute(
            select(Match.competition_id, Match.home_team_id, Match.away_team_id)
        ).first()
        assert played is not None
        added = Match(
            competition_id=played.competition_id,
            season="2026/27",
            kickoff=dt.datetime(2026, 8, 1, 15, tzinfo=dt.UTC),
            kickoff_date=dt.date(2026, 8, 1),
            kickoff_time_known=True,
            home_team_id=played.home_team_id,
            away_team_id=played.away_team_id,
        )
        session.add(added)
        session.flush()
        assert added.id > 3 * largest_match
    engine.dispose()
