"""Import speed: every football-data.co.uk file against a raw Core executemany of the same rows.

For each backend (SQLite always; PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` or
``ODDSBOOST_TEST_DATABASE_URL`` names a server) this

1. imports all season files under ``$ODDSBOOST_DATA_DIR/football-data`` into a fresh,
   migrated database, the way ``oddsboost import football-data`` does (parse, resolve,
   upsert; one transaction per file), and times it;
2. reads back the normalised rows that import produced (competitions, teams, bookmakers,
   matches, quotes) and inserts exactly those rows into a second fresh, migrated database
   with plain SQLAlchemy Core ``executemany`` in one transaction: the floor;
3. reports rows per second (matches + quotes) of both and the ratio import / raw, in
   ``docs/figures/bench_ingest.json`` (the latest run of each backend) and its block of
   ``docs/explanation/performance.md`` (``--no-write``: printed only).

Run: ``python benchmarks/bench_ingest.py [--no-write]``
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, insert, select, text
from sqlalchemy.engine import make_url

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import upgrade_to_head
from app.db.orm import Base, Bookmaker, Competition, Match, OddsQuote, Team
from app.domain.football_data import parse_football_data
from app.services.bulk import chunks
from app.services.ingest import IngestReport, ingest_batch
from benchmarks import pages
from benchmarks.pages import PERFORMANCE_PAGE, Provenance, Record

TABLES = [Competition, Team, Bookmaker, Match, OddsQuote]


def data_files() -> list[Path]:
    root = Path(os.environ.get("ODDSBOOST_DATA_DIR", "../shared/data")) / "football-data"
    files = sorted(root.glob("*.csv"))
    if not files:
        sys.exit(f"no season files under {root}; set ODDSBOOST_DATA_DIR")
    return files


@contextmanager
def fresh_database(kind: str, server_url: str | None) -> Iterator[str]:
    """A new empty database of the given kind, migrated to head, dropped afterwards."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            url = f"sqlite:///{directory}/bench.db"
            upgrade_to_head(url)
            yield url
        return
    assert server_url is not None
    name = f"oddsboost_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_to_head(url)
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


def run_import(url: str, files: list[Path]) -> tuple[float, IngestReport]:
    engine = make_engine(url)
    factory = make_session_factory(engine)
    contents = [path.read_bytes() for path in files]
    total = IngestReport()
    start = time.perf_counter()
    for content in contents:
        with session_scope(factory) as session:
            total.add(ingest_batch(session, parse_football_data(content), source="a benchmark"))
    elapsed = time.perf_counter() - start
    engine.dispose()
    return elapsed, total


def read_rows(url: str) -> dict[str, list[dict[str, Any]]]:
    engine = make_engine(url)
    rows: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as connection:
        for model in TABLES:
            table = model.__table__
            result = connection.execute(select(table).order_by(table.c.id))
            rows[model.__tablename__] = [dict(row._mapping) for row in result]
    engine.dispose()
    return rows


def run_raw_insert(url: str, rows: dict[str, list[dict[str, Any]]]) -> float:
    engine = make_engine(url)
    tables = Base.metadata.tables
    start = time.perf_counter()
    with engine.begin() as connection:
        for name, table_rows in rows.items():
            for part in chunks(table_rows):
                connection.execute(insert(tables[name]), list(part))
    elapsed = time.perf_counter() - start
    engine.dispose()
    return elapsed


NAME = "bench_ingest"
OPTIONS = "every season file imported once, one transaction per file"


class IngestRun(Record):
    """One backend's latest run: the rows of both imports, and how long each took."""

    backend: str
    measured: Provenance
    files: int
    matches: int
    quotes: int
    import_seconds: float
    raw_seconds: float


class IngestFigures(Record):
    """The latest run on each backend, by backend name (``sqlite``, ``postgresql``)."""

    runs: dict[str, IngestRun]


def render_block(figures: IngestFigures | None) -> str:
    """The Markdown between the markers of ``bench_ingest`` (None: nothing measured yet)."""
    if figures is None or not figures.runs:
        return f"No figures yet: run `.venv/bin/python benchmarks/{NAME}.py` to measure them.\n"
    lines = [
        *(
            f"* {pages.backend_title(run.backend)}: {pages.provenance_line(run.measured)} "
            f"{run.files} files: {run.matches:,} matches and {run.quotes:,} quotes."
            for run in figures.runs.values()
        ),
        "",
        "| backend | import | rows/s | raw executemany | rows/s | ratio |",
        "|---|---:|---:|---:|---:|---:|",
        *(_row(run) for run in figures.runs.values()),
        "",
        "Rows are matches and quotes; the ratio is the import's rows/s over the raw "
        "`executemany`'s.",
        "",
    ]
    return "\n".join(lines)


def _row(run: IngestRun) -> str:
    rows = run.matches + run.quotes
    imported, raw = rows / run.import_seconds, rows / run.raw_seconds
    return (
        f"| {pages.backend_title(run.backend)} | {run.import_seconds:.1f} s | "
        f"{imported:,.0f} | {run.raw_seconds:.1f} s | {raw:,.0f} | {imported / raw:.2f} |"
    )


def load_figures() -> IngestFigures | None:
    return pages.load_record(IngestFigures, pages.figures_file(NAME))


def measure(kind: str, server_url: str | None, files: list[Path]) -> IngestRun:
    """Both imports of ``files`` on a fresh database of ``kind`` each."""
    before = pages.load_average()
    with fresh_database(kind, server_url) as import_url:
        import_seconds, report = run_import(import_url, files)
        rows = read_rows(import_url)
    with fresh_database(kind, server_url) as raw_url:
        raw_seconds = run_raw_insert(raw_url, rows)
    assert report.matches_created == len(rows["matches"])
    assert report.quotes_inserted == len(rows["odds_quotes"])
    return IngestRun(
        backend=kind,
        measured=pages.provenance(before, OPTIONS),
        files=len(files),
        matches=len(rows["matches"]),
        quotes=len(rows["odds_quotes"]),
        import_seconds=import_seconds,
        raw_seconds=raw_seconds,
    )


def main() -> None:
    files = data_files()
    server_url = os.environ.get("ODDSBOOST_BENCH_POSTGRES_URL") or os.environ.get(
        "ODDSBOOST_TEST_DATABASE_URL"
    )
    kinds = ["sqlite"]
    if server_url and server_url.startswith("postgresql"):
        kinds.append("postgresql")
    previous = load_figures()
    runs = {} if previous is None else dict(previous.runs)
    for kind in kinds:
        runs[kind] = measure(kind, server_url, files)
    figures = IngestFigures(runs=dict(sorted(runs.items())))
    print(render_block(figures))
    if "--no-write" not in sys.argv[1:]:
        pages.save_record(figures, pages.figures_file(NAME))
        pages.write_block(PERFORMANCE_PAGE, NAME, render_block(figures))
        print(f"written: {pages.figures_file(NAME)}, {PERFORMANCE_PAGE}")


if __name__ == "__main__":
    main()
