"""The figures of the throughput benchmarks (``bench_predict.py``, ``bench_value_bets.py``,
``bench_upcoming.py``): one record per benchmark, kept in ``docs/figures/<benchmark>.json``
and rendered into its block of the performance page by the one writer of generated blocks
(``benchmarks/pages.py``).

Nothing here measures anything: this module only reads, renders and writes.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks import pages
from benchmarks.common import rate
from benchmarks.pages import PERFORMANCE_PAGE, Provenance, Record

INTRO = "# Performance\n\n"


class Scenario(Record):
    """One scenario's runs summed up: requests per second over every run, the medians of
    the runs' p50 and p99 latencies, the errors of all runs; its throughput over the one it
    is compared with, and the ratio it aims at."""

    scenario: str
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    errors: int
    ratio: float | None = None
    aim: float | None = None


class ThroughputRun(Record):
    """A benchmark's latest run: where it ran, what it served, each scenario's figures."""

    benchmark: str
    measured: Provenance
    compared_with: str
    facts: tuple[str, ...]
    scenarios: tuple[Scenario, ...]


def scenario(
    name: str,
    runs: list[dict[str, float]],
    *,
    compared: list[dict[str, float]] | None = None,
    aim: float | None = None,
) -> Scenario:
    """The summary of ``runs`` (as ``run_wrk`` reports them), with its throughput ratio to
    ``compared``'s when given."""
    return Scenario(
        scenario=name,
        requests_per_second=rate(runs),
        p50_ms=statistics.median(run["p50_ms"] for run in runs),
        p99_ms=statistics.median(run["p99_ms"] for run in runs),
        errors=int(sum(run["errors"] for run in runs)),
        ratio=None if compared is None else rate(runs) / rate(compared),
        aim=aim,
    )


def render_block(run: ThroughputRun | None, name: str) -> str:
    """The Markdown between ``name``'s markers (None: nothing measured yet)."""
    if run is None:
        return f"No figures yet: run `.venv/bin/python benchmarks/{name}.py` to measure them.\n"
    lines = [
        pages.provenance_line(run.measured),
        "",
        *(f"* {fact}" for fact in run.facts),
        "",
        f"| scenario | req/s | p50 / p99 ms | errors | ratio to {run.compared_with} | aim |",
        "|---|---:|---:|---:|---:|---:|",
        *(_row(figures) for figures in run.scenarios),
        "",
    ]
    return "\n".join(lines)


def _row(figures: Scenario) -> str:
    ratio = "" if figures.ratio is None else f"{figures.ratio:.2f}"
    aim = "" if figures.aim is None else f"{figures.aim:.2f}"
    return (
        f"| {figures.scenario} | {figures.requests_per_second:,.0f} | "
        f"{_ms(figures.p50_ms)} / {_ms(figures.p99_ms)} | {figures.errors:,} | {ratio} | {aim} |"
    )


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def load_run(name: str, path: Path | None = None) -> ThroughputRun | None:
    return pages.load_record(ThroughputRun, path or pages.figures_file(name))


def publish(run: ThroughputRun, page: Path = PERFORMANCE_PAGE) -> None:
    """Keep ``run`` in its JSON file and render it into its block of ``page``."""
    pages.save_record(run, pages.figures_file(run.benchmark))
    pages.write_block(page, run.benchmark, render_block(run, run.benchmark), INTRO)
    print(f"written: {pages.figures_file(run.benchmark)}, {page}")


def arguments(description: str) -> argparse.Namespace:
    """The options every throughput benchmark takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workers", type=int, default=1, help="Workers per server [1].")
    parser.add_argument("--connections", type=int, default=16, help="Concurrent clients [16].")
    parser.add_argument("--duration", type=int, default=10, help="Seconds per run [10].")
    parser.add_argument(
        "--repeats", type=int, default=1, help="Runs of each scenario, alternated [1]."
    )
    parser.add_argument(
        "--no-write", action="store_true", help="Print the figures; leave the docs as they are."
    )
    parser.add_argument(
        "--block",
        help="Name of the figures' file and block [the benchmark's]; e.g. bench_predict_before "
        "for a run of this script against an earlier commit's code.",
    )
    return parser.parse_args()


def options(args: argparse.Namespace, tool: str) -> str:
    """The options of a run, as its block states them."""
    return (
        f"{tool}, {args.connections} connections, {args.duration} s per run, "
        f"{args.repeats} run(s) of each scenario, {args.workers} worker(s) per server"
    )


def finish(run: ThroughputRun, args: argparse.Namespace) -> None:
    """Print ``run``'s block and, unless ``--no-write``, publish it (under ``--block``'s name
    when given)."""
    if args.block:
        run = run.model_copy(update={"benchmark": args.block})
    print(render_block(run, run.benchmark))
    if not args.no_write:
        publish(run)
