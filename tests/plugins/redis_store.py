"""A real Redis for the tests of the shared boards: ``ODDSBOOST_TEST_REDIS_URL`` (default the
local server's database 13). A Redis that does not answer fails these tests, never skips
them: CI starts one. Each test writes under a key prefix of its own and deletes its keys."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/13"


@dataclass(frozen=True)
class RedisUnderTest:
    url: str
    prefix: str
    client: redis.Redis

    def written_keys(self) -> list[str]:
        return sorted(key.decode() for key in self.client.scan_iter(f"{self.prefix}:*"))


@pytest.fixture
def test_redis() -> Iterator[RedisUnderTest]:
    url = os.environ.get("ODDSBOOST_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL)
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as error:
        pytest.fail(f"Redis at {url} does not answer ({error}): start redis-server")
    store = RedisUnderTest(url, f"test-{uuid.uuid4().hex[:12]}", client)
    try:
        yield store
    finally:
        for key in store.written_keys():
            client.delete(key)
        client.close()
