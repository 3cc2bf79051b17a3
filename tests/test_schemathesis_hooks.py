"""The fuzzer's hooks leave out exactly the requests that break a rule a schema cannot state."""

from __future__ import annotations

import pytest

from tests.schemathesis_hooks import backwards_window


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
