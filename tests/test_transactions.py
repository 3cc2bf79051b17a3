"""The real session dependency: a request that fails after writing leaves nothing behind,
and what an ingest wrote is counted only once it is committed."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Table, event, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.api.schemas.ingest import OddsUpload
from app.db.bulk import insert_rows
from app.db.engine import make_engine, make_session_factory
from app.db.orm import Bookmaker, Competition, Match, OddsQuote, Team
from app.domain.vocabulary import Phase
from app.main import create_app
from app.metrics import REGISTRY
from app.services.ingest import batches, ingest_batch
from app.settings import Settings
from tests.admin_requests import quote
from tests.apps import ADMIN_KEY

INGEST_LOGGER = "app.services.ingest.report"


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


def quotes_counted() -> float:
    """The quotes the ingest metrics say were inserted, in this process so far."""
    return (
        REGISTRY.get_sample_value("oddsboost_ingested_rows_total", {"kind": "quotes_inserted"})
        or 0.0
    )


def ingest_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == INGEST_LOGGER]


def test_a_committed_ingest_is_counted_once(
    real_client: tuple[TestClient, str], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = real_client
    caplog.set_level(logging.INFO, logger=INGEST_LOGGER)
    before = quotes_counted()
    response = client.post(
        "/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": ADMIN_KEY}
    )
    assert response.status_code == 200
    assert quotes_counted() == before + 1
    (line,) = ingest_lines(caplog)
    assert line.startswith(
        "ingest from /admin/odds: 1 match created, 0 updated (0 rescheduled), 0 unchanged; 1 quote "
    )


def test_an_ingest_whose_commit_fails_is_not_counted(
    real_client: tuple[TestClient, str], caplog: pytest.LogCaptureFixture
) -> None:
    client, url = real_client
    caplog.set_level(logging.INFO, logger=INGEST_LOGGER)
    before = quotes_counted()

    def refuse(session: Session) -> None:
        if session.get_nested_transaction() is None:  # the commit itself, not a savepoint
            raise RuntimeError("injected failure of the commit")

    event.listen(Session, "before_commit", refuse)
    try:
        response = client.post(
            "/admin/odds", json={"quotes": [quote()]}, headers={"X-API-Key": ADMIN_KEY}
        )
    finally:
        event.remove(Session, "before_commit", refuse)
    assert response.status_code == 500
    assert count(url, Match) == 0
    assert quotes_counted() == before
    assert ingest_lines(caplog) == []


def test_an_ingest_undone_with_its_savepoint_is_not_counted(session: Session) -> None:
    batch = OddsUpload.model_validate({"quotes": [quote()]}).to_batch()
    before = quotes_counted()
    savepoint = session.begin_nested()
    ingest_batch(session, batch, source="a test")
    savepoint.rollback()
    session.commit()
    assert quotes_counted() == before
    ingest_batch(session, batch, source="a test")
    assert quotes_counted() == before  # written, not yet committed
    session.commit()
    assert quotes_counted() == before + 1


def test_rows_written_in_bulk_read_back_as_written(session: Session) -> None:
    """COPY on PostgreSQL, an executemany on SQLite: each value through its column's type."""
    competition = Competition(code="E0")
    home, away = Team(name="Home"), Team(name="Away")
    session.add_all([competition, home, away])
    session.flush()
    kickoff = dt.datetime(2018, 8, 10, 21, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    insert_rows(
        session.connection(),
        cast(Table, Match.__table__),
        [
            {
                "competition_id": competition.id,
                "season": "2018/19",
                "kickoff": kickoff,
                "kickoff_date": kickoff.date(),
                "kickoff_time_known": True,
                "home_team_id": home.id,
                "away_team_id": away.id,
                "home_goals": None,
                "away_goals": None,
                "result": None,
                "external_id": "a 'quoted', tab\tseparated \\N",
                "created_at": kickoff,
                "updated_at": kickoff,
            }
        ],
    )
    match = session.scalars(select(Match)).one()
    assert match.kickoff == dt.datetime(2018, 8, 10, 19, 0, tzinfo=dt.UTC)
    assert match.kickoff_time_known is True
    assert match.home_goals is None
    assert match.external_id == "a 'quoted', tab\tseparated \\N"
    bookmaker = Bookmaker(code="B365", name="Bet365")
    session.add(bookmaker)
    session.flush()
    quote_row = {
        "match_id": match.id,
        "bookmaker_id": bookmaker.id,
        "phase": Phase.CLOSING,
        "captured_at": None,
        "home": 1.5,
        "draw": 4.0,
        "away": 6.5,
        "received_at": kickoff,
        "seen_at": kickoff,
    }
    quotes = cast(Table, OddsQuote.__table__)
    insert_rows(session.connection(), quotes, [quote_row])
    stored = session.scalars(select(OddsQuote)).one()
    assert (stored.phase, stored.home, stored.draw, stored.away) == (Phase.CLOSING, 1.5, 4.0, 6.5)
    # The error a concurrent writer's same rows give a statement, which ingest tries again on.
    with pytest.raises(IntegrityError), session.begin_nested():
        insert_rows(session.connection(), quotes, [quote_row])
    assert session.scalar(select(func.count()).select_from(OddsQuote)) == 1
