"""The track record's pages under load, on every season file and on ten times that log.

The databases, on SQLite (a file) or, when ``ODDSBOOST_BENCH_POSTGRES_URL`` (or
``--postgres-url``) names a PostgreSQL server, on that server:

* **1x**: every season file under ``$ODDSBOOST_DATA_DIR/football-data`` imported
  (``oddsboost import football-data``), ``oddsboost refit --until 2019-06-01``, then
  ``oddsboost track-record rebuild --from 2000-01-01 --to 2020-01-01`` (43,203 log entries
  from the 110 files);
* **10x**: a copy of the first in which, in SQL, the competitions, matches and quotes are
  copied nine times, each copy under new competition codes (``E0`` gives ``E0-copy1`` to
  ``E0-copy9``) with the same teams, kickoffs, results and prices, and new ids (the
  original's largest id times the copy's number, added); then the same rebuild, one
  calendar year at a time, logs the copies' matches. Every entry, and whatever the service
  keeps beside its log, is thus written by the service's own code: ten times the entries,
  over ten times the competitions.

Both are built by running the ``oddsboost`` command, and kept (in ``--cache-dir`` for
SQLite, as databases named ``ob_bench_track_record_<key>_<log>`` on the server) under a key
made from the code's newest migration and the season files' contents, so a later run
reuses them and a run on another schema or other data builds them again (and removes the
stale ones).

For each database, each request (``GET /performance``, ``GET /dashboard/track-record``,
``GET /dashboard/model``) and each number of concurrent clients (6, 32) it starts
``oddsboost serve`` (one worker), sends the request once to warm it, reads the server's
RSS, then drives it with ``wrk`` (one connection per wrk thread, so the Lua script times
each request itself) for ``--duration`` seconds. It reports:

* the median and 99th percentile latency (nearest rank) of the requests that ended: answered,
  or unanswered for longer than ``--timeout`` (counted at that rank as "> timeout");
* the errors: every answer but a 2xx, every request unanswered after ``--timeout``, every
  failed connection, read or write;
* the extra memory: the peak RSS of the server's process tree during the run (kernel
  high-water marks reset after the warm-up, and samples every 20 ms) less its RSS after
  start-up and the warm-up request. A server past ``--memory-guard-mb`` is killed (and the
  run stopped) so a slow endpoint cannot take the machine down;
* for each request and number of clients, the growth factor of the median: 10x over 1x.

It prints the figures and, unless ``--quick``, writes them to
``docs/figures/bench_track_record.json`` and renders that file into
``docs/explanation/performance.md`` between its markers (``benchmarks/track_record_figures.py``).
``--quick`` (5 s runs, a 2 s timeout) checks the harness on code where each request takes
seconds; its figures are not written.

Needs ``wrk`` built with LuaJIT, as upstream's and Debian's are (Debian/Ubuntu: ``apt-get
install -y wrk``): the script reads the clock through LuaJIT's FFI.

Run: ``python benchmarks/bench_track_record.py [--quick] [--duration 30 --timeout 10]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

import httpx
from sqlalchemy import Insert, MetaData, Table, create_engine, func, insert, select, text
from sqlalchemy.engine import make_url

from app.db.migrate import head_revision
from app.settings import Settings, settings_environment
from benchmarks.bench_ingest import data_files
from benchmarks.common import ADMIN_KEY, free_port, serve_process
from benchmarks.pages import commit, load_average
from benchmarks.track_record_figures import (
    CLIENTS,
    LOGS,
    REQUESTS,
    BackendRun,
    Cell,
    Figures,
    LogDatabase,
    load_figures,
    render_block,
    save_figures,
    with_run,
    write_block,
)

# Change it when the databases are built differently: the cached ones are then rebuilt.
RECIPE = "1"
REFIT_UNTIL = "2019-06-01"
FIRST_YEAR, END_YEAR = 2000, 2020
COPIES = 10
DATABASE_PREFIX = "ob_bench_track_record_"
DEFAULT_CACHE = Path.home() / ".cache" / "oddsboost" / "bench_track_record"
# A first request on slow code may take long; it must still end.
WARM_UP_SECONDS = 300
SAMPLE_SECONDS = 0.02
# wrk itself ends within two seconds of its duration (its timer runs every two seconds).
WRK_GRACE_SECONDS = 30

# The tables copied for the ten-times log, in the order their rows may be inserted: each
# column shifted by the largest id of the table it refers to, and the columns whose texts
# take the copy's suffix (a unique code; an external id, unique where set).
SHIFTED_COLUMNS = {
    "competitions": {"id": "competitions"},
    "matches": {"id": "matches", "competition_id": "competitions"},
    "odds_quotes": {"id": "odds_quotes", "match_id": "matches"},
    # Keyed by its match (no id of its own): the copies serve the copied quotes.
    "latest_quotes": {"match_id": "matches", "quote_id": "odds_quotes"},
}
SUFFIXED_COLUMNS = {"competitions": ("code",), "matches": ("external_id",)}

# One connection per wrk thread, so request() and response() alternate in each thread's
# Lua state and each request is timed by itself; done() reports every latency, every
# status and how long each request still unanswered at the end had been waiting.
LUA_TIMED_REQUESTS = """
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock_id, bench_timespec *moment);
]]
local moment = ffi.new("bench_timespec")
local CLOCK_MONOTONIC = 1

