"""How a fit did on the held-out part of its window, against the consensus, each bookmaker
and the active version; and whether it may replace the active version."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import SerializerFunctionWrapHandler, model_serializer, model_validator

from app.domain.ensemble import Ensemble
from app.domain.fields import AbsentWhenNone
from app.domain.scoring import Scores, scores
from app.domain.tables import MatchTable, QuoteTable
from app.domain.training import TrainingSet, build_training_set
from app.domain.wording import counted
from boosting import log_loss


@dataclass(frozen=True, slots=True)
class BookmakerValidation:
    """One bookmaker on the validation matches it quoted, and the model on the same ones."""

    rows: int
    scores: Scores
    model_log_loss: float

    # In JSON the scores sit beside the rows: {"rows", "log_loss", ..., "model_log_loss"}.
    @model_serializer(mode="wrap")
    def _scores_inline(self, write: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = write(self)
        return {"rows": data["rows"], **data["scores"], "model_log_loss": data["model_log_loss"]}

    @model_validator(mode="before")
    @classmethod
    def _scores_nested(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "scores" in data:
            return data
        score_names = [score.name for score in fields(Scores)]
        return {
            **{key: value for key, value in data.items() if key not in score_names},
            "scores": {name: data[name] for name in score_names if name in data},
        }


@dataclass(frozen=True, slots=True)
class ActiveVersionComparison:
    """The active version and the new fit on the validation matches both can predict."""

    id: int | None
    rows: int
    log_loss: float | None  # the active version's; None when no row is shared
    model_log_loss: float | None  # the new fit's on the same rows

    @property
    def excess(self) -> float:
        if self.log_loss is None or self.model_log_loss is None:
            return 0.0
        return self.model_log_loss - self.log_loss


@dataclass(frozen=True)
class ValidationReport:
    """Scores of the model, the consensus and every bookmaker on the validation matches."""

    rows: int
    model: Scores
    consensus: Scores
    bookmakers: dict[str, BookmakerValidation]
    # None (and no key in JSON) when no version was active.
    active_version: AbsentWhenNone[ActiveVersionComparison] = None


def validation_report(
    validation: TrainingSet, model_proba: NDArray[np.float64]
) -> ValidationReport:
    """Model and consensus on every validation match; each bookmaker, and the model, on the
    matches it quoted."""
    bookmakers: dict[str, BookmakerValidation] = {}
    for index, code in enumerate(validation.bookmakers):
        quoted = ~np.isnan(validation.H[:, index, 0])
        if not quoted.any():
            continue
        bookmakers[code] = BookmakerValidation(
            rows=int(quoted.sum()),
            scores=scores(validation.y[quoted], validation.H[quoted, index, :]),
            model_log_loss=log_loss(validation.y[quoted], model_proba[quoted]),
        )
    return ValidationReport(
        rows=len(validation),
        model=scores(validation.y, model_proba),
        consensus=scores(validation.y, validation.consensus()),
        bookmakers=bookmakers,
    )


def compare_with_active(
    active: Ensemble,
    matches: MatchTable,
    quotes: QuoteTable,
    validation: TrainingSet,
    validation_proba: NDArray[np.float64],
) -> ActiveVersionComparison:
    """Both models' log loss on the validation matches the active one, reading the same
    quotes its own way, can also predict."""
    laid_out = build_training_set(
        matches, quotes, phase=active.phase, method=active.method, bookmakers=active.bookmakers
    )
    weights = dict(zip(active.bookmakers, active.weights, strict=True))
    position = {match_id: row for row, match_id in enumerate(laid_out.match_ids)}
    common = [i for i, match_id in enumerate(validation.match_ids) if match_id in position]
    if not common:
        return ActiveVersionComparison(active.version, 0, None, None)
    rows = np.array([position[validation.match_ids[i]] for i in common])
    active_proba = Ensemble(
        bookmakers=laid_out.bookmakers,
        weights=np.array([weights[code] for code in laid_out.bookmakers]),
        method=active.method,
        phase=active.phase,
        rounds=active.rounds,
        calibration=active.calibration,
    ).predict_proba(laid_out.H[rows])
    y = validation.y[common]
    return ActiveVersionComparison(
        id=active.version,
        rows=len(common),
        log_loss=log_loss(y, active_proba),
        model_log_loss=log_loss(y, validation_proba[common]),
    )


def promotion_refusal(
    candidate: Ensemble, report: ValidationReport, active: Ensemble | None, tolerance: float
) -> str | None:
    """Why a new fit may not replace the active version automatically, if it may not: it
    reads quotes otherwise (a better score could come from the inputs, and the choice is an
    operator's), or it is worse by more than ``tolerance`` than its pool's consensus or the
    active version."""
    if active is not None and (otherwise := fitted_otherwise(candidate, active)):
        return otherwise
    model, consensus = report.model.log_loss, report.consensus.log_loss
    if model - consensus > tolerance:
        return (
            f"validation log loss {model:.4f} is worse than the consensus of its own pool's "
            f"{consensus:.4f} on the same {counted(report.rows, 'match')} by "
            f"{model - consensus:.4f}, more than the tolerance {tolerance}"
        )
    comparison = report.active_version
    if comparison is not None and comparison.excess > tolerance:
        return (
            f"validation log loss {comparison.model_log_loss:.4f} is worse than active "
            f"version {comparison.id}'s {comparison.log_loss:.4f} on the same "
            f"{counted(comparison.rows, 'match')} by {comparison.excess:.4f}, more than the "
            f"tolerance {tolerance}"
        )
    return None


def fitted_otherwise(candidate: Ensemble, active: Ensemble) -> str | None:
    """How the new fit reads quotes otherwise than the active version, if it does."""
    differences = []
    if candidate.phase != active.phase:
        differences.append(
            f"fitted on {candidate.phase.quotes} while the active version {active.version} "
            f"uses {active.phase.quotes}"
        )
    if candidate.method != active.method:
        differences.append(
            f"odds de-margined with {candidate.method} while the active version "
            f"{active.version} uses {active.method}"
        )
    return "; ".join(differences) or None
