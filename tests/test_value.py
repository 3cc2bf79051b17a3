"""Value, Kelly stakes and closing-line value on hand-computed examples."""

from __future__ import annotations

import datetime as dt
from typing import Any

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
    match_values,
    net_price,
)
from app.domain.vocabulary import Method

SERVED = (0.5, 0.28, 0.22)


def served_terms(**fields: Any) -> ValueTerms:
    """Terms that judge value by the served prediction, as these examples do."""
    return ValueTerms(source=ENSEMBLE_SOURCE, **fields)


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
    value = match_value(SERVED, ODDS, served_terms(bankroll=1000.0), Method.POWER)
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
    value = match_value(SERVED, fair, served_terms(), Method.POWER)
    assert value.flagged == []
    assert all(outcome.stake is None for outcome in value.outcomes)  # no bankroll given


def test_of_two_outcomes_with_value_only_the_higher_is_flagged() -> None:
    generous = [QuotedOdds("B365", 2.2, 4.0, 4.2)]
    value = match_value(SERVED, generous, served_terms(min_ev=0.02, bankroll=1000.0), Method.POWER)
    home, draw, _ = value.outcomes
    # 0.5 × 2.2 − 1 = 0.1 and 0.28 × 4.0 − 1 = 0.12 are above 0.02; 0.22 × 4.2 − 1 is not.
    assert [o.expected_value for o in value.outcomes] == pytest.approx([0.1, 0.12, -0.076])
    # One bet a match: the draw, of highest EV. A quarter Kelly 0.12 / 3 / 4 = 0.01.
    assert value.flagged == [draw]
    assert draw.stake_fraction == pytest.approx(0.01)
    assert draw.stake == 10.0
    # The home win keeps its price and EV, but is neither flagged nor staked.
    assert (home.price, home.flagged, home.stake_fraction, home.stake) == (2.2, False, 0.0, 0.0)
    # Above 0.11 only the draw has value; above 0.13 nothing.
    assert match_value(SERVED, generous, served_terms(min_ev=0.11), Method.POWER).flagged == [
        draw._replace(stake=None)
    ]
    assert match_value(SERVED, generous, served_terms(min_ev=0.13), Method.POWER).flagged == []


def test_equal_values_flag_the_first_outcome_in_1_x_2_order() -> None:
    # 0.5 × 2.5 − 1 = 0.25 × 5.0 − 1 = 0.25 exactly (every figure is a binary fraction).
    value = match_value(
        (0.5, 0.25, 0.25), [QuotedOdds("B365", 2.5, 5.0, 3.0)], served_terms(), Method.POWER
    )
    assert [o.expected_value for o in value.outcomes] == [0.25, 0.25, -0.25]
    assert [o.outcome for o in value.flagged] == ["1"]
    later = match_value(
        (0.25, 0.5, 0.25), [QuotedOdds("B365", 3.0, 2.5, 5.0)], served_terms(), Method.POWER
    )
    assert [o.outcome for o in later.flagged] == ["X"]


def test_many_matches_are_valued_as_each_alone() -> None:
    served = [SERVED, (0.5, 0.25, 0.25), (0.2, 0.3, 0.5)]
    odds = [ODDS, [QuotedOdds("B365", 2.5, 5.0, 3.0)], [QuotedOdds("PS", 4.0, 3.0, 2.2)]]
    terms = served_terms(bankroll=500.0)
    together = match_values(served, odds, terms, Method.POWER)
    alone = [
        match_value(p, quotes, terms, Method.POWER) for p, quotes in zip(served, odds, strict=True)
    ]
    assert together == alone
    assert [[o.outcome for o in value.flagged] for value in together] == [["1"], ["1"], ["2"]]
    assert match_values([], [], terms, Method.POWER) == []


def test_every_spelling_of_a_known_bookmaker_names_it_alone() -> None:
    spellings = [s.casefold() for code, name in BOOKMAKER_NAMES.items() for s in (code, name)]
    assert len(set(spellings)) == len(spellings)
    assert {bookmaker_key(s) for s in ("b365", "Bet365", "BET365")} == {"B365"}
    assert bookmaker_key("Some Book") == "some book"


