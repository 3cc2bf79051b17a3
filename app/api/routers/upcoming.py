"""Every upcoming match in one call: what a dashboard polls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from app.api.deps import SettingsDep, UpcomingBoardsDep, page_window
from app.api.routers.value_bets import (
    URL_TOO_LONG,
    ComingWindow,
    coming_window,
    requested_terms,
)
from app.api.schemas.problems import BUSY, INVALID, problem_responses
from app.api.schemas.upcoming import UpcomingPage
from app.api.upcoming_answer import upcoming_json
from app.domain.value import ValueTerms
from app.services.pagination import PageWindow
from app.services.upcoming import UpcomingQuery

router = APIRouter(tags=["predictions"])


@router.get(
    "/upcoming",
    response_model=UpcomingPage,
    responses=problem_responses({422: INVALID, 431: URL_TOO_LONG, 503: BUSY}),
)
async def list_upcoming(
    boards: UpcomingBoardsDep,
    settings: SettingsDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    terms: Annotated[ValueTerms, Depends(requested_terms)],
    window: Annotated[ComingWindow, Depends(coming_window)],
) -> Response:
    """Every match that has not kicked off in the window, by kickoff: its prediction, the
    value of each outcome and its value bets (as GET /value-bets judges them, with the same
    parameters), how fresh its quotes are, and the model version.

    Cheap to poll: the answer is made again only when a quote, a match or the active model
    changed since the last one.
    """
    query = UpcomingQuery(
        terms=terms,
        daily_exposure_cap=settings.value_daily_exposure_cap,
        kickoff_from=window.kickoff_from,
        kickoff_to=window.kickoff_to,
        competition=window.competition,
    )
    # The documented model is not built here: see app.api.upcoming_answer.
    return Response(upcoming_json(await boards.page(query, page)), media_type="application/json")
