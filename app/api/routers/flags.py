"""The flag ledger: every value flag the board raised, when, at what price, and how it fared
against the result and the closing line."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Response

from app.api.deps import JSON_MEDIA_TYPE, SessionDep, page_window
from app.api.query_params import check_window
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.flags import FlagOut, flags_csv
from app.api.schemas.problems import INVALID, UNAVAILABLE, problem_responses
from app.domain.fields import UtcDateTime
from app.domain.flags import FlagStatus
from app.domain.records import CODE_MAX_LENGTH
from app.domain.value_sources import ValueSourceChain, chain_links
from app.services import flags
from app.services.pagination import PageWindow

router = APIRouter(tags=["value bets"])

CSV_MEDIA_TYPE = "text/csv"


async def flag_filter(
    competition: Annotated[
        str | None,
        Query(max_length=CODE_MAX_LENGTH, description="A competition's code.", examples=["E0"]),
    ] = None,
    source: Annotated[
        ValueSourceChain | None,
        Query(
            description="The link of the value source's chain that priced the flag: "
            "`ensemble`, `consensus` or a known bookmaker by code or name, in any letter case "
            "(`ps` finds `PS`); several, comma-separated, find the flags priced by any of them.",
            examples=["PS"],
        ),
    ] = None,
    status: Annotated[
        FlagStatus | None,
        Query(
            description="open: still flagged; withdrawn: no longer flagged; settled: its "
            "match's result is in and the flag is scored.",
            examples=["settled"],
        ),
    ] = None,
    raised_from: Annotated[
        UtcDateTime | None,
        Query(
            alias="from",
            description="Raised at or after (ISO 8601; UTC if naive).",
            examples=["2026-11-01T00:00:00Z"],
        ),
    ] = None,
    raised_to: Annotated[
        UtcDateTime | None,
        Query(
            alias="to",
            description="Raised at or before (ISO 8601; UTC if naive).",
            examples=["2026-12-01T00:00:00Z"],
        ),
    ] = None,
    match_id: Annotated[
        int | None, Query(ge=1, le=MAX_ID, description="The flags of one match.", examples=[17])
    ] = None,
) -> flags.FlagFilter:
    check_window(raised_from, raised_to)
    links = None if source is None else chain_links(source)
    return flags.FlagFilter(competition, links, status, raised_from, raised_to, match_id)


@router.get(
    "/flags",
    response_model=Page[FlagOut],
    responses={
        200: {
            "content": {CSV_MEDIA_TYPE: {"schema": {"type": "string"}}},
            "description": "A page of flags: JSON, or CSV (one row a flag, without its events) "
            "with `?format=csv` or `Accept: text/csv`.",
        },
        **problem_responses({422: INVALID, 503: UNAVAILABLE}),
    },
)
def list_flags(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    filters: Annotated[flags.FlagFilter, Depends(flag_filter)],
    answer_format: Annotated[
        Literal["json", "csv"] | None,
        Query(
            alias="format",
            description="csv or json; absent: as the Accept header asks (JSON by default).",
            examples=["csv"],
        ),
    ] = None,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Response:
    """The flag ledger: each value bet the board flagged (by the operator's default terms),
    as first raised, with its later events (a better price, a withdrawal, a raise again) and,
    once its match is settled, its flat return and its CLV from the moment it was raised
    against Pinnacle's close. Newest raised first."""
    listed = Page[FlagOut].of(flags.list_flags(session, filters, page))
    if answer_format == "csv" or (answer_format is None and _asks_csv(accept)):
        headers = {"X-Total-Count": str(listed.total)}
        return Response(flags_csv(listed), media_type=CSV_MEDIA_TYPE, headers=headers)
    return Response(listed.model_dump_json(), media_type=JSON_MEDIA_TYPE)


def _asks_csv(accept: str | None) -> bool:
    if accept is None:
        return False
    types = [part.partition(";")[0].strip().lower() for part in accept.split(",")]
    return CSV_MEDIA_TYPE in types and JSON_MEDIA_TYPE not in types
