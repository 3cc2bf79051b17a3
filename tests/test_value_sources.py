"""Value source chains: how they are written and read, and the value of a match under each,
worked out by hand on books without margin (their fair probabilities are 1/price)."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from app.domain.odds import consensus_of
from app.domain.prediction import QuotedOdds
from app.domain.value import ValueTerms, match_values
from app.domain.value_sources import (
    SPACES,
    ValueSourceChain,
    ValueSourceError,
    chain_links,
    normalised_chain,
    normalised_chains,
)
from app.domain.vocabulary import Method


@pytest.mark.parametrize(
    ("written", "links"),
    [
        ("ensemble", ("ensemble",)),
        ("ENSEMBLE", ("ensemble",)),
        (" Consensus ", ("consensus",)),
        ("PS", ("PS",)),
        ("pinnacle", ("PS",)),
        ("ps, consensus", ("PS", "consensus")),
        ("bet365,PS,consensus,ensemble,williamhill", ("B365", "PS", "consensus", "ensemble", "WH")),
    ],
)
def test_a_chain_is_read_as_its_normalised_links(written: str, links: tuple[str, ...]) -> None:
    assert chain_links(written) == links
    assert normalised_chain(written) == ",".join(links)


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("", "empty link"),
        ("PS,", "empty link"),
        ("PS, ,consensus", "empty link"),
        ("ensmble", "unknown value source 'ensmble'"),
        ("PS,Some Book", "unknown value source 'Some Book'"),
        ("PS,Pinnacle", "names PS twice"),
        ("consensus,ensemble,CONSENSUS", "names consensus twice"),
        ("PS,B365,WH,BW,IW,VC", "at most 5 links"),
        ("PS" + "," * 300, "at most 200 characters"),
    ],
)
def test_a_bad_chain_is_refused_saying_why(written: str, message: str) -> None:
    with pytest.raises(ValueSourceError, match=message):
        chain_links(written)


def test_several_chains_are_separated_by_semicolons() -> None:
    assert normalised_chains("ensemble;ps;PS, consensus") == ("ensemble", "PS", "PS,consensus")
    with pytest.raises(ValueSourceError, match="given twice: PS,consensus"):
        normalised_chains("PS,consensus;pinnacle,Consensus")
    with pytest.raises(ValueSourceError, match="empty link"):
        normalised_chains("ensemble;;PS")


def test_the_settings_take_a_chain_normalised_and_refuse_a_bad_one() -> None:
    from app.settings import Settings, configuration_problems

    assert Settings(value_probability_source="pinnacle, Consensus").value_terms().source == (
        "PS,consensus"
    )
    with pytest.raises(ValidationError, match="unknown value source 'PSX'"):
        Settings(value_probability_source="PSX")
    with pytest.raises(ValidationError, match="at most 5 links"):
        Settings(value_probability_source="PS,B365,WH,BW,IW,consensus")
    with pytest.raises(ValidationError) as refused:
        Settings(value_probability_source="PS,,consensus")
    assert configuration_problems(refused.value) == [
        "ODDSBOOST_VALUE_PROBABILITY_SOURCE: a value source has an empty link (links are "
        "comma-separated, e.g. PS,consensus)"
    ]


# Two books without margin: PS says 0.5, 0.25, 0.25 and B365 0.4, 0.2, 0.4, so their
# consensus is 0.45, 0.225, 0.325. The best prices are B365's 2.5 and 5.0 and PS's 4.0.
PS = QuotedOdds("PS", 2.0, 4.0, 4.0)
B365 = QuotedOdds("B365", 2.5, 5.0, 2.5)
SERVED = (0.5, 0.28, 0.22)


def value_of(source: str, odds: list[QuotedOdds]) -> tuple[str | None, list[float | None], str]:
    """The link that priced the match, its probabilities and the flagged outcomes."""
    (value,) = match_values([SERVED], [odds], ValueTerms(source=source), Method.POWER)
    flagged = "".join(outcome.outcome for outcome in value.flagged)
    return value.source, [outcome.probability for outcome in value.outcomes], flagged


def test_the_value_of_a_match_under_each_chain_by_hand() -> None:
    # Served: EV 0.5 × 2.5 − 1 = 0.25, 0.28 × 5.0 − 1 = 0.40, 0.22 × 4.0 − 1 = −0.12: the draw.
    assert value_of("ensemble", [PS, B365]) == ("ensemble", list(SERVED), "X")
    # Consensus: 0.125, 0.125, 0.325 × 4.0 − 1 = 0.30: the away win.
    source, line, flagged = value_of("consensus", [PS, B365])
    assert (source, flagged) == ("consensus", "2")
    assert line == pytest.approx([0.45, 0.225, 0.325])
    # Pinnacle's line: 0.25, 0.25, 0.0: home and draw tie, the first in 1, X, 2 order.
    source, line, flagged = value_of("PS", [PS, B365])
    assert (source, flagged) == ("PS", "1")
    assert line == pytest.approx([0.5, 0.25, 0.25])
    # The first link with a line prices the match, whatever follows it.
    assert value_of("PS,consensus", [PS, B365])[0] == "PS"
    assert value_of("consensus,PS", [PS, B365])[0] == "consensus"


def test_a_chain_falls_back_link_by_link_and_may_price_nothing() -> None:
    # Without PS: the consensus is B365's line alone, 0.4, 0.2, 0.4, whose EVs at B365's
    # prices are all 0: priced, nothing flagged.
    source, line, flagged = value_of("PS,consensus", [B365])
    assert (source, flagged) == ("consensus", "")
    assert line == pytest.approx([0.4, 0.2, 0.4])
    assert value_of("PS,ensemble", [B365]) == ("ensemble", list(SERVED), "X")
    # No link has a line: no probability, no flag.
    assert value_of("PS", [B365]) == (None, [None, None, None], "")
    assert value_of("WH,PS", [B365]) == (None, [None, None, None], "")


def test_a_batch_prices_each_match_by_its_own_first_link() -> None:
    terms = ValueTerms(source="PS,consensus")
    values = match_values([SERVED] * 3, [[PS, B365], [B365], [PS]], terms, Method.POWER)
    assert [value.source for value in values] == ["PS", "consensus", "PS"]
    alone = [
        match_values([SERVED], [odds], terms, Method.POWER)[0]
        for odds in ([PS, B365], [B365], [PS])
    ]
    assert values == alone


def test_a_link_is_trimmed_of_every_space_str_strip_takes_off() -> None:
    assert set(SPACES) == {c for c in map(chr, range(0x110000)) if c.isspace()}


@pytest.mark.parametrize(
    "written",
    [
        "PS",
        " ps ,\u3000Consensus\x1c",
        "VC Bet,ensemble",
        "bet&win,1XBET,betfair_ex_uk",
        "x",
        "PS,,WH",
    ],
)
def test_the_documented_pattern_accepts_what_the_parser_accepts(written: str) -> None:
    pattern = TypeAdapter(ValueSourceChain).json_schema()["pattern"]
    try:
        chain_links(written)
        accepted = True
    except ValueSourceError:
        accepted = False
    assert bool(re.match(pattern, written)) == accepted


def test_the_consensus_is_the_mean_of_the_lines_of_those_that_quoted() -> None:
    nan = math.nan
    lines = np.array(
        [
            [[0.5, 0.25, 0.25], [0.4, 0.2, 0.4]],
            [[nan, nan, nan], [0.3, 0.3, 0.4]],
            [[nan, nan, nan], [nan, nan, nan]],
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" for the match nobody quoted
        consensus = consensus_of(lines)
    np.testing.assert_allclose(consensus[:2], [[0.45, 0.225, 0.325], [0.3, 0.3, 0.4]])
    assert np.isnan(consensus[2]).all()
