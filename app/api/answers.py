"""The answers of the predict endpoints, written as JSON once, from the service's records.

The hot path of /predict: the body is built as plain dicts, lists and texts (an enum by its
value: ``to_json`` writes a text at a fraction of an enum's cost) and written by
``to_json``, not as a ``PredictionOut`` read from the records' attributes. Building and
validating that model again would cost more than the rest of a cached answer, and the
values need no checking: they come from the service. The shapes are still the documented
ones: a test checks real answers against ``PredictionOut`` and ``BatchOut``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from pydantic_core import to_json

from app.api.schemas.predict import NO_MODEL_NOTE, OUTSIDE_POOL_NOTE
from app.api.schemas.problems import Problem
from app.domain.value import OutcomeValue
from app.domain.vocabulary import Basis
from app.services.prediction import PredictionAnswer


@dataclass(slots=True)
class BatchResult:
    """One item of a batch answer: its prediction, or the status and the problem it got (the
    refusal's message, or the item's validation errors)."""

    index: int
    status: int = 200
    prediction: PredictionAnswer | None = None
    error: Problem | None = None


# The body of each answer by match id, kept while the service keeps the answer: the same
# answer is served many times over its cache time. (An answer with a request's own value
# terms is made for that request alone: its body goes when it does.) Used on the event loop
# only.
_WRITTEN: WeakKeyDictionary[PredictionAnswer, bytes] = WeakKeyDictionary()


def prediction_json(answer: PredictionAnswer) -> bytes:
    """The body of one prediction, in the shape :class:`PredictionOut` documents."""
    if answer.match.id is None:  # inline: answered once
        return to_json(_prediction(answer))
    body = _WRITTEN.get(answer)
    if body is None:
        body = _WRITTEN[answer] = to_json(_prediction(answer))
    return body


def batch_json(results: list[BatchResult]) -> bytes:
    """The body of a batch answer, in the shape :class:`BatchOut` documents."""
    return to_json(
        {
            "results": [
                {
                    "index": result.index,
                    "status": result.status,
                    "prediction": None
                    if result.prediction is None
                    else _prediction(result.prediction),
                    "error": result.error,
                }
                for result in results
            ]
        }
    )


def _outcomes(values: tuple[float, float, float]) -> dict[str, float]:
    return {"home": values[0], "draw": values[1], "away": values[2]}


def _fair_odds(probabilities: tuple[float, float, float]) -> tuple[float, float, float]:
    home, draw, away = probabilities
    return (1.0 / max(home, 1e-12), 1.0 / max(draw, 1e-12), 1.0 / max(away, 1e-12))


def _outcome_value(outcome: OutcomeValue) -> dict[str, Any]:
    return {
        "probability": outcome.probability,
        "price": outcome.price,
        "bookmaker": outcome.bookmaker,
        "captured_at": outcome.captured_at,
        "expected_value": outcome.expected_value,
        "stake_fraction": outcome.stake_fraction,
        "stake": outcome.stake,
        "flagged": outcome.flagged,
    }


def _value(answer: PredictionAnswer) -> dict[str, Any]:
    """The body of :class:`ValueOut`."""
    terms, (home, draw, away) = answer.terms, answer.value.outcomes
    return {
        "terms": {
            "source": terms.source,
            "bookmakers": None if terms.bookmakers is None else sorted(terms.bookmakers),
            "min_ev": terms.min_ev,
            "kelly_fraction": terms.kelly_fraction,
            "stake_cap": terms.stake_cap,
            "bankroll": terms.bankroll,
        },
        "source_used": answer.value.source,
        "outcomes": {
            "home": _outcome_value(home),
            "draw": _outcome_value(draw),
            "away": _outcome_value(away),
        },
    }


def _prediction(answer: PredictionAnswer) -> dict[str, Any]:
    """The body of :class:`PredictionOut`, as a plain dict for speed (see the module)."""
    prediction, ensemble, match = answer.prediction, answer.model, answer.match
    probabilities = prediction.probabilities
    note = None
    if ensemble is None:
        note = NO_MODEL_NOTE
    elif prediction.basis == Basis.CONSENSUS:
        note = OUTSIDE_POOL_NOTE
    return {
        "match": {
            "id": match.id,
            "competition": match.competition,
            "home_team": match.home_team,
            "away_team": match.away_team,
            "kickoff": match.kickoff,
        },
        "probabilities": _outcomes(probabilities),
        "outcome": prediction.outcome,
        "fair_odds": _outcomes(_fair_odds(probabilities)),
        "model": None
        if ensemble is None
        else {
            "version": ensemble.version,
            "algorithm": ensemble.algorithm,
            "fitted_at": ensemble.fitted_at,
            "rounds": ensemble.rounds,
            "method": str(ensemble.method),
            "phase": ensemble.phase.value,
        },
        "quotes": None
        if answer.quotes is None
        else {"phase": answer.quotes.phase.value, "fallback": answer.quotes.fallback},
        "basis": prediction.basis.value,
        "note": note,
        "bookmakers": [
            {"code": u.code, "weight": u.weight, "probabilities": _outcomes(u.probabilities)}
            for u in prediction.used
        ],
        "ignored_bookmakers": [{"code": i.code, "reason": i.reason} for i in prediction.ignored],
        "consensus": _outcomes(prediction.consensus),
        "value": _value(answer),
    }
