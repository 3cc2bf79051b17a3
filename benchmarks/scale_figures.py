"""The figures of the scale benchmark (``bench_scale.py``): each backend's latest run, kept
in ``docs/figures/bench_scale.json`` and rendered, with the aims each figure is held to,
into the block ``bench_scale`` of the performance page by ``benchmarks/pages.py``.

Nothing here measures anything: this module only judges, reads, renders and writes.
"""

from __future__ import annotations

import math

from benchmarks import pages
from benchmarks.pages import PERFORMANCE_PAGE, Provenance, Record, backend_title

NAME = "bench_scale"
FIGURES_FILE = pages.figures_file(NAME)
# The endpoint aims, on the 4.4x database with the matchday: at 16 clients, the median
# under 200 ms and the 99th percentile under 1 s; at 64, no 5xx and the 99th under 2 s.
FEW_CLIENTS, MANY_CLIENTS = 16, 64
FEW_P50_MS, FEW_P99_MS, MANY_P99_MS = 200.0, 1000.0, 2000.0
MEMORY_GROWTH = 2.0


class Latency(Record):
    """A closed-loop run: requests ended, their rate, nearest-rank latencies, errors (5xx
    answers, of which 503s; timeouts, failed connections and 4xx)."""

    requests: int
    per_second: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    server_errors: int
    unavailable: int
    other_errors: int


class Comparison(Record):
    """A figure against its reference, measured in the same run, and the ratio aimed at."""

    what: str
    reference_label: str
    reference: float
    measured_label: str
    measured: float
    unit: str
    aim_at_most: float | None = None
    aim_at_least: float | None = None

    @property
    def ratio(self) -> float:
        return self.measured / self.reference if self.reference else math.nan

    @property
    def met(self) -> bool | None:
        if self.aim_at_most is not None:
            return self.ratio <= self.aim_at_most
        if self.aim_at_least is not None:
            return self.ratio >= self.aim_at_least
        return None


class EndpointRun(Record):
    """One endpoint under ``clients`` closed-loop clients, and the largest worker after."""

    endpoint: str
    clients: int
    latency: Latency
    worker_mib_after: float

    @property
    def met(self) -> bool | None:
        if self.clients == FEW_CLIENTS:
            return self.latency.p50_ms < FEW_P50_MS and self.latency.p99_ms < FEW_P99_MS
        if self.clients == MANY_CLIENTS:
            return self.latency.server_errors == 0 and self.latency.p99_ms < MANY_P99_MS
        return None


class Memory(Record):
    """The largest worker idle, and after any load run, against what it may hold."""

    idle_mib: float
    after_load_mib: float
    configured_caches_mib: float

    @property
    def allowed_mib(self) -> float:
        return MEMORY_GROWTH * self.idle_mib + self.configured_caches_mib

    @property
    def met(self) -> bool:
        return self.after_load_mib <= self.allowed_mib


class SharedBoards(Record):
    """Board builds counted on every worker of every replica, over some changes; or why
    they were not counted."""

    replicas: int
    workers: int
    changes: int
    builds: int | None
    note: str

    @property
    def met(self) -> bool | None:
        if self.builds is None:
            return None
        return self.builds <= self.changes


class DatabaseRow(Record):
    name: str
    matches: int
    quotes: int
    log_entries: int


class BackendRun(Record):
    """One backend's latest run."""

    backend: str
    measured: Provenance
    databases: tuple[DatabaseRow, ...]
    comparisons: tuple[Comparison, ...]
    endpoints: tuple[EndpointRun, ...]
    memory: Memory
    shared: SharedBoards


class ScaleFigures(Record):
    runs: tuple[BackendRun, ...]


def load_figures() -> ScaleFigures:
    return pages.load_record(ScaleFigures, FIGURES_FILE) or ScaleFigures(runs=())


def with_run(figures: ScaleFigures, run: BackendRun) -> ScaleFigures:
    """``figures`` with ``run`` in place of its backend's earlier run."""
    kept = [earlier for earlier in figures.runs if earlier.backend != run.backend]
    return ScaleFigures(runs=tuple(sorted([*kept, run], key=lambda each: each.backend)))


