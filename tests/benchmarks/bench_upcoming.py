"""GET /upcoming against a prediction by match_id, on the same server in the same run.

Builds 200 upcoming matches (kickoffs over the next six days), each quoted by 6 to 40
bookmakers (drawn per match from a seeded generator), the books made as the value-bets
benchmark makes them; a hand-made model version trusts six of the bookmakers. Then
``oddsboost serve`` (SQLite) is driven by ``wrk`` with the same concurrency in two
scenarios, each run of one followed at once by a run of the other:

* upcoming: GET /upcoming?limit=200, every match of the week in one page, as a dashboard
  polls it (nothing changes between polls: each answer is the kept board, checked by one
  query);
* match_id: POST /predict {"match_id": n}, n drawn from the same 200 matches.

Also times a poll that follows a new quote (the board made again), median of ten. Prints
requests/s, p50 and p99 latency of each, and the ratio of the board's throughput to the
prediction's.

Run: ``python tests/benchmarks/bench_upcoming.py [--workers 1 --connections 16
--duration 10 --repeats 1]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.settings import settings_environment
from tests.benchmarks.bench_predict import free_port, rate, run_wrk, serve
from tests.benchmarks.bench_value_bets import ADMIN_KEY, OTHERS, POOL, book, lua_script, prepare

MATCHES = 200
BOOKMAKERS_PER_MATCH = (6, 40)
BOARD_PATH = "/upcoming?limit=200"
SCENARIOS = ("upcoming", "match_id")
COLD_POLLS = 10


def week(rng: random.Random, now: dt.datetime) -> list[dict[str, Any]]:
    """The quotes of 200 upcoming matches, as POST /admin/odds takes them."""
    quotes: list[dict[str, Any]] = []
    first = (now + dt.timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    captured = (now - dt.timedelta(hours=1)).isoformat()
    for index in range(MATCHES):
        match = {
            "competition": ("E0", "SP1", "D1", "I1")[index % 4],
            "kickoff": (first + dt.timedelta(days=index % 6, hours=index % 9)).isoformat(),
            "home_team": f"Home {index}",
            "away_team": f"Away {index}",
        }
        home = rng.uniform(0.2, 0.7)
        draw = rng.uniform(0.22, 0.30) * (1 - home) / 0.8
        probabilities = (home, draw, 1 - home - draw)
        count = rng.randint(*BOOKMAKERS_PER_MATCH)
        codes = [*POOL, *rng.sample(OTHERS, count - len(POOL))]
        quotes.extend(
            {"match": match, "bookmaker": code, "captured_at": captured, **book(probabilities, rng)}
            for code in codes
        )
    return quotes


def board_script() -> str:
    # The value-bets script's reporting, with this request.
    return lua_script("value_bets", []).replace("/value-bets?limit=500", BOARD_PATH)


def cold_polls(base: str, quote: dict[str, Any]) -> list[float]:
    """Milliseconds of a poll after each of ``COLD_POLLS`` new quotes of one match."""
    timings: list[float] = []
    captured = dt.datetime.fromisoformat(quote["captured_at"])
    for minute in range(1, COLD_POLLS + 1):
        fresh = quote | {"captured_at": (captured + dt.timedelta(minutes=minute)).isoformat()}
        stored = httpx.post(
            f"{base}/admin/odds", json={"quotes": [fresh]}, headers={"X-API-Key": ADMIN_KEY}
        )
        assert stored.status_code == 200, stored.text
        started = time.perf_counter()
        polled = httpx.get(f"{base}{BOARD_PATH}", timeout=30)
        timings.append((time.perf_counter() - started) * 1e3)
        assert polled.status_code == 200, polled.text
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1, help="Runs of each scenario, alternated.")
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {scenario: [] for scenario in SCENARIOS}
    with tempfile.TemporaryDirectory() as directory:
        settings = prepare(Path(directory))
        environment = {**os.environ, **settings_environment(settings)}
        environment["ODDSBOOST_ADMIN_API_KEY"] = ADMIN_KEY
        port = free_port()
        command = [sys.executable, "-m", "app", "serve", "--port", str(port)]
        with serve(
            [*command, "--workers", str(args.workers)], environment, port, "/models/active"
        ) as base:
            quotes = week(random.Random(7), dt.datetime.now(dt.UTC))
            stored = httpx.post(
                f"{base}/admin/odds",
                json={"quotes": quotes},
                headers={"X-API-Key": ADMIN_KEY},
                timeout=120,
            )
            assert stored.status_code == 200, stored.text
            board = httpx.get(f"{base}{BOARD_PATH}", timeout=30)
            assert board.status_code == 200, board.text
            match_ids = [item["match"]["id"] for item in board.json()["items"]]
            assert len(match_ids) == MATCHES, len(match_ids)
            predicted = httpx.post(f"{base}/predict", json={"match_id": match_ids[0]})
            assert predicted.status_code == 200, predicted.text
            cold = cold_polls(base, quotes[0])
            scripts = {"upcoming": board_script(), "match_id": lua_script("match_id", match_ids)}
            for _ in range(args.repeats):
                for scenario in SCENARIOS:
                    results[scenario].append(
                        run_wrk(base, scripts[scenario], args.connections, args.duration)
                    )

    print(
        f"wrk, {args.connections} connections, {args.duration} s x {args.repeats} each, "
        f"{args.workers} worker(s); {MATCHES} matches, {len(quotes)} quotes; the board: "
        f"{len(board.content):,} bytes; a prediction: {len(predicted.content):,} bytes"
    )
    print(
        "{:<11} {:>8} {:>8} {:>8} {:>6}".format("scenario", "req/s", "p50 ms", "p99 ms", "errors")
    )
    for scenario in SCENARIOS:
        rows = results[scenario]
        p50 = statistics.median(row["p50_ms"] for row in rows)
        p99 = statistics.median(row["p99_ms"] for row in rows)
        errors = int(sum(row["errors"] for row in rows))
        print(f"{scenario:<11} {rate(rows):>8.0f} {p50:>8.2f} {p99:>8.2f} {errors:>6}")
    overall = rate(results["upcoming"]) / rate(results["match_id"])
    print(f"ratio upcoming / match_id: {overall:.2f}")
    print(f"a poll after a new quote (board made again): {statistics.median(cold):.1f} ms median")


if __name__ == "__main__":
    main()
