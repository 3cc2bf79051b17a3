"""Predicting matches from their quotes with the active ensemble (or the consensus).

Used by the prediction service for inline quotes and stored ones alike, so that what is
evaluated is what is served.
"""

from __future__ import annotations

import datetime as dt
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from app.domain.ensemble import Ensemble
from app.domain.odds import MAX_ITERATIONS, TOLERANCE, demargin
from app.domain.records import OUTCOMES
from app.domain.vocabulary import Basis, Method


@dataclass(frozen=True, slots=True)
class QuotedOdds:
    bookmaker: str
    home: float
    draw: float
    away: float


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """What an answer says about the match it predicts: a stored match has them all, an
    inline one what its sender gave (possibly nothing)."""

    id: int | None = None
    competition: str | None = None
    home_team: str | None = None
    away_team: str | None = None
    kickoff: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class QuotedMatch:
    """A match with the quotes to predict it from."""

    info: MatchInfo
    odds: Sequence[QuotedOdds]


@dataclass(frozen=True, slots=True)
class UsedBookmaker:
    code: str
    weight: float | None  # None when no model is active
    probabilities: tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class IgnoredBookmaker:
    code: str
    reason: str


@dataclass(frozen=True)
class MatchPrediction:
    probabilities: tuple[float, float, float]
    basis: Basis
    consensus: tuple[float, float, float]
    used: list[UsedBookmaker] = field(default_factory=list)
    ignored: list[IgnoredBookmaker] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        # The first of equal maxima, as numpy's argmax.
        probabilities = self.probabilities
        return OUTCOMES[max(range(len(OUTCOMES)), key=probabilities.__getitem__)]


class NoUsableQuoteError(ValueError):
    """Nothing to predict from: no quote at all."""


def predict_matches(
    matches: Sequence[Sequence[QuotedOdds]], ensemble: Ensemble | None, default_method: Method
) -> list[MatchPrediction]:
    """Combine each match's quotes with the active ensemble (or give the consensus).

    Quotes from bookmakers outside the ensemble's pool are ignored (and listed). If none
    of a match's quoted bookmakers is in the pool, or no model is active, its
    probabilities are the consensus: the plain mean of its de-margined quotes, labelled as
    such. Many quotes are de-margined in one numpy call and mixed in one vote, so a batch
    costs little more than one match. A handful (one match, as /predict asks) are worked
    out with plain floats instead, the same steps in the same order, because numpy's cost
    per call would be most of the work.
    """
    if any(not odds for odds in matches):
        raise NoUsableQuoteError("no usable quote for this match")
    method = ensemble.method if ensemble is not None else default_method
    flat = [quote for odds in matches for quote in odds]
    few = len(flat) <= FEW_QUOTES
    rows = _demargin_few(flat, method) if few else None
    if rows is None:
        rows = _demargin_many(flat, method)
    split: list[tuple[Sequence[QuotedOdds], list[Triple]]] = []
    start = 0
    for odds in matches:
        split.append((odds, rows[start : start + len(odds)]))
        start += len(odds)
    if ensemble is None:
        return [_consensus_only(odds, match_rows) for odds, match_rows in split]
    pool = _POOLS.of(ensemble)
    layouts = [_lay_out(odds, match_rows, pool) for odds, match_rows in split]
    modelled = [layout for layout in layouts if layout.modelled]
    mix = _mix_few if few else _mix_many
    mixes = iter(mix(modelled, ensemble, pool) if modelled else [])
    return [
        MatchPrediction(
            next(mixes) if layout.modelled else layout.consensus,
            Basis.MODEL if layout.modelled else Basis.CONSENSUS,
            layout.consensus,
            layout.used,
            layout.ignored,
        )
        for layout in layouts
    ]


# At most this many quotes are de-margined and mixed with plain floats; more go to numpy,
# whose cost per call is then shared by many rows.
FEW_QUOTES = 32

Triple = tuple[float, float, float]


def _consensus_only(odds: Sequence[QuotedOdds], rows: list[Triple]) -> MatchPrediction:
    mean = _mean(rows)
    everyone = [UsedBookmaker(q.bookmaker, None, row) for q, row in zip(odds, rows, strict=True)]
    return MatchPrediction(mean, Basis.CONSENSUS, mean, everyone)


def _mean(rows: list[Triple]) -> Triple:
    # Summed in order, then divided: what np.add.reduceat and a division give.
    home = draw = away = 0.0
    for row in rows:
        home += row[0]
        draw += row[1]
        away += row[2]
    size = len(rows)
    return (home / size, draw / size, away / size)


@dataclass(frozen=True, slots=True)
class _Pool:
    """The ensemble's bookmakers by column, and their weights as floats."""

    column: dict[str, int]
    weights: list[float]

    @classmethod
    def of(cls, ensemble: Ensemble) -> _Pool:
        column = {code: index for index, code in enumerate(ensemble.bookmakers)}
        return cls(column, [float(w) for w in ensemble.weights])


