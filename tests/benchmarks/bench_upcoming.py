"""GET /upcoming against a prediction by match_id, on the same server in the same run.

Builds 200 upcoming matches (kickoffs over the next six days), each quoted by 6 to 40
bookmakers (drawn per match from a seeded generator), the books made as the value-bets
benchmark makes them; a hand-made model version trusts six of the bookmakers. Then
``oddsboost serve`` (SQLite) is driven by ``wrk`` with the same concurrency in two
scenarios, each run of one followed at once by a run of the other:

* upcoming: GET /upcoming?limit=200, every match of the week in one page, as a dashboard
  polls it (nothing changes between polls: each answer is the kept board, checked by the
  window's ids and the watermark);
* upcoming_304: the same poll sending the ETag of the last answer as If-None-Match, as a
  client that keeps the answer polls (304, no body);
* match_id: POST /predict {"match_id": n}, n drawn from the same 200 matches.

First times a poll that follows a new quote (the board made again), median of ten, then
waits until the last write is older than the board's settling time, so that the runs
measure the polls of a board whose watermark is trusted. Prints requests/s, p50 and p99
latency of each, the ratio of each poll's throughput to the prediction's with its aim, and
the machine's load average before and after.

Run: ``python tests/benchmarks/bench_upcoming.py [--workers 1 --connections 16
--duration 10 --repeats 1]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import time
from typing import Any

import httpx

from app.services.upcoming import SETTLED_AFTER
from tests.benchmarks.bench_value_bets import OTHERS, POOL, book, lua_script
from tests.benchmarks.common import (
    LUA_RESULT,
    load_average,
    rate,
    run_wrk,
    served_quotes,
    store_quotes,
)

MATCHES = 200
BOOKMAKERS_PER_MATCH = (6, 40)
BOARD_PATH = "/upcoming?limit=200"
SCENARIOS = ("upcoming", "upcoming_304", "match_id")
COLD_POLLS = 10
# The throughput of each poll against a prediction by id that it aims at.
AIMS = {"upcoming": 1 / 3, "upcoming_304": 0.8}


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


def board_script(etag: str | None = None) -> str:
    """GET of the board; with ``etag``, sent as If-None-Match."""
    headers = "nil" if etag is None else f"{{['If-None-Match'] = '{etag}'}}"
    return f"""
request = function()
  return wrk.format("GET", "{BOARD_PATH}", {headers})
end
{LUA_RESULT}"""


def cold_polls(base: str, quote: dict[str, Any]) -> list[float]:
    """Milliseconds of a poll after each of ``COLD_POLLS`` new quotes of one match."""
    timings: list[float] = []
    captured = dt.datetime.fromisoformat(quote["captured_at"])
    for minute in range(1, COLD_POLLS + 1):
        fresh = quote | {"captured_at": (captured + dt.timedelta(minutes=minute)).isoformat()}
        stored = store_quotes(base, [fresh])
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
    loads = [load_average()]
    with served_quotes(args.workers, POOL, lambda now: week(random.Random(7), now)) as (
        base,
        quotes,
    ):
        board = httpx.get(f"{base}{BOARD_PATH}", timeout=30)
        assert board.status_code == 200, board.text
        match_ids = [item["match"]["id"] for item in board.json()["items"]]
        assert len(match_ids) == MATCHES, len(match_ids)
        predicted = httpx.post(f"{base}/predict", json={"match_id": match_ids[0]})
        assert predicted.status_code == 200, predicted.text
        cold = cold_polls(base, quotes[0])
        # The board's watermark is trusted once its newest change has settled.
        time.sleep(SETTLED_AFTER.total_seconds() + 1)
        board = httpx.get(f"{base}{BOARD_PATH}", timeout=30)
        etag = board.headers["ETag"]
        held = httpx.get(f"{base}{BOARD_PATH}", headers={"If-None-Match": etag})
        assert held.status_code == 304, held.status_code
        scripts = {
            "upcoming": board_script(),
            "upcoming_304": board_script(etag),
            "match_id": lua_script("match_id", match_ids),
        }
        for _ in range(args.repeats):
            for scenario in SCENARIOS:
                results[scenario].append(
                    run_wrk(base, scripts[scenario], args.connections, args.duration)
                )
    loads.append(load_average())

    print(
        f"wrk, {args.connections} connections, {args.duration} s x {args.repeats} each, "
        f"{args.workers} worker(s); {MATCHES} matches, {len(quotes)} quotes; the board: "
        f"{len(board.content):,} bytes; a prediction: {len(predicted.content):,} bytes; "
        f"load average before {loads[0]}, after {loads[1]}"
    )
    header = ("scenario", "req/s", "p50 ms", "p99 ms", "errors", "ratio", "aim")
    print("{:<13} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5}".format(*header))
    predictions = rate(results["match_id"])
    for scenario in SCENARIOS:
        rows = results[scenario]
        p50 = statistics.median(row["p50_ms"] for row in rows)
        p99 = statistics.median(row["p99_ms"] for row in rows)
        errors = int(sum(row["errors"] for row in rows))
        ratio = f"{rate(rows) / predictions:.2f}" if scenario in AIMS else ""
        aim = f"{AIMS[scenario]:.2f}" if scenario in AIMS else ""
        print(
            f"{scenario:<13} {rate(rows):>8.0f} {p50:>8.2f} {p99:>8.2f} {errors:>6} "
            f"{ratio:>6} {aim:>5}"
        )
    print(f"a poll after a new quote (board made again): {statistics.median(cold):.1f} ms median")


if __name__ == "__main__":
    main()
