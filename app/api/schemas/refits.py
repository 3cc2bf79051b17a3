"""Bodies of the refit endpoints."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, Field

from app.api.schemas.common import AnswerModel, StrictModel, with_examples
from app.domain.fields import UtcDateTime
from app.domain.vocabulary import RunStatus, RunTrigger
from app.services.refit_runs import QueuedRefit


class RefitIn(StrictModel):
    until: UtcDateTime | None = Field(
        default=None,
        description="Pretend 'now' is this moment (for backtests); default: now.",
        examples=["2019-06-01T00:00:00Z"],
    )


class RefitAccepted(BaseModel):
    """The run that carries out a request to refit: a new one (202), or the one already
    queued or running (200, with a message saying so)."""

    run_id: int = Field(examples=[7])
    status: Literal[RunStatus.QUEUED, RunStatus.RUNNING]
    detail: str = Field(examples=["/admin/refits/7"])
    message: str | None = Field(
        default=None,
        description="Only when a run was already under way: no new one was started.",
        examples=["refit run 7 is already running; no new run was started"],
    )

    @classmethod
    def of(cls, queued: QueuedRefit) -> RefitAccepted:
        run_id = queued.run_id
        message = (
            None
            if queued.started
            else f"refit run {run_id} is already {queued.status}; no new run was started"
        )
        return cls(
            run_id=run_id, status=queued.status, detail=f"/admin/refits/{run_id}", message=message
        )


class RefitRunOut(AnswerModel):
    model_config = with_examples(
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
    )

    id: int
    trigger: RunTrigger
    status: RunStatus
    started_at: dt.datetime
    finished_at: dt.datetime | None
    until: dt.datetime
    message: str | None
    version_id: int | None
