"""Boards shared through a real Redis: built once per change by all the processes that ask,
each write seen by every process at its next poll, and a Redis out of reach costing no
answer. The store on its own (its lock, its wait, its bounds), then two apps on one database,
then two real servers of two workers each."""

from __future__ import annotations

import gc
import logging
import os
import pickle
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

import app
from app.logs import secrets_of
from app.metrics import REGISTRY
from app.services.caching import AnswerCache
from app.services.shared_store import SharedBoards, shape_digest
from app.services.upcoming import board_bytes
from app.settings import Settings
from app.state import app_state
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.databases import Databases
from tests.helpers import free_port, wait_until
from tests.plugins.redis_store import RedisUnderTest
from tests.processes import Server, child_environment, running_server
from tests.upcoming_matches import (
    ARSENAL,
    BARCELONA,
    EVERTON,
    FIXTURES,
    SeededTemplate,
    app_on,
    quote_items,
    store,
    store_model,
)

# Arsenal, Everton and Barcelona: the fixtures that have not kicked off and are within a week.
IN_THE_WINDOW = 3


def store_of(redis_under_test: RedisUnderTest, **bounds: Any) -> SharedBoards[Any]:
    settings = Settings(
        redis_url=redis_under_test.url, redis_key_prefix=redis_under_test.prefix, **bounds
    )
    shared = SharedBoards[Any].from_settings(settings, object)
    assert shared is not None
    return shared


def builds() -> float:
    return REGISTRY.get_sample_value("oddsboost_board_builds_total") or 0.0


def shared_results(result: str) -> float:
    return REGISTRY.get_sample_value("oddsboost_shared_boards_total", {"result": result}) or 0.0


# The store on its own.


def test_a_value_is_built_once_and_read_by_the_next_caller(test_redis: RedisUnderTest) -> None:
    shared = store_of(test_redis)
    made: list[str] = []

    def build() -> dict[str, int]:
        made.append("built")
        return {"matches": 3}

    assert shared.fetch_or_build("query-stamp", build) == {"matches": 3}
    assert shared.fetch_or_build("query-stamp", build) == {"matches": 3}
    assert made == ["built"]
    # Under the prefix, the release and the shape of a value, with the lock released and a
    # time to live.
    (key,) = test_redis.written_keys()
    assert key == f"{test_redis.prefix}:board:{app.__version__}:{shape_digest(object)}:query-stamp"
    assert 0 < test_redis.client.pttl(key) <= 900_000  # the default redis_board_seconds


