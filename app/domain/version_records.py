"""What a model version records beside its settings: its pool with the weights, and the
report of its fit. Stored and served as the same JSON, which pydantic writes and reads from
these records; keys older versions lack stay absent, so each reads back as it was written.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Annotated

from pydantic import Field, TypeAdapter

from app.domain.ensemble import Ensemble
from app.domain.fields import AbsentWhenNone
from app.domain.fitting import Fit, FitOptions
from app.domain.training import TrainingSet
from app.domain.validation import ValidationReport
from app.domain.vocabulary import FitTarget, Method, Phase
from boosting import StopReason


@dataclass(frozen=True, slots=True)
class BookmakerWeight:
    """A bookmaker of a version's pool: its weight, and how many rounds chose it."""

    code: str
    weight: float
    # "chosen" in the stored JSON and the API, which clients read.
    selection_count: Annotated[int, Field(alias="chosen")]


def pool_of(ensemble: Ensemble) -> tuple[BookmakerWeight, ...]:
    return tuple(
        BookmakerWeight(code, float(weight), count)
        for code, weight, count in zip(
            ensemble.bookmakers, ensemble.weights, ensemble.selection_counts, strict=True
        )
    )


@dataclass(frozen=True, slots=True)
class RecordedOptions:
    """The fitting options a version records (all of ``FitOptions`` but the gate on the
    number of matches, which a stored version has passed)."""

    rounds_grid: tuple[int, ...]
    validation_fraction: float
    phase: Phase
    methods: tuple[Method, ...]
    bookmakers: tuple[str, ...] | None
    min_quotes: int
    half_life_days: float | None
    calibrate: bool
    # The rule on bookmakers that stopped quoting; absent when it was not applied (and in
    # the versions fitted before it).
    recent_days: AbsentWhenNone[float] = None
    recent_share: AbsentWhenNone[float] = None
    # The versions fitted before fit targets were an option lack it (they were fitted on
    # the results).
    fit_target: AbsentWhenNone[FitTarget] = None
    # How long before kickoff a price seen to hold was a close (what a fit toward the close
    # learns); the versions fitted before it was recorded lack it.
    closing_window_minutes: AbsentWhenNone[int] = None

    @classmethod
    def of(cls, options: FitOptions) -> RecordedOptions:
        recorded = cls(**{field.name: getattr(options, field.name) for field in fields(cls)})
        if options.recent_days is None:
            return replace(recorded, recent_share=None)
        return recorded


_RECORDED_OPTIONS = TypeAdapter(RecordedOptions)


def recorded_options_json(options: FitOptions) -> dict[str, object]:
    """``options`` as versions and backtest reports record them, in JSON's types."""
    recorded: dict[str, object] = _RECORDED_OPTIONS.dump_python(
        RecordedOptions.of(options), mode="json"
    )
    return recorded


@dataclass(frozen=True, slots=True)
class TargetCounts:
    """What a fit toward the close learned: how many matches of the window had a close as
    their target, and how many fell back to their result."""

    closes: int
    results: int

    @classmethod
    def of(cls, training: TrainingSet) -> TargetCounts | None:
        if training.target_is_close is None:
            return None
        closes = int(training.target_is_close.sum())
        return cls(closes=closes, results=len(training) - closes)


@dataclass(frozen=True, kw_only=True)
class FitReport(ValidationReport):
    """The validation report of a fit and how the fit went (a version's ``validation``)."""

    fit_rows: int  # matches of the window the rounds were chosen on (the rest validated)
    dropped: dict[str, int]  # matches left out of the window, by reason
    stop_reason: StopReason
    rounds_run: int
    # The versions of the first refits lack these two.
    options: AbsentWhenNone[RecordedOptions] = None
    method_scores: AbsentWhenNone[dict[str, float]] = None  # validation log loss by method
    # Bookmakers left out of the pool (of a fixed pool, those that never quoted the window
    # too), and why; the versions fitted before it was recorded lack it.
    left_out: AbsentWhenNone[dict[str, str]] = None
    # Absent when fitted on the results (and in the versions fitted before it was recorded).
    fit_targets: AbsentWhenNone[TargetCounts] = None


def fit_report(report: ValidationReport, fit: Fit, options: FitOptions) -> FitReport:
    return FitReport(
        **{field.name: getattr(report, field.name) for field in fields(ValidationReport)},
        fit_rows=fit.fit_rows,
        dropped=fit.training.dropped,
        stop_reason=fit.model.stop_reason_,
        rounds_run=fit.model.n_rounds_,
        options=RecordedOptions.of(options),
        method_scores=fit.method_scores,
        left_out=fit.training.left_out,
        fit_targets=TargetCounts.of(fit.training),
    )
