"""The databases of the scale benchmark, built by the service's own commands and kept.

* **matchday** (``snapshots_1``, ``snapshots_<n>``): the schema, a hand-made model version
  trusting six bookmakers, and 200 upcoming matches each quoted by 10 to 30 bookmakers (the
  twenty codes of ``app/domain/bookmakers.py``, then ``BK21`` to ``BK30``), written through
  ``POST /admin/odds`` of a running ``oddsboost serve``: one snapshot per bookmaker, or
  ``n`` snapshots three hours apart whose last one holds the same prices as the single one.
* **history** (``history_1x``, ``history_4.4x``): the season files imported
  (``oddsboost import football-data``); for 4.4x the matches and quotes copied, in SQL,
  three more times whole and a fourth time for the newest seasons making up 40 % of the
  files, each copy under new competition codes (``E0`` gives ``E0-copy1``...) with the same
  teams, kickoffs, results and prices: 4.4 times the season files' rows. Then
  ``oddsboost refit --until 2018-06-01`` (a small rounds grid, so it stays cheap),
  ``oddsboost track-record rebuild`` over the season 2018/19 (every competition's, copies
  included), and the matchday with ``n`` snapshots on top.

Each is built once under a key made of its recipe, the options, the schema's head, the
season files' names and the day (the matchday's kickoffs are days ahead of its build),
and kept: SQLite files under the system's temporary directory, PostgreSQL databases named
``ob_bench_scale_<key>_<name>`` on the server. A run works on copies of them, dropped at its
end, so what it writes (new quotes for cold boards) never reaches the kept ones.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Insert, MetaData, Table, create_engine, func, insert, select, text, tuple_
from sqlalchemy.engine import make_url

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import head_revision, upgrade_to_head
from app.domain.bookmakers import BOOKMAKER_NAMES
from app.domain.vocabulary import ActivatedBy
from app.services.model_versions import activate
from benchmarks.common import ADMIN_KEY, free_port, serve, store_quotes
from tests.helpers import hand_made_version

# Change it when the databases are built differently: the kept ones are then built again.
RECIPE = "1"
PREFIX = "ob_bench_scale_"
CACHE_DIR = Path(tempfile.gettempdir()) / "oddsboost_bench_scale"
REFIT_UNTIL = "2018-06-01"
TRACK_RECORD_SEASON = ("2018-07-01", "2019-07-01")
# The history grows 4.4 times: the original, three whole copies, and a partial fourth.
WHOLE_COPIES = 3
PARTIAL_SHARE = 0.4
GROWTH = 1 + WHOLE_COPIES + PARTIAL_SHARE
SNAPSHOT_HOURS = 3
BOOKMAKERS_PER_MATCH = (10, 30)
CODES = (*sorted(BOOKMAKER_NAMES), *(f"BK{number}" for number in range(21, 31)))
# The hand-made model of the matchday databases: six bookmakers every match has.
POOL = {"B365": 0.2, "BW": 0.1, "IW": 0.05, "PS": 0.4, "WH": 0.15, "VC": 0.1}
MARGINS = (0.02, 0.08)

# The tables copied for a larger history, in the order their rows may be inserted: each
# column shifted by the largest id of the table it refers to, and the texts that take the
# copy's suffix (a unique code; an external id, unique where set).
SHIFTED_COLUMNS = {
    "competitions": {"id": "competitions"},
    "matches": {"id": "matches", "competition_id": "competitions"},
    "odds_quotes": {"id": "odds_quotes", "match_id": "matches"},
}
SUFFIXED_COLUMNS = {"competitions": ("code",), "matches": ("external_id",)}


@dataclass(frozen=True)
class BuildOptions:
    """What the databases are made of."""

    season_files: tuple[Path, ...]
    matches: int
    snapshots: int
    rounds: int

    def key(self) -> str:
        digest = hashlib.sha256(
            f"{RECIPE}|{head_revision()}|{dt.date.today()}|{self.matches}|{self.snapshots}|"
            f"{self.rounds}|{','.join(path.name for path in self.season_files)}".encode()
        )
        return digest.hexdigest()[:12]


class Store(Protocol):
    """Where databases are kept: files in a directory, or a PostgreSQL server."""

    backend: str

    def url(self, name: str) -> str: ...

    def exists(self, name: str) -> bool: ...

    def create(self, name: str, template: str | None) -> str: ...

    def rename(self, old: str, new: str) -> None: ...

    def drop(self, name: str) -> None: ...

    def names(self) -> list[str]: ...


class SqliteStore:
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

    def create(self, name: str, template: str | None) -> str:
        self.drop(name)
        if template is None:
            self._path(name).touch()
        else:
            # The backup API copies what a WAL file beside the template still holds.
            with (
                closing(sqlite3.connect(self._path(template))) as source,
                closing(sqlite3.connect(self._path(name))) as target,
            ):
                source.backup(target)
        return self.url(name)

    def rename(self, old: str, new: str) -> None:
        with closing(sqlite3.connect(self._path(old))) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(self._path(old), self._path(new))
        self.drop(old)

    def drop(self, name: str) -> None:
        for suffix in ("", "-wal", "-shm", "-journal", ".refit-lock"):
            Path(f"{self._path(name)}{suffix}").unlink(missing_ok=True)

    def names(self) -> list[str]:
        return [path.stem for path in self.directory.glob(f"{PREFIX}*.db")]


class PostgresStore:
    backend = "postgresql"

    def __init__(self, server_url: str) -> None:
        self.server = make_url(server_url)
        self.admin = create_engine(self.server, isolation_level="AUTOCOMMIT")

    def url(self, name: str) -> str:
        return self.server.set(database=name).render_as_string(hide_password=False)

    def exists(self, name: str) -> bool:
        return name in self.names()

    def create(self, name: str, template: str | None) -> str:
        self.drop(name)
        copied = "" if template is None else f' TEMPLATE "{template}"'
        self._execute(f'CREATE DATABASE "{name}"{copied}')
        return self.url(name)

    def rename(self, old: str, new: str) -> None:
        self._execute(f'ALTER DATABASE "{old}" RENAME TO "{new}"')

    def drop(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def names(self) -> list[str]:
        with self.admin.connect() as connection:
            found = connection.execute(
                text("SELECT datname FROM pg_database WHERE datname LIKE :prefix"),
                {"prefix": f"{PREFIX}%"},
            )
            return list(found.scalars())

    def _execute(self, statement: str) -> None:
        with self.admin.connect() as connection:
            connection.execute(text(statement))


def store_for(postgres_url: str | None) -> Store:
    return PostgresStore(postgres_url) if postgres_url else SqliteStore(CACHE_DIR)


# ---------------------------------------------------------------- building


@dataclass(frozen=True)
class Built:
    """The kept databases of one key, by name (``snapshots_1``, ``history_4.4x``...)."""

    key: str
    names: dict[str, str]


def matchday_names(options: BuildOptions) -> tuple[str, str]:
    return "snapshots_1", f"snapshots_{options.snapshots}"


HISTORY = ("history_1x", "history_4.4x")


def prepared(store: Store, options: BuildOptions) -> Built:
    """Every database of ``options``, built unless kept; other keys' ones removed."""
    key = options.key()
    for stale in store.names():
        if key not in stale:
            store.drop(stale)
    kept = {name: f"{PREFIX}{key}_{name.replace('.', '_')}" for name in _all_names(options)}
    imported = f"{PREFIX}{key}_imported"
    steps: list[tuple[str, str | None, Callable[[str], None]]] = [
        (kept["snapshots_1"], None, lambda url: _build_matchday(url, options, 1)),
        (
            kept[matchday_names(options)[1]],
            None,
            lambda url: _build_matchday(url, options, options.snapshots),
        ),
        (imported, None, lambda url: _import(url, options)),
        (kept["history_1x"], imported, lambda url: _finish_history(url, options, 0)),
        (kept["history_4.4x"], imported, lambda url: _finish_history(url, options, GROWTH)),
    ]
    for name, template, build in steps:
        if not store.exists(name):
            print(f"building {name} ({store.backend})", flush=True)
            staging = f"{name}_building"
            build(store.create(staging, template))
            store.rename(staging, name)
    return Built(key, kept)


