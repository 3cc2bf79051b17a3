"""Shared fixtures.

The database under test is ``ODDSBOOST_TEST_DATABASE_URL`` (default: a SQLite file in a
temporary directory). Its schema is built by the real migrations once per run; every test
runs inside a transaction that is rolled back.

Tests that read real data use databases built once per run and shared: ``seeded_database``
(three seasons of E0 and SP1 imported) and ``fitted_database`` (the same after one refit: model
version 1 active). ``seeded_client`` and ``fitted_client`` are the app on them, its requests in
a transaction of the test that is rolled back; the app's own engine (the model, the prediction
service, readiness) and ``seeded_settings``/``fitted_settings`` connect read-only.

Code that opens its own connections and writes (a refit, the CLI, a real server, an app with
its own sessions) only sees committed data, so those tests get a database of their own, of
the same kind: ``fresh_database_url`` (empty), ``migrated_url`` (at the newest schema),
``seeded_url`` or ``fitted_url``. The last three are copies of templates built once per run.

Real season files come from ``ODDSBOOST_DATA_DIR`` (default ``../shared/data``); a missing
directory is an error, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import current_revision, downgrade_to, upgrade_to_head
from app.domain.vocabulary import RunTrigger
from app.services.ingest import import_football_data
from app.services.refit import run_refit
from app.settings import Settings
from tests.apps import (
    ADMIN_KEY,
    REFIT_SEASONS,
    REFIT_UNTIL,
    build_app,
    client_on,
    refit_settings_for,
)
from tests.commands import Oddsboost
from tests.databases import Databases, SharedDatabase, rolled_back_connection, savepoint_session
from tests.processes import FitGate

# An app under test builds no board in advance, so that what a poll reads is the poll's own
# doing; the tests of the warm-up turn it on.
os.environ.setdefault("ODDSBOOST_WARM_BOARD", "false")

pytest_plugins = [
    "tests.plugins.browser",
    "tests.plugins.matchday",
    "tests.plugins.odds_api",
    "tests.plugins.predictions",
    "tests.plugins.redis_store",
    "tests.plugins.season_replay",
    "tests.plugins.track_record",
    "tests.plugins.upcoming_board",
]

REPO_ROOT = Path(__file__).resolve().parents[1]


def _data_dir() -> Path:
    configured = Path(os.environ.get("ODDSBOOST_DATA_DIR", "../shared/data"))
    return configured if configured.is_absolute() else (REPO_ROOT / configured).resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    directory = _data_dir()
    if not (directory / "football-data").is_dir():
        pytest.fail(
            f"test data not found at {directory}: set ODDSBOOST_DATA_DIR to the directory "
            "that holds football-data/ and uci/",
            pytrace=False,
        )
    return directory


@pytest.fixture(scope="session")
def season_file(data_dir: Path) -> Callable[[str], Path]:
    def find(name: str) -> Path:
        path = data_dir / "football-data" / f"{name}.csv"
        assert path.is_file(), f"missing season file {path}"
        return path

    return find


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[str]:
    """The database under test: a SQLite file of this run's, or ODDSBOOST_TEST_DATABASE_URL.

    When the suite runs in several processes (pytest-xdist), each process other than the
    first gets a database of its own beside the configured one, created and dropped here,
    so that no two processes migrate or roll back the same database.
    """
    configured = os.environ.get("ODDSBOOST_TEST_DATABASE_URL")
    if not configured:
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
        return
    url = Settings(database_url=configured).database_url
    if worker_id in ("master", "gw0"):
        yield url
        return
    databases = Databases(url, tmp_path_factory.mktemp("worker"))
    own = databases.create()
    yield own
    databases.drop_all()


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    # Start from nothing: this also runs every downgrade on the backend under test.
    if current_revision(engine) is not None:
        downgrade_to(database_url, "base")
    upgrade_to_head(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def connection(engine: Engine) -> Iterator[Connection]:
    with rolled_back_connection(engine) as connection:
        yield connection


@pytest.fixture
def session(connection: Connection) -> Iterator[Session]:
    """A session whose commits are savepoints inside the test's rolled-back transaction."""
    with savepoint_session(connection) as session:
        yield session


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, admin_api_key=ADMIN_KEY)


@pytest.fixture
def client(settings: Settings, session: Session) -> Iterator[TestClient]:
    with TestClient(build_app(settings, session)) as client:
        yield client


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return {"X-API-Key": ADMIN_KEY}


