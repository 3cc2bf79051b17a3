"""The track record's entries: what the service would have served for a match at its
kickoff (the last quotes before it, the version active then, the served forecast's value
bets), written once so that a refit cannot rewrite the past."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from app.domain.ensemble import Ensemble
from app.domain.odds import Triple, demargin
from app.domain.prediction import MatchInfo, QuotedMatch, predict_matches
from app.domain.records import Outcome
from app.domain.value import ENSEMBLE_SOURCE, ValueTerms, match_values
from app.domain.vocabulary import Basis, Method, Phase

# The track record scores the served forecast, so its value bets are judged by the served
# prediction, whatever the operator's value source. Judged by Pinnacle's line (the default
# source's first link), a bet's EV would be its CLV against that same line, and the figure
# would measure nothing. The bets of the operator's source are scored by the flag ledger,
# from the price each was raised at.
TRACK_RECORD_SOURCE = ENSEMBLE_SOURCE


@dataclass(frozen=True, slots=True)
class LoggedQuote:
    """A bookmaker's last quote before kickoff, de-margined by the entry's method."""

    bookmaker: str
    home: float
    draw: float
    away: float
    captured_at: dt.datetime | None
    probabilities: Triple


@dataclass(frozen=True, slots=True)
class LoggedBet:
    outcome: Outcome
    probability: float
    price: float
    bookmaker: str
    expected_value: float
    stake_fraction: float


@dataclass(frozen=True, slots=True)
class ServedPrediction:
    """What the service would have served for a match at its kickoff."""

    probabilities: Triple
    consensus: Triple  # the mean of the de-margined quotes
    basis: Basis
    # The version active at kickoff (None: none was); ``basis`` says whether it predicted.
    model_version: int | None
    method: Method
    phase: Phase  # of the quotes read (the model's, or any when it had none of it)
    # The link that priced the bets (TRACK_RECORD_SOURCE; an entry logged before that rule
    # may name another); None: none.
    value_source: str | None
    quotes: tuple[LoggedQuote, ...]
    bets: tuple[LoggedBet, ...]


def served_predictions(
    matches: Sequence[QuotedMatch],
    ensemble: Ensemble | None,
    *,
    default_method: Method,
    terms: ValueTerms,
) -> list[tuple[MatchInfo, ServedPrediction]]:
    """The entries of ``matches`` (each quoted), as the service predicts them, with their
    value bets by ``terms`` judged by the served prediction (:data:`TRACK_RECORD_SOURCE`)."""
    if not matches:
        return []
    method = ensemble.method if ensemble is not None else default_method
    odds_of = [match.odds for match in matches]
    predictions = predict_matches(odds_of, ensemble, default_method)
    served = [prediction.probabilities for prediction in predictions]
    scored_terms = dataclasses.replace(terms, source=TRACK_RECORD_SOURCE)
    values = match_values(served, odds_of, scored_terms, method)
    flat = [quote for match in matches for quote in match.odds]
    lines = demargin([[q.home, q.draw, q.away] for q in flat], method).probabilities.tolist()
    entries: list[tuple[MatchInfo, ServedPrediction]] = []
    start = 0
    for match, prediction, value in zip(matches, predictions, values, strict=True):
        odds = match.odds
        quotes = tuple(
            LoggedQuote(
                q.bookmaker, q.home, q.draw, q.away, q.captured_at, (line[0], line[1], line[2])
            )
            for q, line in zip(odds, lines[start : start + len(odds)], strict=True)
        )
        start += len(odds)
        bets = tuple(
            LoggedBet(
                outcome.outcome,  # type: ignore[arg-type]
                outcome.probability,  # type: ignore[arg-type]  # a flagged outcome has one
                # What the bet pays: net of an exchange's commission, as its returns count.
                outcome.net_price,  # type: ignore[arg-type]  # a flagged outcome has a price
                outcome.bookmaker,  # type: ignore[arg-type]
                outcome.expected_value,  # type: ignore[arg-type]
                outcome.stake_fraction,
            )
            for outcome in value.flagged
        )
        phase = match.stored.phase if match.stored is not None else Phase.PRE
        entry = ServedPrediction(
            prediction.probabilities,
            prediction.consensus,
            prediction.basis,
            None if ensemble is None else ensemble.version,
            method,
            phase,
            value.source,
            quotes,
            bets,
        )
        entries.append((match.info, entry))
    return entries
