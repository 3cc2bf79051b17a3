"""Fixtures of the tests that play The Odds API: the local site, a session factory for
writes on a migrated database, and the feed's settings, as the feed and its jobs take them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, make_session_factory
from app.settings import Settings
from tests.odds_api_site import KEY, FakeOddsApi, handler_for
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


def feed_settings(base: str, database_url: str = "sqlite://", **more: Any) -> Settings:
    """The feed of the EPL and the Bundesliga from the site at ``base``, with short waits."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "odds_api_key": KEY,
        "odds_api_url": base,
        "odds_api_sports": ["soccer_epl", "soccer_germany_bundesliga"],
        "odds_api_regions": ["uk", "eu"],
        "odds_api_backoff_seconds": 0.5,
        "odds_api_timeout_seconds": 5.0,
    }
    return Settings(**(values | more))
