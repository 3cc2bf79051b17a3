"""The figures of ``bench_track_record.py``: their records, the JSON file that keeps them
(``docs/figures/bench_track_record.json``) and the block of ``docs/explanation/performance.md``
rendered from that file by the one writer of generated blocks (``benchmarks/pages.py``).

Nothing here measures anything: this module only reads, renders and writes.
"""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks import pages
from benchmarks.pages import PERFORMANCE_PAGE, Record

NAME = "bench_track_record"
FIGURES_FILE = pages.figures_file(NAME)
START_MARKER, END_MARKER = pages.markers(NAME)

# The aims of each request, with 6 and with 32 concurrent clients, on either log.
AIM_MEDIAN_MS = 200.0
AIM_EXTRA_MB = 30.0
REQUESTS = ("/performance", "/dashboard/track-record", "/dashboard/model")
CLIENTS = (6, 32)
LOGS = ("1x", "10x")

# A page made from nothing starts with its title.
INTRO = "# Performance\n\n"


class LogDatabase(Record):
    """One of the two databases: its track record's size and what it was made from."""

    log: str
    entries: int
    matches: int
    quotes: int


class Cell(Record):
    """One run: a request, a number of concurrent clients, one database.

    ``requests`` counts the requests that ended in the run (answered, or unanswered past the
    timeout); ``median_ms`` and ``p99_ms`` are their nearest-rank percentiles, None when that
    rank is a request unanswered within the timeout, or when no request ended.
    ``unfinished`` requests were still within the timeout when the run stopped: neither
    figures nor errors. ``first_request_ms`` is the time of the request that warmed the
    server, ``baseline_mb`` its RSS after start-up and that request, ``extra_mb`` its peak
    RSS during the run less ``baseline_mb`` (when the memory guard stopped the server, at
    least that).
    """

    log: str
    request: str
    clients: int
    first_request_ms: float
    requests: int
    median_ms: float | None
    p99_ms: float | None
    errors: int
    unfinished: int
    baseline_mb: float
    extra_mb: float
    memory_guard_tripped: bool


class BackendRun(Record):
    """Every run on one backend, and the conditions they ran in."""

    backend: str
    measured_on: str
    commit: str
    cores: int
    load_average_before: str
    load_average_after: str
    tool: str
    duration_seconds: float
    timeout_seconds: float
    memory_guard_mb: float
    databases: tuple[LogDatabase, ...]
    cells: tuple[Cell, ...]


class Figures(Record):
    """The latest run on each backend, by backend name (``sqlite``, ``postgresql``)."""

    runs: dict[str, BackendRun]


def load_figures(path: Path = FIGURES_FILE) -> Figures | None:
    return pages.load_record(Figures, path)


def save_figures(figures: Figures, path: Path = FIGURES_FILE) -> None:
    pages.save_record(figures, path)


def with_run(figures: Figures | None, run: BackendRun) -> Figures:
    """``figures`` with ``run`` as its backend's latest run (the other backend's kept)."""
    runs = {} if figures is None else dict(figures.runs)
    runs[run.backend] = run
    return Figures(runs=dict(sorted(runs.items())))


def aims_met(cell: Cell) -> bool:
    """The median under its aim, the extra memory under its aim, and no request failed."""
    return (
        cell.requests > 0
        and cell.median_ms is not None
        and cell.median_ms < AIM_MEDIAN_MS
        and not cell.memory_guard_tripped
        and cell.extra_mb < AIM_EXTRA_MB
        and cell.errors == 0
    )


def growth_factor(run: BackendRun, request: str, clients: int) -> float | None:
    """The median on the ten-times log over the median on the first (None: either is
    unknown)."""
    medians = {
        cell.log: cell.median_ms
        for cell in run.cells
        if cell.request == request and cell.clients == clients
    }
    small, large = medians.get("1x"), medians.get("10x")
    if small is None or large is None or small <= 0:
        return None
    return large / small


