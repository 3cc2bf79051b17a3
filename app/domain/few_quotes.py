"""De-margining and mixing a handful of quotes with plain floats.

The same steps, in the same order, as :func:`app.domain.odds.demargin` (power and
multiplicative methods) and :meth:`app.domain.ensemble.Ensemble.predict_proba`: for one
match, numpy's cost per call would be most of the work. ``tests/test_prediction_paths.py``
checks that both ways agree to 1e-12 on real seasons.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from app.domain.ensemble import CALIBRATION_FLOOR
from app.domain.odds import MAX_ITERATIONS, TOLERANCE
from app.domain.vocabulary import Method

# Home, draw, away.
Triple = tuple[float, float, float]


def demargin(prices: Iterable[Triple], method: Method) -> list[Triple] | None:
    """Each book's prices as probabilities, or None where numpy must do it: another method,
    a book without a margin, or a price numpy would refuse with its own message."""
    if method is Method.POWER:
        solve = _power
    elif method is Method.MULTIPLICATIVE:
        solve = _multiplicative
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


def _multiplicative(home: float, draw: float, away: float) -> Triple:
    booksum = home + draw + away
    return (home / booksum, draw / booksum, away / booksum)


def _power(home: float, draw: float, away: float) -> Triple | None:
    """p = π^k with Σ π^k = 1 by Newton from k = 1, as ``app.domain.odds`` solves a book
    with a margin (same tolerance and iteration limit); None for a book without one."""
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


def mix(weighted: Iterable[tuple[float, Triple]], calibration: float) -> Triple:
    """Σ w_b p_b / Σ w_b over ``(weight, probabilities)`` in pool order, normalised and
    calibrated as ``Ensemble.predict_proba`` does."""
    total = home = draw = away = 0.0
    for weight, probabilities in weighted:
        total += weight
        home += weight * probabilities[0]
        draw += weight * probabilities[1]
        away += weight * probabilities[2]
    home, draw, away = home / total, draw / total, away / total
    sums = home + draw + away
    if sums > 0:
        home, draw, away = home / sums, draw / sums, away / sums
    else:
        home = draw = away = 1.0 / 3
    if calibration == 1.0:
        return (home, draw, away)
    home, draw, away = (
        min(max(p, CALIBRATION_FLOOR), 1.0) ** calibration for p in (home, draw, away)
    )
    powered = home + draw + away
    return (home / powered, draw / powered, away / powered)
