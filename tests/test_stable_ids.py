"""Ids the API shows are never handed out again, on either backend.

A bookmarked ``/dashboard/matches/ID``, a bettor's record or a cached ``match_id`` must never
come to name another match. SQLite gives a new row the largest id in use plus one unless
its table is declared AUTOINCREMENT, so the id of the newest row, once deleted (by a
correction or a team merge), was the next row's; PostgreSQL's sequences never go back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, inspect, select, text
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import downgrade_to, upgrade_to_head
from app.db.orm import Match, OddsQuote, PredictionLogEntry, Team, TeamMergeMatch
from app.services import track_record
from app.services.ingest import import_football_data
from app.services.teams import add_alias
from app.settings import Settings

# The tables whose ids the API shows: a match, a team, a model version, an activation of
# one, a refit run, a fetch run.
SHOWN_IDS = ("matches", "teams", "model_versions", "model_activations", "refit_runs", "fetch_runs")
BEFORE_AUTOINCREMENT = "0009"


def quote(home: str, away: str, kickoff: str = "2018-08-10T19:00:00Z") -> dict[str, Any]:
    return {
        "match": {"competition": "E0", "kickoff": kickoff, "home_team": home, "away_team": away},
        "bookmaker": "B365",
        "home": 1.57,
        "draw": 3.9,
        "away": 7.5,
    }


def store(client: TestClient, headers: dict[str, str], *quotes: dict[str, Any]) -> None:
    stored = client.post("/admin/odds", json={"quotes": list(quotes)}, headers=headers)
    assert stored.status_code == 200, stored.text


def match_ids(session: Session) -> dict[str, int]:
    rows = session.execute(select(Team.name, Match.id).join(Team, Match.home_team_id == Team.id))
    return dict(rows.all())


def team_ids(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Team.name, Team.id)).all())


def test_the_id_of_a_deleted_match_is_never_handed_out_again(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    store(client, admin_headers, quote("Man United", "Leicester"), quote("Arsenal", "Chelsea"))
    newest = match_ids(session)["Arsenal"]
    deleted = client.delete(f"/admin/matches/{newest}", headers=admin_headers)
    assert deleted.status_code == 200, deleted.text
    store(client, admin_headers, quote("Everton", "Fulham"))
    assert match_ids(session)["Everton"] > newest
    assert client.get(f"/matches/{newest}").status_code == 404


def test_ids_freed_by_a_team_merge_are_never_handed_out_again(
    client: TestClient, admin_headers: dict[str, str], session: Session
) -> None:
    # The same match under two names of the home team: the newest team and the newest match
    # are the duplicates the merge folds away.
    store(client, admin_headers, quote("Man United", "Leicester"))
    store(client, admin_headers, quote("Manchester United", "Leicester"))
    duplicate_team = team_ids(session)["Manchester United"]
    duplicate_match = match_ids(session)["Manchester United"]
    alias = {"alias": "Manchester United", "team": "Man United"}
    merged = client.post("/admin/teams/aliases", json=alias, headers=admin_headers)
    assert merged.status_code == 200, merged.text
    assert merged.json()["matches_merged"] == 1
    store(client, admin_headers, quote("Arsenal", "Chelsea"))
    assert match_ids(session)["Arsenal"] > duplicate_match
    assert min(team_ids(session)[name] for name in ("Arsenal", "Chelsea")) > duplicate_team


def next_ids_are_new(engine: Engine) -> None:
    """On SQLite each table whose ids the API shows is AUTOINCREMENT; on PostgreSQL its id
    comes from a sequence."""
    with engine.connect() as connection:
        for table in SHOWN_IDS:
            if engine.dialect.name == "sqlite":
                sql = connection.scalar(
                    text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :name"),
                    {"name": table},
                )
                assert "AUTOINCREMENT" in str(sql).upper(), (table, sql)
            else:
                sequence = connection.scalar(
                    text("SELECT pg_get_serial_sequence(:name, 'id')"), {"name": table}
                )
                assert sequence is not None, table


def test_every_id_the_api_shows_comes_from_a_counter_that_never_goes_back(engine: Engine) -> None:
    next_ids_are_new(engine)


Counts = dict[str, int]


def counts(session: Session) -> Counts:
    counted = {
        "matches": Match,
        "quotes": OddsQuote,
        "log entries": PredictionLogEntry,
        "merged matches": TeamMergeMatch,
    }
    return {
        name: session.scalar(select(func.count()).select_from(model)) or 0
        for name, model in counted.items()
    }


def test_the_migration_keeps_every_row_and_link(
    migrated_url: str, season_file: Callable[[str], Path], settings: Settings
) -> None:
    # The rows are written by today's services, then the schema is taken back to before
    # the migration, which keeps them.
    engine = make_engine(migrated_url)
    factory = make_session_factory(engine, for_writes=True)
    with session_scope(factory) as session:
        import_football_data(session, season_file("E0_1819").read_bytes())
        track_record.rebuild(
            session,
            settings,
            kickoff_from=dt.datetime(2018, 8, 1, tzinfo=dt.UTC),
            kickoff_to=None,
            now=dt.datetime(2019, 6, 1, tzinfo=dt.UTC),
        )
        # A duplicate of the first fixture under another name of its home team, merged.
        first = session.scalars(select(Match).order_by(Match.id).limit(1)).one()
        copy = Match(
            competition_id=first.competition_id,
            season=first.season,
            kickoff=first.kickoff,
            kickoff_date=first.kickoff_date,
            kickoff_time_known=first.kickoff_time_known,
            home_team_id=_new_team(session, "Man Utd twin"),
            away_team_id=first.away_team_id,
        )
        session.add(copy)
        session.flush()
        home = session.get(Team, first.home_team_id)
        assert home is not None
        add_alias(session, alias="Man Utd twin", team=home.name)
    downgrade_to(migrated_url, BEFORE_AUTOINCREMENT)
    with factory() as session:
        before = counts(session)
        newest = session.scalar(select(func.max(Match.id)))
    assert before["matches"] == 380
    assert before["quotes"] > 0
    assert before["log entries"] == 380
    assert before["merged matches"] == 1

    upgrade_to_head(migrated_url)
    with factory() as session:
        assert counts(session) == before
    next_ids_are_new(engine)
    _no_broken_link(engine)
    with session_scope(factory) as session:
        session.execute(text("DELETE FROM odds_quotes WHERE match_id = :id"), {"id": newest})
        session.execute(text("DELETE FROM matches WHERE id = :id"), {"id": newest})
    with session_scope(factory) as session:
        import_football_data(session, season_file("E0_1819").read_bytes())
        assert (session.scalar(select(func.max(Match.id))) or 0) > (newest or 0)
        assert session.get(Match, newest) is None
        now = counts(session)

    downgrade_to(migrated_url, BEFORE_AUTOINCREMENT)
    with factory() as session:
        assert counts(session) == now
    _no_broken_link(engine)
    assert "matches" in inspect(engine).get_table_names()
    engine.dispose()


def _new_team(session: Session, name: str) -> int:
    team = Team(name=name)
    session.add(team)
    session.flush()
    return team.id


def _no_broken_link(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        return  # PostgreSQL checks every foreign key as it is written, and the migration is a no-op
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []


def test_the_migration_goes_down_and_up_on_an_empty_database(fresh_database_url: str) -> None:
    upgrade_to_head(fresh_database_url)
    downgrade_to(fresh_database_url, BEFORE_AUTOINCREMENT)
    upgrade_to_head(fresh_database_url)
    engine = make_engine(fresh_database_url)
    next_ids_are_new(engine)
    engine.dispose()
