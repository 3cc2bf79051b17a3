"""Migrations match the models; constraints hold in the database itself; settings."""

from __future__ import annotations

import datetime as dt
import traceback

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from pydantic import ValidationError
from sqlalchemy import Connection, Engine, insert, inspect, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.migrate import (
    SchemaNotCurrentError,
    current_revision,
    downgrade_to,
    head_revision,
    require_current_schema,
    upgrade_to_head,
)
from app.db.orm import Base, Bookmaker, Competition, Match, OddsQuote, RefitRun, Team
from app.domain.vocabulary import Phase, RunStatus, RunTrigger
from app.main import create_app
from app.settings import ConfigurationError, Settings, get_settings


def test_migrations_produce_exactly_the_models(connection: Connection) -> None:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    assert compare_metadata(context, Base.metadata) == []


def test_database_is_at_head(engine: Engine) -> None:
    assert current_revision(engine) == head_revision()
    require_current_schema(engine)


def test_indexes_for_refit_and_predict_exist(connection: Connection) -> None:
    inspector = inspect(connection)
    match_indexes = {ix["name"]: ix["column_names"] for ix in inspector.get_indexes("matches")}
    assert match_indexes["ix_matches_settled_kickoff"] == ["kickoff"]
    assert match_indexes["ix_matches_competition_id_kickoff"] == ["competition_id", "kickoff"]
    unique = {tuple(c["column_names"]) for c in inspector.get_unique_constraints("odds_quotes")} | {
        tuple(ix["column_names"]) for ix in inspector.get_indexes("odds_quotes") if ix["unique"]
    }
    assert ("match_id", "bookmaker_id", "phase", "captured_at") in unique
    assert ("match_id", "bookmaker_id", "phase") in unique


def test_unmigrated_database_is_reported(fresh_database_url: str) -> None:
    from app.db.engine import make_engine

    engine = make_engine(fresh_database_url)
    try:
        with pytest.raises(SchemaNotCurrentError, match="run `oddsboost migrate`"):
            require_current_schema(engine)
    finally:
        engine.dispose()


def test_versions_activated_before_activations_were_kept_get_theirs(migrated_url: str) -> None:
    """Before revision 0005 only refits activated versions, each once, at its activated_at."""
    from sqlalchemy import JSON, Boolean, Float, Integer, String, column, table

    from app.db.engine import make_engine
    from app.db.orm import UTCDateTime

    downgrade_to(migrated_url, "0004")
    moment = dt.datetime(2019, 6, 1, 3, tzinfo=dt.UTC)
    versions = table(
        "model_versions",
        *(column(name, Integer()) for name in ("id", "rounds", "n_matches")),
        *(column(name, String()) for name in ("algorithm", "method", "phase", "project_version")),
        *(column(name, UTCDateTime()) for name in ("created_at", "window_start", "window_end")),
        *(column(name, JSON()) for name in ("bookmakers", "rounds_grid", "validation")),
        column("is_active", Boolean()),
        column("activated_at", UTCDateTime()),
        column("rejected_reason", String()),
        column("fit_seconds", Float()),
    )
    runs = table(
        "refit_runs",
        *(column(name, Integer()) for name in ("id", "version_id")),
        *(column(name, String()) for name in ("trigger", "status")),
        *(column(name, UTCDateTime()) for name in ("started_at", "until")),
    )

    def version(number: int, activated_days: int | None, **changes: object) -> dict[str, object]:
        return {
            "id": number,
            "rounds": 1,
            "n_matches": 1,
            "algorithm": "adaboost.m2",
            "method": "power",
            "phase": "pre",
            "project_version": "0.1.0",
            "created_at": moment,
            "window_start": moment,
            "window_end": moment,
            "bookmakers": [],
            "rounds_grid": [],
            "validation": {},
            "is_active": False,
            "activated_at": None
            if activated_days is None
            else moment + dt.timedelta(days=activated_days),
            "rejected_reason": None,
            "fit_seconds": 0.0,
            **changes,
        }

    engine = make_engine(migrated_url)
    with engine.begin() as connection:
        connection.execute(
            insert(versions),
            [
                version(1, 0),
                version(2, None, rejected_reason="worse"),
                version(3, 7, is_active=True),
            ],
        )
        connection.execute(
            insert(runs),
            [
                {"id": n, "version_id": n, "trigger": "cli", "status": status}
                | {"started_at": moment, "until": moment}
                for n, status in ((1, "succeeded"), (2, "rejected"), (3, "succeeded"))
            ],
        )
    upgrade_to_head(migrated_url)
    with engine.connect() as connection:
        recorded = connection.execute(
            text(
                "SELECT version_id, previous_version_id, activated_by, run_id, reason "
                "FROM model_activations ORDER BY id"
            )
        ).all()
    assert [tuple(row) for row in recorded] == [
        (1, None, "refit", 1, None),
        (3, 1, "refit", 3, None),
    ]
    downgrade_to(migrated_url, "0004")
    assert "model_activations" not in inspect(engine).get_table_names()
    engine.dispose()


