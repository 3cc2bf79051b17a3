"""Bodies of the refit endpoints."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import StrictModel
from app.domain.fields import UtcDateTime
from app.domain.vocabulary import RunStatus, RunTrigger


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
        from_attributes=True,
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
        },
    )

    id: int
    trigger: RunTrigger
    status: RunStatus
    started_at: dt.datetime
    finished_at: dt.datetime | None
    until: dt.datetime
    message: str | None
    version_id: int | None
