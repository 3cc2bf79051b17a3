"""Fetch runs: recorded when they start and end, and listed for operators."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import Connection
from sqlalchemy.orm import Session, sessionmaker

from app.domain.vocabulary import FetchSource, RunTrigger
from app.services.fetch_runs import FetchCounts, finish_fetch, start_fetch
from tests.helpers import error_messages


def factory_on(connection: Connection) -> sessionmaker[Session]:
    """Sessions whose commits stay inside the test's rolled-back transaction."""
    return sessionmaker(bind=connection, join_transaction_mode="create_savepoint")


def test_runs_are_listed_newest_first_with_what_they_did(
    client: TestClient, connection: Connection, admin_headers: dict[str, str]
) -> None:
    factory = factory_on(connection)
    odds = start_fetch(factory, FetchSource.THE_ODDS_API, RunTrigger.SCHEDULER)
    files = start_fetch(factory, FetchSource.FOOTBALL_DATA, RunTrigger.CLI)
    running = client.get(f"/admin/fetches/{files}", headers=admin_headers).json()
    assert (running["status"], running["finished_at"]) == ("running", None)

    first = FetchCounts(requests=1, changed=1, matches=2, quotes=12, quota_remaining=9)
    second = FetchCounts(requests=1, quotes=3, quota_remaining=8, quota_used=2)
    finish_fetch(factory, odds, first.plus(second))
    finish_fetch(factory, files, FetchCounts(requests=3), error="E0.csv: HTTP 500")

    body = client.get("/admin/fetches", headers=admin_headers).json()
    assert [run["id"] for run in body["items"]] == [files, odds]
    done = body["items"][1]
    assert done["status"] == "succeeded"
    assert (done["requests"], done["changed"], done["matches"], done["quotes"]) == (2, 1, 2, 15)
    # The quota is what the last request said.
    assert (done["quota_remaining"], done["quota_used"]) == (8, 2)
    failed = body["items"][0]
    assert (failed["status"], failed["error"]) == ("failed", "E0.csv: HTTP 500")
    assert failed["finished_at"] is not None

    only = client.get("/admin/fetches?source=the-odds-api", headers=admin_headers).json()
    assert [run["id"] for run in only["items"]] == [odds]


def test_bad_requests_are_refused(client: TestClient, admin_headers: dict[str, str]) -> None:
    assert client.get("/admin/fetches").status_code == 401
    missing = client.get("/admin/fetches/999", headers=admin_headers)
    assert missing.status_code == 404
    assert error_messages(missing.json()) == ["no fetch run 999"]
    wrong = client.get("/admin/fetches?source=ftp", headers=admin_headers)
    assert wrong.status_code == 422
