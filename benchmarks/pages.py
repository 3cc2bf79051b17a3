"""The one writer of the docs' generated blocks.

A benchmark (or the backtest) keeps its figures as JSON under ``docs/figures/`` and renders
them into its page between two markers named after it, ``<!-- name:start -->`` and
``<!-- name:end -->``; nothing outside the markers is touched. ``tests/test_docs_figures.py``
checks that each committed block is the rendering of its committed JSON, so a figure in the
docs is never typed by hand.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

ROOT = Path(__file__).resolve().parents[1]
FIGURES_DIR = ROOT / "docs" / "figures"
PERFORMANCE_PAGE = ROOT / "docs" / "explanation" / "performance.md"
EVALUATION_PAGE = ROOT / "docs" / "explanation" / "evaluation.md"

BACKEND_TITLES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}

RecordT = TypeVar("RecordT", bound=BaseModel)


class Record(BaseModel):
    """A figures file's record: frozen, and refusing fields it does not know."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Provenance(Record):
    """Where and when figures were measured, and with which options."""

    measured_on: str
    commit: str
    machine: str
    load_average_before: str
    load_average_after: str
    options: str


def backend_title(backend: str) -> str:
    return BACKEND_TITLES.get(backend, backend)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def read_block(text: str, name: str) -> str | None:
    """What stands between ``name``'s markers in ``text`` (None: no markers)."""
    start_marker, end_marker = markers(name)
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        return None
    return text[start + len(start_marker) : end].strip("\n") + "\n"


def with_block(text: str, name: str, block: str) -> str:
    """``text`` with ``block`` between ``name``'s markers; the markers and the block are
    appended when ``text`` has none."""
    start_marker, end_marker = markers(name)
    framed = f"{start_marker}\n{block.rstrip()}\n{end_marker}"
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        return text.rstrip("\n") + "\n\n" + framed + "\n" if text.strip() else framed + "\n"
    return text[:start] + framed + text[end + len(end_marker) :]


def write_block(page: Path, name: str, block: str, introduction: str = "") -> None:
    """Write ``block`` between ``name``'s markers in ``page``, made with ``introduction``
    when missing; nothing outside the markers is changed."""
    text = page.read_text() if page.is_file() else introduction
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(with_block(text, name, block))


def figures_file(name: str) -> Path:
    return FIGURES_DIR / f"{name}.json"


def load_record(kind: type[RecordT], path: Path) -> RecordT | None:
    return kind.model_validate_json(path.read_text()) if path.is_file() else None


def save_record(record: BaseModel, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=2) + "\n")


def measure_backends(
    name: str,
    page: Path,
    kind: type[RecordT],
    measure: Callable[[str, str | None], BaseModel],
    render: Callable[[RecordT], str],
) -> None:
    """Measure on SQLite, and on PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` (or the
    test database's URL) names one, keeping the other backend's last run; print the block
    and, without ``--no-write``, write it and its figures (``kind`` holds them as ``runs``)."""
    server_url = os.environ.get("ODDSBOOST_BENCH_POSTGRES_URL") or os.environ.get(
        "ODDSBOOST_TEST_DATABASE_URL"
    )
    backends = ["sqlite"]
    if server_url and server_url.startswith("postgresql"):
        backends.append("postgresql")
    previous = load_record(kind, figures_file(name))
    runs: dict[str, Any] = {} if previous is None else dict(dict(previous)["runs"])
    for backend in backends:
        runs[backend] = measure(backend, server_url)
    figures = kind.model_validate({"runs": dict(sorted(runs.items()))})
    print(render(figures))
    if "--no-write" not in sys.argv[1:]:
        save_record(figures, figures_file(name))
        write_block(page, name, render(figures))
        print(f"written: {figures_file(name)}, {page}")


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes, as /proc/loadavg says it."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def commit() -> str:
    """The commit measured, marked when the code differs from it."""

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", *arguments], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.strip()

    changed = git("status", "--porcelain", "--", "app", "migrations", "pyproject.toml")
    return git("rev-parse", "--short", "HEAD") + (" with uncommitted changes" if changed else "")


def machine() -> str:
    """The cores and the processor, e.g. ``2 cores, x86_64``."""
    return f"{os.cpu_count() or 0} cores, {platform.machine() or 'unknown processor'}"


def provenance(load_average_before: str, options: str) -> Provenance:
    """Today's date, this commit and machine, the load average now and ``before``."""
    return Provenance(
        measured_on=dt.date.today().isoformat(),
        commit=commit(),
        machine=machine(),
        load_average_before=load_average_before,
        load_average_after=load_average(),
        options=options,
    )


def provenance_line(measured: Provenance) -> str:
    return (
        f"Measured on {measured.measured_on} at commit `{measured.commit}`, "
        f"{measured.machine} (load average {measured.load_average_before} before, "
        f"{measured.load_average_after} after); options: {measured.options}."
    )
