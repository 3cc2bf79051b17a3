"""What reading the served quotes costs as the price history grows: the latest quotes table
against the two ways without it, and what keeping the table adds to an ingest.

For each backend (SQLite always; PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` or
``ODDSBOOST_TEST_DATABASE_URL`` names a server) and for 1 and for ``SNAPSHOTS`` snapshots per
bookmaker, this writes ``MATCHES`` upcoming matches quoted by ``BOOKMAKERS`` bookmakers into
a fresh, migrated database, one batch per snapshot (every price drawn anew), and times:

* the write of the batches, with the table kept and with it left out (the 20-snapshot case;
  the flag ledger left out of both);
* the quotes of every match read as the board reads them (median of ``REPEATS``):
  ``history`` reads every stored quote and picks the latest in numpy (as before the table);
  ``window`` picks the latest in the database, with a window function over the history of
  those matches (an index-backed query, no table); ``table`` reads the table
  (``stored_matches``);
* the board's stamp of those matches: every quote counted (``stamp over history``) or the
  table's rows (``match_stamps``).

Reports each time and the ratio of 20 snapshots to 1, in
``docs/figures/bench_latest_quotes.json`` (the latest run of each backend) and its block of
``docs/explanation/performance.md`` (``--no-write``: printed only).

Run: ``python benchmarks/bench_latest_quotes.py [--no-write]``
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import statistics
import time
from collections.abc import Callable, Collection
from unittest import mock

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Bookmaker, Match, OddsQuote
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.tables import tables_from_rows
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Phase
from app.services import flags, queries
from app.services.ingest import batches as ingest_batches
from app.services.ingest import ingest_batch
from app.services.ingest.latest import (
    keep_latest_quotes,
    latest_valid_quotes,
    refresh_latest_quotes,
)
from app.services.model_versions import QUOTE_COLUMNS
from app.services.serving import stored_matches
from app.services.upcoming import match_stamps
from benchmarks import pages
from benchmarks.bench_ingest import fresh_database
from benchmarks.pages import PERFORMANCE_PAGE, Provenance, Record

NAME = "bench_latest_quotes"
MATCHES = 200
BOOKMAKERS = tuple(f"B{number:02d}" for number in range(20))
SNAPSHOTS = 20
REPEATS = 7
SEED = 20261127
START = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
KICKOFF = START + dt.timedelta(days=10)
OPTIONS = (
    f"{MATCHES} upcoming matches by {len(BOOKMAKERS)} bookmakers, 1 and {SNAPSHOTS} "
    f"snapshots per bookmaker, reads: median of {REPEATS}, writes without the flag ledger"
)
READS = ("history", "window", "table", "stamp over history", "match_stamps")


def snapshots(count: int) -> list[IngestBatch]:
    """``count`` batches of every match's quotes, each captured an hour after the last."""
    draw = random.Random(SEED)
    matches = [
        MatchRecord("E0", f"Home {i}", f"Away {i}", KICKOFF + dt.timedelta(hours=i % 48))
        for i in range(MATCHES)
    ]
    rounds: list[IngestBatch] = []
    for round_ in range(count):
        captured = START + dt.timedelta(hours=round_)
        quotes = []
        for index in range(MATCHES):
            for bookmaker in BOOKMAKERS:
                home, away = draw.uniform(1.8, 2.6), draw.uniform(2.8, 4.5)
                draw_price = 1.0 / (1.05 - 1.0 / home - 1.0 / away)
                prices = (round(home, 2), round(draw_price, 2), round(away, 2))
                quotes.append(QuoteRecord(index, bookmaker, Phase.PRE, *prices, captured))
        rounds.append(IngestBatch(matches=list(matches), quotes=quotes))
    return rounds


def _not_kept(_session: Session, **_writes: Collection[int] | dt.datetime) -> None:
    return None


def _ranked_again(
    session: Session, *, written: Collection[int], rescheduled: Collection[int], now: dt.datetime
) -> None:
    """The table kept the plain way: every touched match's whole history ranked again."""
    refresh_latest_quotes(session, set(written) | set(rescheduled), now)


# How a write keeps the table: as the ingest does, the plain way, or not at all.
_KEEPERS: dict[str, Callable[..., None]] = {
    "kept": keep_latest_quotes,
    "ranked again": _ranked_again,
    "left out": _not_kept,
}


