"""Bodies of the model-version endpoints, read from the stored version and its records
(:mod:`app.domain.version_records`)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import AliasPath, ConfigDict, Field

from app.api.schemas.common import AnswerModel, StrictModel, with_examples
from app.domain.fields import AbsentWhenNone, Reason
from app.domain.vocabulary import ActivatedBy, FitTarget, Method, Phase, VersionStatus

LogLoss = Annotated[float, Field(description="Mean log loss; lower is better.")]
Brier = Annotated[
    float, Field(description="Brier score, summed over the three outcomes; lower is better.")
]
Rps = Annotated[
    float,
    Field(description="Ranked probability score, outcomes ordered 1 < X < 2; lower is better."),
]
Accuracy = Annotated[
    float, Field(description="Share of the matches whose most probable outcome happened.")
]


class RecordOut(AnswerModel):
    """A part of a body read from a record's attributes (and, by field name, from JSON)."""

    model_config = ConfigDict(validate_by_name=True)


class BookmakerWeightOut(RecordOut):
    code: str = Field(description="The bookmaker's code.")
    weight: float = Field(description="Its weight in the mix of the pool's probabilities.")
    chosen: int = Field(
        validation_alias="selection_count",
        description="The number of boosting rounds that chose this bookmaker.",
    )


class GridPointOut(RecordOut):
    rounds: int = Field(description="A number of boosting rounds tried.")
    log_loss: float = Field(
        description="The validation log loss with that many rounds; for a fit toward the close, "
        "the cross-entropy to the close of the validation matches."
    )


class ScoresOut(RecordOut):
    log_loss: LogLoss
    brier: Brier
    rps: Rps
    accuracy: Accuracy


class BookmakerValidationOut(RecordOut):
    rows: int = Field(description="Validation matches this bookmaker quoted.")
    log_loss: LogLoss = Field(validation_alias=AliasPath("scores", "log_loss"))
    brier: Brier = Field(validation_alias=AliasPath("scores", "brier"))
    rps: Rps = Field(validation_alias=AliasPath("scores", "rps"))
    accuracy: Accuracy = Field(validation_alias=AliasPath("scores", "accuracy"))
    model_log_loss: float = Field(description="The model's log loss on the same matches.")


class ActiveVersionOut(RecordOut):
    id: int | None = Field(description="The version that was active.")
    rows: int = Field(description="Validation matches both could predict.")
    log_loss: float | None = Field(description="Its log loss on them; null when none.")
    model_log_loss: float | None = Field(description="The new fit's log loss on them.")


class FitOptionsOut(RecordOut):
    rounds_grid: list[int] = Field(description="Numbers of rounds tried.")
    validation_fraction: float = Field(description="Share of the window held out to validate.")
    phase: Phase
    methods: list[Method] = Field(description="De-margining methods tried, the configured first.")
    bookmakers: list[str] | None = Field(description="A fixed pool; null: by min_quotes.")
    min_quotes: int = Field(description="Fewest quotes for a bookmaker to join the pool.")
    half_life_days: float | None = Field(description="Half-life of match weights; null: none.")
    calibrate: bool = Field(description="Whether a calibration exponent was fitted.")
    recent_days: AbsentWhenNone[float] = Field(
        default=None,
        description="A bookmaker stayed in the pool only if, in some competition, it quoted "
        "recent_share of the matches of that competition's last this many days; absent when "
        "no such rule was applied.",
    )
    recent_share: AbsentWhenNone[float] = Field(
        default=None, description="See recent_days; absent with it."
    )
    fit_target: AbsentWhenNone[FitTarget] = Field(
        default=None,
        description="What the weights were fitted toward: result, or close (Pinnacle's closing "
        "line, the result where it had none); absent in versions fitted before it was an "
        "option, which were fitted on the results.",
    )
    closing_window_minutes: AbsentWhenNone[int] = Field(
        default=None,
        description="How long before kickoff Pinnacle's last pre-match price must have been "
        "seen to hold to be a match's close, which a fit toward the close learns (else a "
        "season file's closing price); absent in versions fitted before it was recorded.",
    )


class FitTargetsOut(RecordOut):
    closes: int = Field(description="Matches of the window whose target was their close.")
    results: int = Field(description="Matches of the window with no close, fitted on their result.")


class ValidationOut(RecordOut):
    rows: int = Field(description="Validation matches: the most recent part of the window.")
    model: ScoresOut = Field(description="The fitted model on them.")
    consensus: ScoresOut = Field(description="The mean of the bookmakers' probabilities.")
    bookmakers: dict[str, BookmakerValidationOut] = Field(
        description="Each bookmaker of the pool that quoted some of them, by code."
    )
    active_version: AbsentWhenNone[ActiveVersionOut] = Field(
        default=None,
        description="The version active at the refit on the same matches; absent when none was.",
    )
    fit_rows: int = Field(
        description="Matches fitted on to choose the number of rounds (the rest validated)."
    )
    dropped: dict[str, int] = Field(description="Matches of the window left out, by reason.")
    stop_reason: str = Field(
        description="Why the final fit stopped: max_rounds, no_better_than_chance or perfect."
    )
    rounds_run: int = Field(description="Rounds the final fit kept.")
    options: AbsentWhenNone[FitOptionsOut] = Field(
        default=None, description="The fitting options; absent in versions of the first refits."
    )
    method_scores: AbsentWhenNone[dict[str, float]] = Field(
        default=None,
        description="Validation log loss of each method tried; absent in versions of the first "
        "refits.",
    )
    left_out: AbsentWhenNone[dict[str, str]] = Field(
        default=None,
        description="Bookmakers left out of the pool, by code, and why: too few usable quotes "
        "in the window (min_quotes; a bookmaker of a fixed pool that never quoted the window "
        "is listed with 0), or no longer quoting (recent_days, recent_share). Absent in "
        "versions fitted before it was recorded.",
    )
    fit_targets: AbsentWhenNone[FitTargetsOut] = Field(
        default=None,
        description="Toward the close: how many matches of the window were fitted toward their "
        "close and how many toward their result (no close); absent when fitted on the results "
        "and in versions fitted before it was recorded.",
    )


