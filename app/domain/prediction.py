"""Predicting matches from their quotes with the active ensemble (or the consensus)."""

from __future__ import annotations

import datetime as dt
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from app.domain.bookmakers import bookmaker_key
from app.domain.ensemble import Ensemble, mix_few
from app.domain.odds import Triple, consensus_few, demargin, demargin_few
from app.domain.records import OUTCOMES
from app.domain.vocabulary import Basis, Method, Phase

# Named tuples, not dataclasses: made for every quote, in half the time, which /predict notices.


class QuotedOdds(NamedTuple):
    bookmaker: str
    home: float
    draw: float
    away: float
    captured_at: dt.datetime | None = None  # a stored quote's; None for the sender's


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """What an answer says about its match (an inline one: what its sender gave)."""

    id: int | None = None
    competition: str | None = None
    home_team: str | None = None
    away_team: str | None = None
    kickoff: dt.datetime | None = None
    season: str | None = None


@dataclass(frozen=True, slots=True)
class StoredQuotes:
    """The phase of the stored quotes a prediction read; ``fallback``: the match had none of
    the model's phase."""

    phase: Phase
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class QuotedMatch:
    """A match with its quotes (``stored`` None: the sender's)."""

    info: MatchInfo
    odds: Sequence[QuotedOdds]
    stored: StoredQuotes | None = None


class UsedBookmaker(NamedTuple):
    code: str
    weight: float | None  # None when no model is active
    probabilities: tuple[float, float, float]


class IgnoredBookmaker(NamedTuple):
    code: str
    reason: str


@dataclass(frozen=True)
class MatchPrediction:
    probabilities: tuple[float, float, float]
    basis: Basis
    consensus: tuple[float, float, float]
    used: list[UsedBookmaker] = field(default_factory=list)
    ignored: list[IgnoredBookmaker] = field(default_factory=list)
    # The share of the model's total weight held by the bookmakers that quoted the match
    # (0: none did, the answer is the consensus); None when no model is active.
    model_weight_present: float | None = None

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
    """Combine each match's quotes with the ensemble, ignoring (and listing) bookmakers
    outside its pool; with no model or no pool bookmaker, the consensus, labelled so. A batch
    goes through numpy in one call; a handful of quotes through plain floats."""
    if any(not odds for odds in matches):
        raise NoUsableQuoteError("no usable quote for this match")
    method = ensemble.method if ensemble is not None else default_method
    flat = [quote for odds in matches for quote in odds]
    rows = demargined(flat, method)
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
    mix = _mix_few if len(flat) <= FEW_QUOTES else _mix_many
    mixes = iter(mix(modelled, ensemble, pool) if modelled else [])
    return [
        MatchPrediction(
            next(mixes) if layout.modelled else layout.consensus,
            Basis.MODEL if layout.modelled else Basis.CONSENSUS,
            layout.consensus,
            layout.used,
            layout.ignored,
            layout.weight_present,
        )
        for layout in layouts
    ]


# At most this many quotes go through plain floats; more through numpy.
FEW_QUOTES = 32


def _consensus_only(odds: Sequence[QuotedOdds], rows: list[Triple]) -> MatchPrediction:
    consensus = consensus_few(rows)
    everyone = [UsedBookmaker(q.bookmaker, None, row) for q, row in zip(odds, rows, strict=True)]
    return MatchPrediction(consensus, Basis.CONSENSUS, consensus, everyone)


@dataclass(frozen=True, slots=True)
class _Pool:
    """The ensemble's bookmakers by column and by :func:`bookmaker_key` (a key two codes
    share names neither), and their weights as floats."""

    codes: tuple[str, ...]
    column: dict[str, int]
    keyed: dict[str, int]
    weights: list[float]
    total_weight: float

    @classmethod
    def of(cls, ensemble: Ensemble) -> _Pool:
        column = {code: index for index, code in enumerate(ensemble.bookmakers)}
        keys = [bookmaker_key(code) for code in ensemble.bookmakers]
        keyed = {key: index for index, key in enumerate(keys) if keys.count(key) == 1}
        weights = [float(w) for w in ensemble.weights]
        return cls(ensemble.bookmakers, column, keyed, weights, sum(weights))

    def share_of(self, columns: list[int]) -> float:
        """The share of the pool's total weight in ``columns`` (each counted once)."""
        if self.total_weight <= 0.0:
            return 0.0
        present = sum(map(self.weights.__getitem__, set(columns)))
        # Summed in another order than the total: kept within [0, 1].
        return min(1.0, present / self.total_weight)


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
    consensus: Triple
    used: list[UsedBookmaker]
    ignored: list[IgnoredBookmaker]
    columns: list[int]
    # With weights all zero the mix would be a plain mean: labelled as the consensus.
    modelled: bool
    weight_present: float


def _lay_out(odds: Sequence[QuotedOdds], rows: list[Triple], pool: _Pool) -> _Layout:
    used: list[UsedBookmaker] = []
    ignored: list[IgnoredBookmaker] = []
    columns: list[int] = []
    for quote, row in zip(odds, rows, strict=True):
        index = pool.column.get(quote.bookmaker)
        if index is None:
            index = pool.keyed.get(bookmaker_key(quote.bookmaker))
        if index is None:
            ignored.append(
                IgnoredBookmaker(quote.bookmaker, "not in the model's pool of bookmakers")
            )
            continue
        used.append(UsedBookmaker(pool.codes[index], pool.weights[index], row))
        columns.append(index)
    modelled = any(u.weight for u in used)
    return _Layout(consensus_few(rows), used, ignored, columns, modelled, pool.share_of(columns))


def demargined(quotes: Sequence[QuotedOdds], method: Method) -> list[Triple]:
    """Each quote's line de-margined by ``method``."""
    few = len(quotes) <= FEW_QUOTES
    rows = demargin_few(((q.home, q.draw, q.away) for q in quotes), method) if few else None
    if rows is not None:
        return rows
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


def _mix_few(layouts: list[_Layout], ensemble: Ensemble, pool: _Pool) -> list[Triple]:
    return [
        mix_few(
            (
                (pool.weights[column], used.probabilities)
                for column, used in sorted(zip(layout.columns, layout.used, strict=True))
            ),
            ensemble.calibration,
        )
        for layout in layouts
    ]
