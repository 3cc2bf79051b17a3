"""What failures, releases and bursts leave behind: a board whose build failed lets its Redis
lock go; an entry of another release, or of another shape of board, is never read; the pool
keeps connections no limit may take, and the board built in advance takes a place of the
board's; the bodies kept stay within their byte budget; a match deleted while its page is
made gets the 404 page, which is not kept."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

import app
from app import main
from app.db.engine import session_scope
from app.domain.ensemble import Ensemble
from app.domain.prediction import MatchInfo, QuotedOdds
from app.services import dashboard, shared_store
from app.services.admission import RESERVED_CONNECTIONS, Endpoints, connections_needed
from app.services.caching import KeptBodies
from app.services.matches import delete_match
from app.services.prediction import PredictionAnswer
from app.services.shared_store import SharedBoards, shape_digest
from app.services.unavailable import UnavailableError
from app.services.upcoming import Freshness, UpcomingQuery, _Board, shared_boards
from app.services.value_bets import ValueBet
from app.settings import Settings
from app.state import app_state
from tests.plugins.redis_store import RedisUnderTest
from tests.upcoming_matches import Seeded


def redis_settings(redis_under_test: RedisUnderTest) -> Settings:
    return Settings(redis_url=redis_under_test.url, redis_key_prefix=redis_under_test.prefix)


def store_of(redis_under_test: RedisUnderTest, shape: type[Any] = object) -> SharedBoards[Any]:
    shared = SharedBoards[Any].from_settings(redis_settings(redis_under_test), shape)
    assert shared is not None
    return shared


class DatabaseDownError(UnavailableError):
    retry_after_seconds = 5


# A failed build.


def test_a_build_that_fails_lets_its_lock_go(test_redis: RedisUnderTest) -> None:
    first, second = store_of(test_redis), store_of(test_redis)
    lock = first.entry("board") + ":lock"
    held_while_building: list[bool] = []

    def failing() -> str:
        held_while_building.append(bool(test_redis.client.exists(lock)))
        raise DatabaseDownError("the database is down")

    with pytest.raises(DatabaseDownError):
        first.fetch_or_build("board", failing)
    assert held_while_building == [True]
    # Left behind, it would make every process asking for the board wait out its wait.
    assert not test_redis.client.exists(lock)
    assert second.fetch_or_build("board", lambda: "built") == "built"
    assert first.fetch_or_build("board", lambda: "not asked") == "built"


def test_a_failed_build_leaves_a_lock_another_process_took_since(
    test_redis: RedisUnderTest,
) -> None:
    shared = store_of(test_redis)
    lock = shared.entry("board") + ":lock"

    def failing() -> str:
        # This build outlived its lock, and another process took the board's lock since.
        test_redis.client.set(lock, "another process", px=60_000)
        raise DatabaseDownError("the database is down")

    with pytest.raises(DatabaseDownError):
        shared.fetch_or_build("board", failing)
    assert test_redis.client.get(lock) == b"another process"


# Entries of another release or shape.


def test_a_boards_key_names_the_release_and_the_shape_of_a_board(
    test_redis: RedisUnderTest,
) -> None:
    shared = shared_boards(redis_settings(test_redis))
    assert shared is not None
    digest = shape_digest(_Board)
    assert shared.entry("query") == f"{test_redis.prefix}:board:{app.__version__}:{digest}:query"


@pytest.mark.parametrize(
    "record", [PredictionAnswer, Ensemble, ValueBet, Freshness, MatchInfo, QuotedOdds]
)
def test_a_field_added_to_any_record_a_board_holds_changes_its_shape(
    record: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = shape_digest(_Board)
    names_of = shared_store._names_of

    def grown(kind: type) -> tuple[str, ...]:
        names = names_of(kind)
        return (*names, "added") if kind is record else names

    monkeypatch.setattr(shared_store, "_names_of", grown)
    assert shape_digest(_Board) != before


def two_releases(monkeypatch: pytest.MonkeyPatch) -> tuple[type, type]:
    """A board holding, through a mapping of tuples of optional records, a record that gained
    a field in the second release."""
    monkeypatch.setattr(shared_store, "OWN_PACKAGES", ("tests",))

    def made(name: str, fields: list[Any]) -> type:
        record = dataclasses.make_dataclass(name, fields)
        record.__module__ = __name__
        return record

    def board(inner_fields: list[tuple[str, type]]) -> type:
        inner = made("Inner", inner_fields)
        rows = dict[str, tuple[inner | None, int]]  # type: ignore[valid-type]
        return made("Board", [("rows", rows)])

    return board([("price", float)]), board([("price", float), ("captured_at", str)])


def test_a_board_of_another_shape_is_never_read(
    test_redis: RedisUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = two_releases(monkeypatch)
    assert shape_digest(old) == shape_digest(two_releases(monkeypatch)[0])
    assert shape_digest(old) != shape_digest(new)
    assert store_of(test_redis, old).fetch_or_build("query", lambda: "old") == "old"
    # The new release builds its own, rather than unpickling the old one's.
    assert store_of(test_redis, new).fetch_or_build("query", lambda: "new") == "new"
    assert store_of(test_redis, old).fetch_or_build("query", lambda: "not asked") == "old"


# Connections and places.


def test_the_limited_endpoints_leave_connections_to_the_others() -> None:
    # The defaults: the board 4, the pages 4 × 2, the track record 2, the batch 2.
    assert connections_needed(Settings().admission_limits().limits) == 16
    assert RESERVED_CONNECTIONS == 2
    for size, overflow in ((8, 8), (9, 8)):  # 16 and 17: the reserve does not fit
        with pytest.raises(ValidationError, match="2 more are kept for the other endpoints"):
            Settings(database_pool_size=size, database_pool_overflow=overflow)
    Settings(database_pool_size=9, database_pool_overflow=9)


def test_the_board_built_in_advance_takes_a_place_of_the_boards(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = app_state(seeded.client.app_state)
    state = dataclasses.replace(
        running, settings=running.settings.model_copy(update={"warm_board": True})
    )
    limit = state.settings.admission_board
    free_while_warming: list[int] = []

    async def warm(_query: UpcomingQuery) -> None:
        free_while_warming.append(state.admission.free_places(Endpoints.BOARD))

    monkeypatch.setattr(state.upcoming, "warm", warm)
    assert seeded.client.portal is not None
    seeded.client.portal.call(main._warm_board, state)
    assert free_while_warming == [limit - 1]
    assert state.admission.free_places(Endpoints.BOARD) == limit


# Bodies kept.


def test_the_bodies_kept_stay_within_their_byte_budget() -> None:
    kept = KeptBodies(None, max_entries=64, max_bytes=1000)
    for n in range(10):
        kept.put(f"etag-{n}", bytes(300))
    # Three bodies of 300 bytes fit in 1000: the three asked for last.
    assert [n for n in range(10) if kept.get(f"etag-{n}") is not None] == [7, 8, 9]
    assert kept.kept.held_bytes == 900
    kept.put("larger than the budget", bytes(1001))
    assert kept.get("larger than the budget") is None


def test_an_applications_kept_bodies_have_the_budget_of_its_settings(seeded: Seeded) -> None:
    state = app_state(seeded.client.app_state)
    for kept in (state.pages, state.upcoming_bodies):
        assert kept.kept.max_bytes == state.settings.kept_bodies_bytes


# A match deleted while its page is made.


def test_a_match_deleted_while_its_page_is_made_gets_the_404_page_not_kept(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = app_state(seeded.client.app_state)
    match_id = seeded.ids["Arsenal"]
    made = dashboard.match_page

    def deleted_first(_session: Any, *args: Any, **kwargs: Any) -> Any:
        # Between the page's stamp and its read: the read sees the match gone.
        with session_scope(state.write_sessions) as writer:
            delete_match(writer, match_id, force=True)
        with session_scope(state.read_sessions) as reader:
            return made(reader, *args, **kwargs)

    monkeypatch.setattr(dashboard, "match_page", deleted_first)
    response = seeded.client.get(f"/dashboard/matches/{match_id}")
    assert response.status_code == 404
    assert "text/html" in response.headers["content-type"]
    assert "etag" not in response.headers
    assert len(state.pages.kept) == 0
