"""The fuzzer's hooks leave out exactly the requests that break a rule a schema cannot state."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.schemathesis_hooks import backwards_window, captured_in_future

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("query", "backwards"),
    [
        # Sent by the fuzzer after midnight: the docs' example of `to` (today, 00:00) with a
        # `from` of a moment later that day. The API refuses it with 422.
        ({"from": "2026-11-27T00:37:52.734462Z", "to": "2026-11-27T00:00:00Z"}, True),
        ({"from": "2026-11-27T00:00:00", "to": "2026-11-27T00:00:00Z"}, True),  # naive: UTC
        ({"from": "2026-11-27T01:00:00+01:00", "to": "2026-11-27T00:00:00Z"}, True),
        ({"from": "2026-11-27T00:00:00Z", "to": "2026-11-27T00:00:01Z"}, False),
        ({"to": "2026-11-27T00:00:00Z"}, False),  # `from` is then now: no rule to break
        ({"from": "not a time", "to": "2026-11-27T00:00:00Z"}, False),  # refused for its form
        (None, False),
    ],
)
def test_a_window_given_backwards_is_not_sent_as_valid(query: object, backwards: bool) -> None:
    assert backwards_window(query) is backwards


@pytest.mark.parametrize(
    ("body", "future"),
    [
        ({"quotes": [{"captured_at": None}, {"captured_at": "2026-11-27T12:00:01Z"}]}, True),
        ({"quotes": [{"captured_at": "2026-11-27T12:00:00Z"}]}, False),
        ({"quotes": [{"captured_at": "2026-11-27T13:00:00+02:00"}]}, False),  # 11:00 UTC
        ([{"bookmakers": [{"markets": [{"last_update": "2100-01-01T00:00:00"}]}]}], True),
        ([{"bookmakers": [{"last_update": "2018-08-10T18:55:00Z"}]}], False),
        ({"quotes": [{"captured_at": 4102444800}]}, False),  # not a timestamp: its form
        (None, False),
    ],
)
def test_a_capture_time_in_the_future_is_not_sent_as_valid(body: object, future: bool) -> None:
    assert captured_in_future(body, NOW) is future
