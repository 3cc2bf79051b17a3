"""The query parameters of the lists of coming matches (GET /upcoming, GET /value-bets):
the value terms and the window of kickoffs. The dashboard's pages read the terms with the
same parameters (a blank form field there means "not given")."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import Depends, Query
from pydantic import BeforeValidator

from app.api.deps import SettingsDep, invalid_field
from app.api.schemas.common import MAX_ID
from app.api.schemas.predict import BANKROLL_MAX, ValueIn
from app.domain.bets import BetStatus
from app.domain.fields import BookmakerReference, UtcDateTime
from app.domain.records import CODE_MAX_LENGTH
from app.domain.value import ValueTerms
from app.domain.value_sources import ValueSourceChain, chain_links
from app.services.bets import BetFilter
from app.services.upcoming import UpcomingQuery

# Far more bookmakers than anyone holds accounts with; the bound keeps a query string short.
ALLOWED_BOOKMAKERS_MAX = 100
# Many long bookmaker names make a query string no header limit takes, valid as each is.
URL_TOO_LONG = (
    "The request line and headers are over ODDSBOOST_HEADER_LIMIT_BYTES (16 KiB): name fewer "
    "bookmakers, or shorter names."
)


def _blank_is_none(value: object) -> object:
    # A form submitted with a field left empty sends it as "": that means "not given".
    return None if value == "" else value


# A page's form field left empty (the dashboard's): not given. The JSON API keeps "" an error.
Blank = BeforeValidator(_blank_is_none)
MinEvParam = Annotated[
    float | None,
    Query(
        ge=0,
        le=1,
        description="List an outcome when its expected value is above this; default: "
        "ODDSBOOST_VALUE_MIN_EV.",
        examples=[0.03],
    ),
]
BookmakersParam = Annotated[
    list[BookmakerReference] | None,
    Query(
        max_length=ALLOWED_BOOKMAKERS_MAX,
        description="A bookmaker you can bet with, by code or name in any letter case; "
        "repeat the parameter for each (bookmakers=B365&bookmakers=PS). Only their prices "
        "are taken. Absent: any bookmaker.",
        examples=[["B365", "PS"]],
    ),
]
BankrollParam = Annotated[
    float | None,
    Query(
        gt=0,
        le=BANKROLL_MAX,
        description="Your bankroll: each stake is also given in money.",
        examples=[1000],
    ),
]


def given_terms(
    *,
    min_ev: float | None = None,
    bookmakers: list[str] | None = None,
    bankroll: float | None = None,
    source: str | None = None,
) -> ValueIn:
    """The value terms a request gave (None: left to the settings), read as /predict's
    ``value`` is."""
    return ValueIn.model_validate(
        {"min_ev": min_ev, "bookmakers": bookmakers, "bankroll": bankroll, "source": source}
    )


async def requested_terms(
    settings: SettingsDep,
    min_ev: MinEvParam = None,
    bookmakers: BookmakersParam = None,
    bankroll: BankrollParam = None,
    source: Annotated[
        ValueSourceChain | None,
        Query(
            description="Where the probability comes from: a chain of up to five links, "
            "comma-separated, each `ensemble` (the served prediction), `consensus` (the mean "
            "of the de-margined lines of the bookmakers that quoted the match) or a known "
            "bookmaker (e.g. PS, its de-margined line); for each match the first link with a "
            "line prices it, a match none has a line for gets no value; default: "
            "ODDSBOOST_VALUE_PROBABILITY_SOURCE.",
            examples=["PS,consensus"],
        ),
    ] = None,
) -> ValueTerms:
    """The request's value terms, the settings' where it gave none."""
    given = given_terms(min_ev=min_ev, bookmakers=bookmakers, bankroll=bankroll, source=source)
    return given.terms(settings.value_terms())


def check_window(start: dt.datetime | None, end: dt.datetime | None) -> None:
    """A window given backwards is a 422 naming ``to``, not an empty answer."""
    if start is not None and end is not None and end <= start:
        raise invalid_field(["query", "to"], "must be after `from`", "value_error")


async def upcoming_query(
    settings: SettingsDep,
    terms: Annotated[ValueTerms, Depends(requested_terms)],
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
) -> UpcomingQuery:
    check_window(kickoff_from, kickoff_to)
    return UpcomingQuery(
        terms=terms,
        daily_exposure_cap=settings.value_daily_exposure_cap,
        kickoff_from=kickoff_from,
        kickoff_to=kickoff_to,
        competition=competition,
    )


async def bet_filter(
    bet_status: Annotated[
        BetStatus | None,
        Query(
            alias="status",
            description="open, won, lost or void.",
            examples=["won"],
        ),
    ] = None,
    bookmaker: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=CODE_MAX_LENGTH,
            description="Where placed: a known bookmaker by code or name, or the name given.",
            examples=["B365"],
        ),
    ] = None,
    competition: Annotated[
        str | None,
        Query(max_length=CODE_MAX_LENGTH, description="A competition's code.", examples=["E0"]),
    ] = None,
    match_id: Annotated[
        int | None, Query(ge=1, le=MAX_ID, description="The bets of one match.", examples=[17])
    ] = None,
    source: Annotated[
        ValueSourceChain | None,
        Query(
            description="The value source of the flag the bet followed: `ensemble`, "
            "`consensus` or a known bookmaker by code or name; several, comma-separated.",
            examples=["PS"],
        ),
    ] = None,
    placed_from: Annotated[
        UtcDateTime | None,
        Query(
            alias="from",
            description="Placed at or after (ISO 8601; UTC if naive).",
            examples=["2018-08-01T00:00:00Z"],
        ),
    ] = None,
    placed_to: Annotated[
        UtcDateTime | None,
        Query(
            alias="to",
            description="Placed at or before (ISO 8601; UTC if naive).",
            examples=["2019-06-01T00:00:00Z"],
        ),
    ] = None,
) -> BetFilter:
    """The bets a list, an export or a summary of the book is about: one set of filters for
    all three."""
    check_window(placed_from, placed_to)
    links = None if source is None else chain_links(source)
    return BetFilter(bet_status, bookmaker, competition, match_id, links, placed_from, placed_to)


# The bets a list, an export or a summary of the book is about.
BetFilterDep = Annotated[BetFilter, Depends(bet_filter)]