class _Timed:
    """A keeper that adds the seconds it takes to ``seconds``: on a loaded machine the
    step's own time says more than the write's, which it is a small part of."""

    def __init__(self, keeper: Callable[..., None]) -> None:
        self.keeper = keeper
        self.seconds = 0.0

    def __call__(self, session: Session, **writes: Collection[int] | dt.datetime) -> None:
        start = time.perf_counter()
        self.keeper(session, **writes)
        self.seconds += time.perf_counter() - start


def _no_ledger(
    _session: Session, _match_ids: Collection[int], _now: dt.datetime, _terms: flags.FlagTerms
) -> flags.LedgerWrites:
    return flags.LedgerWrites()


def write(url: str, rounds: list[IngestBatch], *, table: str = "kept") -> tuple[float, float]:
    """Seconds to write ``rounds``, the table kept as ``table`` (a key of ``_KEEPERS``), and
    of those the seconds spent keeping it.
    The flag ledger is left out of every way: it predicts the
    matches from the table, so without the table it would predict them with no quotes, which
    is cheaper and no part of keeping the table (``bench_flags.py`` measures the ledger)."""
    factory = make_session_factory(make_engine(url), for_writes=True)
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(flags, "after_ingest", _no_ledger))
        keeper = _Timed(_KEEPERS[table])
        stack.enter_context(mock.patch.object(ingest_batches, "keep_latest_quotes", keeper))
        start = time.perf_counter()
        for round_, batch in enumerate(rounds):
            moment = START + dt.timedelta(hours=round_, minutes=5)
            with session_scope(factory) as session:
                ingest_batch(session, batch, source="a benchmark", now=moment)
        return time.perf_counter() - start, keeper.seconds


# A match row as ``tables_from_rows`` reads it (the competition is not needed: the season).
_MATCH_COLUMNS = (Match.id, Match.kickoff, Match.result, Match.season, Match.season)
_HISTORY = (
    select(*QUOTE_COLUMNS)
    .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
    .where(OddsQuote.match_id.in_(bindparam("ids", expanding=True)), OddsQuote.phase == "pre")
)


def _history(session: Session, ids: list[int]) -> int:
    matches = session.execute(select(*_MATCH_COLUMNS).where(Match.id.in_(ids))).all()
    rows = session.execute(_HISTORY, {"ids": ids}).all()
    match_table, quotes = tables_from_rows(matches, rows)
    return len(select_latest_valid(match_table, quotes, Phase.PRE))


def _window(session: Session, ids: list[int]) -> int:
    latest = latest_valid_quotes(ids).subquery()
    statement = (
        select(*QUOTE_COLUMNS)
        .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
        .join(latest, latest.c.id == OddsQuote.id)
        .where(latest.c.phase == Phase.PRE)
    )
    matches = session.execute(select(*_MATCH_COLUMNS).where(Match.id.in_(ids))).all()
    match_table, quotes = tables_from_rows(matches, session.execute(statement).all())
    return len(select_latest_valid(match_table, quotes, Phase.PRE))


def _table(session: Session, ids: list[int]) -> int:
    return sum(len(match.odds) for match in stored_matches(session, ids, phase=Phase.PRE).values())


def _stamp_over_history(session: Session, _ids: list[int]) -> int:
    of_match = OddsQuote.match_id == Match.id
    statement = select(
        Match.id,
        Match.updated_at,
        select(func.count()).where(of_match).scalar_subquery(),
        select(func.max(OddsQuote.received_at)).where(of_match).scalar_subquery(),
    )
    filters = queries.MatchFilter(kickoff_from=START, kickoff_to=KICKOFF + dt.timedelta(days=3))
    return len(session.execute(queries.upcoming_only(statement, filters, START)).all())


def _match_stamps(session: Session, _ids: list[int]) -> int:
    filters = queries.MatchFilter(kickoff_from=START, kickoff_to=KICKOFF + dt.timedelta(days=3))
    return len(match_stamps(session, filters, START)[0])


_READERS: dict[str, Callable[[Session, list[int]], int]] = {
    "history": _history,
    "window": _window,
    "table": _table,
    "stamp over history": _stamp_over_history,
    "match_stamps": _match_stamps,
}


def read_times(url: str) -> dict[str, float]:
    """Median seconds of each way of reading, each on a session of its own."""
    engine = make_engine(url)
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        ids = list(session.scalars(select(Match.id).order_by(Match.id)))
    times: dict[str, float] = {}
    for name, reader in _READERS.items():
        counts, seconds = set(), []
        for _ in range(REPEATS):
            with session_scope(factory) as session:
                start = time.perf_counter()
                counts.add(reader(session, ids))
                seconds.append(time.perf_counter() - start)
        assert len(counts) == 1, f"{name} read different counts: {counts}"
        times[name] = statistics.median(seconds)
    engine.dispose()
    return times


