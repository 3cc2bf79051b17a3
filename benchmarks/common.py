"""What the HTTP benchmarks share: a server started and stopped, ``wrk`` run with a Lua
script that reports one JSON line, latencies summed up alike, and a served database holding
a hand-made model version and the upcoming matches a benchmark stores."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import upgrade_to_head
from app.domain.vocabulary import ActivatedBy
from app.services.model_versions import activate
from app.settings import Settings, settings_environment
from tests.helpers import hand_made_version

ADMIN_KEY = "bench-admin-key-123"
# Appended to every wrk script: one line with the run's figures, read by ``run_wrk``.
LUA_RESULT = """
done = function(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.status + e.timeout
  io.write(string.format(
    'RESULT {"requests": %d, "seconds": %f, "p50_ms": %f, "p99_ms": %f, "errors": %d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, errors))
end
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# How long a stopped server may take to finish what it is doing before it is killed.
STOP_SECONDS = 30


@contextmanager
def serve(command: list[str], environment: dict[str, str], port: int, probe: str) -> Iterator[str]:
    with serve_process(command, environment, port, probe) as (base, _process):
        yield base


@contextmanager
def serve_process(
    command: list[str], environment: dict[str, str], port: int, probe: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The server ``command`` starts, once ``probe`` answers: its base URL and its process.
    Stopped with SIGTERM at the end, killed if it is still busy ``STOP_SECONDS`` later."""
    process = subprocess.Popen(
        command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}{probe}", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{command} did not start") from None
                time.sleep(0.2)
        yield base, process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_wrk(base: str, script: str, connections: int, seconds: int) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        output = subprocess.run(
            [
                "wrk",
                "-t1",
                f"-c{connections}",
                f"-d{seconds}s",
                "--latency",
                "-s",
                handle.name,
                base,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(handle.name)
    line = next(line for line in output.splitlines() if line.startswith("RESULT "))
    result: dict[str, float] = json.loads(line.removeprefix("RESULT "))
    return result


def latency_summary(latencies: list[float], errors: int, seconds: float) -> dict[str, float]:
    """A run of the asyncio client in the shape of ``run_wrk``'s (latencies in seconds)."""
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "requests": len(latencies),
        "seconds": seconds,
        "p50_ms": quantiles[49] * 1e3,
        "p99_ms": quantiles[98] * 1e3,
        "errors": errors,
    }


def rate(rows: list[dict[str, float]]) -> float:
    return sum(row["requests"] for row in rows) / sum(row["seconds"] for row in rows)


def prepare(directory: Path, weights: dict[str, float]) -> Settings:
    """A database at the newest schema whose active version is a hand-made one trusting
    the bookmakers of ``weights``."""
    url = f"sqlite:///{directory / 'bench.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        version = hand_made_version(weights=weights)
        session.add(version)
        session.flush()
        activate(session, version, by=ActivatedBy.REFIT)
    engine.dispose()
    return Settings(database_url=url, admin_api_key=ADMIN_KEY)


@contextmanager
def served_quotes(
    workers: int,
    weights: dict[str, float],
    quotes_of: Callable[[dt.datetime], list[dict[str, Any]]],
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``oddsboost serve`` (SQLite, ``workers`` workers) on a database of its own, with the
    quotes ``quotes_of`` makes for now stored through POST /admin/odds: the server's base
    URL and the quotes."""
    with tempfile.TemporaryDirectory() as directory:
        settings = prepare(Path(directory), weights)
        environment = {**os.environ, **settings_environment(settings)}
        environment["ODDSBOOST_ADMIN_API_KEY"] = ADMIN_KEY
        port = free_port()
        command = [sys.executable, "-m", "app", "serve", "--port", str(port)]
        with serve(
            [*command, "--workers", str(workers)], environment, port, "/models/active"
        ) as base:
            quotes = quotes_of(dt.datetime.now(dt.UTC))
            stored = store_quotes(base, quotes)
            assert stored.status_code == 200, stored.text
            yield base, quotes


def store_quotes(base: str, quotes: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(
        f"{base}/admin/odds", json={"quotes": quotes}, headers={"X-API-Key": ADMIN_KEY}, timeout=120
    )
