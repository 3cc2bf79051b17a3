"""The track record's scores on entries made by hand, without a database."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from app.domain.track_record_scores import SettledEntry
from tests.helpers import hand_made_served
from tests.reference_track_record import performance_of

DAY_ONE = dt.datetime(2026, 3, 2, 15, tzinfo=dt.UTC)
DAY_TWO = dt.datetime(2026, 3, 3, 15, tzinfo=dt.UTC)
HALF = (0.5, 0.25, 0.25)
SIXTY = (0.6, 0.2, 0.2)


def home_win(
    match_id: int, kickoff: dt.datetime, lines: dict[str, tuple[float, float, float]]
) -> SettledEntry:
    return SettledEntry(match_id, kickoff, "1", hand_made_served(HALF, lines))


def test_a_day_the_best_bookmaker_did_not_quote_has_no_log_loss_of_it() -> None:
    # Nine home wins on day one quoted by BW (.5) and PS (.6); one on day two by BW alone.
    # PS quoted 9 of 10 matches, the 90 % it needs, and its log loss (−ln .6) is below
    # BW's (−ln .5): PS is the best, with nothing to score on day two.
    entries = [home_win(i, DAY_ONE, {"BW": HALF, "PS": SIXTY}) for i in range(9)]
    entries.append(home_win(9, DAY_TWO, {"BW": HALF}))
    performance = performance_of(entries, kelly_fraction=0.25, stake_cap=0.02)
    assert performance.best_bookmaker.code == "PS"
    first, second = performance.days
    assert (first.matches, first.best_bookmaker_matches) == (9, 9)
    assert first.best_bookmaker_log_loss == pytest.approx(-math.log(0.6))
    assert first.served_log_loss == pytest.approx(-math.log(0.5))
    assert (second.matches, second.best_bookmaker_matches) == (1, 0)
    assert second.best_bookmaker_log_loss is None


def test_with_no_best_bookmaker_no_day_has_its_log_loss() -> None:
    # BW and PS each quoted half the matches: neither reaches 90 %.
    entries = [home_win(0, DAY_ONE, {"BW": HALF}), home_win(1, DAY_ONE, {"PS": SIXTY})]
    performance = performance_of(entries, kelly_fraction=0.25, stake_cap=0.02)
    assert performance.best_bookmaker.code is None
    (day,) = performance.days
    assert (day.matches, day.best_bookmaker_matches, day.best_bookmaker_log_loss) == (2, 0, None)