local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, moment)
  return tonumber(moment.tv_sec) * 1000 + tonumber(moment.tv_nsec) / 1e6
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  latencies = {}
  statuses = {}
  sent_at = -1
end

function request()
  sent_at = now_ms()
  return wrk.format("GET", "%(path)s")
end

function response(status, headers, body)
  latencies[#latencies + 1] = now_ms() - sent_at
  statuses[#statuses + 1] = status
  sent_at = -1
end

function done(summary, latency, requests)
  local finished = now_ms()
  local answered, codes, pending = {}, {}, {}
  for _, thread in ipairs(threads) do
    for _, value in ipairs(thread:get("latencies")) do
      answered[#answered + 1] = string.format("%%.3f", value)
    end
    for _, value in ipairs(thread:get("statuses")) do
      codes[#codes + 1] = tostring(value)
    end
    local sent = thread:get("sent_at")
    if sent >= 0 then
      pending[#pending + 1] = string.format("%%.3f", finished - sent)
    end
  end
  local e = summary.errors
  io.write('RESULT {"latencies_ms": [' .. table.concat(answered, ",") ..
    '], "statuses": [' .. table.concat(codes, ",") ..
    '], "pending_ms": [' .. table.concat(pending, ",") ..
    '], "socket_errors": ' .. (e.connect + e.read + e.write) .. '}\\n')
end
"""


# ---------------------------------------------------------------- the databases


class Store(Protocol):
    """Where the databases are kept: files in a directory, or a PostgreSQL server."""

    backend: str

    def url(self, name: str) -> str: ...

    def exists(self, name: str) -> bool: ...

    def staged(self, name: str, template: str | None) -> AbstractContextManager[str]: ...

    def forget_all_but(self, key: str) -> None: ...


@dataclass(frozen=True)
class Database:
    """One of the two databases: ``1x`` or ``10x``, and where it is."""

    log: str
    url: str


class SqliteStore:
    """Database files in a directory; a database being built has a name of its own until
    it is complete."""

    backend = "sqlite"

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}.db"

    def url(self, name: str) -> str:
        return f"sqlite:///{self._path(name)}"

    def exists(self, name: str) -> bool:
        return self._path(name).is_file()

    @contextmanager
    def staged(self, name: str, template: str | None) -> Iterator[str]:
        staging = self._path(f"{name}.building")
        _remove_sqlite(staging)
        if template is not None:
            # The backup API copies what a WAL file beside the template still holds.
            with (
                closing(sqlite3.connect(self._path(template))) as source,
                closing(sqlite3.connect(staging)) as target,
            ):
                source.backup(target)
        try:
            yield f"sqlite:///{staging}"
        except BaseException:
            _remove_sqlite(staging)
            raise
        with closing(sqlite3.connect(staging)) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(staging, self._path(name))
        _remove_sqlite(staging)

    def forget_all_but(self, key: str) -> None:
        for path in self.directory.glob(f"{DATABASE_PREFIX}*.db"):
            if key not in path.name:
                _remove_sqlite(path)


def _remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", ".refit-lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


class PostgresStore:
    """Databases on the server of ``server_url``; one being built has a name of its own
    until it is complete."""

    backend = "postgresql"

    def __init__(self, server_url: str) -> None:
        self.server = make_url(server_url)
        self.admin = create_engine(self.server, isolation_level="AUTOCOMMIT")

    def url(self, name: str) -> str:
        return self.server.set(database=name).render_as_string(hide_password=False)

    def exists(self, name: str) -> bool:
        with self.admin.connect() as connection:
            found = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            )
            return found.first() is not None

    @contextmanager
    def staged(self, name: str, template: str | None) -> Iterator[str]:
        staging = f"{name}_building"
        self._execute(f'DROP DATABASE IF EXISTS "{staging}" WITH (FORCE)')
        copied = "" if template is None else f' TEMPLATE "{template}"'
        self._execute(f'CREATE DATABASE "{staging}"{copied}')
        try:
            yield self.url(staging)
        except BaseException:
            self._execute(f'DROP DATABASE IF EXISTS "{staging}" WITH (FORCE)')
            raise
        self._execute(f'ALTER DATABASE "{staging}" RENAME TO "{name}"')

    def forget_all_but(self, key: str) -> None:
        with self.admin.connect() as connection:
            names = connection.execute(
                text("SELECT datname FROM pg_database WHERE datname LIKE :prefix"),
                {"prefix": f"{DATABASE_PREFIX}%"},
            ).scalars()
            stale = [name for name in names if key not in name]
        for name in stale:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _execute(self, statement: str) -> None:
        with self.admin.connect() as connection:
            connection.execute(text(statement))


def prepared_databases(store: Store, files: list[Path]) -> list[Database]:
    """The 1x and 10x databases, built unless the store holds them for these files and
    this schema."""
    key = cache_key(files)
    store.forget_all_but(key)
    first, tenfold = (f"{DATABASE_PREFIX}{key}_{log}" for log in LOGS)
    if not store.exists(first):
        print(f"building the 1x database ({store.backend}, {len(files)} season files)")
        with store.staged(first, None) as url:
            build_first(url, files)
    if not store.exists(tenfold):
        print(f"building the 10x database ({store.backend})")
        with store.staged(tenfold, first) as url:
            build_tenfold(url)
    return [
        Database(log, store.url(name)) for log, name in zip(LOGS, (first, tenfold), strict=True)
    ]


def cache_key(files: list[Path]) -> str:
    """What the databases are made of: the build recipe, the schema, the season files."""
    digest = hashlib.sha256(f"{RECIPE}|{head_revision()}".encode())
    for path in files:
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def oddsboost(url: str, *arguments: str) -> None:
    """Run the ``oddsboost`` command on the database at ``url``."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "app", *arguments],
        # Wide enough that the command's last line is its whole summary.
        env={**os.environ, "ODDSBOOST_DATABASE_URL": url, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        check=False,
    )
    files = [argument for argument in arguments if argument.endswith(".csv")]
    named = [argument for argument in arguments if argument not in files]
    command = " ".join(named) + (f" ({len(files)} files)" if files else "")
    if done.returncode != 0:
        raise RuntimeError(f"oddsboost {command} failed:\n{done.stderr}")
    lines = done.stdout.strip().splitlines()
    summary = f": {lines[-1].strip()}" if lines else ""
    print(f"  oddsboost {command}, {time.perf_counter() - started:.0f} s{summary}", flush=True)


def build_first(url: str, files: list[Path]) -> None:
    oddsboost(url, "migrate")
    oddsboost(url, "import", "football-data", *(str(path) for path in files))
    oddsboost(url, "refit", "--until", REFIT_UNTIL)
    oddsboost(
        url,
        "track-record",
        "rebuild",
        "--from",
        f"{FIRST_YEAR}-01-01",
        "--to",
        f"{END_YEAR}-01-01",
    )
    analyse(url)


def build_tenfold(url: str) -> None:
    copy_under_codes(url, COPIES)
    for year in range(FIRST_YEAR, END_YEAR):
        oddsboost(
            url, "track-record", "rebuild", "--from", f"{year}-01-01", "--to", f"{year + 1}-01-01"
        )
    analyse(url)


def copy_under_codes(url: str, copies: int) -> None:
    """Make the competitions, matches and quotes of the database ``copies`` times what they
    are, each copy under new competition codes, in one transaction. Every column is copied
    (the ones a later schema adds too); ids are shifted past the originals'."""
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            metadata = MetaData()
            metadata.reflect(connection, only=list(SHIFTED_COLUMNS))
            tables = [metadata.tables[name] for name in SHIFTED_COLUMNS]
            largest = {
                table.name: connection.scalar(select(func.max(table.c.id))) or 0
                for table in tables
                if "id" in table.c
            }
            for copy in range(1, copies):
                for table in tables:
                    connection.execute(_copied(table, copy, largest))
            if connection.dialect.name == "postgresql":
                for table in (table for table in tables if "id" in table.c):
                    # Rows were inserted with their ids: the next id must come after them.
                    connection.execute(
                        text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                            f"(SELECT max(id) FROM {table.name}))"
                        )
                    )
    finally:
        engine.dispose()


def _copied(table: Table, copy: int, largest: dict[str, int]) -> Insert:
    """INSERT ... SELECT of the original rows of ``table`` as copy number ``copy``."""
    shifted = SHIFTED_COLUMNS[table.name]
    suffixed = SUFFIXED_COLUMNS.get(table.name, ())
    values = []
    for column in table.columns:
        if column.name in shifted:
            value = column + copy * largest[shifted[column.name]]
        elif column.name in suffixed:
            # NULL stays NULL: concatenating a text to NULL gives NULL on both backends.
            value = column + f"-copy{copy}"
        else:
            value = column
        values.append(value.label(column.name))
    # The originals: by their own id, or by the id they are keyed by.
    key = "id" if "id" in table.c else next(iter(shifted))
    originals = select(*values).where(table.c[key] <= largest[shifted[key]])
    return insert(table).from_select([column.name for column in table.columns], originals)


def analyse(url: str) -> None:
    """Refresh PostgreSQL's statistics after the bulk writes, as autovacuum soon would; on
    SQLite nothing (the service never runs ANALYZE there)."""
    if make_url(url).get_backend_name() != "postgresql":
        return
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
    finally:
        engine.dispose()


def described(database: Database) -> LogDatabase:
    engine = create_engine(database.url)
    try:
        with engine.connect() as connection:
            counts = {
                table: connection.scalar(text(f"SELECT count(*) FROM {table}")) or 0
                for table in ("prediction_log", "matches", "odds_quotes")
            }
    finally:
        engine.dispose()
    return LogDatabase(
        log=database.log,
        entries=counts["prediction_log"],
        matches=counts["matches"],
        quotes=counts["odds_quotes"],
    )


# ---------------------------------------------------------------- one run


@dataclass(frozen=True)
class RunSettings:
    duration_seconds: int
    timeout_seconds: int
    memory_guard_mb: int


@dataclass(frozen=True)
class WrkRequests:
    """What the Lua script reports: each answered request's latency and status, how long
    each request still unanswered at the end had waited, and failed socket operations."""

    latencies_ms: list[float]
    statuses: list[int]
    pending_ms: list[float]
    socket_errors: int


@dataclass(frozen=True)
class Outcome:
    requests: int
    median_ms: float | None
    p99_ms: float | None
    errors: int
    unfinished: int


def nearest_rank(values: list[float], percent: float) -> float | None:
    """The nearest-rank percentile; None for no values or an infinite one (a request
    unanswered within the timeout)."""
    if not values:
        return None
    ordered = sorted(values)
    value = ordered[max(math.ceil(percent / 100 * len(ordered)), 1) - 1]
    return None if math.isinf(value) else value


def summarised(requests: WrkRequests, timeout_seconds: float) -> Outcome:
    """A request answered after the timeout, or still unanswered past it at the end, is an
    error and ranks as slower than every answer; one answered with anything but a 2xx is
    an error at its latency. A request still within the timeout at the end is unfinished."""
    limit = timeout_seconds * 1000
    ended = [math.inf if latency > limit else latency for latency in requests.latencies_ms]
    late = sum(age > limit for age in requests.pending_ms)
    ended += [math.inf] * late
    failed = sum(
        latency > limit or not 200 <= status < 300
        for latency, status in zip(requests.latencies_ms, requests.statuses, strict=True)
    )
    return Outcome(
        requests=len(ended),
        median_ms=nearest_rank(ended, 50),
        p99_ms=nearest_rank(ended, 99),
        errors=failed + late + requests.socket_errors,
        unfinished=len(requests.pending_ms) - late,
    )


def lua_script(path: str) -> str:
    return LUA_TIMED_REQUESTS % {"path": path}


def run_wrk(
    base: str, path: str, clients: int, settings: RunSettings, interrupt: threading.Event
) -> WrkRequests:
    """``clients`` connections sending GET ``path`` for the run's duration. ``interrupt``
    ends wrk early (it still reports); a wrk that does not end in time is killed."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(lua_script(path))
    command = [
        "wrk",
        f"-t{clients}",
        f"-c{clients}",
        f"-d{settings.duration_seconds}s",
        f"--timeout={settings.timeout_seconds}s",
        "-s",
        handle.name,
        base,
    ]
    try:
        output = _wrk_output(command, settings.duration_seconds + WRK_GRACE_SECONDS, interrupt)
    finally:
        os.unlink(handle.name)
    line = next((line for line in output.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk reported nothing:\n{output}")
    return WrkRequests(**json.loads(line.removeprefix("RESULT ")))


def _wrk_output(command: list[str], seconds: float, interrupt: threading.Event) -> str:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + seconds
    interrupted = False
    while True:
        try:
            output, _ = process.communicate(timeout=0.2)
            return output
        except subprocess.TimeoutExpired:
            if interrupt.is_set() and not interrupted:
                process.send_signal(signal.SIGINT)
                interrupted = True
            if time.monotonic() > deadline:
                process.kill()
                process.communicate()
                raise RuntimeError(f"wrk did not end within {seconds:.0f} s") from None


# ---------------------------------------------------------------- the server's memory


def process_tree(root: int) -> list[int]:
    """``root`` and every process descended from it, as /proc lists them now."""
    found, waiting = [], [root]
    while waiting:
        pid = waiting.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                waiting.extend(int(child) for child in (task / "children").read_text().split())
            except OSError:
                continue
    return found


def status_kib(pid: int, field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/PID/status in KiB; 0 for a process gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def tree_kib(root: int, field: str = "VmRSS") -> int:
    return sum(status_kib(pid, field) for pid in process_tree(root))


def reset_peaks(root: int) -> None:
    """Reset each process's high-water mark (VmHWM) to its present RSS."""
    for pid in process_tree(root):
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        except OSError:
            continue  # the samples alone then give the peak


class MemoryWatch:
    """The RSS of a process tree as a run starts (``baseline_kib``) and at its peak while
    the run lasts; kills the tree and sets ``tripped`` when it passes ``guard_kib``."""

    def __init__(self, root: int, guard_kib: int) -> None:
        self.root = root
        self.guard_kib = guard_kib
        self.baseline_kib = 0
        self.sampled_peak_kib = 0
        self.tripped = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> MemoryWatch:
        reset_peaks(self.root)
        # Read after the reset, so no high-water mark can be below it.
        self.baseline_kib = tree_kib(self.root)
        self.sampled_peak_kib = self.baseline_kib
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def peak_kib(self) -> int:
        """The larger of the sampled peak and the sum of the processes' own high-water
        marks (at least the tree's peak, as each process's is at least its part of it)."""
        return max(self.sampled_peak_kib, tree_kib(self.root, "VmHWM"))

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            rss = tree_kib(self.root)
            self.sampled_peak_kib = max(self.sampled_peak_kib, rss)
            if rss > self.guard_kib:
                for pid in reversed(process_tree(self.root)):
                    os.kill(pid, signal.SIGKILL)
                self.tripped.set()
                return


# ---------------------------------------------------------------- measuring


def server_environment(url: str) -> dict[str, str]:
    settings = Settings(database_url=url, admin_api_key=ADMIN_KEY)
    return {
        **os.environ,
        **settings_environment(settings),
        "ODDSBOOST_ADMIN_API_KEY": ADMIN_KEY,
    }


def warm_up(base: str, path: str) -> float:
    """Send the first request (it must succeed); its time in milliseconds."""
    started = time.perf_counter()
    answer = httpx.get(f"{base}{path}", timeout=WARM_UP_SECONDS)
    if not answer.is_success:
        raise RuntimeError(f"GET {path} answered {answer.status_code}: {answer.text[:500]}")
    return (time.perf_counter() - started) * 1000


def measure(database: Database, path: str, clients: int, settings: RunSettings) -> Cell:
    """One run on a server of its own: started, warmed by one request, driven by wrk."""
    port = free_port()
    command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", "1"]
    command.append("--no-migrate")
    with serve_process(command, server_environment(database.url), port, "/health") as (
        base,
        server,
    ):
        first_request_ms = warm_up(base, path)
        with MemoryWatch(server.pid, settings.memory_guard_mb * 1024) as watch:
            requests = run_wrk(base, path, clients, settings, watch.tripped)
        baseline_kib, peak_kib = watch.baseline_kib, watch.peak_kib()
    outcome = summarised(requests, settings.timeout_seconds)
    return Cell(
        log=database.log,
        request=path,
        clients=clients,
        first_request_ms=first_request_ms,
        requests=outcome.requests,
        median_ms=outcome.median_ms,
        p99_ms=outcome.p99_ms,
        errors=outcome.errors,
        unfinished=outcome.unfinished,
        baseline_mb=baseline_kib / 1024,
        extra_mb=(peak_kib - baseline_kib) / 1024,
        memory_guard_tripped=watch.tripped.is_set(),
    )


def shown(cell: Cell) -> str:
    median = "> timeout" if cell.median_ms is None else f"{cell.median_ms:.1f} ms"
    guard = " (memory guard: server killed)" if cell.memory_guard_tripped else ""
    return (
        f"  {cell.log:>3} GET {cell.request:<24} {cell.clients:>2} clients: first request "
        f"{cell.first_request_ms / 1000:.1f} s, then {cell.requests} requests, median {median}, "
        f"{cell.errors} errors, {cell.unfinished} unfinished; server {cell.baseline_mb:.0f} MB "
        f"+{cell.extra_mb:.1f} MB{guard}"
    )


def wrk_version() -> str:
    output = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    words = (output.stdout + output.stderr).split()
    return f"`wrk` {words[1]}" if len(words) > 1 else "`wrk`"


# ---------------------------------------------------------------- the command


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="5 s runs, a 2 s timeout; nothing written."
    )
    parser.add_argument("--duration", type=int, help="Seconds per run [30; 5 with --quick].")
    parser.add_argument(
        "--timeout", type=int, help="Seconds before a request is an error [10; 2 with --quick]."
    )
    parser.add_argument(
        "--memory-guard-mb",
        type=int,
        default=4096,
        help="Kill a server whose RSS passes this, and stop its run [4096].",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("ODDSBOOST_BENCH_POSTGRES_URL"),
        help="A PostgreSQL server to keep the databases on [ODDSBOOST_BENCH_POSTGRES_URL; "
        "else SQLite].",
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="SQLite's databases.")
    return parser.parse_args()


def run_settings(args: argparse.Namespace) -> RunSettings:
    duration = args.duration or (5 if args.quick else 30)
    timeout = args.timeout or (2 if args.quick else 10)
    if timeout >= duration:
        sys.exit("--timeout must be shorter than --duration: a request must be able to time out")
    return RunSettings(duration, timeout, args.memory_guard_mb)


def main() -> None:
    args = arguments()
    if shutil.which("wrk") is None:
        sys.exit(
            "wrk is not installed; this benchmark drives the server with it: apt-get install -y wrk"
        )
    settings = run_settings(args)
    store: Store = (
        PostgresStore(args.postgres_url) if args.postgres_url else SqliteStore(args.cache_dir)
    )
    databases = prepared_databases(store, data_files())
    described_databases = tuple(described(database) for database in databases)
    before = load_average()
    cells = []
    for database in databases:
        for path in REQUESTS:
            for clients in CLIENTS:
                cells.append(measure(database, path, clients, settings))
                print(shown(cells[-1]), flush=True)
    run = BackendRun(
        backend=store.backend,
        measured_on=dt.date.today().isoformat(),
        commit=commit(),
        cores=os.cpu_count() or 0,
        load_average_before=before,
        load_average_after=load_average(),
        tool=wrk_version(),
        duration_seconds=settings.duration_seconds,
        timeout_seconds=settings.timeout_seconds,
        memory_guard_mb=settings.memory_guard_mb,
        databases=described_databases,
        cells=tuple(cells),
    )
    figures = with_run(load_figures(), run)
    print()
    print(render_block(Figures(runs={run.backend: run})))
    if args.quick:
        print("--quick: a check of the harness; the performance page is left as it is")
        return
    save_figures(figures)
    write_block(load_figures())
    print("written: docs/figures/bench_track_record.json, docs/explanation/performance.md")


if __name__ == "__main__":
    main()