class SnapshotsRun(Record):
    """One history depth: the quotes stored, the write's time, each read's median time."""

    snapshots: int
    quotes: int
    write_seconds: float
    # Of the write, the seconds spent keeping the table (None: not measured).
    keep_seconds: float | None = None
    reads: dict[str, float]


class LatestQuotesRun(Record):
    backend: str
    measured: Provenance
    one: SnapshotsRun
    many: SnapshotsRun
    many_write_without_table_seconds: float
    # The table kept by ranking every touched match's history again (None: not measured).
    many_write_ranked_again_seconds: float | None = None
    many_keep_ranked_again_seconds: float | None = None


class LatestQuotesFigures(Record):
    runs: dict[str, LatestQuotesRun]


def measure_depth(kind: str, server_url: str | None, count: int) -> SnapshotsRun:
    rounds = snapshots(count)
    with fresh_database(kind, server_url) as url:
        written, keeping = write(url, rounds)
        reads = read_times(url)
    return SnapshotsRun(
        snapshots=count,
        quotes=sum(len(batch.quotes) for batch in rounds),
        write_seconds=written,
        keep_seconds=keeping,
        reads=reads,
    )


def measure(kind: str, server_url: str | None) -> LatestQuotesRun:
    before = pages.load_average()
    one = measure_depth(kind, server_url, 1)
    many = measure_depth(kind, server_url, SNAPSHOTS)
    with fresh_database(kind, server_url) as url:
        without, _ = write(url, snapshots(SNAPSHOTS), table="left out")
    with fresh_database(kind, server_url) as url:
        ranked_again, keeping_ranked_again = write(url, snapshots(SNAPSHOTS), table="ranked again")
    return LatestQuotesRun(
        backend=kind,
        measured=pages.provenance(before, OPTIONS),
        one=one,
        many=many,
        many_write_without_table_seconds=without,
        many_write_ranked_again_seconds=ranked_again,
        many_keep_ranked_again_seconds=keeping_ranked_again,
    )


def render_block(figures: LatestQuotesFigures | None) -> str:
    """The Markdown between the markers of ``bench_latest_quotes``."""
    if figures is None or not figures.runs:
        return f"No figures yet: run `.venv/bin/python benchmarks/{NAME}.py` to measure them.\n"
    lines = [
        *(
            f"* {pages.backend_title(run.backend)}: {pages.provenance_line(run.measured)}"
            for run in figures.runs.values()
        ),
        "",
        "| backend | read | 1 snapshot | 20 snapshots | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for run in figures.runs.values():
        title = pages.backend_title(run.backend)
        for read in READS:
            one, many = run.one.reads[read] * 1000, run.many.reads[read] * 1000
            lines.append(f"| {title} | {read} | {one:.1f} ms | {many:.1f} ms | {many / one:.2f} |")
    lines += [
        "",
        "| backend | quotes written | table kept | history ranked again | without the table "
        "| ratio kept | ratio ranked again | keeping: kept | keeping: ranked again |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in figures.runs.values():
        lines.append(_write_line(run))
    lines += [
        "",
        "The ratio is the time with 20 snapshots over the time with one (the reads), and the "
        "write's time over the write without the table: the table kept as the ingest keeps it "
        "(the quotes written compared with the rows held), or by ranking the whole history of "
        "every match written again. The last two columns are the seconds of each write spent "
        "keeping the table.",
        "",
    ]
    return "\n".join(lines)


def _write_line(run: LatestQuotesRun) -> str:
    kept, bare = run.many.write_seconds, run.many_write_without_table_seconds
    again = run.many_write_ranked_again_seconds
    again_time, again_ratio = (
        ("–", "–") if again is None else (f"{again:.2f} s", f"{again / bare:.2f}")
    )
    return (
        f"| {pages.backend_title(run.backend)} | {run.many.quotes:,} | {kept:.2f} s | "
        f"{again_time} | {bare:.2f} s | {kept / bare:.2f} | {again_ratio} | "
        f"{_seconds(run.many.keep_seconds)} | {_seconds(run.many_keep_ranked_again_seconds)} |"
    )


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"


def load_figures() -> LatestQuotesFigures | None:
    return pages.load_record(LatestQuotesFigures, pages.figures_file(NAME))


def main() -> None:
    pages.measure_backends(NAME, PERFORMANCE_PAGE, LatestQuotesFigures, measure, render_block)


if __name__ == "__main__":
    main()