def _one_match(session: Session) -> tuple[int, int]:
    competition = Competition(code="E0")
    home, away = Team(name="A"), Team(name="B")
    bookmaker = Bookmaker(code="B365", name="Bet365")
    session.add_all([competition, home, away, bookmaker])
    session.flush()
    match = Match(
        competition_id=competition.id,
        season="2018/19",
        kickoff=dt.datetime(2018, 8, 10, tzinfo=dt.UTC),
        kickoff_date=dt.date(2018, 8, 10),
        kickoff_time_known=False,
        home_team_id=home.id,
        away_team_id=away.id,
    )
    session.add(match)
    session.flush()
    return match.id, bookmaker.id


def _undated_quote(session: Session) -> dict[str, object]:
    match_id, bookmaker_id = _one_match(session)
    return {
        "match_id": match_id,
        "bookmaker_id": bookmaker_id,
        "phase": "pre",
        "home": 2.0,
        "draw": 3.0,
        "away": 4.0,
        "captured_at": None,
        "received_at": dt.datetime.now(dt.UTC),
    }


def test_undated_quotes_are_unique_in_the_database(session: Session) -> None:
    # NULLs are distinct in SQL unique constraints; the partial index closes that gap.
    row = _undated_quote(session)
    session.execute(insert(OddsQuote), [row])
    with pytest.raises(IntegrityError), session.begin_nested():
        session.execute(insert(OddsQuote), [row])


@pytest.mark.parametrize(
    "change",
    [{"home": 1.0}, {"away": 1000.5}, {"phase": "live"}],
)
def test_quote_constraints_in_the_database(session: Session, change: dict[str, object]) -> None:
    row = _undated_quote(session)
    with pytest.raises(IntegrityError), session.begin_nested():
        session.execute(insert(OddsQuote), [{**row, **change}])


def test_shared_words_are_stored_as_their_text_and_read_back_as_words(session: Session) -> None:
    session.execute(insert(OddsQuote), [_undated_quote(session)])
    session.add(
        RefitRun(
            trigger=RunTrigger.SCHEDULER,
            status=RunStatus.QUEUED,
            until=dt.datetime(2018, 8, 10, tzinfo=dt.UTC),
        )
    )
    session.flush()
    stored = session.execute(
        text("SELECT q.phase, r.trigger, r.status FROM odds_quotes q, refit_runs r")
    ).one()
    assert tuple(stored) == ("pre", "scheduler", "queued")
    assert all(type(word) is str for word in stored)
    session.expire_all()
    assert session.scalars(select(OddsQuote.phase)).one() is Phase.PRE
    run = session.scalars(select(RefitRun)).one()
    assert (run.trigger, run.status) == (RunTrigger.SCHEDULER, RunStatus.QUEUED)
    assert (type(run.trigger), type(run.status)) == (RunTrigger, RunStatus)


def test_timestamps_come_back_in_utc(session: Session) -> None:
    match_id, _ = _one_match(session)
    session.expire_all()
    match = session.get(Match, match_id)
    assert match is not None
    assert match.kickoff.tzinfo is dt.UTC
    assert match.kickoff == dt.datetime(2018, 8, 10, tzinfo=dt.UTC)


def test_naive_datetimes_never_reach_the_database(session: Session) -> None:
    match_id, _ = _one_match(session)
    match = session.get(Match, match_id)
    assert match is not None
    match.kickoff = dt.datetime(2018, 8, 10, 19, 0)  # no tzinfo
    with pytest.raises(Exception, match="naive datetime"), session.begin_nested():
        session.flush()


def test_placeholder_admin_key_is_refused_outside_development() -> None:
    with pytest.raises(ValidationError, match="placeholder"):
        Settings(admin_api_key="changeme")
    assert Settings(admin_api_key="changeme", environment="development").admin_api_key is not None
    assert Settings(admin_api_key="a-real-secret-value").admin_api_key is not None


