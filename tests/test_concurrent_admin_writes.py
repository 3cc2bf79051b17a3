"""Admin writes that run at the same time, each in its own transaction (as two requests, or
a request and a command, do): the later one waits for the earlier to commit, then acts on
what it committed; neither fails."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.schemas.ingest import OddsUpload
from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, ModelActivation, ModelVersion, OddsQuote, Team, TeamAlias
from app.domain.vocabulary import ActivatedBy
from app.services.ingest import ingest_batch
from app.services.matches import MatchNotFoundError, delete_match
from app.services.model_versions import activate_version
from app.services.teams import AliasConflictError, TeamNotFoundError, add_alias, remove_alias
from app.settings import Settings
from tests.admin_requests import quote
from tests.helpers import count_rows, hand_made_version, store_versions

# How long a writer may take to start waiting for the other's lock before the test fails.
WAIT_DEADLINE_SECONDS = 30.0

Work = Callable[[Session], object]


@dataclass
class Writers:
    """Two writers on their own sessions: the first does its work and holds its
    transaction open until the second is waiting for it, then commits."""

    engine: Engine
    factory: sessionmaker[Session]
    errors: list[BaseException] = field(default_factory=list)
    results: list[object] = field(default_factory=list)

    def run(self, first: Work, second: Work) -> None:
        first_done, second_ready = threading.Event(), threading.Event()
        waiting_pid: list[int] = []

        def run_first() -> None:
            with session_scope(self.factory) as session:
                self.results.append(first(session))
                first_done.set()
                assert second_ready.wait(WAIT_DEADLINE_SECONDS)
                self._until_waiting(waiting_pid)

        def run_second() -> None:
            assert first_done.wait(WAIT_DEADLINE_SECONDS)
            with session_scope(self.factory) as session:
                if self.engine.dialect.name == "postgresql":
                    waiting_pid.append(int(session.scalar(text("SELECT pg_backend_pid()")) or 0))
                second_ready.set()
                self.results.append(second(session))

        threads = [threading.Thread(target=self._collect(work)) for work in (run_first, run_second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _collect(self, work: Callable[[], None]) -> Callable[[], None]:
        def collected() -> None:
            try:
                work()
            except BaseException as error:  # asserted by the test
                self.errors.append(error)

        return collected

    def _until_waiting(self, pid: list[int]) -> None:
        """PostgreSQL: until the second writer's backend waits for a lock this transaction
        holds. SQLite: its write session waits at BEGIN for the database's one write lock
        (which no query shows), so the first commits as soon as the second has started."""
        if not pid:
            return
        deadline = time.monotonic() + WAIT_DEADLINE_SECONDS
        with self.engine.connect() as watcher:
            while time.monotonic() < deadline:
                waiting = watcher.scalar(
                    text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"),
                    {"pid": pid[0]},
                )
                if waiting == "Lock":
                    return
                watcher.rollback()  # a new snapshot of the activity on each look
        raise AssertionError("the second writer never waited for the first")


@pytest.fixture
def writers(migrated_url: str) -> Iterator[Writers]:
    engine = make_engine(migrated_url)
    # The session a write request and a writing command get.
    yield Writers(engine, make_session_factory(engine, for_writes=True))
    engine.dispose()


def test_two_activations_at_once_both_succeed_and_the_later_wins(
    writers: Writers, migrated_url: str
) -> None:
    first, second, active = store_versions(
        migrated_url,
        hand_made_version(),
        hand_made_version(weights={"PS": 1.0}),
        hand_made_version(weights={"WH": 1.0}),
    )
    settings = Settings(database_url=migrated_url)

    def activating(version_id: int) -> Work:
        def work(session: Session) -> object:
            done = activate_version(
                session, version_id, by=ActivatedBy.API, reason=None, settings=settings
            )
            return done.activation is not None

        return work

    writers.run(activating(first), activating(second))

    assert writers.errors == []
    assert writers.results == [True, True]
    with writers.factory() as session:
        actives = session.scalars(select(ModelVersion.id).where(ModelVersion.is_active)).all()
        history = session.execute(
            select(ModelActivation.version_id, ModelActivation.previous_version_id).order_by(
                ModelActivation.id
            )
        ).all()
    assert actives == [second]
    assert [tuple(row) for row in history] == [(active, None), (first, active), (second, first)]


def test_two_activations_of_the_same_version_record_one(
    writers: Writers, migrated_url: str
) -> None:
    first, active = store_versions(
        migrated_url, hand_made_version(), hand_made_version(weights={"PS": 1.0})
    )
    settings = Settings(database_url=migrated_url)

    def work(session: Session) -> object:
        done = activate_version(session, first, by=ActivatedBy.CLI, reason=None, settings=settings)
        return done.activation is not None

    writers.run(work, work)

    assert writers.errors == []
    assert writers.results == [True, False]  # the second found it already active
    with writers.factory() as session:
        history = session.execute(
            select(ModelActivation.version_id, ModelActivation.previous_version_id).order_by(
                ModelActivation.id
            )
        ).all()
    assert [tuple(row) for row in history] == [(active, None), (first, active)]


def store_teams(factory: sessionmaker[Session], *names: str) -> None:
    with session_scope(factory) as session:
        session.add_all(Team(name=name) for name in names)


def aliasing(alias: str, team: str) -> Work:
    def work(session: Session) -> object:
        return add_alias(session, alias=alias, team=team).created

    return work


def test_the_same_alias_added_at_once_to_two_teams_is_refused_for_the_later(
    writers: Writers,
) -> None:
    store_teams(writers.factory, "Manchester United", "Manchester City")

    writers.run(aliasing("Man U", "Manchester United"), aliasing("Man U", "Manchester City"))

    assert writers.results == [True]
    assert [type(error) for error in writers.errors] == [AliasConflictError]
    assert str(writers.errors[0]) == (
        "'Man U' is already an alias of 'Manchester United'; remove it first"
    )
    with writers.factory() as session:
        aliases = session.execute(select(TeamAlias.alias, Team.name).join(Team)).all()
    assert [tuple(row) for row in aliases] == [("Man U", "Manchester United")]


def test_the_same_alias_added_at_once_to_one_team_is_added_once(writers: Writers) -> None:
    store_teams(writers.factory, "Manchester United")

    writers.run(aliasing("Man U", "Manchester United"), aliasing("Man U", "Manchester United"))

    assert writers.errors == []
    assert writers.results == [True, False]  # the second found it there


def test_an_alias_that_merged_a_team_removed_at_once_twice_is_undone_once(
    writers: Writers,
) -> None:
    store_teams(writers.factory, "Manchester United", "Man Utd")
    with session_scope(writers.factory) as session:
        add_alias(session, alias="Man Utd", team="Manchester United")

    def removing(session: Session) -> object:
        return remove_alias(session, "Man Utd").restored_team

    writers.run(removing, removing)

    assert writers.results == [True]
    assert [type(error) for error in writers.errors] == [TeamNotFoundError]
    with writers.factory() as session:
        assert sorted(session.scalars(select(Team.name))) == ["Man Utd", "Manchester United"]
        assert session.scalars(select(TeamAlias.alias)).all() == []


def test_a_match_deleted_at_once_twice_is_deleted_once(writers: Writers) -> None:
    upload = OddsUpload.model_validate({"quotes": [quote(), quote(bookmaker="PS", home=1.6)]})
    with session_scope(writers.factory) as session:
        ingest_batch(session, upload.to_batch(), source="a test")
    with writers.factory() as session:
        (match_id,) = session.scalars(select(Match.id)).all()

    def deleting(session: Session) -> object:
        return delete_match(session, match_id).quotes_deleted

    writers.run(deleting, deleting)

    assert writers.results == [2]
    assert [type(error) for error in writers.errors] == [MatchNotFoundError]
    assert str(writers.errors[0]) == f"no match with id {match_id}"
    with writers.factory() as session:
        assert count_rows(session, Match) == count_rows(session, OddsQuote) == 0


def test_a_match_deleted_while_a_merge_folds_it_waits_and_finds_it_gone(
    writers: Writers,
) -> None:
    # The same fixture under two names: the merge folds Man Utd's match into Man United's.
    upload = OddsUpload.model_validate(
        {
            "quotes": [
                quote(),
                quote(bookmaker="PS", home=1.6, match={"home_team": "Man Utd"}),
            ]
        }
    )
    with session_scope(writers.factory) as session:
        ingest_batch(session, upload.to_batch(), source="a test")
    with writers.factory() as session:
        folded = session.scalars(
            select(Match.id).join(Team, Team.id == Match.home_team_id).where(Team.name == "Man Utd")
        ).one()

    def deleting(session: Session) -> object:
        return delete_match(session, folded).quotes_deleted

    writers.run(aliasing("Man Utd", "Man United"), deleting)

    assert writers.results == [True]
    assert [type(error) for error in writers.errors] == [MatchNotFoundError]
    with writers.factory() as session:
        (kept,) = session.scalars(select(Match)).all()
        codes = session.scalars(
            select(OddsQuote.bookmaker_id).where(OddsQuote.match_id == kept.id)
        ).all()
    assert len(codes) == 2  # the folded match's quote moved to its twin, nothing deleted
