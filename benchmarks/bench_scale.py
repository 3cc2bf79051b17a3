"""Cost as the data grows: a price history per bookmaker, 4.4 times the history, many
viewers, more than one worker and replica.

Builds (or reuses) the databases of ``benchmarks/scale_databases.py`` on SQLite, or on the
PostgreSQL server of ``ODDSBOOST_BENCH_POSTGRES_URL`` (``--postgres-url``), works on copies
of them dropped at the end, and drives real ``oddsboost serve --workers 2`` processes with a
closed-loop client that records every request (``benchmarks/load_client.py``):

1. a cold ``GET /upcoming?limit=200`` (right after a new quote) on the matchday with one
   snapshot per bookmaker and with ``--snapshots``, the two servers polled in turn
   (the median of ``--cold-polls`` each; aim: the ratio at most 1.5);
2. ``POST /predict`` by ``match_id`` over the matchday at 16 clients on both, runs in turn
   (aim: the throughput ratio at least 0.8);
3. a fresh worker's first ``/upcoming`` (as soon as ``/ready`` answers) against the median
   of the next ten, on the 4.4x history (aim: within 2x);
4. the p50 of the track-record pages at one client on the history of the season files and
   on 4.4 times it (their growth; no aim);
5. on the 4.4x history with the matchday, every anonymous endpoint (the OpenAPI's GET
   operations without a key, ``POST /predict`` by id, the dashboard's and the operators'
   routes) at 16 and 64 clients: p50, p99, max and 5xx (aims: at 16 clients p50 < 200 ms and
   p99 < 1 s; at 64 no 5xx and p99 < 2 s), the largest worker's RSS (``/proc``) idle and
   after each run (aim: within 2x idle plus the configured caches);
6. when the code under test has the ``ODDSBOOST_REDIS_URL`` setting: two replicas of two
   workers on one database and one Redis, ``--changes`` writes, the board polled on every
   worker after each, and ``oddsboost_board_builds_total`` summed from every replica's
   ``/metrics`` (aim: one build per change).

Writes the figures to ``docs/figures/bench_scale.json`` (each backend keeps its latest run)
and renders them into ``docs/explanation/performance.md`` (``--no-write``: printed only).
``--quick`` runs everything on the newest two seasons' files with short runs, to check the
harness (about three minutes once its databases are built).

Run: ``python benchmarks/bench_scale.py [--quick] [--postgres-url URL]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from app.settings import Settings
from benchmarks.bench_ingest import data_files
from benchmarks.common import ADMIN_KEY, free_port, serve_process, store_quotes
from benchmarks.load_client import Call, LatencySummary, run_closed_loop
from benchmarks.pages import load_average, provenance
from benchmarks.scale_databases import (
    GROWTH,
    HISTORY,
    BuildOptions,
    facts_of,
    matchday_names,
    prepared,
    remove_all,
    store_for,
    working_copies,
)
from benchmarks.scale_figures import (
    FEW_CLIENTS,
    MANY_CLIENTS,
    BackendRun,
    Comparison,
    DatabaseRow,
    EndpointRun,
    Latency,
    Memory,
    SharedBoards,
    load_figures,
    render_block,
    save,
    with_run,
)

BOARD_PATH = "/upcoming?limit=200"
WORKERS = 2
REPLICAS = 2
WARM_POLLS = 10
# The track-record pages whose cost grew with the history.
HISTORY_PAGES = ("/performance", "/dashboard/model", "/dashboard/track-record")
BUILD_METRIC = "oddsboost_board_builds_total"
REDIS_DB = 11
START_SECONDS = 120
MIB = 1024 * 1024


@dataclass(frozen=True)
class RunOptions:
    """How long and how hard each part runs."""

    seconds: float
    timeout: float
    cold_polls: int
    repeats: int
    changes: int


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Newest two seasons, short runs.")
    parser.add_argument("--postgres-url", default=os.environ.get("ODDSBOOST_BENCH_POSTGRES_URL"))
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--snapshots", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10, help="Refit rounds grid: one value.")
    parser.add_argument("--seconds", type=float, help="Seconds per load run [6; quick 1].")
    parser.add_argument("--timeout", type=float, help="Request timeout [10; quick 2].")
    parser.add_argument("--cold-polls", type=int, help="Cold boards per database [10; quick 3].")
    parser.add_argument("--repeats", type=int, help="Predict runs per database [3; quick 1].")
    parser.add_argument("--changes", type=int, help="Writes with shared boards [5; quick 2].")
    parser.add_argument("--no-write", action="store_true", help="Print, do not write the docs.")
    parser.add_argument("--forget", action="store_true", help="Remove the kept databases first.")
    return parser.parse_args()


def run_options(args: argparse.Namespace) -> RunOptions:
    def pick(value: float | None, full: float, quick: float) -> float:
        return value if value is not None else (quick if args.quick else full)

    return RunOptions(
        seconds=pick(args.seconds, 6, 1),
        timeout=pick(args.timeout, 10, 2),
        cold_polls=int(pick(args.cold_polls, 10, 3)),
        repeats=int(pick(args.repeats, 3, 1)),
        changes=int(pick(args.changes, 5, 2)),
    )


def build_options(args: argparse.Namespace) -> BuildOptions:
    files = data_files()
    if args.quick:
        files = [path for path in files if path.stem.endswith(("_1718", "_1819"))]
    return BuildOptions(
        season_files=tuple(files),
        matches=args.matches,
        snapshots=args.snapshots,
        rounds=args.rounds,
    )


def described_options(args: argparse.Namespace, build: BuildOptions, run: RunOptions) -> str:
    return (
        f"{'`--quick`, ' if args.quick else ''}{len(build.season_files)} season files "
        f"(4.4x: {len(build.season_files) * GROWTH:.0f}), {build.matches} upcoming matches, "
        f"{build.snapshots} snapshots, refit rounds [{build.rounds}]; `oddsboost serve "
        f"--workers {WORKERS}`; closed-loop runs of {run.seconds:g} s, a {run.timeout:g} s "
        f"timeout, {run.cold_polls} cold boards, {run.repeats} predict run(s) per database, "
        f"{run.changes} changes with shared boards"
    )


# ---------------------------------------------------------------- servers


@dataclass(frozen=True)
class Server:
    base: str
    pid: int


@contextmanager
def served(url: str, extra: dict[str, str] | None = None) -> Iterator[Server]:
    """``oddsboost serve --workers 2`` on ``url`` once it answers /health; its own metrics
    directory, so that replicas do not add up each other's counters."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-metrics-") as metrics:
        environment = {
            **os.environ,
            **(extra or {}),
            "ODDSBOOST_DATABASE_URL": url,
            "ODDSBOOST_ADMIN_API_KEY": ADMIN_KEY,
            "PROMETHEUS_MULTIPROC_DIR": metrics,
        }
        port = free_port()
        command = [sys.executable, "-m", "app", "serve", "--port", str(port)]
        command += ["--workers", str(WORKERS), "--no-migrate"]
        with serve_process(command, environment, port, "/health") as (base, process):
            yield Server(base, process.pid)


