"""The track record's scores: how what was served at kickoff fared."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from app.api.deps import (
    JSON_MEDIA_TYPE,
    TRACK_RECORD_ADMISSION,
    SessionDep,
    SettingsDep,
    TrackRecordAnswersDep,
)
from app.api.query_params import check_window
from app.api.schemas.performance import PerformanceOut
from app.api.schemas.problems import INVALID, UNAVAILABLE_OR_AT_LIMIT, problem_responses
from app.domain.fields import UtcDateTime
from app.domain.records import CODE_MAX_LENGTH
from app.services import track_record
from app.state import Session

router = APIRouter(tags=["track record"])


@router.get(
    "/performance",
    dependencies=[TRACK_RECORD_ADMISSION],
    response_model=PerformanceOut,
    response_model_by_alias=True,
    responses=problem_responses({422: INVALID, 503: UNAVAILABLE_OR_AT_LIMIT}),
)
async def get_performance(
    session: SessionDep,
    settings: SettingsDep,
    answers: TrackRecordAnswersDep,
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
) -> Response:
    """Log loss, Brier, RPS and accuracy of the predictions served at kickoff for the
    settled matches of the window, against the consensus of the same quotes and the best
    single bookmaker, with paired differences and their 95 % intervals; the value bets'
    closing-line value, flat return and Kelly bankroll; a bucket per UTC day (the latest
    `days_max` days). Results are read as they are now, so a corrected result is scored
    again."""
    check_window(kickoff_from, kickoff_to)
    query = track_record.PerformanceQuery(kickoff_from, kickoff_to, competition)

    def body(session: Session) -> bytes:
        report = track_record.performance(session, query, settings)
        answer = PerformanceOut.model_validate(report, from_attributes=True)
        return answer.model_dump_json(by_alias=True).encode()

    # The body is kept as written: a request answered from it costs no validation.
    return Response(
        await answers.answer(session, ("performance", query), body), media_type=JSON_MEDIA_TYPE
    )
