"""Fixtures of the tests that play The Odds API: the local site and a session factory for
writes on a migrated database, as the feed and its jobs take them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, make_session_factory
from tests.odds_api_site import FakeOddsApi, handler_for
from tests.upstreams import http_server


@pytest.fixture
def odds_api() -> Iterator[tuple[FakeOddsApi, str]]:
    """The site and its base address; a request held by the site is released at the end."""
    api = FakeOddsApi()
    try:
        with http_server(handler_for(api)) as base:
            yield api, base
    finally:
        api.released.set()


@pytest.fixture
def factory(migrated_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(migrated_url)
    yield make_session_factory(engine, for_writes=True)
    engine.dispose()
