"""Predicting matches from their quotes with the active ensemble (or the consensus).

Shared by the predict endpoint and the services that serve stored quotes, so that what is
evaluated is what is served.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from app.domain.ensemble import Ensemble
from app.domain.odds import demargin
from app.domain.records import OUTCOMES
from app.domain.vocabulary import Method


@dataclass(frozen=True, slots=True)
class QuotedOdds:
    bookmaker: str
    home: float
    draw: float
    away: float


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
    basis: Literal["model", "consensus"]
    consensus: tuple[float, float, float]
    used: list[UsedBookmaker] = field(default_factory=list)
    ignored: list[IgnoredBookmaker] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return OUTCOMES[int(np.argmax(self.probabilities))]


class NoUsableQuoteError(ValueError):
    """Nothing to predict from: no quote at all."""


def predict_match(
    odds: Sequence[QuotedOdds], ensemble: Ensemble | None, default_method: Method
) -> MatchPrediction:
    """One match: see :func:`predict_matches`."""
    return predict_matches([odds], ensemble, default_method)[0]


def predict_matches(
    matches: Sequence[Sequence[QuotedOdds]], ensemble: Ensemble | None, default_method: Method
) -> list[MatchPrediction]:
    """Combine each match's quotes with the active ensemble (or give the consensus).

    Quotes from bookmakers outside the ensemble's pool are ignored (and listed). If none
    of a match's quoted bookmakers is in the pool, or no model is active, its
    probabilities are the consensus: the plain mean of its de-margined quotes, labelled as
    such. All quotes of all matches are de-margined in one call and all mixes computed in
    one vote, so a batch costs little more than one match.
    """
    if any(not odds for odds in matches):
        raise NoUsableQuoteError("no usable quote for this match")
    method = ensemble.method if ensemble is not None else default_method
    flat = [quote for odds in matches for quote in odds]
    probabilities = demargin([[q.home, q.draw, q.away] for q in flat], method).probabilities
    starts = np.cumsum([0] + [len(odds) for odds in matches[:-1]])
    sizes = np.array([len(odds) for odds in matches], dtype=np.float64)
    consensus = np.add.reduceat(probabilities, starts, axis=0) / sizes[:, None]

    if ensemble is None:
        predictions = []
        for match, (start, odds) in enumerate(zip(starts, matches, strict=True)):
            everyone = [
                UsedBookmaker(q.bookmaker, None, _triple(probabilities[start + i]))
                for i, q in enumerate(odds)
            ]
            mean = _triple(consensus[match])
            predictions.append(MatchPrediction(mean, "consensus", mean, everyone))
        return predictions

    column = {code: index for index, code in enumerate(ensemble.bookmakers)}
    H = np.full((len(matches), len(ensemble.bookmakers), len(OUTCOMES)), np.nan)
    used: list[list[UsedBookmaker]] = []
    ignored: list[list[IgnoredBookmaker]] = []
    for match, (start, odds) in enumerate(zip(starts, matches, strict=True)):
        used.append([])
        ignored.append([])
        for i, quote in enumerate(odds):
            index = column.get(quote.bookmaker)
            if index is None:
                ignored[match].append(
                    IgnoredBookmaker(quote.bookmaker, "not in the model's pool of bookmakers")
                )
                continue
            row = probabilities[start + i]
            H[match, index] = row
            used[match].append(
                UsedBookmaker(quote.bookmaker, float(ensemble.weights[index]), _triple(row))
            )
    # A match is the model's only if some quoted bookmaker has weight; with weights all
    # zero the mix would be a plain mean, which is labelled as the consensus it is.
    modelled = np.array([any(u.weight for u in match_used) for match_used in used])
    mixed = np.full((len(matches), len(OUTCOMES)), np.nan)
    if modelled.any():
        # H was laid out here from de-margined probabilities: nothing to check again.
        mixed[modelled] = ensemble.predict_proba(H[modelled], check_input=False)
    predictions = []
    for match in range(len(matches)):
        mean = _triple(consensus[match])
        if modelled[match]:
            predictions.append(
                MatchPrediction(_triple(mixed[match]), "model", mean, used[match], ignored[match])
            )
        else:
            predictions.append(
                MatchPrediction(mean, "consensus", mean, used[match], ignored[match])
            )
    return predictions


def _triple(values: NDArray[np.float64]) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))
