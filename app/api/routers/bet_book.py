"""The bettor's book in and out: a CSV of bets imported, the book exported in the same
format, and its summary. Guarded like the admin API.

Included before the router of ``/bets/{bet_id}``: ``/bets/import``, ``/bets/export`` and
``/bets/summary`` must not be read as a bet's id.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from app.api.deps import ReceivedAtDep, SessionDep, SettingsDep, WriteSessionDep, require_admin
from app.api.errors import invalid
from app.api.query_params import BetFilterDep
from app.api.routers.flags import CSV_MEDIA_TYPE
from app.api.schemas.bet_book import ROI_IS_NOISE, BetImportOut, BookSummaryOut
from app.api.schemas.problems import ADMIN, INVALID, TOO_LARGE, FieldError, problem_responses
from app.domain.bet_csv import BET_CSV_COLUMNS, MAX_IMPORT_BYTES, MAX_IMPORT_ROWS, RowError
from app.domain.time_zones import TimeZoneName
from app.domain.wording import counted
from app.services import bet_book
from app.services.flags import FlagTerms

router = APIRouter(prefix="/bets", tags=["bets"], dependencies=[Depends(require_admin)])

EXAMPLE_CSV = (
    ",".join(BET_CSV_COLUMNS) + "\n"
    "2018-08-10T18:00:00Z,E0,2018-08-10,Man United,Leicester,1,B365,8/13,20,,,,\n"
    "2018-08-11T09:30:00Z,E0,2018-08-11,Newcastle,Tottenham,2,Pinnacle,+115,10,,derby,,\n"
)
IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {CSV_MEDIA_TYPE: {"schema": {"type": "string"}, "example": EXAMPLE_CSV}},
    }
}
MAX_BANKROLL = 1e12


IMPORT_DESCRIPTION = (
    "Record the bets of a CSV file (`text/csv`, UTF-8 with or without a BOM, `,` or `;` "
    "between fields), all or none. A row names its match by `match_id`, or by competition "
    "code, kickoff day (a day either side is looked at) and the home and away teams as any "
    "source spells them (team aliases apply); the price as typed: decimal (2.5), fractional "
    "(5/2), American (+150, -200) or evens. `status` may be blank, open or void; won or "
    "lost must agree with the stored result. Rows already in the book (same match, outcome, "
    "bookmaker, price, stake and time placed) are not recorded twice. At most "
    f"{counted(MAX_IMPORT_ROWS, 'row')} and {counted(MAX_IMPORT_BYTES, 'byte')}. "
    "The columns, in any order: "
    + ", ".join(f"`{column}`" for column in BET_CSV_COLUMNS)
    + "; the export's settlement columns are read past. The guide \"Importing bets and the "
    "book's summary\" describes the format."
)


@router.post(
    "/import",
    status_code=status.HTTP_201_CREATED,
    response_model=BetImportOut,
    description=IMPORT_DESCRIPTION,
    responses={
        200: {"model": BetImportOut, "description": "A dry run: what would be recorded."},
        **problem_responses(
            ADMIN,
            {
                413: TOO_LARGE,
                415: "The body is not sent as text/csv.",
                422: INVALID + ' Each bad row is named by `["body", line, column]` (line 1 '
                "is the header; no column: the whole row or file); nothing was recorded.",
            },
        ),
    },
    openapi_extra=IMPORT_BODY,
)
async def import_bets(
    request: Request,
    session: WriteSessionDep,
    settings: SettingsDep,
    received: ReceivedAtDep,
    dry_run: Annotated[
        bool, Query(description="Check the file and say what would be recorded; record nothing.")
    ] = False,
) -> Response:
    _check_csv(request.headers.get("content-type"))
    data = await request.body()
    try:
        report = await run_in_threadpool(
            bet_book.import_bets,
            session,
            data,
            received,
            dry_run=dry_run,
            window=FlagTerms.of(settings).closing_window,
        )
    except bet_book.BetImportError as error:
        raise invalid(_field_error(row_error) for row_error in error.errors) from None
    body = BetImportOut.model_validate(report).model_dump(mode="json")
    code = status.HTTP_200_OK if dry_run else status.HTTP_201_CREATED
    return JSONResponse(body, status_code=code)


def _field_error(error: RowError) -> FieldError:
    loc: list[str | int] = ["body", error.line]
    if error.column is not None:
        loc.append(error.column)
    return FieldError(loc=loc, msg=error.message, type="value_error")


def _check_csv(content_type: str | None) -> None:
    media_type = (content_type or "").partition(";")[0].strip().lower()
    if media_type not in (CSV_MEDIA_TYPE, "application/csv", "text/plain"):
        sent = f"not {content_type}" if content_type else "the request has no Content-Type"
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            f"send the file as the body with Content-Type: {CSV_MEDIA_TYPE}; {sent}",
        )


@router.get(
    "/export",
    response_class=Response,
    responses={
        200: {
            "content": {CSV_MEDIA_TYPE: {"schema": {"type": "string"}}},
            "description": "The bets as CSV, as POST /bets/import reads them, then the "
            "settlement's columns (id, result, returned, profit, close_price, "
            "closing_probability, clv, close_origin, settled_at); in the order placed.",
        },
        **problem_responses(ADMIN, {422: INVALID}),
    },
)
def export_bets(session: SessionDep, filters: BetFilterDep) -> Response:
    """The book as a CSV file, which imports again as it is."""
    text = bet_book.export_bets(session, filters)
    headers = {"Content-Disposition": 'attachment; filename="bets.csv"'}
    return Response(text, media_type=CSV_MEDIA_TYPE, headers=headers)


@router.get(
    "/summary",
    response_model=BookSummaryOut,
    description="Staked, returned, profit, ROI and mean CLV with 95 % intervals, and the "
    "counts of open, settled and void bets; the same by bookmaker, competition, month placed "
    "and value source; and the bankroll after each settled bet. Void bets are out of the ROI "
    "and the CLV. " + ROI_IS_NOISE,
    responses=problem_responses(ADMIN, {422: INVALID}),
)
def bets_summary(
    session: SessionDep,
    filters: BetFilterDep,
    starting_bankroll: Annotated[
        float,
        Query(
            ge=-MAX_BANKROLL,
            le=MAX_BANKROLL,
            description="The bankroll the curve starts from.",
            examples=[1000],
        ),
    ] = 0.0,
    tz: Annotated[
        TimeZoneName, Query(description="The time zone of the months (IANA name).")
    ] = "UTC",
) -> BookSummaryOut:
    summary = bet_book.summarise_bets(
        session, filters, starting_bankroll=starting_bankroll, time_zone=tz
    )
    return BookSummaryOut.model_validate(summary)
