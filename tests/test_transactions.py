"""The real session dependency: a request that fails after writing leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.db.engine import make_engine, make_session_factory
from app.db.orm import Competition, Match, Team
from app.main import create_app
from app.services.ingest import batches
from app.settings import Settings
from tests.conftest import ADMIN_KEY
from tests.test_admin_api import quote


@pytest.fixture
def real_client(migrated_url: str) -> Iterator[tuple[TestClient, str]]:
    """The app with its own sessions (no test override) on a database of its own."""
    app = create_app(Settings(database_url=migrated_url, admin_api_key=ADMIN_KEY))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, migrated_url


def count(url: str, model: Any) -> int:
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        total = session.scalar(select(func.count()).select_from(model)) or 0
    engine.dispose()
    return total


def test_success_is_committed(real_client: tuple[TestClient, str]) -> None:
    client, url = real_client
    response = client.post(
        "/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": ADMIN_KEY}
    )
    assert response.status_code == 200
    assert count(url, Match) == 1


def test_a_failure_after_writes_rolls_everything_back(
    real_client: tuple[TestClient, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, url = real_client

    def fail(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("injected failure after the matches were written")

    monkeypatch.setattr(batches, "write_quotes", fail)
    response = client.post(
        "/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": ADMIN_KEY}
    )
    assert response.status_code == 500
    assert count(url, Match) == count(url, Team) == count(url, Competition) == 0