def test_callers_that_come_while_one_builds_wait_for_its_board(
    test_redis: RedisUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = store_of(test_redis, redis_build_wait_seconds=120)
    building, release = threading.Event(), threading.Event()
    made: list[str] = []

    def slow_build() -> str:
        made.append("first")
        building.set()
        assert release.wait(120), "the test released the build"
        return "board of the first"

    def own_build() -> str:
        made.append("second")
        return "board of the second"

    waiting = threading.Event()
    wait_for = shared._wait_for

    def noted_wait(entry: str) -> Any:
        waiting.set()
        return wait_for(entry)

    monkeypatch.setattr(shared, "_wait_for", noted_wait)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(shared.fetch_or_build, "key", slow_build)
        assert building.wait(120), "the first caller started building"
        # The second comes while the first holds the lock: it waits, and builds nothing.
        waited_before = shared_results("waited")
        second = pool.submit(shared.fetch_or_build, "key", own_build)
        assert waiting.wait(120), "the second caller found the lock taken"
        release.set()
        assert first.result() == second.result() == "board of the first"
    assert made == ["first"]
    assert shared_results("waited") == waited_before + 1


def test_a_caller_whose_wait_runs_out_builds_its_own(test_redis: RedisUnderTest) -> None:
    shared = store_of(test_redis, redis_build_wait_seconds=0)
    # Another process holds the lock and has written nothing yet.
    lock = shared.entry("key") + ":lock"
    test_redis.client.set(lock, "someone else", px=60_000)
    assert shared.fetch_or_build("key", lambda: "built here") == "built here"


def test_a_board_larger_than_the_bound_is_not_written(test_redis: RedisUnderTest) -> None:
    shared = store_of(test_redis, redis_board_max_bytes=1024)
    too_large = shared_results("too_large")
    made: list[int] = []

    def build() -> bytes:
        made.append(1)
        return b"x" * 2048  # pickled, more than 1024 bytes

    shared.fetch_or_build("key", build)
    shared.fetch_or_build("key", build)
    assert made == [1, 1]
    assert test_redis.written_keys() == []  # nor is its lock left behind
    assert shared_results("too_large") == too_large + 2


def test_an_unreadable_entry_is_built_again_and_replaced(test_redis: RedisUnderTest) -> None:
    shared = store_of(test_redis)
    entry = shared.entry("key")
    test_redis.client.set(entry, pickle.dumps("whole")[:-3])  # a cut-off pickle
    assert shared.fetch_or_build("key", lambda: "rebuilt") == "rebuilt"
    assert shared.fetch_or_build("key", lambda: "not asked") == "rebuilt"


def test_redis_out_of_reach_builds_here_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    shared = SharedBoards[str].from_settings(settings, str)
    assert shared is not None
    failed = shared_results("failed")
    with caplog.at_level(logging.WARNING, logger="app.services.shared_store"):
        answers = [shared.fetch_or_build(f"key-{n}", lambda: "built here") for n in range(3)]
    assert answers == ["built here"] * 3
    # Tried once; the next calls leave Redis alone for a while and build straight away.
    assert shared_results("failed") == failed + 1
    assert [record.levelname for record in caplog.records] == ["WARNING"]


# The same key in every process.

DIGEST_OF_A_QUERY = """
import datetime as dt
from app.domain.value import ValueTerms
from app.domain.digests import digest
from app.services.upcoming import UpcomingQuery, _query_key
terms = ValueTerms(bookmakers=frozenset({"B365", "WH", "PS", "BW", "LB", "IW", "VC"}))
query = UpcomingQuery(terms=terms, daily_exposure_cap=0.1, competition="E0")
print(digest(_query_key(query)))
"""


def test_a_query_has_the_same_key_whatever_a_process_hashes_strings_with() -> None:
    digests = {
        subprocess.run(
            [sys.executable, "-c", DIGEST_OF_A_QUERY],
            env=os.environ | {"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1, digests


# The byte budget of the one cache.


def test_the_cache_keeps_its_entries_within_their_byte_budget() -> None:
    cache: AnswerCache[str] = AnswerCache(None, max_entries=10, max_bytes=100, size_of=len)
    cache.put("a", "a" * 40)
    cache.put("b", "b" * 40)
    assert cache.get("a") == "a" * 40  # now the most recently used
    cache.put("c", "c" * 40)  # 120 bytes: the least recently used, b, goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("a" * 40, None, "c" * 40)
    assert cache.held_bytes == 80
    cache.put("a", "a" * 10)  # replaced: its old size no longer counts
    assert cache.held_bytes == 50
    cache.put("huge", "h" * 101)  # larger than the whole budget: not kept, nothing pushed out
    assert cache.get("huge") is None
    assert (len(cache), cache.held_bytes) == (2, 50)


def reachable(root: object, skip: set[int]) -> dict[int, object]:
    """Every object ``root`` holds, directly or not, but classes, functions, modules and
    ``skip`` (with what only they reach)."""
    found: dict[int, object] = {}
    pending = [root]
    while pending:
        item = pending.pop()
        if id(item) in found or id(item) in skip:
            continue
        if isinstance(item, (type, types.ModuleType, types.FunctionType, Enum)):
            continue
        found[id(item)] = item
        pending.extend(gc.get_referents(item))
    return found


def test_a_boards_estimated_size_covers_what_it_holds(
    databases: Databases, board_template: SeededTemplate
) -> None:
    """The estimate a worker's boards are bounded by is not below the memory a real board
    holds of its own, nor far above it: every object it reaches, but the model it shares with
    the process (and what that reaches), counted by ``sys.getsizeof``."""
    url = databases.copy(board_template.url)
    try:
        with app_on(url) as client:
            assert client.get("/upcoming").json()["total"] == IN_THE_WINDOW
            state = app_state(client.app_state)
            (board,) = (entry[1] for entry in state.upcoming._boards._entries.values())
            shared = reachable(state.models.snapshot().ensemble, set())
            held = sum(sys.getsizeof(item) for item in reachable(board, set(shared)).values())
            size = board_bytes(board)
            assert len(board.rows) == IN_THE_WINDOW
    finally:
        databases.drop(url)
    assert held <= size <= 3 * held, (held, size)


# The default board built in advance.


def test_a_worker_builds_the_default_board_at_start_and_after_an_activation(
    board_url: str, board_template: SeededTemplate
) -> None:
    built = builds()
    with app_on(board_url, warm_board=True, model_refresh_seconds=0.05) as client:
        wait_until(lambda: builds() == built + 1, "the board was built at start")
        first = client.get("/upcoming").json()
        assert (first["total"], first["model_version"]) == (IN_THE_WINDOW, board_template.version)
        assert builds() == built + 1  # the first viewer found it made
        activated = store_model(board_url)
        wait_until(lambda: builds() == built + 2, "the board was built for the new model")
        after = client.get("/upcoming").json()
        assert after["model_version"] == activated != board_template.version
        assert builds() == built + 2


# Two apps on one database and one Redis.


def shown(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of a board's body but their quotes' ages, which move with the clock."""
    return [
        item | {"freshness": {k: v for k, v in item["freshness"].items() if k != "age_seconds"}}
        for item in body["items"]
    ]


@pytest.fixture
def board_url(databases: Databases, board_template: SeededTemplate) -> Iterator[str]:
    url = databases.copy(board_template.url)
    yield url
    databases.drop(url)


def test_two_apps_build_each_board_once_and_see_each_others_writes(
    board_url: str, test_redis: RedisUnderTest
) -> None:
    shared = {"redis_url": test_redis.url, "redis_key_prefix": test_redis.prefix}
    with app_on(board_url, **shared) as first, app_on(board_url, **shared) as second:
        built = builds()
        seen = first.get("/upcoming")
        assert seen.json()["total"] == IN_THE_WINDOW
        assert builds() == built + 1
        again = second.get("/upcoming")
        assert builds() == built + 1  # read from Redis, not built
        assert shown(again.json()) == shown(seen.json())
        assert again.headers["ETag"] == seen.headers["ETag"]

        # A new price written through one app shows in the other's next poll.
        better = quote_items(ARSENAL)[1] | {"home": 2.6}
        store(second, [better])
        changed = first.get("/upcoming").json()
        assert builds() == built + 2
        arsenal = next(item for item in changed["items"] if item["match"]["home_team"] == "Arsenal")
        assert arsenal["value"]["outcomes"][0]["price"] == 2.6
        assert shown(second.get("/upcoming").json()) == shown(changed)
        assert builds() == built + 2


def test_redis_down_every_poll_is_still_answered(board_url: str) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with app_on(board_url, redis_url=closed) as client:
        built = builds()
        assert client.get("/upcoming").json()["total"] == IN_THE_WINDOW
        assert client.get("/value-bets").status_code == 200
        assert client.get("/dashboard").status_code == 200
        assert builds() == built + 1  # the worker's own board, kept and served again


# Two real servers of two workers each, on one database and one Redis.


def metric_total(server: Server, name: str) -> float:
    text = httpx.get(f"{server.base_url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


def across(servers: tuple[Server, Server], name: str) -> float:
    return sum(metric_total(server, name) for server in servers)


def test_two_servers_of_two_workers_build_each_board_once_per_change(
    migrated_url: str, test_redis: RedisUnderTest, tmp_path: Path
) -> None:
    store_model(migrated_url)
    settings = refit_settings_for(migrated_url).model_copy(
        update={
            "redis_url": test_redis.url,
            "redis_key_prefix": test_redis.prefix,
            # However slow the machine, a worker waits for the board another is building.
            "redis_build_wait_seconds": 120.0,
            "warm_board": True,
        }
    )
    environment = child_environment(settings)
    with (
        running_server(environment, tmp_path / "a.log", "--workers", "2") as first,
        running_server(environment, tmp_path / "b.log", "--workers", "2") as second,
    ):
        servers = (first, second)
        # Each of the four workers warms the default board once: one builds it, the three
        # others read it (or wait for it).
        wait_until(
            lambda: across(servers, "oddsboost_shared_boards_total") == 4,
            "every worker warmed the default board",
        )
        assert across(servers, "oddsboost_board_builds_total") == 1

        headers = {"X-API-Key": ADMIN_KEY}
        items = [item for fixture in FIXTURES for item in quote_items(fixture)]
        stored = httpx.post(
            f"{first.base_url}/admin/odds", json={"quotes": items}, headers=headers, timeout=60
        )
        assert stored.status_code == 200, stored.text
        # The other server's next poll shows the write.
        board = httpx.get(f"{second.base_url}/upcoming", timeout=60).json()
        assert [item["match"]["home_team"] for item in board["items"]] == [
            fixture.home for fixture in (ARSENAL, EVERTON, BARCELONA)
        ]
        assert across(servers, "oddsboost_board_builds_total") == 2
        # Polled on every worker (which worker answers is the kernel's choice): read, not built.
        for server in servers * 4:
            again = httpx.get(f"{server.base_url}/upcoming", timeout=60).json()
            assert shown(again) == shown(board)
        assert across(servers, "oddsboost_board_builds_total") == 2

        cheaper = quote_items(EVERTON)[1] | {"home": 2.7}
        stored = httpx.post(
            f"{second.base_url}/admin/odds", json={"quotes": [cheaper]}, headers=headers
        )
        assert stored.status_code == 200, stored.text
        changed = httpx.get(f"{first.base_url}/upcoming", timeout=60).json()
        everton = next(item for item in changed["items"] if item["match"]["home_team"] == "Everton")
        assert everton["value"]["outcomes"][0]["price"] == 2.7
        assert across(servers, "oddsboost_board_builds_total") == 3


def test_a_redis_password_is_never_written_to_the_logs() -> None:
    settings = Settings(redis_url="redis://:hunter2-redis-pass@cache.internal:6379/0")
    assert "hunter2-redis-pass" in secrets_of(settings)


@pytest.mark.parametrize("url", ["http://cache:6379", "cache:6379"])
def test_a_url_that_is_not_redis_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="a Redis URL starts with redis://"):
        Settings(redis_url=url)


def test_an_empty_redis_url_means_no_redis() -> None:
    assert Settings(redis_url=" ").redis_url is None
    assert SharedBoards[Any].from_settings(Settings(redis_url=""), object) is None
