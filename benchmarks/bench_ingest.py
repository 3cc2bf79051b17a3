"""Import speed: every football-data.co.uk file against a raw Core executemany of the same rows.

For each backend (SQLite always; PostgreSQL when ``ODDSBOOST_BENCH_POSTGRES_URL`` or
``ODDSBOOST_TEST_DATABASE_URL`` names a server) this

1. imports all season files under ``$ODDSBOOST_DATA_DIR/football-data`` into a fresh,
   migrated database, the way ``oddsboost import football-data`` does (parse, resolve,
   upsert; one transaction per file), and times it;
2. reads back the normalised rows that import produced (competitions, teams, bookmakers,
   matches, quotes) and inserts exactly those rows into a second fresh, migrated database
   with plain SQLAlchemy Core ``executemany`` in one transaction: the floor;
3. prints rows per second (matches + quotes) of both and the ratio import / raw.

Run: ``python benchmarks/bench_ingest.py``
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
from app.services.ingest import IngestReport, ingest_batch
from app.services.ingest.bulk import chunks

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


def main() -> None:
    files = data_files()
    server_url = os.environ.get("ODDSBOOST_BENCH_POSTGRES_URL") or os.environ.get(
        "ODDSBOOST_TEST_DATABASE_URL"
    )
    kinds = ["sqlite"]
    if server_url and server_url.startswith("postgresql"):
        kinds.append("postgresql")
    print(f"{len(files)} files")
    print(f"{'backend':<11} {'import s':>9} {'rows/s':>9} {'raw s':>8} {'rows/s':>9} {'ratio':>6}")
    for kind in kinds:
        with fresh_database(kind, server_url) as import_url:
            import_seconds, report = run_import(import_url, files)
            rows = read_rows(import_url)
        with fresh_database(kind, server_url) as raw_url:
            raw_seconds = run_raw_insert(raw_url, rows)
        count = len(rows["matches"]) + len(rows["odds_quotes"])
        assert report.matches_created == len(rows["matches"])
        assert report.quotes_inserted == len(rows["odds_quotes"])
        import_rate, raw_rate = count / import_seconds, count / raw_seconds
        print(
            f"{kind:<11} {import_seconds:>9.2f} {import_rate:>9.0f} {raw_seconds:>8.2f} "
            f"{raw_rate:>9.0f} {import_rate / raw_rate:>6.2f}"
        )
    print("rows = matches + odds quotes; ratio = import rows/s / raw executemany rows/s")


if __name__ == "__main__":
    main()