class ModelVersionOut(AnswerModel):
    model_config = with_examples(
        {
            "id": 2,
            "status": "active",
            "algorithm": "adaboost.m2",
            "method": "power",
            "phase": "pre",
            "rounds": 50,
            "calibration": 1.0,
            "created_at": "2026-11-21T03:00:04Z",
            "activated_at": "2026-11-21T03:00:04Z",
            "window_start": "2016-06-01T00:00:00Z",
            "window_end": "2019-06-01T00:00:00Z",
            "n_matches": 3198,
            "newest_kickoff": "2019-05-26T15:00:00Z",
            "bookmakers": [
                {"code": "B365", "weight": 1.87, "chosen": 9},
                {"code": "PS", "weight": 0.0, "chosen": 0},
                {"code": "VC", "weight": 1.03, "chosen": 34},
            ],
            "rounds_grid": [
                {"rounds": 10, "log_loss": 0.9386},
                {"rounds": 50, "log_loss": 0.9383},
            ],
            "validation": {
                "rows": 640,
                "model": {
                    "log_loss": 0.9383,
                    "brier": 0.5533,
                    "rps": 0.1911,
                    "accuracy": 0.55,
                },
                "consensus": {
                    "log_loss": 0.9385,
                    "brier": 0.5534,
                    "rps": 0.1912,
                    "accuracy": 0.5516,
                },
                "bookmakers": {
                    "B365": {
                        "rows": 640,
                        "log_loss": 0.9402,
                        "brier": 0.5545,
                        "rps": 0.1915,
                        "accuracy": 0.5516,
                        "model_log_loss": 0.9383,
                    }
                },
                "active_version": {
                    "id": 1,
                    "rows": 640,
                    "log_loss": 0.9390,
                    "model_log_loss": 0.9383,
                },
                "fit_rows": 2558,
                "dropped": {},
                "stop_reason": "max_rounds",
                "rounds_run": 50,
                "options": {
                    "rounds_grid": [10, 50],
                    "validation_fraction": 0.2,
                    "phase": "pre",
                    "methods": ["power"],
                    "bookmakers": None,
                    "min_quotes": 100,
                    "half_life_days": None,
                    "calibrate": False,
                    "recent_days": 30,
                    "recent_share": 0.5,
                    "fit_target": "close",
                    "closing_window_minutes": 30,
                },
                "method_scores": {"power": 0.9383},
                "left_out": {
                    "LB": "no longer quoting: 0 of the 40 matches of the last 30 days of E0, "
                    "its best competition; at least 50% needed"
                },
                "fit_targets": {"closes": 3154, "results": 44},
            },
            "rejected_reason": None,
            "project_version": "0.1.0",
            "fit_seconds": 0.4,
        }
    )

    id: int
    status: VersionStatus
    algorithm: str
    method: Method
    phase: Phase
    rounds: int
    calibration: float = Field(description="Exponent a of p ∝ p^a applied to the mix; 1: none.")
    created_at: dt.datetime
    activated_at: dt.datetime | None
    window_start: dt.datetime
    window_end: dt.datetime
    n_matches: int
    newest_kickoff: dt.datetime | None = Field(
        description="Kickoff of the newest match fitted on; null for versions fitted before "
        "it was recorded."
    )
    bookmakers: list[BookmakerWeightOut] = Field(description="The pool, in order.")
    rounds_grid: list[GridPointOut] = Field(
        description="The validation log loss of each number of rounds tried."
    )
    validation: ValidationOut = Field(
        description="How the fit did on the held-out, most recent part of its window."
    )
    rejected_reason: str | None
    project_version: str
    fit_seconds: float


class ActivationOut(RecordOut):
    """One time a version became the active one."""

    model_config = with_examples(
        {
            "id": 4,
            "version_id": 2,
            "previous_version_id": 3,
            "activated_at": "2026-11-22T08:15:00Z",
            "by": "api",
            "reason": "version 3 over-weights one bookmaker; back to version 2",
            "run_id": None,
        }
    )

    id: int
    version_id: int = Field(description="The version that became active.")
    previous_version_id: int | None = Field(description="The version active until then.")
    activated_at: dt.datetime
    by: ActivatedBy = Field(
        validation_alias="activated_by",
        description="'refit': promoted by a refit; 'api' or 'cli': activated by an operator.",
    )
    reason: str | None = Field(description="Why, as the operator said; null for a refit.")
    run_id: int | None = Field(description="The refit run that promoted it, for a refit.")


class ActivateIn(StrictModel):
    """Why a version is activated by hand; the body may be left out."""

    model_config = with_examples(
        {"reason": "version 7 over-weights one bookmaker; back to version 6"}
    )

    reason: Reason | None = Field(
        default=None,
        description="Why, in the operator's words, recorded with the activation: trimmed, "
        "1-500 characters, no control or invisible characters; absent or null: none given.",
        examples=["version 7 over-weights one bookmaker; back to version 6"],
    )


class ActivatedOut(RecordOut):
    """What activating a version did."""

    version: ModelVersionOut = Field(description="The version, now active.")
    activation: ActivationOut | None = Field(
        description="The activation recorded; null when the version was already active."
    )
    warnings: list[str] = Field(
        description="How the version differs from what refits fit with the current settings "
        "(phase, de-margining method), and what follows."
    )
