"""Value, Kelly stakes and closing-line value on hand-computed examples."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from app.domain.bookmakers import BOOKMAKER_NAMES, bookmaker_key
from app.domain.odds import demargin
from app.domain.prediction import QuotedOdds
from app.domain.value import (
    ENSEMBLE_SOURCE,
    ValueTerms,
    closing_line_value,
    expected_value,
    kelly_stake,
    match_value,
)
from app.domain.vocabulary import Method

SERVED = (0.5, 0.28, 0.22)
EARLY = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
LATE = dt.datetime(2026, 11, 21, 18, 30, tzinfo=dt.UTC)
ODDS = [
    QuotedOdds("B365", 2.0, 3.5, 4.4, EARLY),
    QuotedOdds("WH", 2.2, 3.4, 4.2, LATE),
]


def test_expected_value_and_kelly_by_hand() -> None:
    # 0.5 × 2.2 − 1 = 0.1; full Kelly 0.1 / 1.2 = 0.0833, a quarter of it 0.0208.
    assert expected_value(0.5, 2.2) == pytest.approx(0.1)
    assert kelly_stake(0.1, 2.2, 1.0, 1.0) == pytest.approx(0.1 / 1.2)
    assert kelly_stake(0.1, 2.2, 0.25, 1.0) == pytest.approx(0.0208333333)
    assert kelly_stake(0.1, 2.2, 0.25, 0.02) == 0.02
    # 0.4 × 2.6 − 1 = 0.04; 0.04 / 1.6 = 0.025; a quarter 0.00625, under the cap.
    assert kelly_stake(expected_value(0.4, 2.6), 2.6, 0.25, 0.02) == pytest.approx(0.00625)
    assert kelly_stake(expected_value(0.3, 3.0), 3.0, 0.25, 0.02) == 0.0


def test_closing_line_value_by_hand() -> None:
    # A price of 2.2 taken against a closing fair probability of 0.48: 2.2 × 0.48 − 1.
    assert closing_line_value(2.2, 0.48) == pytest.approx(0.056)
    assert closing_line_value(1.9, 0.5) == pytest.approx(-0.05)


def test_the_functions_take_arrays_as_they_take_floats() -> None:
    probabilities = np.array([0.5, 0.4, 0.3])
    prices = np.array([2.2, 2.6, 3.0])
    ev = expected_value(probabilities, prices)
    np.testing.assert_allclose(ev, [0.1, 0.04, -0.1])
    np.testing.assert_allclose(kelly_stake(ev, prices, 0.25, 0.02), [0.02, 0.00625, 0.0])


def test_best_price_per_outcome_and_only_the_valuable_one_flagged() -> None:
    value = match_value(SERVED, ODDS, ValueTerms(bankroll=1000.0), Method.POWER)
    home, draw, away = value.outcomes
    assert value.source == ENSEMBLE_SOURCE
    assert (home.price, home.bookmaker, home.captured_at) == (2.2, "WH", LATE)
    assert home.expected_value == pytest.approx(0.1)
    assert home.flagged
    assert home.stake_fraction == 0.02
    assert home.stake == 20.0
    # 0.28 × 3.5 − 1 = −0.02 and 0.22 × 4.4 − 1 = −0.032: nothing to stake.
    assert (draw.price, draw.bookmaker) == (3.5, "B365")
    assert draw.expected_value == pytest.approx(-0.02)
    assert away.expected_value == pytest.approx(-0.032)
    assert not draw.flagged
    assert not away.flagged
    assert (draw.stake_fraction, draw.stake, away.stake) == (0.0, 0.0, 0.0)
    assert value.flagged == [home]


def test_a_match_without_value_flags_nothing() -> None:
    fair = [QuotedOdds("B365", 1.9, 3.3, 4.0)]
    value = match_value(SERVED, fair, ValueTerms(), Method.POWER)
    assert value.flagged == []
    assert all(outcome.stake is None for outcome in value.outcomes)  # no bankroll given


def test_two_outcomes_are_flagged_only_when_both_have_value() -> None:
    generous = [QuotedOdds("B365", 2.2, 3.9, 4.2)]
    value = match_value(SERVED, generous, ValueTerms(min_ev=0.02), Method.POWER)
    # 0.5 × 2.2 − 1 = 0.1 and 0.28 × 3.9 − 1 = 0.092 are above 0.02; 0.22 × 4.2 − 1 is not.
    assert [outcome.outcome for outcome in value.flagged] == ["1", "X"]
    assert (
        not match_value(SERVED, generous, ValueTerms(min_ev=0.095), Method.POWER)
        .outcomes[1]
        .flagged
    )


def test_every_spelling_of_a_known_bookmaker_names_it_alone() -> None:
    spellings = [s.casefold() for code, name in BOOKMAKER_NAMES.items() for s in (code, name)]
    assert len(set(spellings)) == len(spellings)
    assert {bookmaker_key(s) for s in ("b365", "Bet365", "BET365")} == {"B365"}
    assert bookmaker_key("Some Book") == "some book"


def test_bookmakers_outside_the_allowed_ones_are_never_chosen() -> None:
    terms = ValueTerms(bookmakers=frozenset({bookmaker_key("Bet365")}))
    value = match_value(SERVED, ODDS, terms, Method.POWER)
    assert {outcome.bookmaker for outcome in value.outcomes} == {"B365"}
    # B365's home price 2.0 gives EV 0: not above the default 2 %.
    assert value.flagged == []
    nobody = match_value(SERVED, ODDS, ValueTerms(bookmakers=frozenset({"ps"})), Method.POWER)
    assert all(o.price is None and not o.flagged for o in nobody.outcomes)


def test_a_bookmakers_line_as_the_source_and_its_fallback() -> None:
    odds = [*ODDS, QuotedOdds("PS", 2.05, 3.6, 4.3)]
    value = match_value(SERVED, odds, ValueTerms(source="Pinnacle"), Method.POWER)
    line = demargin([[2.05, 3.6, 4.3]], Method.POWER).probabilities[0]
    assert value.source == "Pinnacle"
    np.testing.assert_allclose([o.probability for o in value.outcomes], line, rtol=1e-12)
    fallback = match_value(SERVED, ODDS, ValueTerms(source="PS"), Method.POWER)
    assert fallback.source == ENSEMBLE_SOURCE
    assert [o.probability for o in fallback.outcomes] == list(SERVED)


def test_the_settings_give_the_default_terms() -> None:
    from app.settings import Settings

    terms = Settings(value_min_ev=0.05, value_probability_source="PS").value_terms()
    assert terms == ValueTerms(kelly_fraction=0.25, stake_cap=0.02, min_ev=0.05, source="PS")
