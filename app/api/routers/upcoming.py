"""Every upcoming match in one call: what a dashboard polls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Response

from app.api.conditional import matches_etag, weak_etag
from app.api.deps import (
    BOARD_ADMISSION,
    JSON_MEDIA_TYPE,
    BoardMomentDep,
    UpcomingBoardsDep,
    UpcomingBodiesDep,
    page_window,
)
from app.api.query_params import URL_TOO_LONG, upcoming_query
from app.api.schemas.predict import RESPONSIBLE_USE
from app.api.schemas.problems import INVALID, UNAVAILABLE_OR_AT_LIMIT, problem_responses
from app.api.schemas.upcoming import UpcomingPage
from app.services import upcoming
from app.services.pagination import PageWindow

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
NOT_MODIFIED = (
    "The answer is the one whose ETag was sent as If-None-Match (its ages as of that answer); "
    "no body."
)


def etag_of(page: upcoming.UpcomingPage, query: upcoming.UpcomingQuery) -> str:
    """The weak ETag of ``page``: a digest of the board's revision, the query as asked and the
    page's place, equal for answers that show the same (but their ages and window ends)."""
    parts = (
        page.revision,
        page.terms,
        query.kickoff_from,
        query.kickoff_to,
        query.competition,
        page.offset,
        page.limit,
    )
    # Every part's repr is the same in every process (the terms' bookmakers are sorted).
    return weak_etag(*parts)


@router.get(
    "/upcoming",
    dependencies=[BOARD_ADMISSION],
    response_model=UpcomingPage,
    responses={
        304: {"description": NOT_MODIFIED},
        **problem_responses({422: INVALID, 431: URL_TOO_LONG, 503: UNAVAILABLE_OR_AT_LIMIT}),
    },
    description=UPCOMING_DOCS,
)
async def list_upcoming(
    boards: UpcomingBoardsDep,
    bodies: UpcomingBodiesDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    query: Annotated[upcoming.UpcomingQuery, Depends(upcoming_query)],
    moment: BoardMomentDep,
    if_none_match: Annotated[
        str | None,
        Header(
            description="The ETag of an answer already held: if the answer would be the "
            "same, it is not sent again (304)."
        ),
    ] = None,
) -> Response:
    answer = await boards.page(query, page, now=moment)
    etag = etag_of(answer, query)
    if matches_etag(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    body = bodies.get(etag)
    if body is None:
        # Written here: the framework would validate the page again before writing it.
        written = UpcomingPage.model_validate(answer, from_attributes=True)
        body = written.model_dump_json(by_alias=True).encode()
        bodies.put(etag, body)
    return Response(body, media_type=JSON_MEDIA_TYPE, headers={"ETag": etag})
