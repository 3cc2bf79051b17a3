"""Odds → probabilities: known identities, hand-computed values, validation."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.domain.odds import check_odds, consensus_few, consensus_of, demargin
from app.domain.records import check_overround
from app.domain.vocabulary import Method

BOOK = np.array(
    [
        [2.0, 3.5, 4.0],
        [1.57, 3.9, 7.5],
        [1.25, 6.0, 13.0],
        [3.1, 3.2, 2.45],
        [1.02, 26.0, 51.0],
        [8.0, 5.5, 1.33],
    ]
)
ALL_METHODS = list(Method)


def test_the_consensus_is_the_mean_of_the_lines_that_quoted() -> None:
    lines = np.array(
        [
            [[0.5, 0.3, 0.2], [0.4, 0.4, 0.2], [np.nan] * 3],
            [[np.nan] * 3, [0.7, 0.2, 0.1], [np.nan] * 3],
            [[np.nan] * 3] * 3,
        ]
    )
    found = consensus_of(lines)
    assert found[:2].ravel().tolist() == pytest.approx([0.45, 0.35, 0.2, 0.7, 0.2, 0.1])
    assert np.isnan(found[2]).all()
    # The plain-float twin takes the same steps: the same numbers, to the last bit.
    assert consensus_few([(0.5, 0.3, 0.2), (0.4, 0.4, 0.2)]) == tuple(found[0])
    assert consensus_few([(0.7, 0.2, 0.1)]) == (0.7, 0.2, 0.1)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_method_gives_probabilities(method: Method) -> None:
    result = demargin(BOOK, method)
    assert result.probabilities.shape == BOOK.shape
    assert result.probabilities.sum(axis=1) == pytest.approx(np.ones(len(BOOK)), abs=1e-12)
    assert (result.probabilities >= 0).all()
    assert (result.probabilities <= 1).all()
    assert result.converged.all()
    assert result.method is method
    # The favourite stays the favourite.
    assert (np.argmax(result.probabilities, axis=1) == np.argmin(BOOK, axis=1)).all()


def test_multiplicative_is_normalised_inverse_odds() -> None:
    implied = 1.0 / BOOK
    result = demargin(BOOK, "multiplicative")
    assert result.probabilities == pytest.approx(implied / implied.sum(axis=1, keepdims=True))
    assert result.parameter == pytest.approx(implied.sum(axis=1) - 1)


def test_hand_computed_multiplicative_and_additive() -> None:
    # 2.0, 3.5, 4.0: implied .5, .285714, .25, sum 1.035714, margin .035714.
    # multiplicative: .5/1.035714 = .482759, .275862, .241379
    # additive: each minus .035714/3 = .011905: .488095, .273810, .238095
    odds = [[2.0, 3.5, 4.0]]
    assert demargin(odds, "multiplicative").probabilities[0] == pytest.approx(
        [0.482759, 0.275862, 0.241379], abs=1e-6
    )
    assert demargin(odds, "additive").probabilities[0] == pytest.approx(
        [0.488095, 0.273810, 0.238095], abs=1e-6
    )


def test_additive_never_goes_negative() -> None:
    # 1.1, 7, 150: implied .909091, .142857, .006667; margin .058615 shared by three is
    # .019538, more than the longshot's .006667. The longshot gets 0 and the other two
    # share what remains, 1.051948 - 1 = .051948, so .025974 each:
    # .909091 - .025974 = .883117 and .142857 - .025974 = .116883.
    result = demargin([[1.1, 7.0, 150.0]], "additive")
    assert result.probabilities[0] == pytest.approx([0.883117, 0.116883, 0.0], abs=1e-6)


def test_power_k_solves_the_defining_equation() -> None:
    result = demargin(BOOK, "power")
    implied = 1.0 / BOOK
    assert (implied ** result.parameter[:, None]).sum(axis=1) == pytest.approx(
        np.ones(len(BOOK)), abs=1e-12
    )
    assert result.probabilities == pytest.approx(implied ** result.parameter[:, None], abs=1e-12)
    assert (result.parameter > 1).all()  # every book here has a positive margin


def test_odds_ratio_is_constant_across_outcomes() -> None:
    result = demargin(BOOK, "odds_ratio")
    implied = 1.0 / BOOK
    p = result.probabilities
    ratio = (implied / (1 - implied)) / (p / (1 - p))
    assert ratio == pytest.approx(np.repeat(result.parameter[:, None], 3, axis=1), rel=1e-9)


def test_shin_for_two_outcomes_equals_additive() -> None:
    # A known identity: with two outcomes Shin's method shares the margin equally.
    two_way = np.array([[1.4, 2.9], [1.9, 1.9], [1.08, 7.5], [2.5, 1.55]])
    assert demargin(two_way, "shin").probabilities == pytest.approx(
        demargin(two_way, "additive").probabilities, abs=1e-9
    )


def test_shin_satisfies_its_formula() -> None:
    result = demargin(BOOK, "shin")
    implied = 1.0 / BOOK
    z = result.parameter[:, None]
    share = implied**2 / implied.sum(axis=1, keepdims=True)
    expected = (np.sqrt(z**2 + 4 * (1 - z) * share) - z) / (2 * (1 - z))
    assert result.probabilities == pytest.approx(expected, abs=1e-10)
    assert ((result.parameter > 0) & (result.parameter < 0.1)).all()


@pytest.mark.parametrize("method", [Method.POWER, Method.SHIN, Method.ODDS_RATIO])
def test_favourite_longshot_methods_favour_the_favourite(method: Method) -> None:
    # Compared with normalisation, these take more of the margin from longshots.
    odds = [[1.25, 6.0, 13.0]]
    favourite = demargin(odds, method).probabilities[0, 0]
    assert favourite > demargin(odds, "multiplicative").probabilities[0, 0]


@pytest.mark.parametrize("method", ALL_METHODS)
def test_zero_margin_odds_come_back_unchanged(method: Method) -> None:
    fair = np.array([[2.0, 4.0, 4.0], [1.25, 10.0, 10.0], [3.0, 3.0, 3.0]])
    assert (1 / fair).sum(axis=1) == pytest.approx([1, 1, 1])
    assert demargin(fair, method).probabilities == pytest.approx(1 / fair, abs=1e-12)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_negative_margin_books_still_solve(method: Method) -> None:
    exchange = [[2.1, 3.6, 4.2]]  # implied sum .9927: less than 1
    result = demargin(exchange, method)
    assert result.converged.all()
    assert result.probabilities.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_rows_are_independent(method: Method) -> None:
    together = demargin(BOOK, method).probabilities
    alone = np.vstack([demargin(row, method).probabilities for row in BOOK])
    assert together == pytest.approx(alone, abs=1e-12)


def test_an_iteration_cap_is_reported() -> None:
    result = demargin(BOOK, "power", max_iterations=1)
    assert not result.converged.all()
    assert demargin(BOOK, "power").converged.all()


@pytest.mark.parametrize(
    ("odds", "message"),
    [
        ([[1.0, 3.0, 4.0]], "greater than 1"),
        ([[0.5, 3.0, 4.0]], "greater than 1"),
        ([[np.nan, 3.0, 4.0]], "finite"),
        ([[np.inf, 3.0, 4.0]], "finite"),
        ([[2.0]], "K >= 2"),
        (np.ones((2, 2, 3)) * 2, "shape"),
    ],
)
def test_invalid_odds(odds: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_odds(odds)  # type: ignore[arg-type]


def test_unknown_method() -> None:
    with pytest.raises(ValueError, match="not a valid Method"):
        demargin(BOOK, "astrology")


@pytest.mark.parametrize("method", ALL_METHODS)
def test_extreme_books_converge(method: Method) -> None:
    extreme = np.array([[1.01, 1.01], [1.001, 1000.0], [1.5, 1.5], [60.0, 70.0]])
    result = demargin(extreme, method)
    assert result.converged.all()
    assert result.probabilities.sum(axis=1) == pytest.approx(np.ones(4))


@pytest.mark.parametrize(
    ("prices", "shown"),
    [
        # 3 / 1.01 - 1 = 1.9703: every outcome "almost certain".
        ((1.01, 1.01, 1.01), "+1.970"),
        # 3 / 10 - 1 = -0.7: a bookmaker paying back far more than is staked.
        ((10.0, 10.0, 10.0), "-0.700"),
        # D1_1112 row 304, William Hill: 1/2.4 + 1/1.02 + 1/3 - 1 = 0.7304 (a draw at 1.02).
        ((2.4, 1.02, 3.0), "+0.730"),
    ],
)
def test_a_book_far_from_one_is_refused_with_its_overround(
    prices: tuple[float, float, float], shown: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"overround {shown} is outside -0.05 to +0.50")):
        check_overround(*prices)


@pytest.mark.parametrize(
    "prices",
    [
        (2.1, 3.4, 3.6),  # 0.0477
        (3.2, 2.88, 3.25),  # I1_0506 row 134, Stan James: -0.0326, the lowest in the files
        (1.3, 3.35, 3.3),  # F1_0001 row 34, Gamebookers: +0.3708, the highest but two typos
        (1.02, 26.0, 51.0),
    ],
)
def test_every_real_book_passes(prices: tuple[float, float, float]) -> None:
    check_overround(*prices)
