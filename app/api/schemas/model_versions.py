"""Bodies of the model-version endpoints."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.domain.vocabulary import Method, Phase, VersionStatus


class BookmakerWeightOut(BaseModel):
    code: str
    weight: float
    chosen: int = Field(description="Rounds that chose this bookmaker.")


class ModelVersionOut(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
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
        },
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
    bookmakers: list[BookmakerWeightOut]
    rounds_grid: list[dict[str, float]]
    validation: dict[str, Any]
    rejected_reason: str | None
    project_version: str
    fit_seconds: float
