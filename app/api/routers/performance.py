"""The track record's scores: how what was served at kickoff fared."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import SessionDep, SettingsDep
from app.api.errors import check_window
from app.api.schemas.performance import PerformanceOut
from app.api.schemas.problems import INVALID, UNAVAILABLE, problem_responses
from app.domain.fields import UtcDateTime
from app.domain.records import CODE_MAX_LENGTH
from app.services import track_record

router = APIRouter(tags=["track record"])


@router.get(
    "/performance",
    response_model=PerformanceOut,
    response_model_by_alias=True,
    responses=problem_responses({422: INVALID, 503: UNAVAILABLE}),
)
def get_performance(
    session: SessionDep,
    settings: SettingsDep,
    kickoff_from: Annotated[
        UtcDateTime | None,
        Query(
            alias="from",
            description="Earliest kickoff (ISO 8601; UTC if naive); default: the first logged.",
            examples=["2026-08-01T00:00:00Z"],
        ),
    ] = None,
    kickoff_to: Annotated[
        UtcDateTime | None,
        Query(
            alias="to",
            description="Kickoffs before this (ISO 8601; UTC if naive); default: no bound.",
            examples=["2026-12-01T00:00:00Z"],
        ),
    ] = None,
    competition: Annotated[
        str | None,
        Query(max_length=CODE_MAX_LENGTH, description="A competition's code.", examples=["E0"]),
    ] = None,
) -> PerformanceOut:
    """Log loss, Brier, RPS and accuracy of the predictions served at kickoff for the
    settled matches of the window, against the consensus of the same quotes and the best
    single bookmaker, with paired differences and their 95 % intervals; the value bets'
    closing-line value, flat return and Kelly bankroll; a bucket per UTC day. Results are
    read as they are now, so a corrected result is scored again."""
    check_window(kickoff_from, kickoff_to)
    query = track_record.PerformanceQuery(kickoff_from, kickoff_to, competition)
    return PerformanceOut.model_validate(
        track_record.performance(session, query, settings), from_attributes=True
    )
