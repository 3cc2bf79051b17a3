"""Fixtures of the matchday played against local servers (:mod:`tests.matchday`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import apscheduler.executors.base
import apscheduler.schedulers.base
import pytest

from tests.football_data_site import Site, site_handler
from tests.matchday import SimulatedClock, SteppedScheduler
from tests.odds_api_site import FakeOddsApi, handler_for
from tests.upstreams import http_server


@pytest.fixture
def sites() -> Iterator[tuple[Site, FakeOddsApi, str, str]]:
    football_data = Site()
    odds_api = FakeOddsApi()
    with (
        http_server(site_handler(football_data)) as fd_base,
        http_server(handler_for(odds_api)) as api_base,
    ):
        yield football_data, odds_api, fd_base, api_base
        football_data.release.set()
        odds_api.released.set()


@pytest.fixture
def stepped_scheduler(monkeypatch: pytest.MonkeyPatch) -> Iterator[SteppedScheduler]:
    """A stepped scheduler whose time is a simulated clock. APScheduler reads the time from
    ``datetime.now`` in two modules; those two alone read the simulated clock, so the
    service's own code keeps the real one, and a record it stamps from the real clock
    instead of the clock it was given still fails the test."""
    clock = SimulatedClock(dt.datetime(2000, 1, 1, tzinfo=dt.UTC))

    class SimulatedDatetime(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> SimulatedDatetime:
            moment = clock.now.astimezone(tz)
            return cls.combine(moment.date(), moment.timetz())

    monkeypatch.setattr(apscheduler.schedulers.base, "datetime", SimulatedDatetime)
    monkeypatch.setattr(apscheduler.executors.base, "datetime", SimulatedDatetime)
    scheduler = SteppedScheduler(clock)
    yield scheduler
    if scheduler.running:
        scheduler.shutdown()