def render_block(figures: Figures | None) -> str:
    """The Markdown between the markers, for ``figures`` (None: nothing measured yet)."""
    if figures is None or not figures.runs:
        return (
            "No figures yet: run `.venv/bin/python benchmarks/bench_track_record.py` "
            "to measure them.\n"
        )
    return "\n".join(_render_run(run) for run in figures.runs.values())


def _render_run(run: BackendRun) -> str:
    met = sum(aims_met(cell) for cell in run.cells)
    lines = [
        f"### {pages.backend_title(run.backend)}",
        "",
        f"Measured on {run.measured_on} at commit `{run.commit}`, {run.cores} cores (load "
        f"average {run.load_average_before} before, {run.load_average_after} after): "
        f"`oddsboost serve` with one worker, driven by {run.tool} for "
        f"{_number(run.duration_seconds)} s per run. A request unanswered after "
        f"{_number(run.timeout_seconds)} s is an error, as is any answer but a 2xx. Server "
        "MB: its RSS after start-up and one request of the same kind; extra MB: its peak RSS "
        "during the run less that.",
        "",
        "| log | entries | matches | quotes |",
        "|---|---|---|---|",
        *(
            f"| {db.log} | {db.entries:,} | {db.matches:,} | {db.quotes:,} |"
            for db in run.databases
        ),
        "",
        "| log | request | clients | requests | median ms | p99 ms | errors | server MB | "
        "extra MB | aims met |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(_render_cell(run, cell) for cell in run.cells),
        "",
        "The median with ten times the log over the median with the first (growth factor):",
        "",
        "| request | " + " | ".join(f"{clients} clients" for clients in CLIENTS) + " |",
        "|---|" + "---|" * len(CLIENTS),
        *(_render_growth(run, request) for request in REQUESTS),
        "",
        f"Aims (median under {_number(AIM_MEDIAN_MS)} ms, under {_number(AIM_EXTRA_MB)} MB of "
        f"extra memory, no error): met in {met} of {len(run.cells)} runs.",
        "",
    ]
    return "\n".join(lines)


def _render_cell(run: BackendRun, cell: Cell) -> str:
    figures = [
        cell.log,
        f"`GET {cell.request}`",
        str(cell.clients),
        f"{cell.requests:,}",
        _latency(run, cell, cell.median_ms),
        _latency(run, cell, cell.p99_ms),
        f"{cell.errors:,}",
        _mb(cell.baseline_mb),
        f"> {_number(run.memory_guard_mb)}" if cell.memory_guard_tripped else _mb(cell.extra_mb),
        "yes" if aims_met(cell) else "no",
    ]
    return "| " + " | ".join(figures) + " |"


def _render_growth(run: BackendRun, request: str) -> str:
    factors = [growth_factor(run, request, clients) for clients in CLIENTS]
    shown = ["—" if factor is None else f"{factor:.2f}" for factor in factors]
    return f"| `GET {request}` | " + " | ".join(shown) + " |"


def _latency(run: BackendRun, cell: Cell, value: float | None) -> str:
    if cell.requests == 0:
        return "—"
    if value is None:
        return f"> {_number(run.timeout_seconds * 1000)}"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _mb(value: float) -> str:
    return f"{value:.1f}" if abs(value) < 100 else f"{value:,.0f}"


def _number(value: float) -> str:
    """A whole number with thousands separators, or the value to one decimal place."""
    if math.isclose(value, round(value)):
        return f"{round(value):,}"
    return f"{value:,.1f}"


def read_block(text: str) -> str | None:
    """What stands between the markers in ``text`` (None: no markers)."""
    return pages.read_block(text, NAME)


def write_block(figures: Figures | None, path: Path = PERFORMANCE_PAGE) -> None:
    """Render ``figures`` into the page at ``path``, made with its title when missing;
    nothing outside the markers is changed."""
    pages.write_block(path, NAME, render_block(figures), INTRO)