def test_postgres_urls_use_psycopg3() -> None:
    assert (
        Settings(database_url="postgresql://u@h/db").database_url == "postgresql+psycopg://u@h/db"
    )
    assert Settings(database_url="postgres://u@h/db").database_url == "postgresql+psycopg://u@h/db"
    assert Settings(database_url="sqlite:///x.db").database_url == "sqlite:///x.db"


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "utc", "Europe", "zone.tab", "../UTC", ""])
def test_the_dashboards_time_zone_must_be_an_iana_zone(name: str) -> None:
    with pytest.raises(ValidationError, match="dashboard_time_zone"):
        Settings(dashboard_time_zone=name)
    assert Settings(dashboard_time_zone="America/New_York").dashboard_time_zone == (
        "America/New_York"
    )


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ODDSBOOST_DATABASE_URL", "sqlite:///from-env.db")
    monkeypatch.setenv("ODDSBOOST_ADMIN_API_KEY", "from-env-key-123")
    settings = Settings()
    assert settings.database_url == "sqlite:///from-env.db"
    assert settings.admin_api_key is not None
    assert settings.admin_api_key.get_secret_value() == "from-env-key-123"
    assert "from-env-key-123" not in repr(settings)


def test_the_team_merges_migration_goes_down_and_up(fresh_database_url: str) -> None:
    from app.db.engine import make_engine

    merge_tables = {"team_merges", "team_merge_matches"}
    upgrade_to_head(fresh_database_url)
    engine = make_engine(fresh_database_url)
    try:
        assert merge_tables <= set(inspect(engine).get_table_names())
        downgrade_to(fresh_database_url, "0005")
        assert current_revision(engine) == "0005"
        assert not merge_tables & set(inspect(engine).get_table_names())
        upgrade_to_head(fresh_database_url)
        assert merge_tables <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


@pytest.mark.parametrize("key", ["x", "1234", "test", "changeme123", "fifteen-chars-x"])
def test_short_admin_keys_are_refused_outside_development(key: str) -> None:
    with pytest.raises(ValidationError, match="at least 16 characters"):
        Settings(admin_api_key=key)
    assert Settings(admin_api_key=key, environment="development").admin_api_key is not None
    assert Settings(admin_api_key=key + "y" * (16 - len(key))).admin_api_key is not None


@pytest.mark.parametrize(
    "key", ["clé-secrète-de-vingt-caractères", "tab\tinside-a-long-key", " leading-space-long-key"]
)
def test_an_admin_key_no_header_can_carry_is_refused_everywhere(key: str) -> None:
    # A header value arrives as Latin-1 bytes and is trimmed: such a key never matches.
    for environment in ("production", "development"):
        with pytest.raises(ValidationError, match="printable ASCII"):
            Settings(admin_api_key=key, environment=environment)


def test_a_refused_admin_key_is_not_repeated_in_the_message() -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(admin_api_key="short-key-7")
    assert "short-key-7" not in str(refused.value)


def test_the_server_s_configuration_error_says_the_variable_and_the_reason_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app factory, as uvicorn's workers call it, reads the same settings the same way."""
    monkeypatch.setenv("ODDSBOOST_PAGE_SIZE_MAX", "0")
    monkeypatch.setenv("ODDSBOOST_ADMIN_API_KEY", "short-key-7")
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError) as refused:
            create_app()
    finally:
        get_settings.cache_clear()
    # page_size_max is at least 1; a field's own error stops the checks of the whole.
    assert refused.value.problems == [
        "ODDSBOOST_PAGE_SIZE_MAX: Input should be greater than or equal to 1"
    ]
    shown = "".join(traceback.format_exception(refused.value))
    assert "errors.pydantic.dev" not in shown
    assert "short-key-7" not in shown


def test_the_closing_line_job_must_fetch_inside_the_closing_window() -> None:
    # The ledger counts a quote as the close only within closing_window_minutes of kickoff.
    with pytest.raises(ValidationError, match=r"CLOSING_LINE_MINUTES \(31\) is more than"):
        Settings(closing_line_minutes=31, closing_window_minutes=30)
    same = Settings(closing_line_minutes=30, closing_window_minutes=30)
    assert (same.closing_line_minutes, same.closing_window_minutes) == (30, 30)