def test_bookmakers_outside_the_allowed_ones_are_never_chosen() -> None:
    terms = served_terms(bookmakers=frozenset({bookmaker_key("Bet365")}))
    value = match_value(SERVED, ODDS, terms, Method.POWER)
    assert {outcome.bookmaker for outcome in value.outcomes} == {"B365"}
    # B365's home price 2.0 gives EV 0: not above the default 2 %.
    assert value.flagged == []
    nobody = match_value(SERVED, ODDS, served_terms(bookmakers=frozenset({"ps"})), Method.POWER)
    assert all(o.price is None and not o.flagged for o in nobody.outcomes)


def test_a_bookmakers_line_as_the_source_and_no_value_where_it_did_not_quote() -> None:
    odds = [*ODDS, QuotedOdds("PS", 2.05, 3.6, 4.3)]
    value = match_value(SERVED, odds, ValueTerms(source="Pinnacle"), Method.POWER)
    line = demargin([[2.05, 3.6, 4.3]], Method.POWER).probabilities[0]
    assert value.source == "PS"
    probabilities = [o.probability for o in value.outcomes]
    assert probabilities == pytest.approx(line.tolist(), rel=1e-12)
    # PS alone, where PS did not quote: no probability, no EV, nothing flagged, the prices
    # shown all the same.
    unpriced = match_value(SERVED, ODDS, ValueTerms(source="PS", min_ev=-1.0), Method.POWER)
    assert unpriced.source is None
    assert [(o.probability, o.expected_value, o.flagged) for o in unpriced.outcomes] == [
        (None, None, False)
    ] * 3
    assert [o.price for o in unpriced.outcomes] == [2.2, 3.5, 4.4]
    # Falling back to the served prediction where it is the next link.
    fallback = match_value(SERVED, ODDS, ValueTerms(source="PS,ensemble"), Method.POWER)
    assert fallback.source == ENSEMBLE_SOURCE
    assert [o.probability for o in fallback.outcomes] == list(SERVED)


@pytest.mark.parametrize("method", [Method.POWER, Method.SHIN])
def test_matches_none_of_which_has_a_quote_get_no_line_and_no_price(method: Method) -> None:
    # Nothing quoted: no bookmaker line and no consensus (the mean of no line), no price.
    unquoted = match_values([SERVED, SERVED], [[], []], ValueTerms(source="PS,consensus"), method)
    for value in unquoted:
        assert value.source is None
        assert [(o.probability, o.price, o.expected_value, o.flagged) for o in value.outcomes] == [
            (None, None, None, False)
        ] * 3
    # The served prediction is a line all the same, where it is a link.
    (fallback,) = match_values([SERVED], [[]], ValueTerms(source="PS,ensemble"), method)
    assert fallback.source == ENSEMBLE_SOURCE
    assert [o.probability for o in fallback.outcomes] == list(SERVED)
    assert not fallback.flagged


def test_the_settings_give_the_default_terms() -> None:
    from app.settings import Settings

    terms = Settings(value_min_ev=0.05, value_probability_source="PS").value_terms()
    assert terms == ValueTerms(kelly_fraction=0.25, stake_cap=0.02, min_ev=0.05, source="PS")


def test_a_price_net_of_commission_by_hand() -> None:
    # 1 + (2.10 − 1) × 0.95 = 2.045; without commission the price itself.
    assert net_price(2.10, 0.05) == pytest.approx(2.045)
    assert net_price(2.10, 0.0) == 2.10
    np.testing.assert_allclose(net_price(np.array([2.2, 5.0]), 0.05), [2.14, 4.8])


