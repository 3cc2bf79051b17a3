"""The value-bets list against a prediction by match_id, on the same server in the same run.

Builds a matchday: 50 upcoming matches (kickoffs over the next six days), each quoted by
6 to 40 bookmakers (the number drawn per match from a seeded generator), every book built
from the match's probabilities with its own margin (2-8 %) and a little disagreement per
price, so some outcomes offer value. A hand-made model version trusts six of the
bookmakers. Then ``oddsboost serve`` (SQLite) is driven by ``wrk`` (else an asyncio client)
with the same concurrency in two scenarios, each run of one followed at once by a run of
the other so both see the same load on a shared machine:

* value_bets: GET /value-bets?limit=500, the whole matchday's list in one page, as a
  dashboard polls it;
* match_id: POST /predict {"match_id": n}, n drawn from the same 50 matches.

Reports requests/s, p50 and p99 latency (medians over ``--repeats``) of each, and the ratio
of the list's throughput to the prediction's, in ``docs/figures/bench_value_bets.json`` and its
block of ``docs/explanation/performance.md`` (``--no-write``: printed only). The aim: the
list in the same time class as one prediction by id (a ratio well above 0.1: not ten times
slower).

Run: ``python benchmarks/bench_value_bets.py [--workers 1 --connections 16
--duration 10 --repeats 1]``
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import shutil
import time
from typing import Any

import httpx

from benchmarks.common import (
    LUA_RESULT,
    latency_summary,
    run_wrk,
    served_quotes,
)
from benchmarks.pages import load_average, provenance
from benchmarks.throughput_figures import ThroughputRun, arguments, finish, options, scenario

MATCHES = 50
BOOKMAKERS_PER_MATCH = (6, 40)
MARGINS = (0.02, 0.08)
# The bookmakers every match has, and the model's weights on them; the others quote only
# some matches and are outside the model.
POOL = {"B365": 0.2, "BW": 0.1, "IW": 0.05, "PS": 0.4, "WH": 0.15, "VC": 0.1}
OTHERS = tuple(f"BK{number:02d}" for number in range(7, 41))
LIST_PATH = "/value-bets?limit=500"
SCENARIOS = ("value_bets", "match_id")


def book(probabilities: tuple[float, float, float], rng: random.Random) -> dict[str, float]:
    """One bookmaker's prices: its margin spread over the outcomes, each price a little off."""
    margin = 1 + rng.uniform(*MARGINS)
    home, draw, away = (round(1 / (p * margin * rng.uniform(0.97, 1.03)), 2) for p in probabilities)
    return {"home": home, "draw": draw, "away": away}


def matchday(rng: random.Random, now: dt.datetime) -> list[dict[str, Any]]:
    """The quotes of 50 upcoming matches, as POST /admin/odds takes them."""
    quotes: list[dict[str, Any]] = []
    first = (now + dt.timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    captured = (now - dt.timedelta(hours=1)).isoformat()
    for index in range(MATCHES):
        kickoff = first + dt.timedelta(days=index % 6, hours=index % 9)
        match = {
            "competition": "E0" if index % 2 else "SP1",
            "kickoff": kickoff.isoformat(),
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


def lua_script(scenario: str, match_ids: list[int]) -> str:
    if scenario == "value_bets":
        request = f"""
request = function()
  return wrk.format("GET", "{LIST_PATH}")
end
"""
    else:
        ids = ",".join(str(i) for i in match_ids)
        request = f"""
local ids = {{{ids}}}
request = function()
  return wrk.format("POST", "/predict", {{["Content-Type"] = "application/json"}},
    '{{"match_id":' .. ids[math.random(#ids)] .. '}}')
end
"""
    return request + LUA_RESULT


async def run_asyncio(
    base: str, scenario: str, match_ids: list[int], connections: int, seconds: int
) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds

    async def worker(seed: int) -> None:
        nonlocal errors
        rng = random.Random(seed)
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            while time.monotonic() < stop:
                started = time.perf_counter()
                if scenario == "value_bets":
                    response = await client.get(LIST_PATH)
                else:
                    response = await client.post(
                        "/predict", json={"match_id": rng.choice(match_ids)}
                    )
                latencies.append(time.perf_counter() - started)
                errors += response.status_code != 200

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(connections)))
    return latency_summary(latencies, errors, time.monotonic() - started)


def measure(
    base: str, scenario: str, match_ids: list[int], connections: int, seconds: int
) -> dict[str, float]:
    if shutil.which("wrk"):
        return run_wrk(base, lua_script(scenario, match_ids), connections, seconds)
    return asyncio.run(run_asyncio(base, scenario, match_ids, connections, seconds))


def main() -> None:
    args = arguments((__doc__ or "").splitlines()[0])
    before = load_average()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in SCENARIOS}
    with served_quotes(args.workers, POOL, lambda now: matchday(random.Random(7), now)) as (
        base,
        quotes,
    ):
        listed = httpx.get(f"{base}{LIST_PATH}", timeout=30)
        assert listed.status_code == 200, listed.text
        body = listed.json()
        upcoming = httpx.get(f"{base}/matches", params={"status": "upcoming", "limit": 100})
        match_ids = [match["id"] for match in upcoming.json()["items"]]
        assert len(match_ids) == MATCHES, match_ids
        predicted = httpx.post(f"{base}/predict", json={"match_id": match_ids[0]})
        assert predicted.status_code == 200, predicted.text
        for _ in range(args.repeats):
            for name in SCENARIOS:
                results[name].append(
                    measure(base, name, match_ids, args.connections, args.duration)
                )

    tool = "`wrk`" if shutil.which("wrk") else "an asyncio client"
    facts = (
        f"{MATCHES} upcoming matches, {len(quotes):,} quotes",
        f"the list: {body['total']} value bets, {len(listed.content):,} bytes; a prediction: "
        f"{len(predicted.content):,} bytes",
    )
    prediction = "`POST /predict` by `match_id`, the same matches"
    finish(
        ThroughputRun(
            benchmark="bench_value_bets",
            measured=provenance(before, options(args, tool)),
            compared_with="a prediction by `match_id`",
            facts=facts,
            scenarios=(
                scenario(
                    "`GET /value-bets?limit=500`, the whole matchday",
                    results["value_bets"],
                    compared=results["match_id"],
                ),
                scenario(prediction, results["match_id"]),
            ),
        ),
        args,
    )


if __name__ == "__main__":
    main()
