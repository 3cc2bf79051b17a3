"""Prediction throughput of the real service against a bare FastAPI app, in the same run.

Builds a model from real seasons (E0, SP1, I1, D1, F1 2015/16-2017/18, refit as of
1 June 2018, SQLite), starts ``oddsboost serve`` and, with the same uvicorn settings, a
bare FastAPI app whose endpoints return constant JSON bodies as large as the real
responses (``bare_app.py``). Both are driven by the same load generator, ``wrk`` with Lua
scripts when it is installed (else an asyncio client), with the same concurrency:

* inline: POST /predict with six bookmakers' odds, different odds every request;
* match_id: POST /predict {"match_id": n}, n drawn from 50 matches, as a dashboard polls
  the matches of a matchday (answers are reused for ODDSBOOST_PREDICT_CACHE_SECONDS);
* match_id_all: the same, n drawn from all 1,826 matches of 2018/19, so most requests read
  the database;
* batch100: POST /predict/batch with 100 inline items.

Both servers run side by side and each real run is followed at once by the bare run of the
same scenario, so that both see the same load on a shared machine. Reports requests/s, p50
and p99 latency (medians over ``--repeats``) for each, and its throughput ratio to the bare
app (a reference that moves with the machine's load, not an aim).

Writes ``docs/figures/bench_predict.json`` and its block of
``docs/explanation/performance.md`` (``--no-write``: prints them only).

Run: ``python benchmarks/bench_predict.py [--workers 1 --connections 16 --duration 10
--repeats 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import upgrade_to_head
from app.domain.vocabulary import RunTrigger
from app.services.ingest import import_football_data
from app.services.refit import run_refit
from app.settings import Settings, settings_environment
from benchmarks.common import (
    LUA_RESULT,
    free_port,
    latency_summary,
    run_wrk,
    serve,
)
from benchmarks.pages import load_average, provenance
from benchmarks.throughput_figures import ThroughputRun, arguments, finish, options, scenario

LEAGUES = ("E0", "SP1", "I1", "D1", "F1")
SEASONS = ("1516", "1617", "1718", "1819")
BOOKMAKERS = ("B365", "BW", "IW", "PS", "WH", "VC")
HERE = Path(__file__).resolve().parent


def prepare(directory: Path, data_dir: Path) -> tuple[Settings, list[int]]:
    url = f"sqlite:///{directory / 'bench.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    factory = make_session_factory(engine, for_writes=True)
    for league in LEAGUES:
        for season in SEASONS:
            content = (data_dir / "football-data" / f"{league}_{season}.csv").read_bytes()
            with session_scope(factory) as session:
                import_football_data(session, content)
    settings = Settings(database_url=url, admin_api_key="bench-admin-key-123")
    outcome = run_refit(
        engine, settings, trigger=RunTrigger.CLI, until=dt.datetime(2018, 6, 1, tzinfo=dt.UTC)
    )
    assert outcome.status == "succeeded", outcome.message
    from sqlalchemy import text

    with engine.connect() as connection:
        ids = [
            row[0]
            for row in connection.execute(text("SELECT id FROM matches WHERE season = '2018/19'"))
        ]
    engine.dispose()
    return settings, ids


def inline_odds(rng: random.Random) -> list[dict[str, Any]]:
    """Six bookmakers' odds for one match, as real books look: the same underlying
    probabilities, each book with its own margin (3-8%) and a little disagreement."""
    home = rng.uniform(0.15, 0.75)
    draw = rng.uniform(0.18, 0.32) * (1 - home) / 0.75
    truth = (home, draw, 1 - home - draw)
    odds = []
    for code in BOOKMAKERS:
        margin = rng.uniform(1.03, 1.08)
        prices = [round(1 / (p * margin * rng.uniform(0.98, 1.02)), 2) for p in truth]
        odds.append({"bookmaker": code, "home": prices[0], "draw": prices[1], "away": prices[2]})
    return odds


LUA_COMMON = (
    """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
"""
    + LUA_RESULT
)

LUA_INLINE = """
-- The same generator as inline_odds() in bench_predict.py.
local books = {"B365", "BW", "IW", "PS", "WH", "VC"}
local function price(p, margin)
  return 1 / (p * margin * (0.98 + math.random() * 0.04))
end
local function odds()
  local home = 0.15 + math.random() * 0.6
  local draw = (0.18 + math.random() * 0.14) * (1 - home) / 0.75
  local away = 1 - home - draw
  local parts = {}
  for i, code in ipairs(books) do
    local margin = 1.03 + math.random() * 0.05
    parts[i] = string.format('{"bookmaker":"%s","home":%.2f,"draw":%.2f,"away":%.2f}', code,
      price(home, margin), price(draw, margin), price(away, margin))
  end
  return "[" .. table.concat(parts, ",") .. "]"
end
"""


DASHBOARD_MATCHES = 50


def scenario_ids(scenario: str, match_ids: list[int]) -> list[int]:
    return match_ids[:DASHBOARD_MATCHES] if scenario == "match_id" else match_ids


def lua_script(scenario: str, match_ids: list[int]) -> str:
    match_ids = scenario_ids(scenario, match_ids)
    if scenario == "inline":
        body = (
            LUA_INLINE
            + """