@pytest.fixture(scope="session")
def databases(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    databases = Databases(database_url, tmp_path_factory.mktemp("databases"))
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def migrated_template(databases: Databases) -> str:
    template = databases.create()
    upgrade_to_head(template)
    databases.seal(template)
    return template


@pytest.fixture(scope="session")
def seeded_template(
    databases: Databases, migrated_template: str, season_file: Callable[[str], Path]
) -> str:
    """Three seasons of E0 and SP1, imported once per run."""
    template = databases.copy(migrated_template)
    engine = make_engine(template)
    factory = make_session_factory(engine, for_writes=True)
    for name in REFIT_SEASONS:
        with session_scope(factory) as session:
            import_football_data(session, season_file(name).read_bytes())
    engine.dispose()
    databases.seal(template)
    return template


@pytest.fixture(scope="session")
def fitted_template(databases: Databases, seeded_template: str) -> str:
    """The seeded data after one successful refit as of REFIT_UNTIL: model version 1 active."""
    template = databases.copy(seeded_template)
    engine = make_engine(template)
    outcome = run_refit(
        engine, refit_settings_for(template), trigger=RunTrigger.CLI, until=REFIT_UNTIL
    )
    engine.dispose()
    assert outcome.status == "succeeded", outcome.message
    databases.seal(template)
    return template


@pytest.fixture(scope="session")
def seeded_database(databases: Databases, seeded_template: str) -> Iterator[SharedDatabase]:
    """The seeded data, shared by the tests that only read it (see the module's docstring)."""
    shared = databases.share(seeded_template)
    yield shared
    shared.engine.dispose()


@pytest.fixture(scope="session")
def fitted_database(databases: Databases, fitted_template: str) -> Iterator[SharedDatabase]:
    """The fitted data, shared by the tests that only read it (see the module's docstring)."""
    shared = databases.share(fitted_template)
    yield shared
    shared.engine.dispose()


@pytest.fixture(scope="session")
def seeded_settings(seeded_database: SharedDatabase) -> Settings:
    """Settings that reach the shared seeded database read-only."""
    return refit_settings_for(seeded_database.read_only_url)


@pytest.fixture(scope="session")
def fitted_settings(fitted_database: SharedDatabase) -> Settings:
    """Settings that reach the shared fitted database read-only."""
    return refit_settings_for(fitted_database.read_only_url)


@pytest.fixture
def seeded_client(
    seeded_database: SharedDatabase, seeded_settings: Settings
) -> Iterator[TestClient]:
    """The app on the seeded data, no model fitted."""
    with client_on(seeded_database, seeded_settings) as client:
        yield client


@pytest.fixture
def fitted_client(
    fitted_database: SharedDatabase, fitted_settings: Settings
) -> Iterator[TestClient]:
    """The app on the fitted data, serving model version 1."""
    with client_on(fitted_database, fitted_settings) as client:
        yield client


@pytest.fixture
def fresh_database_url(databases: Databases) -> Iterator[str]:
    """An empty database (no schema) of the same kind as the one under test."""
    database = databases.create()
    yield database
    databases.drop(database)


@pytest.fixture
def migrated_url(databases: Databases, migrated_template: str) -> Iterator[str]:
    """A database of its own at the newest schema, with no data."""
    database = databases.copy(migrated_template)
    yield database
    databases.drop(database)


@pytest.fixture
def seeded_url(databases: Databases, seeded_template: str) -> Iterator[str]:
    """A database of its own with three seasons of E0 and SP1 imported and committed."""
    database = databases.copy(seeded_template)
    yield database
    databases.drop(database)


@pytest.fixture
def fitted_url(databases: Databases, fitted_template: str) -> Iterator[str]:
    """A database of its own with the fitted data committed: model version 1 active."""
    database = databases.copy(fitted_template)
    yield database
    databases.drop(database)


@pytest.fixture
def refit_settings(seeded_url: str) -> Settings:
    """Settings on a seeded database of the test's own."""
    return refit_settings_for(seeded_url)


@pytest.fixture
def oddsboost(monkeypatch: pytest.MonkeyPatch) -> Oddsboost:
    """The ``oddsboost`` command, run in this process."""
    return Oddsboost(monkeypatch)


@pytest.fixture
def fit_gate(tmp_path: Path) -> Iterator[FitGate]:
    """Holds refits in child processes at their fit until released (released at the end)."""
    directory = tmp_path / "fit_gate"
    directory.mkdir()
    gate = FitGate(directory)
    yield gate
    gate.release()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests marked ``slow`` first.

    On several workers they then run side by side while the quick tests fill in around them,
    instead of one of them starting last and holding up the end of the run.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
