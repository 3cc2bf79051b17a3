"""Counts in messages take the number of their count."""

from __future__ import annotations

import pytest

from app.domain.wording import counted


@pytest.mark.parametrize(
    ("count", "expected"), [(0, "0 quotes"), (1, "1 quote"), (2, "2 quotes"), (-1, "-1 quotes")]
)
def test_a_regular_noun(count: int, expected: str) -> None:
    assert counted(count, "quote") == expected


def test_nouns_that_take_es_and_irregular_ones() -> None:
    assert [counted(n, "match") for n in (0, 1, 2)] == ["0 matches", "1 match", "2 matches"]
    assert counted(2, "settled match") == "2 settled matches"
    assert counted(1, "hypothesis", "hypotheses") == "1 hypothesis"
    assert counted(3, "hypothesis", "hypotheses") == "3 hypotheses"
