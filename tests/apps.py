"""The app under test: its admin key, the settings of a refit on a database, and the app built
on a test's session or on a shared database (see the docstring of tests/conftest.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.deps import get_session, get_write_session
from app.main import create_app
from app.settings import Settings
from tests.databases import SharedDatabase, rolled_back_connection, savepoint_session

ADMIN_KEY = "test-admin-key-0123456789"

REFIT_SEASONS = ("E0_1516", "E0_1617", "E0_1718", "SP1_1516", "SP1_1617", "SP1_1718")
# The end of the refit window of the fitted database: after every match of REFIT_SEASONS.
REFIT_UNTIL = dt.datetime(2018, 6, 1, tzinfo=dt.UTC)


def refit_settings_for(database_url: str) -> Settings:
    """Settings for an app, a refit or a command on ``database_url``: a short grid of rounds,
    a model refreshed twice a second, value judged by the served prediction (the examples'
    values are worked out from it)."""
    return Settings(
        database_url=database_url,
        admin_api_key=ADMIN_KEY,
        refit_rounds_grid=[1, 5, 20, 50],
        model_refresh_seconds=0.5,
        value_probability_source="ensemble",
    )


def build_app(settings: Settings, session: Session) -> FastAPI:
    app = create_app(settings)

    def test_session() -> Iterator[Session]:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise

    app.dependency_overrides[get_session] = test_session
    app.dependency_overrides[get_write_session] = test_session
    return app


@contextmanager
def client_on(shared: SharedDatabase, settings: Settings) -> Iterator[TestClient]:
    """The app on a shared database, its requests in a transaction that is rolled back."""
    with (
        rolled_back_connection(shared.engine) as connection,
        savepoint_session(connection) as session,
        TestClient(build_app(settings, session)) as client,
    ):
        yield client