def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + START_SECONDS
    while httpx.get(f"{server.base}/ready", timeout=30).status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.base}/ready never answered 200")
        time.sleep(0.1)


def worker_pids(pid: int) -> list[int]:
    """The uvicorn workers under ``pid`` (its spawned children; the process itself when it
    has none)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        children.extend(int(child) for child in text.split())
    workers = [child for child in children if "spawn_main" in _command_line(child)]
    return workers or [pid]


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def largest_worker_mib(server: Server) -> float:
    sizes = [_rss_bytes(pid) for pid in worker_pids(server.pid)]
    return max(sizes, default=0) / MIB


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def get(server: Server, path: str) -> httpx.Response:
    answer = httpx.get(f"{server.base}{path}", timeout=120)
    if answer.status_code != 200:
        raise RuntimeError(f"GET {path}: {answer.status_code} {answer.text[:300]}")
    return answer


def upcoming_ids(server: Server) -> list[int]:
    return [item["match"]["id"] for item in get(server, BOARD_PATH).json()["items"]]


def timed_get(server: Server, path: str) -> float:
    """Milliseconds of one GET of ``path``."""
    started = time.perf_counter()
    get(server, path)
    return (time.perf_counter() - started) * 1e3


def new_quote(server: Server, match_id: int) -> None:
    """One more snapshot of one bookmaker of ``match_id``, the same prices, captured now."""
    detail = get(server, f"/matches/{match_id}").json()
    fixture = {
        "competition": detail["competition"],
        "kickoff": detail["kickoff"],
        "home_team": detail["home_team"],
        "away_team": detail["away_team"],
    }
    quote = _one_quote(detail)
    captured = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).isoformat()
    stored = store_quotes(server.base, [{"match": fixture, "captured_at": captured, **quote}])
    if stored.status_code != 200:
        raise RuntimeError(f"POST /admin/odds: {stored.status_code} {stored.text[:300]}")


def _one_quote(detail: dict[str, object]) -> dict[str, object]:
    quotes = detail["quotes"]
    assert isinstance(quotes, list), detail
    assert quotes, detail
    first = quotes[0]
    return {
        "bookmaker": first["bookmaker"],
        "home": first["home"],
        "draw": first["draw"],
        "away": first["away"],
    }


# ---------------------------------------------------------------- the parts


def cold_boards(servers: tuple[Server, Server], polls: int) -> tuple[float, float]:
    """The median cold board of each server, polled in turn after a new quote."""
    timings: tuple[list[float], list[float]] = ([], [])
    chosen = [upcoming_ids(server)[0] for server in servers]
    for _ in range(polls):
        for server, match_id, kept in zip(servers, chosen, timings, strict=True):
            new_quote(server, match_id)
            kept.append(timed_get(server, BOARD_PATH))
    return statistics.median(timings[0]), statistics.median(timings[1])


def always(call: Call) -> Callable[[], Call]:
    """The same request every time."""
    return lambda: call


def predict_calls(ids: list[int], seed: int) -> Callable[[], Call]:
    rng = random.Random(seed)
    return lambda: Call("POST", "/predict", {"match_id": rng.choice(ids)})


def predict_rates(servers: tuple[Server, Server], options: RunOptions) -> tuple[float, float]:
    """Requests per second of POST /predict by id at 16 clients on each, runs in turn."""
    done: tuple[list[LatencySummary], list[LatencySummary]] = ([], [])
    calls = [predict_calls(upcoming_ids(server), 3) for server in servers]
    for _ in range(options.repeats):
        for server, call, kept in zip(servers, calls, done, strict=True):
            kept.append(load(server, call, FEW_CLIENTS, options))
    return _rate(done[0]), _rate(done[1])


def _rate(runs: list[LatencySummary]) -> float:
    return statistics.mean(run.per_second for run in runs)


def load(
    server: Server, call: Callable[[], Call], clients: int, options: RunOptions
) -> LatencySummary:
    return run_closed_loop(
        server.base, call, clients=clients, seconds=options.seconds, timeout=options.timeout
    )


def warm_up(server: Server, call: Call) -> None:
    """One request, untimed and whatever its answer, so that a run measures a warm path
    (a fresh worker's cost is measured apart)."""
    httpx.request(call.method, f"{server.base}{call.path}", json=call.body, timeout=300)


def first_and_warm(server: Server) -> tuple[float, float]:
    """A fresh server's first board, as soon as it is ready, and the median of the next."""
    wait_ready(server)
    first = timed_get(server, BOARD_PATH)
    warm = [timed_get(server, BOARD_PATH) for _ in range(WARM_POLLS)]
    return first, statistics.median(warm)


def history_growth(servers: tuple[Server, Server], options: RunOptions) -> list[Comparison]:
    """Each track-record page's p50 at one client, on the season files' history and on
    4.4 times it."""
    comparisons = []
    for path in HISTORY_PAGES:
        call = Call("GET", path)
        for server in servers:
            warm_up(server, call)
        medians = [load(server, always(call), 1, options).p50_ms for server in servers]
        comparisons.append(
            Comparison(
                what=f"`GET {path}` p50 at one client",
                reference_label="1x",
                reference=medians[0],
                measured_label="4.4x",
                measured=medians[1],
                unit="ms",
            )
        )
    return comparisons


def anonymous_endpoints(server: Server, match_id: int, version_id: int) -> list[Call]:
    """Every endpoint a viewer may call: the OpenAPI's GET operations that need no key and
    POST /predict by id, then the dashboard's and the operators' GET routes; path
    parameters filled with an upcoming match and the active version."""
    from app.api.routers import dashboard, ops

    filled = {"{match_id}": str(match_id), "{version_id}": str(version_id)}
    schema = get(server, "/openapi.json").json()
    paths = [
        path
        for path, operations in schema["paths"].items()
        if "get" in operations and not operations["get"].get("security")
    ]
    routes = [
        route.path  # type: ignore[attr-defined]
        for router in (dashboard.router, ops.router)
        for route in router.routes
        if "GET" in getattr(route, "methods", set())
    ]
    calls = [Call("POST", "/predict", {"match_id": match_id})]
    for path in [*paths, *routes]:
        for name, value in filled.items():
            path = path.replace(name, value)
        if "{" not in path:
            calls.append(Call("GET", path))
    return calls


def endpoint_runs(server: Server, calls: list[Call], options: RunOptions) -> list[EndpointRun]:
    runs = []
    for clients in (FEW_CLIENTS, MANY_CLIENTS):
        for call in calls:
            warm_up(server, call)
            latency = load(server, always(call), clients, options)
            runs.append(
                EndpointRun(
                    endpoint=f"{call.method} {call.path}",
                    clients=clients,
                    latency=Latency(**vars(latency)),
                    worker_mib_after=largest_worker_mib(server),
                )
            )
            print(f"  {call.method} {call.path} at {clients}: {latency}", flush=True)
    return runs


def configured_caches_mib() -> float:
    """What the settings allow the caches to hold, in MiB: every ``*cache*`` setting in
    bytes or MiB (none yet: 0)."""
    total = 0.0
    for name, value in Settings().model_dump().items():
        if "cache" in name and isinstance(value, (int, float)):
            if name.endswith("_bytes"):
                total += value / MIB
            elif name.endswith("_mib"):
                total += value
    return total


# ---------------------------------------------------------------- shared boards


def shared_boards(url: str, options: RunOptions) -> SharedBoards:
    if "redis_url" not in Settings.model_fields:
        return SharedBoards(
            replicas=REPLICAS,
            workers=WORKERS,
            changes=options.changes,
            builds=None,
            note="The code measured has no `ODDSBOOST_REDIS_URL` setting.",
        )
    redis_url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    flush_redis(redis_url)
    with ExitStack() as stack:
        replicas = [
            stack.enter_context(served(url, {"ODDSBOOST_REDIS_URL": redis_url}))
            for _ in range(REPLICAS)
        ]
        builds = _builds_over_changes(replicas, options.changes)
    return SharedBoards(
        replicas=REPLICAS,
        workers=WORKERS,
        changes=options.changes,
        builds=builds,
        note=f"Counted from `{BUILD_METRIC}` on every replica's `/metrics`."
        if builds is not None
        else f"No `{BUILD_METRIC}` in `/metrics`.",
    )


def _builds_over_changes(replicas: list[Server], changes: int) -> int | None:
    for replica in replicas:
        wait_ready(replica)
    _poll_everywhere(replicas)
    before = _builds(replicas)
    match_id = upcoming_ids(replicas[0])[0]
    for change in range(changes):
        new_quote(replicas[change % len(replicas)], match_id)
        _poll_everywhere(replicas)
    after = _builds(replicas)
    return None if before is None or after is None else after - before


def _poll_everywhere(replicas: list[Server]) -> None:
    """Polls enough for every worker of every replica to answer some."""
    for _ in range(4 * WORKERS):
        for replica in replicas:
            get(replica, BOARD_PATH)


def _builds(replicas: list[Server]) -> int | None:
    total = 0.0
    for replica in replicas:
        lines = get(replica, "/metrics").text.splitlines()
        counted = [line for line in lines if line.startswith(BUILD_METRIC)]
        if not counted:
            return None
        total += sum(float(line.rsplit(" ", 1)[1]) for line in counted)
    return round(total)


def flush_redis(url: str) -> None:
    """Empty the benchmark's own Redis database (RESP spoken directly: no client needed)."""
    parts = urlsplit(url)
    database = parts.path.strip("/") or "0"
    commands = [("SELECT", database), ("FLUSHDB",)]
    payload = b"".join(
        f"*{len(words)}\r\n".encode()
        + b"".join(f"${len(word)}\r\n{word}\r\n".encode() for word in words)
        for words in commands
    )
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 5) as link:
        link.sendall(payload)
        link.recv(1024)