request = function()
  return wrk.format(nil, "/predict", nil, '{"odds":' .. odds() .. '}')
end
"""
        )
    elif scenario in ("match_id", "match_id_all"):
        ids = ",".join(str(i) for i in match_ids)
        body = f"""
local ids = {{{ids}}}
request = function()
  return wrk.format(nil, "/predict", nil, '{{"match_id":' .. ids[math.random(#ids)] .. '}}')
end
"""
    else:
        body = (
            LUA_INLINE
            + """
request = function()
  local items = {}
  for i = 1, 100 do items[i] = '{"odds":' .. odds() .. '}' end
  return wrk.format(nil, "/predict/batch", nil, '{"items":[' .. table.concat(items, ",") .. ']}')
end
"""
        )
    return body + LUA_COMMON


def request_body(
    scenario: str, match_ids: list[int], rng: random.Random
) -> tuple[str, dict[str, Any]]:
    if scenario == "inline":
        return "/predict", {"odds": inline_odds(rng)}
    if scenario in ("match_id", "match_id_all"):
        return "/predict", {"match_id": rng.choice(scenario_ids(scenario, match_ids))}
    return "/predict/batch", {"items": [{"odds": inline_odds(rng)} for _ in range(100)]}


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
                path, body = request_body(scenario, match_ids, rng)
                started = time.perf_counter()
                response = await client.post(path, json=body)
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


SCENARIOS = {
    "inline": "inline, six bookmakers, new odds every request",
    "match_id": f"by `match_id`, the {DASHBOARD_MATCHES} matches of a matchday",
    "match_id_all": "by `match_id`, every match of 2018/19 at random",
    "batch100": "batch of 100 inline items",
}


def main() -> None:
    args = arguments((__doc__ or "").splitlines()[0])
    data_dir = Path(os.environ.get("ODDSBOOST_DATA_DIR", "../shared/data"))
    before = load_average()

    with tempfile.TemporaryDirectory() as directory:
        settings, match_ids = prepare(Path(directory), data_dir)
        sizes, results = measure_both(settings, match_ids, args)

    tool = "`wrk`" if shutil.which("wrk") else "an asyncio client"
    facts = [
        f"{len(match_ids):,} matches of 2018/19 in the database; answers of "
        + ", ".join(f"{size:,} bytes ({name})" for name, size in sizes.items())
    ]
    rows = []
    for name, label in SCENARIOS.items():
        rows.append(scenario(f"{label}: the bare app", results["bare"][name]))
        rows.append(
            scenario(
                f"{label}: oddsboost",
                results["real"][name],
                compared=results["bare"][name],
            )
        )
    finish(
        ThroughputRun(
            benchmark="bench_predict",
            measured=provenance(before, options(args, tool)),
            compared_with="the bare app",
            facts=tuple(facts),
            scenarios=tuple(rows),
        ),
        args,
    )


def measure_both(
    settings: Settings, match_ids: list[int], args: argparse.Namespace
) -> tuple[dict[str, int], dict[str, dict[str, list[dict[str, float]]]]]:
    """Both servers started side by side, each real run followed at once by its bare run:
    the response sizes and the runs of each server and scenario."""
    environment = {**os.environ, **settings_environment(settings)}
    uvicorn_options = ["--workers", str(args.workers)]
    real_port, bare_port = free_port(), free_port()
    rng = random.Random(7)
    sizes: dict[str, int] = {}
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        server: {name: [] for name in SCENARIOS} for server in ("real", "bare")
    }
    with serve(
        [sys.executable, "-m", "app", "serve", "--port", str(real_port), *uvicorn_options],
        environment,
        real_port,
        "/models/active",
    ) as real_base:
        for name in SCENARIOS:
            path, body = request_body(name, match_ids, rng)
            response = httpx.post(f"{real_base}{path}", json=body, timeout=30)
            assert response.status_code == 200, response.text
            sizes[name] = len(response.content)
        bodies = {"/predict": sizes["match_id"], "/predict/batch": sizes["batch100"]}
        bare_environment = {
            **os.environ,
            "ODDSBOOST_BENCH_BODIES": json.dumps(bodies),
            "PYTHONPATH": str(HERE),
        }
        bare_command = [
            sys.executable,
            "-m",
            "uvicorn",
            "bare_app:create_bare_app",
            "--factory",
            "--port",
            str(bare_port),
            *uvicorn_options,
        ]
        with serve(bare_command, bare_environment, bare_port, "/docs") as bare_base:
            # Each real run is followed at once by its bare run: on a shared machine the
            # load drifts, and the ratio should compare the two under the same load.
            for name in SCENARIOS:
                for _ in range(args.repeats):
                    for server, base in (("real", real_base), ("bare", bare_base)):
                        results[server][name].append(
                            measure(base, name, match_ids, args.connections, args.duration)
                        )
    return sizes, results


if __name__ == "__main__":
    main()
