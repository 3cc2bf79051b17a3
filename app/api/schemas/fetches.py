"""Bodies of the feeds' admin endpoints."""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from app.api.schemas.common import AnswerModel, with_examples
from app.domain.vocabulary import FetchSource, FetchStatus, RunTrigger


class FetchRunOut(AnswerModel):
    """One run of a feed."""

    model_config = with_examples(
        {
            "id": 12,
            "source": "the-odds-api",
            "trigger": "scheduler",
            "status": "succeeded",
            "started_at": "2026-11-21T09:00:00Z",
            "finished_at": "2026-11-21T09:00:02Z",
            "requests": 2,
            "changed": 2,
            "matches": 3,
            "quotes": 57,
            "results": 0,
            "skipped": 0,
            "quota_remaining": 446,
            "quota_used": 54,
            "error": None,
        }
    )

    id: int
    source: FetchSource
    trigger: RunTrigger
    status: FetchStatus = Field(
        description="`failed` may have stored part of what it read: the counts say what. "
        "`skipped`: another fetch of the source was running; this one did nothing."
    )
    started_at: dt.datetime
    finished_at: dt.datetime | None
    requests: int = Field(description="HTTP requests sent.")
    changed: int = Field(description="Documents that were new or changed (not 304).")
    matches: int = Field(description="New matches stored.")
    quotes: int = Field(description="Quotes stored.")
    results: int = Field(description="Results set or corrected.")
    skipped: int = Field(description="Rows or events left out, with the reason in the logs.")
    quota_remaining: int | None = Field(
        description="The Odds API's requests left after the run (x-requests-remaining)."
    )
    quota_used: int | None = Field(description="The Odds API's requests used (x-requests-used).")
    error: str | None = Field(
        description="Why the run failed (or was skipped); no secret is ever in it."
    )
