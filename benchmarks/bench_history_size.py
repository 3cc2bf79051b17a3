"""How big the price history gets, with and without thinning.

For each backend (SQLite always; PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` or
``ODDSBOOST_TEST_DATABASE_URL`` names a server) this

1. stores, in a fresh migrated database, ``MATCHES`` finished matches quoted by
   ``BOOKMAKERS`` bookmakers every three hours for the ``DAYS`` days before kickoff
   (``SNAPSHOTS`` quotes per bookmaker and match), inserted poll by poll as a feed would;
2. measures the bytes each quote row takes with its indexes: on SQLite the pages the
   database uses beyond those it used before the quotes, on PostgreSQL
   ``pg_total_relation_size('odds_quotes')`` (table, indexes, TOAST);
3. counts what ``oddsboost quotes thin`` keeps at each interval of ``INTERVALS_HOURS``
   (dry runs of the same service), then thins at ``THINNED_HOURS`` for real, compacts the
   table (VACUUM; VACUUM FULL on PostgreSQL) and measures its bytes again;
4. projects a season of thirty leagues (30 × 380 matches, the same bookmakers and
   snapshots) from those bytes per row, into ``docs/figures/bench_history_size.json`` and
   its block of ``docs/operations/price-history.md`` (``--no-write``: printed only).

Run: ``python benchmarks/bench_history_size.py [--no-write]``
"""

from __future__ import annotations

import datetime as dt

import numpy as np
from sqlalchemy import Engine, func, select, text

from app.db.bulk import insert_rows
from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Bookmaker, Match
from app.domain.quote_history import ThinningRule
from app.domain.records import IngestBatch, MatchRecord
from app.domain.vocabulary import Phase
from app.services.bulk import QUOTES, chunks
from app.services.ingest import ingest_batch
from app.services.quote_history import ThinningTerms, thin_history
from benchmarks import pages
from benchmarks.bench_ingest import fresh_database
from benchmarks.pages import ROOT, Provenance, Record

NAME = "bench_history_size"
PAGE = ROOT / "docs" / "operations" / "price-history.md"
MATCHES = 100
BOOKMAKERS = 20
DAYS = 10
POLL_HOURS = 3
SNAPSHOTS = DAYS * 24 // POLL_HOURS
INTERVALS_HOURS = (6, 12, 24)
THINNED_HOURS = 6
LEAGUES = 30
MATCHES_PER_LEAGUE = 380
# The matches kicked off in 2024; the thinning runs as of NOW, long after.
FIRST_KICKOFF = dt.datetime(2024, 1, 20, 15, 0, tzinfo=dt.UTC)
NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
OPTIONS = (
    f"{MATCHES} matches × {BOOKMAKERS} bookmakers × {SNAPSHOTS} snapshots (every "
    f"{POLL_HOURS} h for {DAYS} days before kickoff); projected to {LEAGUES} leagues × "
    f"{MATCHES_PER_LEAGUE} matches"
)


class Thinned(Record):
    """What thinning at ``interval_hours`` keeps of the synthetic history."""

    interval_hours: int
    quotes_kept: int


class HistoryRun(Record):
    """One backend's latest run."""

    backend: str
    measured: Provenance
    quotes: int
    bytes: int
    thinned: list[Thinned]
    thinned_hours: int
    bytes_after_thinning: int


class HistoryFigures(Record):
    """The latest run on each backend, by backend name (``sqlite``, ``postgresql``)."""

    runs: dict[str, HistoryRun]


def store_matches(engine: Engine) -> list[tuple[int, dt.datetime]]:
    """The finished matches, each on a day of its own; their ids and kickoffs."""
    records = [
        MatchRecord("E0", f"Home {number}", f"Away {number}", FIRST_KICKOFF + dt.timedelta(days=n))
        for n, number in enumerate(range(MATCHES))
    ]
    factory = make_session_factory(engine, for_writes=True)
    with session_scope(factory) as session:
        ingest_batch(session, IngestBatch(matches=records), source="a benchmark")
        session.add_all(Bookmaker(code=f"BK{n}", name=f"Bookmaker {n}") for n in range(BOOKMAKERS))
    with factory() as session:
        matches = session.execute(select(Match.id, Match.kickoff).order_by(Match.id)).all()
        return [(match_id, kickoff) for match_id, kickoff in matches]


def store_quotes(engine: Engine, matches: list[tuple[int, dt.datetime]]) -> int:
    """Every match's history, poll by poll (as a feed stores it); the number of quotes."""
    with engine.connect() as connection:
        bookmakers = connection.execute(select(Bookmaker.id).order_by(Bookmaker.id)).scalars()
        bookmaker_ids = list(bookmakers)
    generator = np.random.default_rng(25)
    rows = []
    for snapshot in range(SNAPSHOTS):
        hours_before = (SNAPSHOTS - snapshot) * POLL_HOURS
        for match_id, kickoff in matches:
            captured = kickoff - dt.timedelta(hours=hours_before)
            prices = 1.05 + generator.random((len(bookmaker_ids), 3)) * 9
            for bookmaker_id, (home, draw, away) in zip(bookmaker_ids, prices, strict=True):
                rows.append(
                    {
                        "match_id": match_id,
                        "bookmaker_id": bookmaker_id,
                        "phase": Phase.PRE,
                        "home": float(home),
                        "draw": float(draw),
                        "away": float(away),
                        "captured_at": captured,
                        "received_at": captured,
                        "seen_at": captured,
                    }
                )
    with engine.begin() as connection:
        for part in chunks(rows, 20_000):
            insert_rows(connection, QUOTES, part)
    return len(rows)


