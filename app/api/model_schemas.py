"""Bodies of the predict, model-version and refit endpoints."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from app.api.schemas import Code, MatchId, StrictModel, TeamName, UtcDateTime
from app.db.orm import ModelVersion, RefitRun
from app.domain.prediction import MatchInfo, QuotedMatch, QuotedOdds
from app.domain.records import check_price
from app.domain.vocabulary import Phase, RunStatus, VersionStatus
from app.services.prediction import PredictionAnswer, PredictionRequest

INLINE_ODDS_MAX = 100


StrictFloat = Annotated[float, Strict()]
# Far more than any real use; the hard cap behind ODDSBOOST_PREDICT_BATCH_MAX.
BATCH_ITEMS_CAP = 10_000


class OddsIn(StrictModel):
    bookmaker: Code
    home: StrictFloat
    draw: StrictFloat
    away: StrictFloat

    @model_validator(mode="after")
    def _valid_prices(self) -> OddsIn:
        for name in ("home", "draw", "away"):
            try:
                check_price(getattr(self, name))
            except ValueError as error:
                raise ValueError(f"bookmaker {self.bookmaker!r}, {name}: {error}") from None
        return self


class PredictIn(StrictModel):
    """Either a stored match (``match_id``) or an inline match with its ``odds``."""

    match_id: MatchId | None = None
    home_team: TeamName | None = None
    away_team: TeamName | None = None
    competition: Code | None = None
    kickoff: UtcDateTime | None = None
    odds: Annotated[list[OddsIn], Field(min_length=1, max_length=INLINE_ODDS_MAX)] | None = None

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {"match_id": 17},
                {
                    "home_team": "Arsenal",
                    "away_team": "Chelsea",
                    "competition": "E0",
                    "kickoff": "2026-11-22T15:00:00Z",
                    "odds": [
                        {"bookmaker": "B365", "home": 2.10, "draw": 3.40, "away": 3.60},
                        {"bookmaker": "PS", "home": 2.15, "draw": 3.45, "away": 3.55},
                    ],
                },
            ]
        }
    }

    def to_request(self) -> PredictionRequest:
        """What to ask the prediction service: the stored match, or this one with its odds."""
        if self.match_id is not None:
            return self.match_id
        assert self.odds is not None  # checked by _one_kind
        return QuotedMatch(
            MatchInfo(None, self.competition, self.home_team, self.away_team, self.kickoff),
            [QuotedOdds(o.bookmaker, o.home, o.draw, o.away) for o in self.odds],
        )

    @model_validator(mode="after")
    def _one_kind(self) -> PredictIn:
        inline = (self.home_team, self.away_team, self.competition, self.kickoff, self.odds)
        if self.match_id is not None:
            if any(value is not None for value in inline):
                raise ValueError("give either 'match_id' or an inline match with 'odds', not both")
            return self
        if self.odds is None:
            raise ValueError("give 'match_id' or 'odds'")
        codes = [odds.bookmaker for odds in self.odds]
        repeated = sorted({code for code in codes if codes.count(code) > 1})
        if repeated:
            raise ValueError(f"bookmaker {repeated[0]!r} appears more than once in 'odds'")
        if self.home_team is not None and self.home_team == self.away_team:
            raise ValueError("home_team and away_team must differ")
        return self


class BatchIn(StrictModel):
    items: list[Any] = Field(
        min_length=1,
        max_length=BATCH_ITEMS_CAP,
        description="Up to ODDSBOOST_PREDICT_BATCH_MAX predict requests; each is checked on "
        "its own, so one bad item does not fail the others.",
        examples=[
            [
                {"match_id": 17},
                {"odds": [{"bookmaker": "PS", "home": 2.1, "draw": 3.4, "away": 3.6}]},
            ]
        ],
    )


class OutcomeValues(BaseModel):
    home: float
    draw: float
    away: float


class ModelRef(BaseModel):
    version: int | None
    algorithm: str
    fitted_at: dt.datetime | None
    rounds: int
    method: str
    phase: Phase


class BookmakerUse(BaseModel):
    code: str
    weight: float | None = Field(description="Weight in the model; null when no model is active.")
    probabilities: OutcomeValues = Field(description="This bookmaker's de-margined probabilities.")


class IgnoredOut(BaseModel):
    code: str
    reason: str


class MatchSummary(BaseModel):
    id: int | None = None
    competition: str | None = None
    home_team: str | None = None
    away_team: str | None = None
    kickoff: dt.datetime | None = None


NO_MODEL_NOTE = "no model has been fitted yet: the probabilities are the bookmakers' consensus"
OUTSIDE_POOL_NOTE = (
    "none of the quoted bookmakers has weight in the model: the probabilities are their consensus"
)


class PredictionOut(BaseModel):
    match: MatchSummary
    probabilities: OutcomeValues = Field(description="Sum to 1.")
    outcome: Literal["1", "X", "2"] = Field(description="The most probable outcome.")
    fair_odds: OutcomeValues = Field(description="1 / probability.")
    model: ModelRef | None = Field(description="The model version used; null before the first fit.")
    basis: Literal["model", "consensus"] = Field(
        description="'model': the weighted ensemble; 'consensus': the plain mean of the quotes."
    )
    note: str | None = None
    bookmakers: list[BookmakerUse] = Field(description="Bookmakers whose quotes were used.")
    ignored_bookmakers: list[IgnoredOut]
    consensus: OutcomeValues = Field(description="Plain mean of all de-margined quotes.")


def _outcomes(values: tuple[float, float, float]) -> dict[str, float]:
    return {"home": values[0], "draw": values[1], "away": values[2]}


def _match(info: MatchInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "competition": info.competition,
        "home_team": info.home_team,
        "away_team": info.away_team,
        "kickoff": info.kickoff,
    }


def prediction_body(answer: PredictionAnswer) -> dict[str, Any]:
    """The JSON body of one prediction, in the shape :class:`PredictionOut` documents.

    A plain dict: the hot path of /predict builds and serialises it without a validation
    pass (the values come from the service, and a test checks real responses against
    PredictionOut).
    """
    prediction, ensemble = answer.prediction, answer.model
    probabilities = prediction.probabilities
    note = None
    if ensemble is None:
        note = NO_MODEL_NOTE
    elif prediction.basis == "consensus":
        note = OUTSIDE_POOL_NOTE
    return {
        "match": _match(answer.match),
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
            "phase": ensemble.phase,
        },
        "basis": prediction.basis,
        "note": note,
        "bookmakers": [
            {"code": u.code, "weight": u.weight, "probabilities": _outcomes(u.probabilities)}
            for u in prediction.used
        ],
        "ignored_bookmakers": [{"code": i.code, "reason": i.reason} for i in prediction.ignored],
        "consensus": _outcomes(prediction.consensus),
    }


def _fair_odds(probabilities: tuple[float, float, float]) -> tuple[float, float, float]:
    home, draw, away = (1.0 / max(p, 1e-12) for p in probabilities)
    return (home, draw, away)


class BatchItemOut(BaseModel):
    """Documents one entry of a batch answer (the endpoint builds it as a plain dict)."""

    index: int
    status: int = Field(description="The HTTP status this item would have had on /predict.")
    prediction: PredictionOut | None = None
    error: Any = None


class BatchOut(BaseModel):
    results: list[BatchItemOut]


class BookmakerWeightOut(BaseModel):
    code: str
    weight: float
    chosen: int = Field(description="Rounds that chose this bookmaker.")


class ModelVersionOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
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
                    },
                    "rejected_reason": None,
                    "project_version": "0.1.0",
                    "fit_seconds": 0.4,
                }
            ]
        }
    )

    id: int
    status: VersionStatus
    algorithm: str
    method: str
    phase: Phase
    rounds: int
    calibration: float = Field(description="Exponent a of p ∝ p^a applied to the mix; 1: none.")
    created_at: dt.datetime
    activated_at: dt.datetime | None
    window_start: dt.datetime
    window_end: dt.datetime
    n_matches: int
    bookmakers: list[BookmakerWeightOut]
    rounds_grid: list[dict[str, float]]
    validation: dict[str, Any]
    rejected_reason: str | None
    project_version: str
    fit_seconds: float

    @classmethod
    def of(cls, version: ModelVersion) -> ModelVersionOut:
        return cls(
            id=version.id,
            status=version.status,
            algorithm=version.algorithm,
            method=version.method,
            phase=version.phase,
            rounds=version.rounds,
            calibration=version.calibration,
            created_at=version.created_at,
            activated_at=version.activated_at,
            window_start=version.window_start,
            window_end=version.window_end,
            n_matches=version.n_matches,
            bookmakers=[BookmakerWeightOut(**b) for b in version.bookmakers],
            rounds_grid=version.rounds_grid,
            validation=version.validation,
            rejected_reason=version.rejected_reason,
            project_version=version.project_version,
            fit_seconds=version.fit_seconds,
        )


class RefitIn(StrictModel):
    until: UtcDateTime | None = Field(
        default=None,
        description="Pretend 'now' is this moment (for backtests); default: now.",
        examples=["2019-06-01T00:00:00Z"],
    )


class RefitAccepted(BaseModel):
    run_id: int = Field(examples=[7])
    status: Literal[RunStatus.QUEUED]
    detail: str = Field(examples=["/admin/refits/7"])


class RefitRunOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 7,
                    "trigger": "scheduler",
                    "status": "succeeded",
                    "started_at": "2026-11-21T03:00:00Z",
                    "finished_at": "2026-11-21T03:00:04Z",
                    "until": "2026-11-21T03:00:00Z",
                    "message": "version 2 is active: 50 rounds over 3198 matches, validation log "
                    "loss 0.9383 (consensus 0.9385)",
                    "version_id": 2,
                }
            ]
        }
    )

    id: int
    trigger: str
    status: RunStatus
    started_at: dt.datetime
    finished_at: dt.datetime | None
    until: dt.datetime
    message: str | None
    version_id: int | None

    @classmethod
    def of(cls, run: RefitRun) -> RefitRunOut:
        return cls(
            id=run.id,
            trigger=run.trigger,
            status=run.status,
            started_at=run.started_at,
            finished_at=run.finished_at,
            until=run.until,
            message=run.message,
            version_id=run.version_id,
        )