def _all_names(options: BuildOptions) -> list[str]:
    return [*matchday_names(options), *HISTORY]


@contextmanager
def working_copies(store: Store, built: Built) -> Iterator[dict[str, str]]:
    """Copies of the kept databases, by name: their URLs; dropped at the end."""
    copies = {name: f"{kept}_run{os.getpid()}" for name, kept in built.names.items()}
    try:
        urls = {name: store.create(copies[name], kept) for name, kept in built.names.items()}
        yield urls
    finally:
        for copy in copies.values():
            store.drop(copy)


def oddsboost(url: str, *arguments: str, environment: dict[str, str] | None = None) -> None:
    """Run the ``oddsboost`` command on the database at ``url``; stop on its failure."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "app", *arguments],
        env={**os.environ, **(environment or {}), "ODDSBOOST_DATABASE_URL": url, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        check=False,
    )
    named = " ".join(argument for argument in arguments if not argument.endswith(".csv"))
    if done.returncode != 0:
        raise RuntimeError(f"oddsboost {named} failed:\n{done.stderr}")
    print(f"  oddsboost {named}: {time.perf_counter() - started:.0f} s", flush=True)


def _import(url: str, options: BuildOptions) -> None:
    oddsboost(url, "migrate")
    oddsboost(url, "import", "football-data", *(str(path) for path in options.season_files))


def _finish_history(url: str, options: BuildOptions, growth: float) -> None:
    if growth:
        grow_history(url)
    rounds = {"ODDSBOOST_REFIT_ROUNDS_GRID": f"[{options.rounds}]"}
    oddsboost(url, "refit", "--until", REFIT_UNTIL, environment=rounds)
    first, end = TRACK_RECORD_SEASON
    oddsboost(url, "track-record", "rebuild", "--from", first, "--to", end)
    store_matchday(url, options, options.snapshots)
    analyse(url)


def _build_matchday(url: str, options: BuildOptions, snapshots: int) -> None:
    upgrade_to_head(url)
    engine = make_engine(url)
    try:
        with session_scope(make_session_factory(engine, for_writes=True)) as session:
            version = hand_made_version(weights=POOL)
            session.add(version)
            session.flush()
            activate(session, version, by=ActivatedBy.REFIT)
    finally:
        engine.dispose()
    store_matchday(url, options, snapshots)
    analyse(url)


# ---------------------------------------------------------------- the matchday


def store_matchday(url: str, options: BuildOptions, snapshots: int) -> None:
    """The matchday's snapshots written through POST /admin/odds of a server on ``url``,
    oldest first."""
    environment = {
        **os.environ,
        "ODDSBOOST_DATABASE_URL": url,
        "ODDSBOOST_ADMIN_API_KEY": ADMIN_KEY,
    }
    port = free_port()
    command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", "1"]
    now = dt.datetime.now(dt.UTC)
    with serve(command, environment, port, "/health") as base:
        for batch in matchday_snapshots(now, options.matches, snapshots):
            stored = store_quotes(base, batch)
            if stored.status_code != 200:
                raise RuntimeError(f"POST /admin/odds: {stored.status_code} {stored.text}")


def matchday_snapshots(
    now: dt.datetime, matches: int, snapshots: int
) -> list[list[dict[str, Any]]]:
    """The quotes of ``matches`` upcoming matches as ``snapshots`` batches three hours apart,
    oldest first; the last batch is the same whatever ``snapshots`` is (its captures one
    hour before ``now``)."""
    last_capture = now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=1)
    first_kickoff = (now + dt.timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    latest = _latest_books(random.Random(25), matches)
    drift = random.Random(snapshots)
    batches = []
    for age in range(snapshots - 1, -1, -1):
        captured = (last_capture - dt.timedelta(hours=SNAPSHOT_HOURS * age)).isoformat()
        batches.append(
            [
                {
                    "match": _fixture(index, first_kickoff),
                    "bookmaker": code,
                    "captured_at": captured,
                    **(prices if age == 0 else _drifted(prices, drift)),
                }
                for index, books in enumerate(latest)
                for code, prices in books.items()
            ]
        )
    return batches


def _fixture(index: int, first_kickoff: dt.datetime) -> dict[str, str]:
    return {
        "competition": ("E0", "SP1", "D1", "I1", "F1", "E1")[index % 6],
        "kickoff": (first_kickoff + dt.timedelta(days=index % 6, hours=index % 9)).isoformat(),
        "home_team": f"Home {index}",
        "away_team": f"Away {index}",
    }


def _latest_books(rng: random.Random, matches: int) -> list[dict[str, dict[str, float]]]:
    """Each match's bookmakers and their latest prices: the pool's six and others."""
    books = []
    for _ in range(matches):
        home = rng.uniform(0.2, 0.7)
        draw = rng.uniform(0.22, 0.30) * (1 - home) / 0.8
        probabilities = (home, draw, 1 - home - draw)
        others = [code for code in CODES if code not in POOL]
        count = rng.randint(*BOOKMAKERS_PER_MATCH)
        codes = [*POOL, *rng.sample(others, count - len(POOL))]
        books.append({code: _book(probabilities, rng) for code in codes})
    return books


def _book(probabilities: tuple[float, float, float], rng: random.Random) -> dict[str, float]:
    margin = 1 + rng.uniform(*MARGINS)
    home, draw, away = (round(1 / (p * margin * rng.uniform(0.97, 1.03)), 2) for p in probabilities)
    return {"home": home, "draw": draw, "away": away}


def _drifted(prices: dict[str, float], rng: random.Random) -> dict[str, float]:
    """An earlier price: within 8 % of the latest one."""
    return {
        outcome: round(max(1.01, price * rng.uniform(0.92, 1.08)), 2)
        for outcome, price in prices.items()
    }


# ---------------------------------------------------------------- the larger history


def grow_history(url: str) -> None:
    """The history copied three times whole and once for its newest seasons (40 % of the
    season files), each copy under new competition codes, in one transaction."""
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            metadata = MetaData()
            metadata.reflect(connection, only=list(SHIFTED_COLUMNS))
            tables = [metadata.tables[name] for name in SHIFTED_COLUMNS]
            largest = {
                table.name: connection.scalar(select(func.max(table.c.id))) or 0 for table in tables
            }
            matches = metadata.tables["matches"]
            files = connection.execute(
                select(matches.c.competition_id, matches.c.season)
                .distinct()
                .order_by(matches.c.season.desc(), matches.c.competition_id)
            ).all()
            newest = [tuple(row) for row in files[: round(PARTIAL_SHARE * len(files))]]
            for copy in range(1, WHOLE_COPIES + 2):
                partial = newest if copy > WHOLE_COPIES else None
                for table in tables:
                    connection.execute(_copied(table, copy, largest, matches, partial))
            if connection.dialect.name == "postgresql":
                for table in tables:
                    connection.execute(
                        text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                            f"(SELECT max(id) FROM {table.name}))"
                        )
                    )
    finally:
        engine.dispose()


def _copied(
    table: Table,
    copy: int,
    largest: dict[str, int],
    matches: Table,
    files: list[tuple[Any, ...]] | None,
) -> Insert:
    """INSERT ... SELECT of the original rows of ``table`` as copy number ``copy``; with
    ``files``, only the matches (and their quotes) of those (competition, season) pairs."""
    shifted = SHIFTED_COLUMNS[table.name]
    suffixed = SUFFIXED_COLUMNS.get(table.name, ())
    values = []
    for column in table.columns:
        if column.name in shifted:
            value = column + copy * largest[shifted[column.name]]
        elif column.name in suffixed:
            value = column + f"-copy{copy}"
        else:
            value = column
        values.append(value.label(column.name))
    originals = select(*values).where(table.c.id <= largest[table.name])
    if files is not None and table.name != "competitions":
        chosen = select(matches.c.id).where(
            tuple_(matches.c.competition_id, matches.c.season).in_(files)
        )
        column = table.c.id if table.name == "matches" else table.c.match_id
        originals = originals.where(column.in_(chosen))
    return insert(table).from_select([column.name for column in table.columns], originals)


def analyse(url: str) -> None:
    """Refresh PostgreSQL's statistics after the bulk writes, as autovacuum soon would."""
    if make_url(url).get_backend_name() != "postgresql":
        return
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
    finally:
        engine.dispose()


@dataclass(frozen=True)
class DatabaseFacts:
    """What a database holds."""

    matches: int
    quotes: int
    log_entries: int


def facts_of(url: str) -> DatabaseFacts:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            counts = [
                connection.scalar(text(f"SELECT count(*) FROM {table}")) or 0
                for table in ("matches", "odds_quotes", "prediction_log")
            ]
    finally:
        engine.dispose()
    return DatabaseFacts(*counts)


def remove_all(store: Store) -> None:
    """Every kept database of this benchmark, gone."""
    for name in store.names():
        store.drop(name)
    if isinstance(store, SqliteStore):
        shutil.rmtree(store.directory, ignore_errors=True)
