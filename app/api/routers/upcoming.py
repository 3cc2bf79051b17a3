"""Every upcoming match in one call: what a dashboard polls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Response

from app.api.deps import SettingsDep, UpcomingBoardsDep, page_window
from app.api.routers.value_bets import (
    URL_TOO_LONG,
    ComingWindow,
    coming_window,
    requested_terms,
)
from app.api.schemas.predict import RESPONSIBLE_USE
from app.api.schemas.problems import INVALID, UNAVAILABLE, problem_responses
from app.api.schemas.upcoming import UpcomingPage
from app.api.upcoming_answer import NOT_MODIFIED, etag_of, matches_etag, upcoming_json
from app.domain.value import ValueTerms
from app.services.pagination import PageWindow
from app.services.upcoming import UpcomingQuery

router = APIRouter(tags=["predictions"])

# The route's API docs, ending with the text every value's docs share.
UPCOMING_DOCS = (
    "Every match that has not kicked off in the window, by kickoff: its prediction, the value "
    "of each outcome and its value bets (as GET /value-bets judges them, with the same "
    "parameters), how fresh its quotes are, and the model version.\n\n"
    "Cheap to poll: the answer is made again only when a quote, a match or the active model "
    "changed since the last one. Each answer has a weak `ETag` naming what it shows (the "
    "matches, their predictions and value, the window and page asked for, the terms); send it "
    "back as `If-None-Match` and, while nothing changed, the answer is 304 with no body. "
    "`answered_at`, `from` (when not given), `to` (when not given) and each `age_seconds` are "
    "as of the 200 answer that carried the ETag: a client that keeps an answer works ages out "
    "from `newest_captured_at`.\n\n" + RESPONSIBLE_USE
)


@router.get(
    "/upcoming",
    response_model=UpcomingPage,
    responses={
        304: {"description": NOT_MODIFIED},
        **problem_responses({422: INVALID, 431: URL_TOO_LONG, 503: UNAVAILABLE}),
    },
    description=UPCOMING_DOCS,
)
async def list_upcoming(
    boards: UpcomingBoardsDep,
    settings: SettingsDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    terms: Annotated[ValueTerms, Depends(requested_terms)],
    window: Annotated[ComingWindow, Depends(coming_window)],
    if_none_match: Annotated[
        str | None,
        Header(
            description="The ETag of an answer already held: if the answer would be the "
            "same, it is not sent again (304)."
        ),
    ] = None,
) -> Response:
    query = UpcomingQuery(
        terms=terms,
        daily_exposure_cap=settings.value_daily_exposure_cap,
        kickoff_from=window.kickoff_from,
        kickoff_to=window.kickoff_to,
        competition=window.competition,
    )
    answer = await boards.page(query, page)
    etag = etag_of(answer)
    if matches_etag(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    # The documented model is not built here: see app.api.upcoming_answer.
    return Response(upcoming_json(answer), media_type="application/json", headers={"ETag": etag})
