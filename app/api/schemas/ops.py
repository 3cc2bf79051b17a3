"""The body of the readiness probe, ``/ready`` (not part of the API docs)."""

from __future__ import annotations

from operator import not_

from pydantic import Field

from app.api.schemas.common import AnswerModel
from app.domain.fields import AbsentWhenNone
from app.domain.vocabulary import ModelState, ReadyStatus


class ModelReadinessOut(AnswerModel):
    state: ModelState
    version: AbsentWhenNone[int] = Field(default=None, description="The loaded version.")
    detail: AbsentWhenNone[str] = Field(
        default=None, description="What the predictions are while no model is fitted."
    )


class ReadinessOut(AnswerModel):
    """Read from the attributes of :class:`app.services.readiness.Readiness`."""

    status: ReadyStatus
    database: str = Field(description='"ok", or why the database is not usable.')
    model: ModelReadinessOut
    problems: dict[str, str] = Field(
        default_factory=dict,
        exclude_if=not_,
        description="What keeps the process from being ready, by part; absent when ready.",
    )
