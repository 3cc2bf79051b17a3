"""Decimal odds → outcome probabilities with the bookmaker's margin removed.

Raw implied probabilities π_k = 1/o_k sum to 1 + margin (the overround). Every method here
returns probabilities that sum to 1 and the parameter it fitted per row:

* ``multiplicative``: p_k = π_k / Σπ (normalisation). Parameter: the margin Σπ − 1.
* ``additive``: p_k = π_k − margin/K (the margin shared equally). A longshot whose π_k is
  smaller than its share would go negative; such outcomes are set to 0 and the margin is
  shared among the others again (repeated until none is negative). Parameter: the margin.
* ``power``: p_k = π_k^k with k such that Σ π_k^k = 1 (k > 1 when the margin is positive).
  Respects the favourite–longshot bias and never leaves [0, 1]. Parameter: k.
* ``shin``: Shin (1993) model of a bookmaker facing a share z of insider money,
  p_k = (√(z² + 4(1 − z) π_k² / Σπ) − z) / (2(1 − z)) with z such that Σ p = 1.
  Parameter: z.
* ``odds_ratio``: the odds ratio between implied and true odds is the same for every
  outcome (Cheung 2015), p_k = π_k / (c − c π_k + π_k) with c such that Σ p = 1.
  Parameter: c.

Iterative methods (power, shin, odds_ratio) solve each row by bracketed Newton steps and
report rows that did not converge. :func:`demargin_few` takes the same steps with plain
floats for one match's handful of books, where numpy's cost per call would dominate, and
:func:`consensus_few` those of :func:`consensus_of`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.domain import defaults
from app.domain.vocabulary import Method

TOLERANCE = 1e-12
MAX_ITERATIONS = 100

# Home, draw, away: a book's three prices, or their probabilities.
Triple = tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class Demargined:
    """Probabilities (n, K) summing to 1 per row, the fitted parameter per row, convergence."""

    probabilities: NDArray[np.float64]
    parameter: NDArray[np.float64]
    converged: NDArray[np.bool_]
    method: Method


def check_odds(odds: ArrayLike) -> NDArray[np.float64]:
    """(n, K) decimal odds with K ≥ 2, every price finite and > 1."""
    array = np.asarray(odds, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] < 2:
        raise ValueError(f"odds must have shape (n, K) with K >= 2 outcomes, got {array.shape}")
    if not np.all(np.isfinite(array)):
        row = int(np.argwhere(~np.isfinite(array))[0][0])
        raise ValueError(f"odds row {row}: prices must be finite numbers")
    if (array <= 1.0).any():
        row, column = np.argwhere(array <= 1.0)[0]
        raise ValueError(
            f"odds row {row}, outcome {column}: price {array[row, column]:g} must be greater than 1"
        )
    return array


def demargin(
    odds: ArrayLike,
    method: Method | str = defaults.METHOD,
    *,
    max_iterations: int = MAX_ITERATIONS,
) -> Demargined:
    """Remove the margin from each row of decimal odds with the given method."""
    chosen = Method(method)
    implied = 1.0 / check_odds(odds)
    if chosen is Method.MULTIPLICATIVE:
        return _multiplicative(implied)
    if chosen is Method.ADDITIVE:
        return _additive(implied)
    solver = {Method.POWER: _power, Method.SHIN: _shin, Method.ODDS_RATIO: _odds_ratio}[chosen]
    probabilities, parameter, converged = solver(implied, TOLERANCE, max_iterations)
    return Demargined(probabilities, parameter, converged, chosen)


def consensus_of(lines: NDArray[np.float64]) -> NDArray[np.float64]:
    """The market consensus: per match, the mean of the de-margined ``lines[match,
    bookmaker, outcome]`` of the bookmakers that quoted it (NaN: did not); a NaN row where
    none did. The one definition, for the training sets, the backtest and the live value."""
    quoted = ~np.isnan(lines[:, :, :1])
    count = quoted.sum(axis=1)
    total = np.where(quoted, lines, 0.0).sum(axis=1)
    result: NDArray[np.float64] = np.divide(
        total, count, out=np.full(total.shape, np.nan), where=count > 0
    )
    return result


def consensus_few(lines: Sequence[Triple]) -> Triple:
    """:func:`consensus_of` for one match's de-margined ``lines`` (at least one) held as
    plain floats, as a prediction holds them: the same steps, summed in order then divided,
    so the same numbers (an array made of the lines would cost more than their mean)."""
    home = draw = away = 0.0
    for line in lines:
        home += line[0]
        draw += line[1]
        away += line[2]
    size = len(lines)
    return (home / size, draw / size, away / size)


def _multiplicative(implied: NDArray[np.float64]) -> Demargined:
    booksum = implied.sum(axis=1)
    return Demargined(
        implied / booksum[:, None],
        booksum - 1.0,
        np.ones(len(implied), bool),
        Method.MULTIPLICATIVE,
    )


def _additive(implied: NDArray[np.float64]) -> Demargined:
    margin = implied.sum(axis=1) - 1.0
    active = np.ones_like(implied, dtype=bool)
    probabilities = implied.copy()
    # At most K - 1 passes: each one removes at least one negative outcome.
    for _ in range(implied.shape[1]):
        share = margin / active.sum(axis=1)
        probabilities = np.where(active, implied - share[:, None], 0.0)
        negative = probabilities < 0
        if not negative.any():
            break
        active &= ~negative
        # What the dropped outcomes held is taken from the margin the others must absorb.
        margin = (np.where(active, implied, 0.0)).sum(axis=1) - 1.0
    probabilities = np.clip(probabilities, 0.0, None)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    return Demargined(
        probabilities, implied.sum(axis=1) - 1.0, np.ones(len(implied), bool), Method.ADDITIVE
    )


def demargin_few(prices: Iterable[Triple], method: Method) -> list[Triple] | None:
    """Each book's prices as probabilities, as :func:`demargin` gives them, with plain
    floats; None where :func:`demargin` must do it: another method, a book without a
    margin, or a price :func:`check_odds` would refuse with its own message."""
    if method is Method.POWER:
        solve = _few_power
    elif method is Method.MULTIPLICATIVE:
        solve = _few_multiplicative
    else:
        return None
    rows: list[Triple] = []
    for home, draw, away in prices:
        if not (1.0 < home < math.inf and 1.0 < draw < math.inf and 1.0 < away < math.inf):
            return None
        row = solve(1.0 / home, 1.0 / draw, 1.0 / away)
        if row is None:
            return None
        rows.append(row)
    return rows


def _few_multiplicative(home: float, draw: float, away: float) -> Triple:
    booksum = home + draw + away
    return (home / booksum, draw / booksum, away / booksum)


def _few_power(home: float, draw: float, away: float) -> Triple | None:
    """:func:`_power`'s Newton from k = 1 on one book with a margin; None for a book
    without one (which takes the bracketed solver)."""
    if home + draw + away < 1.0:
        return None
    log_home, log_draw, log_away = math.log(home), math.log(draw), math.log(away)
    k = 1.0
    for _ in range(MAX_ITERATIONS):
        p_home, p_draw = math.exp(k * log_home), math.exp(k * log_draw)
        p_away = math.exp(k * log_away)
        total = p_home + p_draw + p_away
        value = total - 1.0
        if abs(value) <= TOLERANCE:
            # The powers at the root are those just worked out: nothing to redo.
            return (p_home / total, p_draw / total, p_away / total)
        k = k - value / (p_home * log_home + p_draw * log_draw + p_away * log_away)
    p_home, p_draw = math.exp(k * log_home), math.exp(k * log_draw)
    p_away = math.exp(k * log_away)
    total = p_home + p_draw + p_away
    return (p_home / total, p_draw / total, p_away / total)


Solution = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]


def _solve_rows(
    total: Callable[
        [NDArray[np.float64], NDArray[np.intp]], tuple[NDArray[np.float64], NDArray[np.float64]]
    ],
    start: NDArray[np.float64],
    low: NDArray[np.float64],
    high: NDArray[np.float64],
    tolerance: float,
    max_iterations: int,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Find x per row with Σp(x) = 1 on [low, high], Σp decreasing in x; ``total(x, rows)``
    gives Σp − 1 and its derivative. A Newton step that leaves the bracket is bisected."""
    x = start.copy()
    low, high = low.copy(), high.copy()
    converged = np.zeros(len(x), dtype=bool)
    rows = np.arange(len(x))
    for _ in range(max_iterations):
        if rows.size == 0:
            break
        value, slope = total(x[rows], rows)
        done = np.abs(value) <= tolerance
        converged[rows[done]] = True
        keep = ~done
        rows, value, slope = rows[keep], value[keep], slope[keep]
        # Σp − 1 decreases in x: positive means the root lies above x.
        above = value > 0
        low[rows] = np.where(above, x[rows], low[rows])
        high[rows] = np.where(above, high[rows], x[rows])
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x[rows] - value / slope
        inside = np.isfinite(newton) & (newton > low[rows]) & (newton < high[rows])
        x[rows] = np.where(inside, newton, 0.5 * (low[rows] + high[rows]))
    return x, converged


