"""What the flag ledger adds to an ingest of quotes: the same batches written with and
without it.

For each backend (SQLite always; PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` or
``ODDSBOOST_TEST_DATABASE_URL`` names a server) this writes ``ROUNDS`` batches of quotes
for ``MATCHES`` upcoming matches by ``BOOKMAKERS`` bookmakers, every price drawn anew in
every round (a worst case: every match is evaluated again and many flags change), into a
fresh, migrated database, one transaction per batch, the way ``/admin/odds`` or a feed
does; then the same batches into another fresh database with the ledger left out. It
reports both times, their ratio, and the flags and events the ledger wrote, in
``docs/figures/bench_flags.json`` (the latest run of each backend) and its block of
``docs/explanation/performance.md`` (``--no-write``: printed only).

Run: ``python benchmarks/bench_flags.py [--no-write]``
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Collection
from unittest import mock

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import ValueFlag, ValueFlagEvent
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.vocabulary import Phase
from app.services import flags
from app.services.ingest import ingest_batch
from benchmarks import pages
from benchmarks.bench_ingest import fresh_database
from benchmarks.pages import PERFORMANCE_PAGE, Provenance, Record

NAME = "bench_flags"
MATCHES = 200
BOOKMAKERS = ("PS", "B365", "WH", "BW", "IW", "VC")
ROUNDS = 6
SEED = 20261127
START = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
OPTIONS = (
    f"{ROUNDS} batches of {MATCHES} upcoming matches by {len(BOOKMAKERS)} bookmakers, "
    "every price drawn anew each batch, one transaction per batch"
)


def batches() -> list[IngestBatch]:
    """The rounds of quotes, the same in both runs."""
    draw = random.Random(SEED)
    kickoff = START + dt.timedelta(days=10)
    matches = [
        MatchRecord("E0", f"Home {i}", f"Away {i}", kickoff + dt.timedelta(hours=i % 48))
        for i in range(MATCHES)
    ]
    rounds: list[IngestBatch] = []
    for round_ in range(ROUNDS):
        captured = START + dt.timedelta(hours=round_)
        quotes = []
        for index in range(MATCHES):
            for bookmaker in BOOKMAKERS:
                home, away = draw.uniform(1.8, 2.6), draw.uniform(2.8, 4.5)
                # A 5 % overround: the draw's price makes the book sum to 1.05.
                draw_price = 1.0 / (1.05 - 1.0 / home - 1.0 / away)
                prices = (round(home, 2), round(draw_price, 2), round(away, 2))
                quotes.append(QuoteRecord(index, bookmaker, Phase.PRE, *prices, captured))
        rounds.append(IngestBatch(matches=list(matches), quotes=quotes))
    return rounds


def _no_ledger(
    _session: Session, _match_ids: Collection[int], _now: dt.datetime, _terms: flags.FlagTerms
) -> flags.LedgerWrites:
    return flags.LedgerWrites()


def run(url: str, rounds: list[IngestBatch], *, ledger: bool) -> tuple[float, int, int]:
    """Seconds to write ``rounds``, and the flags and events stored."""
    engine = make_engine(url)
    factory = make_session_factory(engine, for_writes=True)
    patch = mock.patch.object(flags, "after_ingest", _no_ledger) if not ledger else None
    if patch is not None:
        patch.start()
    try:
        start = time.perf_counter()
        for round_, batch in enumerate(rounds):
            moment = START + dt.timedelta(hours=round_, minutes=5)
            with session_scope(factory) as session:
                ingest_batch(session, batch, source="a benchmark", now=moment)
        elapsed = time.perf_counter() - start
    finally:
        if patch is not None:
            patch.stop()
    with session_scope(factory) as session:
        stored = session.scalar(select(func.count()).select_from(ValueFlag)) or 0
        events = session.scalar(select(func.count()).select_from(ValueFlagEvent)) or 0
    engine.dispose()
    return elapsed, stored, events


class FlagsRun(Record):
    """One backend's latest run: both writes' times, and what the ledger stored."""

    backend: str
    measured: Provenance
    batches: int
    quotes: int
    with_ledger_seconds: float
    without_ledger_seconds: float
    flags: int
    events: int


class FlagsFigures(Record):
    """The latest run on each backend, by backend name."""

    runs: dict[str, FlagsRun]


def render_block(figures: FlagsFigures | None) -> str:
    """The Markdown between the markers of ``bench_flags`` (None: nothing measured yet)."""
    if figures is None or not figures.runs:
        return f"No figures yet: run `.venv/bin/python benchmarks/{NAME}.py` to measure them.\n"
    lines = [
        *(
            f"* {pages.backend_title(run.backend)}: {pages.provenance_line(run.measured)}"
            for run in figures.runs.values()
        ),
        "",
        "| backend | quotes | with the ledger | without | ratio | flags | events |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(_row(run) for run in figures.runs.values()),
        "",
        "The ratio is the time with the ledger over the time without it.",
        "",
    ]
    return "\n".join(lines)


def _row(run: FlagsRun) -> str:
    ratio = run.with_ledger_seconds / run.without_ledger_seconds
    return (
        f"| {pages.backend_title(run.backend)} | {run.quotes:,} | "
        f"{run.with_ledger_seconds:.2f} s | {run.without_ledger_seconds:.2f} s | "
        f"{ratio:.2f} | {run.flags:,} | {run.events:,} |"
    )


def load_figures() -> FlagsFigures | None:
    return pages.load_record(FlagsFigures, pages.figures_file(NAME))


def measure(kind: str, server_url: str | None) -> FlagsRun:
    before = pages.load_average()
    rounds = batches()
    with fresh_database(kind, server_url) as url:
        with_ledger, stored, events = run(url, rounds, ledger=True)
    with fresh_database(kind, server_url) as url:
        without_ledger, none, _ = run(url, rounds, ledger=False)
    assert none == 0, "the ledger was left out"
    return FlagsRun(
        backend=kind,
        measured=pages.provenance(before, OPTIONS),
        batches=len(rounds),
        quotes=sum(len(batch.quotes) for batch in rounds),
        with_ledger_seconds=with_ledger,
        without_ledger_seconds=without_ledger,
        flags=stored,
        events=events,
    )


def main() -> None:
    pages.measure_backends(NAME, PERFORMANCE_PAGE, FlagsFigures, measure, render_block)


if __name__ == "__main__":
    main()
