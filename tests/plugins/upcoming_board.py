"""The board's database for the upcoming, value-bets, dashboard and model-weight tests: a
template seeded once per module (the model trusting Bet&Win alone and the upcoming matches
of ``tests.upcoming_matches``), and a copy of it per test, read by the app as the board does.
A module that needs more matches overrides ``board_template``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.databases import Databases
from tests.upcoming_matches import Seeded, SeededTemplate, seeded_copy, seeded_template


@pytest.fixture(scope="module")
def board_template(databases: Databases, migrated_template: str) -> SeededTemplate:
    return seeded_template(databases, migrated_template)


@pytest.fixture
def seeded(databases: Databases, board_template: SeededTemplate) -> Iterator[Seeded]:
    """The app with its own sessions on a database of its own, as the board reads."""
    with seeded_copy(databases, board_template) as seeded:
        yield seeded