# ---------------------------------------------------------------- the run


@dataclass(frozen=True)
class Measured:
    """What one run measured, before it is told where and when."""

    comparisons: tuple[Comparison, ...]
    endpoints: tuple[EndpointRun, ...]
    memory: Memory
    shared: SharedBoards


def measure(urls: dict[str, str], build: BuildOptions, options: RunOptions) -> Measured:
    one, many = matchday_names(build)
    first_history, grown = HISTORY
    comparisons: list[Comparison] = []
    with served(urls[one]) as single, served(urls[many]) as snapshots:
        wait_ready(single)
        wait_ready(snapshots)
        reference, measured = cold_boards((single, snapshots), options.cold_polls)
        comparisons.append(
            Comparison(
                what=f"cold `GET {BOARD_PATH}`",
                reference_label="1 snapshot",
                reference=reference,
                measured_label=f"{build.snapshots} snapshots",
                measured=measured,
                unit="ms",
                aim_at_most=1.5,
            )
        )
        print(f"cold boards: {reference:.0f} ms, {measured:.0f} ms", flush=True)
        reference, measured = predict_rates((single, snapshots), options)
        comparisons.append(
            Comparison(
                what=f"`POST /predict` by id at {FEW_CLIENTS} clients",
                reference_label="1 snapshot",
                reference=reference,
                measured_label=f"{build.snapshots} snapshots",
                measured=measured,
                unit="req/s",
                aim_at_least=0.8,
            )
        )
        print(f"predict: {reference:.0f} req/s, {measured:.0f} req/s", flush=True)
    with served(urls[grown]) as server:
        first, warm = first_and_warm(server)
        idle = largest_worker_mib(server)
        comparisons.append(
            Comparison(
                what=f"a fresh worker's first `GET {BOARD_PATH}` (4.4x)",
                reference_label="warm",
                reference=warm,
                measured_label="first",
                measured=first,
                unit="ms",
                aim_at_most=2.0,
            )
        )
        print(f"first board {first:.0f} ms, warm {warm:.0f} ms; idle {idle:.0f} MiB", flush=True)
        with served(urls[first_history]) as smaller:
            wait_ready(smaller)
            comparisons.extend(history_growth((smaller, server), options))
        ids = upcoming_ids(server)
        version = get(server, "/models/active").json()["id"]
        endpoints = endpoint_runs(server, anonymous_endpoints(server, ids[0], version), options)
    memory = Memory(
        idle_mib=idle,
        after_load_mib=max(run.worker_mib_after for run in endpoints),
        configured_caches_mib=configured_caches_mib(),
    )
    return Measured(
        comparisons=tuple(comparisons),
        endpoints=tuple(endpoints),
        memory=memory,
        shared=shared_boards(urls[grown], options),
    )


def _database_row(name: str, url: str) -> DatabaseRow:
    facts = facts_of(url)
    return DatabaseRow(
        name=name, matches=facts.matches, quotes=facts.quotes, log_entries=facts.log_entries
    )


def main() -> None:
    args = arguments()
    os.environ.setdefault("ODDSBOOST_DATA_DIR", str(Path("../shared/data").resolve()))
    started = time.monotonic()
    store = store_for(args.postgres_url)
    if args.forget:
        remove_all(store)
        store = store_for(args.postgres_url)
    build, options = build_options(args), run_options(args)
    built = prepared(store, build)
    print(f"databases ready after {time.monotonic() - started:.0f} s", flush=True)
    before = load_average()
    with working_copies(store, built) as urls:
        measured = measure(urls, build, options)
        databases = tuple(_database_row(name, url) for name, url in urls.items())
    run = BackendRun(
        backend=store.backend,
        measured=provenance(before, described_options(args, build, options)),
        databases=databases,
        comparisons=measured.comparisons,
        endpoints=measured.endpoints,
        memory=measured.memory,
        shared=measured.shared,
    )
    figures = with_run(load_figures(), run)
    print(render_block(figures))
    if not args.no_write:
        save(figures)
    print(f"done in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