class _LastPool:
    """The pool of the ensemble used last: the same model answers request after request,
    and laying its pool out again each time is a good part of predicting one match."""

    def __init__(self) -> None:
        self._last: tuple[weakref.ref[Ensemble], _Pool] | None = None

    def of(self, ensemble: Ensemble) -> _Pool:
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and last[0]() is ensemble:
            return last[1]
        pool = _Pool.of(ensemble)
        self._last = (weakref.ref(ensemble), pool)
        return pool


_POOLS = _LastPool()


@dataclass(frozen=True, slots=True)
class _Layout:
    """One match's quotes over the pool: used (with their columns and rows) or ignored."""

    consensus: Triple
    used: list[UsedBookmaker]
    ignored: list[IgnoredBookmaker]
    columns: list[int]

    @property
    def modelled(self) -> bool:
        # The model's only if some quoted bookmaker has weight; with weights all zero the
        # mix would be a plain mean, which is labelled as the consensus it is.
        return any(u.weight for u in self.used)


def _lay_out(odds: Sequence[QuotedOdds], rows: list[Triple], pool: _Pool) -> _Layout:
    used: list[UsedBookmaker] = []
    ignored: list[IgnoredBookmaker] = []
    columns: list[int] = []
    for quote, row in zip(odds, rows, strict=True):
        index = pool.column.get(quote.bookmaker)
        if index is None:
            ignored.append(
                IgnoredBookmaker(quote.bookmaker, "not in the model's pool of bookmakers")
            )
            continue
        used.append(UsedBookmaker(quote.bookmaker, pool.weights[index], row))
        columns.append(index)
    return _Layout(_mean(rows), used, ignored, columns)


# --- many quotes: numpy ---------------------------------------------------------------------


def _demargin_many(quotes: list[QuotedOdds], method: Method) -> list[Triple]:
    probabilities = demargin([[q.home, q.draw, q.away] for q in quotes], method).probabilities
    return [(row[0], row[1], row[2]) for row in probabilities.tolist()]


def _mix_many(layouts: list[_Layout], ensemble: Ensemble, pool: _Pool) -> list[Triple]:
    H = np.full((len(layouts), len(pool.weights), len(OUTCOMES)), np.nan)
    for match, layout in enumerate(layouts):
        for column, used in zip(layout.columns, layout.used, strict=True):
            H[match, column] = used.probabilities
    # H was laid out here from de-margined probabilities: nothing to check again.
    mixed = ensemble.predict_proba(H, check_input=False)
    return [(row[0], row[1], row[2]) for row in mixed.tolist()]


# --- a few quotes: plain floats, the steps of app.domain.odds and boosting.weighted_vote ------


def _demargin_few(quotes: list[QuotedOdds], method: Method) -> list[Triple] | None:
    """The quotes de-margined one by one, or None when numpy must do it (another method,
    a book without a margin, or a price numpy would refuse with its message)."""
    if method is Method.POWER:
        solve = _power
    elif method is Method.MULTIPLICATIVE:
        solve = _multiplicative
    else:
        return None
    rows: list[Triple] = []
    for quote in quotes:
        home, draw, away = quote.home, quote.draw, quote.away
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
        value = p_home + p_draw + p_away - 1.0
        if abs(value) <= TOLERANCE:
            break
        k = k - value / (p_home * log_home + p_draw * log_draw + p_away * log_away)
    p_home, p_draw = math.exp(k * log_home), math.exp(k * log_draw)
    p_away = math.exp(k * log_away)
    total = p_home + p_draw + p_away
    return (p_home / total, p_draw / total, p_away / total)


def _mix_few(layouts: list[_Layout], ensemble: Ensemble, pool: _Pool) -> list[Triple]:
    return [_mix_one(layout, ensemble.calibration, pool) for layout in layouts]


def _mix_one(layout: _Layout, calibration: float, pool: _Pool) -> Triple:
    """Σ w_b p_b / Σ w_b over the used bookmakers, in pool order, normalised and calibrated
    as ``Ensemble.predict_proba`` does."""
    total = home = draw = away = 0.0
    for column, used in sorted(zip(layout.columns, layout.used, strict=True)):
        weight = pool.weights[column]
        total += weight
        home += weight * used.probabilities[0]
        draw += weight * used.probabilities[1]
        away += weight * used.probabilities[2]
    home, draw, away = home / total, draw / total, away / total
    sums = home + draw + away
    if sums > 0:
        home, draw, away = home / sums, draw / sums, away / sums
    else:
        home = draw = away = 1.0 / len(OUTCOMES)
    if calibration == 1.0:
        return (home, draw, away)
    home, draw, away = (min(max(p, 1e-15), 1.0) ** calibration for p in (home, draw, away))
    powered = home + draw + away
    return (home / powered, draw / powered, away / powered)