def save(figures: ScaleFigures) -> None:
    pages.save_record(figures, FIGURES_FILE)
    pages.write_block(PERFORMANCE_PAGE, NAME, render_block(figures))


# ---------------------------------------------------------------- rendering


def verdict(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "**not met**")


def number(value: float) -> str:
    """A figure with three significant digits, thousands separated."""
    if not math.isfinite(value):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) >= 1 else f"{value:.2g}"


def render_block(figures: ScaleFigures) -> str:
    if not figures.runs:
        return "No run yet.\n"
    return "\n".join(_render_run(run) for run in figures.runs)


def _render_run(run: BackendRun) -> str:
    lines = [
        f"### {backend_title(run.backend)}",
        "",
        pages.provenance_line(run.measured),
        "",
        *_databases(run.databases),
        "",
        *_comparisons(run.comparisons),
        "",
        *_endpoints(run.endpoints),
        "",
        *_summary(run),
        "",
    ]
    return "\n".join(lines)


def _databases(rows: tuple[DatabaseRow, ...]) -> list[str]:
    return [
        "| database | matches | quotes | track-record entries |",
        "|---|---:|---:|---:|",
        *(
            f"| {row.name} | {row.matches:,} | {row.quotes:,} | {row.log_entries:,} |"
            for row in rows
        ),
    ]


def _aim(comparison: Comparison) -> str:
    if comparison.aim_at_most is not None:
        return f"≤ {comparison.aim_at_most:g}"
    if comparison.aim_at_least is not None:
        return f"≥ {comparison.aim_at_least:g}"
    return ""


def _comparisons(comparisons: tuple[Comparison, ...]) -> list[str]:
    return [
        "| what | reference | measured | ratio | aim | |",
        "|---|---:|---:|---:|---:|---|",
        *(
            f"| {each.what} | {each.reference_label}: {number(each.reference)} {each.unit} "
            f"| {each.measured_label}: {number(each.measured)} {each.unit} "
            f"| {number(each.ratio)} | {_aim(each)} | {verdict(each.met)} |"
            for each in comparisons
        ),
    ]


def _endpoints(runs: tuple[EndpointRun, ...]) -> list[str]:
    return [
        "| endpoint | clients | requests | req/s | p50 ms | p99 ms | max ms | 5xx | of them 503 "
        "| other errors | worker MiB after | aim |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(
            f"| `{run.endpoint}` | {run.clients} | {run.latency.requests:,} "
            f"| {number(run.latency.per_second)} | {number(run.latency.p50_ms)} "
            f"| {number(run.latency.p99_ms)} | {number(run.latency.max_ms)} "
            f"| {run.latency.server_errors} | {run.latency.unavailable} "
            f"| {run.latency.other_errors} "
            f"| {run.worker_mib_after:.0f} | {verdict(run.met)} |"
            for run in runs
        ),
    ]


def _summary(run: BackendRun) -> list[str]:
    judged = [each.met for each in run.endpoints if each.met is not None]
    memory, shared = run.memory, run.shared
    builds = "not counted" if shared.builds is None else f"{shared.builds:,} builds"
    return [
        f"* Endpoint aims (at {FEW_CLIENTS} clients p50 < {FEW_P50_MS:.0f} ms and p99 < "
        f"{FEW_P99_MS:.0f} ms; at {MANY_CLIENTS} clients no 5xx and p99 < "
        f"{MANY_P99_MS:.0f} ms): met in {sum(judged)} of {len(judged)} runs.",
        f"* Memory: the largest worker held {memory.idle_mib:.0f} MiB idle and at most "
        f"{memory.after_load_mib:.0f} MiB after a load run; it may hold {MEMORY_GROWTH:g}× "
        f"idle plus {memory.configured_caches_mib:.0f} MiB of configured caches, "
        f"{memory.allowed_mib:.0f} MiB: {verdict(memory.met)}.",
        f"* Boards shared by {shared.replicas} replicas of {shared.workers} workers: "
        f"{builds} over {shared.changes} changes (aim: one build per change, at most "
        f"{shared.changes}){': ' + verdict(shared.met) if shared.met is not None else ''}. "
        f"{shared.note}",
    ]
