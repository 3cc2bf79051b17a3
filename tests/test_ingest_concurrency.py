"""Concurrent imports of overlapping data: no errors, nothing stored twice; a write that
cannot get SQLite's lock in time is told to come back."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, make_url, select

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, OddsQuote, Team
from app.main import create_app
from app.services.ingest import import_football_data
from app.settings import Settings
from tests.admin_requests import quote
from tests.apps import ADMIN_KEY
from tests.helpers import error_messages

SeasonFile = Callable[[str], Path]


def test_two_writers_importing_the_same_files(migrated_url: str, season_file: SeasonFile) -> None:
    engine = make_engine(migrated_url)
    factory = make_session_factory(engine, for_writes=True)
    contents = [season_file(name).read_bytes() for name in ("E0_1617", "E0_1718", "E0_1819")]
    errors: list[BaseException] = []
    created: list[int] = []

    def import_all(order: list[bytes]) -> None:
        for content in order:
            try:
                with session_scope(factory) as session:
                    created.append(import_football_data(session, content).matches_created)
            except BaseException as error:  # collected and asserted below
                errors.append(error)

    writers = [
        threading.Thread(target=import_all, args=(contents,)),
        threading.Thread(target=import_all, args=(contents[::-1],)),
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()

    assert errors == []
    assert sum(created) == 3 * 380  # each match created by exactly one of the writers
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Match)) == 3 * 380
        team_names = session.scalars(select(Team.name)).all()
        assert len(team_names) == len(set(team_names))
        duplicates = session.execute(
            select(OddsQuote.match_id, OddsQuote.bookmaker_id, OddsQuote.phase)
            .group_by(OddsQuote.match_id, OddsQuote.bookmaker_id, OddsQuote.phase)
            .having(func.count() > 1)
        ).all()
        assert duplicates == []
    engine.dispose()


def test_a_write_kept_waiting_by_another_writer_is_told_to_come_back(
    migrated_url: str, season_file: SeasonFile
) -> None:
    if make_url(migrated_url).get_backend_name() != "sqlite":
        pytest.skip("SQLite's single writer lock; PostgreSQL writers wait on rows instead")
    settings = Settings(
        database_url=migrated_url, admin_api_key=ADMIN_KEY, sqlite_busy_timeout_seconds=0.2
    )
    headers = {"X-API-Key": ADMIN_KEY}
    other_writer = sqlite3.connect(str(make_url(migrated_url).database), isolation_level=None)
    with TestClient(create_app(settings)) as client:
        other_writer.execute("BEGIN IMMEDIATE")  # holds the write lock throughout
        try:
            odds = client.post("/admin/odds", json={"quotes": [quote()]}, headers=headers)
            season = client.post(
                "/admin/import/football-data",
                content=season_file("E0_1819").read_bytes(),
                headers={**headers, "Content-Type": "text/csv"},
            )
            reading = client.get("/matches")  # readers never wait for a writer
        finally:
            other_writer.execute("ROLLBACK")
            other_writer.close()
        for refused in (odds, season):
            assert refused.status_code == 503, refused.text
            assert refused.headers["Retry-After"] == "5"
            (message,) = error_messages(refused.json())
            assert "busy" in message
        assert reading.status_code == 200
        again = client.post("/admin/odds", json={"quotes": [quote()]}, headers=headers)
        assert again.status_code == 200
        assert again.json()["matches_created"] == 1