def test_an_exchanges_price_is_taken_net_in_the_choice_the_ev_and_the_stake() -> None:
    terms = served_terms(commissions=(("BFE", 0.05),), bankroll=1000.0)
    # BFE's 2.10 pays 2.045 net, less than B365's 2.05: B365's price is the best.
    close = [QuotedOdds("B365", 2.05, 3.4, 4.0), QuotedOdds("Betfair Exchange", 2.10, 3.5, 4.0)]
    home, draw, away = match_value(SERVED, close, terms, Method.POWER).outcomes
    assert (home.bookmaker, home.price, home.net_price) == ("B365", 2.05, 2.05)
    assert home.expected_value == pytest.approx(0.5 * 2.05 - 1)  # 0.025
    # The draw: BFE's 3.5 pays 1 + 2.5 × 0.95 = 3.375 net, less than B365's 3.4.
    assert (draw.bookmaker, draw.price, draw.net_price) == ("B365", 3.4, 3.4)
    # Equal quoted 4.0: B365's pays more net, and is first anyway.
    assert (away.bookmaker, away.net_price) == ("B365", 4.0)
    # BFE's 2.20 pays 2.14 net, more than B365's 2.05: chosen, shown quoted and net.
    # EV 0.5 × 2.14 − 1 = 0.07; a quarter Kelly 0.07 / 1.14 / 4 = 0.01535: 15.35 of 1,000.
    wide = [QuotedOdds("B365", 2.05, 3.4, 4.0), QuotedOdds("BFE", 2.20, 3.5, 4.0)]
    home = match_value(SERVED, wide, terms, Method.POWER).outcomes[0]
    assert (home.bookmaker, home.price) == ("BFE", 2.20)
    assert home.net_price == pytest.approx(2.14)
    assert home.expected_value == pytest.approx(0.07)
    assert home.stake_fraction == pytest.approx(0.07 / 1.14 / 4)
    assert (home.flagged, home.stake) == (True, 15.35)
    # Without commission the quoted 2.20 counts: EV 0.1.
    gross = match_value(SERVED, wide, served_terms(commissions=()), Method.POWER).outcomes[0]
    assert (gross.price, gross.net_price) == (2.2, 2.2)
    assert gross.expected_value == pytest.approx(0.1)


def test_the_default_commission_is_betfair_exchanges_five_per_cent() -> None:
    from app.settings import Settings

    assert ValueTerms().commissions == (("BFE", 0.05),)
    assert Settings().value_terms().commissions == (("BFE", 0.05),)
    given = Settings(exchange_commission={"betfair exchange": 0.02, "Matchbook": 0.015})
    assert given.value_terms().commissions == (("BFE", 0.02), ("matchbook", 0.015))
    assert Settings(exchange_commission={}).value_terms().commissions == ()
    with pytest.raises(ValueError, match="exchange_commission"):
        Settings(exchange_commission={"BFE": 1.0})


def test_a_commission_is_kept_under_its_bookmakers_code_however_named() -> None:
    from app.settings import Settings

    # Betfair Exchange by name and by The Odds API's key; an unknown exchange as given.
    named = Settings(exchange_commission={" Betfair Exchange ": 0.02, "Matchbook": 0.015})
    assert named.exchange_commission == {"BFE": 0.02, "Matchbook": 0.015}
    by_feed_key = Settings(exchange_commission={"betfair_ex_uk": 0.03})
    assert by_feed_key.exchange_commission == {"BFE": 0.03}
    assert by_feed_key.value_terms().commissions == (("BFE", 0.03),)


@pytest.mark.parametrize(
    ("rates", "message"),
    [
        ({"": 0.05}, "a bookmaker's code is empty"),
        ({"  ": 0.05}, "a bookmaker's code is empty"),
        ({"BFE": 0.05, "betfair_ex_eu": 0.02}, "'BFE' and 'betfair_ex_eu' name the same bookmaker"),
        ({"Matchbook": 0.01, "MATCHBOOK": 0.02}, "'Matchbook' and 'MATCHBOOK' name the same"),
    ],
)
def test_a_commission_without_a_bookmaker_or_given_twice_is_refused(
    rates: dict[str, float], message: str
) -> None:
    from app.settings import Settings

    with pytest.raises(ValueError, match="exchange_commission") as refused:
        Settings(exchange_commission=rates)
    assert message in str(refused.value)


def test_the_backtest_finds_a_commission_however_its_bookmaker_is_named() -> None:
    from app.domain.backtest.value_bets import ValueBetConfig

    config = ValueBetConfig(
        sources=("ensemble",),
        thresholds=(0.02,),
        reference="PS",
        bookmakers=("B365", "Betfair Exchange", "MB"),
        commissions=(("betfair_ex_uk", 0.05), ("mb", 0.02)),
    )
    np.testing.assert_allclose(config.commission_of_bookmakers(), [0.0, 0.05, 0.02])


def test_a_child_process_gets_the_commissions_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.settings import Settings, settings_environment

    given = Settings(exchange_commission={"BFE": 0.02, "MB": 0.015})
    variable = settings_environment(given)["ODDSBOOST_EXCHANGE_COMMISSION"]
    assert variable == '{"BFE": 0.02, "MB": 0.015}'
    monkeypatch.setenv("ODDSBOOST_EXCHANGE_COMMISSION", variable)
    assert Settings().exchange_commission == {"BFE": 0.02, "MB": 0.015}