def _power(implied: NDArray[np.float64], tolerance: float, max_iterations: int) -> Solution:
    logs = np.log(implied)
    n = len(implied)
    positive = implied.sum(axis=1) >= 1.0
    k = np.ones(n)
    converged = np.zeros(n, dtype=bool)
    if positive.all():
        # f(k) = Σ π^k − 1 is convex and decreasing, and f(1) = margin ≥ 0: Newton from
        # k = 1 climbs to the root without passing it, so no bracket is needed.
        for _ in range(max_iterations):
            powered = np.exp(k[:, None] * logs)
            value = powered.sum(axis=1) - 1.0
            converged = np.abs(value) <= tolerance
            if converged.all():
                break
            k = k - value / (powered * logs).sum(axis=1)
    else:

        def total(
            k: NDArray[np.float64], rows: NDArray[np.intp]
        ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
            powered = np.exp(k[:, None] * logs[rows])
            return powered.sum(axis=1) - 1.0, (powered * logs[rows]).sum(axis=1)

        # Covers implied sums from about 0.01 to far beyond any real overround.
        k, converged = _solve_rows(
            total, np.ones(n), np.full(n, 1e-6), np.full(n, 1e4), tolerance, max_iterations
        )
    probabilities = np.exp(k[:, None] * logs)
    return probabilities / probabilities.sum(axis=1, keepdims=True), k, converged


def _shin_probabilities(
    z: NDArray[np.float64], implied: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Shin probabilities and their derivative in z, per row."""
    booksum = implied.sum(axis=1, keepdims=True)
    zz = z[:, None]
    share = implied**2 / booksum
    root = np.sqrt(zz**2 + 4.0 * (1.0 - zz) * share)
    probabilities = (root - zz) / (2.0 * (1.0 - zz))
    d_root = (zz - 2.0 * share) / root
    derivative = ((d_root - 1.0) * (1.0 - zz) + (root - zz)) / (2.0 * (1.0 - zz) ** 2)
    return probabilities, derivative


def _shin(implied: NDArray[np.float64], tolerance: float, max_iterations: int) -> Solution:
    def total(
        z: NDArray[np.float64], rows: NDArray[np.intp]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        probabilities, derivative = _shin_probabilities(z, implied[rows])
        return probabilities.sum(axis=1) - 1.0, derivative.sum(axis=1)

    n = len(implied)
    # Σp decreases in z; z < 0 is allowed so books with a negative margin still solve.
    z, converged = _solve_rows(
        total, np.zeros(n), np.full(n, -0.99), np.full(n, 0.999), tolerance, max_iterations
    )
    probabilities, _ = _shin_probabilities(z, implied)
    return probabilities / probabilities.sum(axis=1, keepdims=True), z, converged


def _odds_ratio(implied: NDArray[np.float64], tolerance: float, max_iterations: int) -> Solution:
    def total(
        c: NDArray[np.float64], rows: NDArray[np.intp]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        pi = implied[rows]
        denominator = c[:, None] * (1.0 - pi) + pi
        return (pi / denominator).sum(axis=1) - 1.0, (-pi * (1.0 - pi) / denominator**2).sum(axis=1)

    n = len(implied)
    c, converged = _solve_rows(
        total, np.ones(n), np.full(n, 1e-6), np.full(n, 1e6), tolerance, max_iterations
    )
    probabilities = implied / (c[:, None] * (1.0 - implied) + implied)
    return probabilities / probabilities.sum(axis=1, keepdims=True), c, converged
