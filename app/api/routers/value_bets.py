"""The value-bets list: what a dashboard of the coming matches polls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from app.api.deps import (
    BOARD_ADMISSION,
    JSON_MEDIA_TYPE,
    BoardMomentDep,
    UpcomingBoardsDep,
    page_window,
)
from app.api.query_params import URL_TOO_LONG, upcoming_query
from app.api.schemas.predict import RESPONSIBLE_USE
from app.api.schemas.problems import INVALID, UNAVAILABLE_OR_AT_LIMIT, problem_responses
from app.api.schemas.value_bets import ValueBetPage
from app.services.pagination import PageWindow
from app.services.upcoming import UpcomingQuery

router = APIRouter(tags=["value bets"])

# The route's API docs, ending with the text every value's docs share.
VALUE_BETS_DOCS = (
    "The value bet of each coming match, at most one a match: of its outcomes whose expected "
    "value (probability × net price − 1, an exchange's price net of its commission) is above "
    "``min_ev``, the one of highest value; highest first, with the stake to place: a "
    "fraction of the Kelly "
    "stake, capped per bet, and scaled down on a UTC day whose stakes sum to more than "
    "ODDSBOOST_VALUE_DAILY_EXPOSURE_CAP (over the whole list, so every page agrees).\n\n"
    + RESPONSIBLE_USE
)


@router.get(
    "/value-bets",
    dependencies=[BOARD_ADMISSION],
    response_model=ValueBetPage,
    responses=problem_responses({422: INVALID, 431: URL_TOO_LONG, 503: UNAVAILABLE_OR_AT_LIMIT}),
    description=VALUE_BETS_DOCS,
)
async def list_value_bets(
    boards: UpcomingBoardsDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    query: Annotated[UpcomingQuery, Depends(upcoming_query)],
    moment: BoardMomentDep,
) -> Response:
    bets = await boards.value_bets(query, page, now=moment)
    listed = ValueBetPage.model_validate(bets, from_attributes=True)
    # Written here, once: the framework would validate the page again before writing it.
    return Response(listed.model_dump_json(by_alias=True), media_type=JSON_MEDIA_TYPE)
