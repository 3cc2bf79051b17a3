"""The value-bets list: what a dashboard of the coming matches polls."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from app.api.deps import SettingsDep, ValueBetListsDep, page_window
from app.api.errors import check_window
from app.api.schemas.predict import RESPONSIBLE_USE
from app.api.schemas.problems import INVALID, UNAVAILABLE, problem_responses
from app.api.schemas.value_bets import ValueBetPage
from app.domain.bookmakers import bookmaker_key
from app.domain.fields import BookmakerReference, UtcDateTime
from app.domain.records import CODE_MAX_LENGTH
from app.domain.value import ValueTerms
from app.services import value_bets
from app.services.pagination import PageWindow

router = APIRouter(tags=["value bets"])

# Far more bookmakers than anyone holds accounts with; the bound keeps a query string short.
ALLOWED_BOOKMAKERS_MAX = 100
# A bankroll above this is a mistake in the query, not a bankroll.
BANKROLL_MAX = 1e12
# Many long bookmaker names make a query string no header limit takes, valid as each is.
URL_TOO_LONG = (
    "The request line and headers are over ODDSBOOST_HEADER_LIMIT_BYTES (16 KiB): name fewer "
    "bookmakers, or shorter names."
)

# The route's API docs, ending with the text every value's docs share.
VALUE_BETS_DOCS = (
    "Every outcome of the coming matches whose expected value (probability × best price − 1) "
    "is above ``min_ev``, highest first, with the stake to place: a fraction of the Kelly "
    "stake, capped per bet, and scaled down on a UTC day whose stakes sum to more than "
    "ODDSBOOST_VALUE_DAILY_EXPOSURE_CAP (over the whole list, so every page agrees).\n\n"
    + RESPONSIBLE_USE
)


async def requested_terms(
    settings: SettingsDep,
    min_ev: Annotated[
        float | None,
        Query(
            ge=0,
            le=1,
            description="List an outcome when its expected value is above this; default: "
            "ODDSBOOST_VALUE_MIN_EV.",
            examples=[0.03],
        ),
    ] = None,
    bookmakers: Annotated[
        list[BookmakerReference] | None,
        Query(
            max_length=ALLOWED_BOOKMAKERS_MAX,
            description="A bookmaker you can bet with, by code or name in any letter case; "
            "repeat the parameter for each (bookmakers=B365&bookmakers=PS). Only their prices "
            "are taken. Absent: any bookmaker.",
            examples=[["B365", "PS"]],
        ),
    ] = None,
    bankroll: Annotated[
        float | None,
        Query(
            gt=0,
            le=BANKROLL_MAX,
            description="Your bankroll: each stake is also given in money.",
            examples=[1000],
        ),
    ] = None,
    source: Annotated[
        BookmakerReference | None,
        Query(
            description="Where the probability comes from: `ensemble` (the served prediction) "
            "or a bookmaker (e.g. PS), whose de-margined line is used where it quoted the "
            "match; default: ODDSBOOST_VALUE_PROBABILITY_SOURCE.",
            examples=["PS"],
        ),
    ] = None,
) -> ValueTerms:
    """The terms value is judged and staked by: the request's, the settings' where it gave
    none (GET /value-bets and GET /upcoming read them alike)."""
    defaults = settings.value_terms()
    return replace(
        defaults,
        min_ev=defaults.min_ev if min_ev is None else min_ev,
        source=defaults.source if source is None else source,
        bookmakers=None if bookmakers is None else frozenset(map(bookmaker_key, bookmakers)),
        bankroll=bankroll,
    )


@dataclass(frozen=True, slots=True)
class ComingWindow:
    """The coming matches a list looks at: kickoffs in [from, to], of one competition or
    all (None: the defaults, now and a week from now)."""

    kickoff_from: dt.datetime | None
    kickoff_to: dt.datetime | None
    competition: str | None


async def coming_window(
    kickoff_from: Annotated[
        UtcDateTime | None,
        Query(
            alias="from",
            description="Earliest kickoff (ISO 8601; UTC if naive); default: now. Only matches "
            "that have not kicked off are listed, whatever this says.",
            examples=["2026-11-20T00:00:00Z"],
        ),
    ] = None,
    kickoff_to: Annotated[
        UtcDateTime | None,
        Query(
            alias="to",
            description="Latest kickoff (ISO 8601; UTC if naive); default: seven days from now.",
            examples=["2026-11-27T00:00:00Z"],
        ),
    ] = None,
    competition: Annotated[
        str | None,
        Query(max_length=CODE_MAX_LENGTH, description="A competition's code.", examples=["E0"]),
    ] = None,
) -> ComingWindow:
    """The window of kickoffs of the lists of coming matches (value bets, the board)."""
    check_window(kickoff_from, kickoff_to)
    return ComingWindow(kickoff_from, kickoff_to, competition)


@router.get(
    "/value-bets",
    response_model=ValueBetPage,
    responses=problem_responses({422: INVALID, 431: URL_TOO_LONG, 503: UNAVAILABLE}),
    description=VALUE_BETS_DOCS,
)
async def list_value_bets(
    lists: ValueBetListsDep,
    settings: SettingsDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    terms: Annotated[ValueTerms, Depends(requested_terms)],
    window: Annotated[ComingWindow, Depends(coming_window)],
) -> Response:
    query = value_bets.ValueBetQuery(
        terms=terms,
        daily_exposure_cap=settings.value_daily_exposure_cap,
        kickoff_from=window.kickoff_from,
        kickoff_to=window.kickoff_to,
        competition=window.competition,
    )
    listed = ValueBetPage.model_validate(await lists.page(query, page), from_attributes=True)
    # Written here, once: the framework would validate the page again before writing it.
    return Response(listed.model_dump_json(by_alias=True), media_type="application/json")