def used_bytes(engine: Engine) -> int:
    """The bytes the quotes take: SQLite's used pages, PostgreSQL's table and indexes."""
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("ANALYZE odds_quotes"))
            return int(connection.scalar(text("SELECT pg_total_relation_size('odds_quotes')")))
        pages_used = connection.scalar(text("PRAGMA page_count")) - connection.scalar(
            text("PRAGMA freelist_count")
        )
        return int(pages_used * connection.scalar(text("PRAGMA page_size")))


def compact(engine: Engine) -> None:
    """Give the space of deleted rows back: VACUUM FULL of the quotes, VACUUM of SQLite's
    file (outside any transaction, so on the driver's own connection)."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM FULL odds_quotes"))
        return
    raw = engine.raw_connection()
    try:
        raw.driver_connection.execute("VACUUM")  # type: ignore[union-attr]
    finally:
        raw.close()


def terms(hours: int, *, dry_run: bool) -> ThinningTerms:
    return ThinningTerms(
        ThinningRule(dt.timedelta(hours=hours)), dt.timedelta(days=30), dry_run=dry_run
    )


def measure(kind: str, server_url: str | None) -> HistoryRun:
    before = pages.load_average()
    with fresh_database(kind, server_url) as url:
        engine = make_engine(url)
        matches = store_matches(engine)
        compact(engine)
        empty = used_bytes(engine)
        quotes = store_quotes(engine, matches)
        full = used_bytes(engine) - empty
        factory = make_session_factory(engine, for_writes=True)
        thinned = [
            Thinned(
                interval_hours=hours,
                quotes_kept=thin_history(factory, terms(hours, dry_run=True), now=NOW).quotes_kept,
            )
            for hours in INTERVALS_HOURS
        ]
        thin_history(factory, terms(THINNED_HOURS, dry_run=False), now=NOW)
        compact(engine)
        after = used_bytes(engine) - empty
        with engine.connect() as connection:
            left = connection.scalar(select(func.count()).select_from(QUOTES))
        engine.dispose()
    expected = next(item.quotes_kept for item in thinned if item.interval_hours == THINNED_HOURS)
    assert left == expected, (left, expected)
    return HistoryRun(
        backend=kind,
        measured=pages.provenance(before, OPTIONS),
        quotes=quotes,
        bytes=full,
        thinned=thinned,
        thinned_hours=THINNED_HOURS,
        bytes_after_thinning=after,
    )


def render_block(figures: HistoryFigures | None) -> str:
    """The Markdown between the markers of ``bench_history_size``."""
    if figures is None or not figures.runs:
        return f"No figures yet: run `.venv/bin/python benchmarks/{NAME}.py` to measure them.\n"
    season = LEAGUES * MATCHES_PER_LEAGUE * BOOKMAKERS * SNAPSHOTS
    lines = [
        *(
            f"* {pages.backend_title(run.backend)}: {pages.provenance_line(run.measured)}"
            for run in figures.runs.values()
        ),
        "",
        f"A season of {LEAGUES} leagues ({LEAGUES * MATCHES_PER_LEAGUE:,} matches, "
        f"{BOOKMAKERS} bookmakers, {SNAPSHOTS} snapshots each): {season:,} quotes unthinned.",
        "",
        "| backend | bytes per quote | unthinned | "
        + " | ".join(f"thinned, {hours} h" for hours in INTERVALS_HOURS)
        + " |",
        "|---|---:|---:|" + "---:|" * len(INTERVALS_HOURS),
        *(_row(run, season) for run in figures.runs.values()),
        "",
        "Bytes per quote include the table's indexes. Each thinned column gives the quotes "
        "kept and the size they project to. "
        + " ".join(_measured_after(run) for run in figures.runs.values()),
        "",
    ]
    return "\n".join(lines)


def _row(run: HistoryRun, season: int) -> str:
    per_row = run.bytes / run.quotes
    cells = [
        f"{_size(season * item.quotes_kept / run.quotes * per_row)} "
        f"({item.quotes_kept / run.quotes:.0%} kept)"
        for item in run.thinned
    ]
    return (
        f"| {pages.backend_title(run.backend)} | {per_row:.0f} | {_size(season * per_row)} | "
        + " | ".join(cells)
        + " |"
    )


def _measured_after(run: HistoryRun) -> str:
    kept = next(
        item.quotes_kept for item in run.thinned if item.interval_hours == run.thinned_hours
    )
    return (
        f"{pages.backend_title(run.backend)}, measured: {run.quotes:,} quotes in "
        f"{_size(run.bytes)}; thinned at {run.thinned_hours} h and compacted, {kept:,} in "
        f"{_size(run.bytes_after_thinning)}."
    )


def _size(value: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def load_figures() -> HistoryFigures | None:
    return pages.load_record(HistoryFigures, pages.figures_file(NAME))


def main() -> None:
    pages.measure_backends(NAME, PAGE, HistoryFigures, measure, render_block)


if __name__ == "__main__":
    main()
