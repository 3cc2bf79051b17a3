"""Admin endpoints: feeding odds, results and season files, and mapping team aliases."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Path, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.datastructures import UploadFile

from app.api.deps import (
    JSON_BODY,
    ReceivedAtDep,
    SettingsDep,
    WriteSessionDep,
    check_item_count,
    invalid_field,
    require_admin,
)
from app.api.schemas.common import MAX_ID
from app.api.schemas.ingest import (
    MAX_ITEMS_PER_REQUEST,
    AliasIn,
    AliasOut,
    IngestResponse,
    MergeConfirmationProblem,
    OddsUpload,
    ResultsUpload,
    UnaliasOut,
)
from app.api.schemas.matches import DeletedMatchOut
from app.api.schemas.problems import (
    ADMIN,
    INVALID,
    NOT_JSON,
    TOO_LARGE,
    problem_responses,
)
from app.domain.fields import OptionalSeason
from app.domain.football_data import LeagueSeasonError
from app.domain.odds_api import Event
from app.services import ingest, matches, teams
from app.services.flags import FlagTerms

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])

# What every JSON ingest may answer besides its success; nothing is written in any of them.
JSON_INGEST_ERRORS = problem_responses(ADMIN, {413: TOO_LARGE, 415: NOT_JSON, 422: INVALID})

CSV_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "text/csv": {
                "schema": {"type": "string"},
                "example": "Div,Date,HomeTeam,AwayTeam,FTHG,FTAG,FTR,B365H,B365D,B365A\n"
                "E0,10/08/2018,Man United,Leicester,2,1,H,1.57,3.9,7.5\n",
            },
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            },
        },
    }
}


@router.post(
    "/odds", response_model=IngestResponse, dependencies=[JSON_BODY], responses=JSON_INGEST_ERRORS
)
def post_odds(
    upload: OddsUpload, session: WriteSessionDep, settings: SettingsDep, received: ReceivedAtDep
) -> IngestResponse:
    """Store quotes, creating missing competitions, teams, matches and bookmakers.

    A quote captured later than the moment the request is received, plus
    ODDSBOOST_CAPTURE_SKEW_SECONDS, is refused: 422 naming its `captured_at`.
    """
    check_item_count(len(upload.quotes), settings.admin_items_max, ["body", "quotes"])
    report = ingest.ingest_batch(
        session,
        upload.to_batch(),
        source="/admin/odds",
        now=received,
        capture_skew=settings.capture_skew,
        refuse_future_captures=True,
        flag_terms=FlagTerms.of(settings),
    )
    return IngestResponse.model_validate(report)


@router.post(
    "/results",
    response_model=IngestResponse,
    dependencies=[JSON_BODY],
    responses=JSON_INGEST_ERRORS,
)
def post_results(
    upload: ResultsUpload, session: WriteSessionDep, settings: SettingsDep
) -> IngestResponse:
    """Settle matches: the result (1/X/2) follows from the goals. Unknown matches are skipped."""
    check_item_count(len(upload.results), settings.admin_items_max, ["body", "results"])
    items = [result.to_item() for result in upload.results]
    report = ingest.settle_results(
        session, items, source="/admin/results", flag_terms=FlagTerms.of(settings)
    )
    return IngestResponse.model_validate(report)


@router.post(
    "/import/football-data",
    response_model=IngestResponse,
    responses=problem_responses(
        ADMIN,
        {
            400: "The multipart form could not be parsed, or the request is not valid HTTP/1.1 "
            "(the connection is then closed).",
            413: TOO_LARGE,
            422: "Not a season file, an empty body or form, or an invalid season (or one "
            "in the form a league of the file does not play); nothing was written.",
        },
    ),
    openapi_extra=CSV_BODY,
)
async def import_football_data(
    request: Request,
    session: WriteSessionDep,
    settings: SettingsDep,
    season: Annotated[
        OptionalSeason,
        Query(
            description="Season of every match: 2018/19 (two consecutive years) or 2019 (a "
            "calendar year), in the form each league of the file plays; blank or absent: "
            "derived from the file's dates.",
            examples=["2018/19"],
        ),
    ] = None,
) -> IngestResponse:
    """Import one football-data.co.uk season file, sent as the body or as a multipart ``file``.

    Invalid prices are skipped and reported with their row and column; the rest of the row
    is imported. Row numbers count the header as row 1.
    """
    content = await _uploaded_bytes(request)
    try:
        report = await run_in_threadpool(
            ingest.import_football_data,
            session,
            content,
            season=season,
            flag_terms=FlagTerms.of(settings),
        )
    except LeagueSeasonError as error:
        raise invalid_field(["query", "season"], str(error), "value_error") from None
    return IngestResponse.model_validate(report)


@router.post(
    "/import/the-odds-api",
    response_model=IngestResponse,
    dependencies=[JSON_BODY],
    responses=JSON_INGEST_ERRORS,
)
def import_the_odds_api(
    events: Annotated[
        list[Event],
        Field(max_length=MAX_ITEMS_PER_REQUEST),
        Body(
            description="The JSON list returned by The Odds API v4 /odds with markets=h2h. "
            "A price's `last_update` may not be later than the moment the request is received, "
            "beyond ODDSBOOST_CAPTURE_SKEW_SECONDS (300 s): 422 otherwise.",
            examples=[
                [
                    {
                        "id": "e912304de2b2ce35b473ce2ecd3d1502",
                        "sport_key": "soccer_epl",
                        "commence_time": "2026-11-22T15:00:00Z",
                        "home_team": "Arsenal",
                        "away_team": "Chelsea",
                        "bookmakers": [
                            {
                                "key": "pinnacle",
                                "title": "Pinnacle",
                                "last_update": "2026-11-21T10:00:00Z",
                                "markets": [
                                    {
                                        "key": "h2h",
                                        "outcomes": [
                                            {"name": "Arsenal", "price": 2.1},
                                            {"name": "Chelsea", "price": 3.6},
                                            {"name": "Draw", "price": 3.4},
                                        ],
                                    }
                                ],
                            }
                        ],
                    }
                ]
            ],
        ),
    ],
    session: WriteSessionDep,
    settings: SettingsDep,
    received: ReceivedAtDep,
) -> IngestResponse:
    """Import a saved The Odds API response (h2h market; other markets are ignored).

    Prices updated later than the moment the request is received, plus
    ODDSBOOST_CAPTURE_SKEW_SECONDS, are refused: 422 naming their `last_update`.
    """
    check_item_count(len(events), settings.admin_items_max, ["body"])
    report = ingest.import_odds_api(
        session,
        events,
        now=received,
        capture_skew=settings.capture_skew,
        refuse_future_captures=True,
        flag_terms=FlagTerms.of(settings),
    )
    return IngestResponse.model_validate(report)


@router.delete(
    "/matches/{match_id}",
    response_model=DeletedMatchOut,
    responses=problem_responses(
        ADMIN,
        {
            404: "No match with that id.",
            409: "A stored model version was trained on the match, or bets were placed on "
            "it (the problem names them; delete them first, even with `force`); not deleted.",
            422: INVALID,
        },
    ),
)
def delete_match(
    match_id: Annotated[int, Path(ge=1, le=MAX_ID, description="The match's id.", examples=[17])],
    session: WriteSessionDep,
    force: Annotated[
        bool,
        Query(
            description="Delete it even if a stored model version was trained on it (its "
            "kickoff is inside the version's data window).",
            examples=[False],
        ),
    ] = False,
) -> DeletedMatchOut:
    """Delete a match and its quotes: a duplicate, or a match that was never played."""
    try:
        deleted = matches.delete_match(session, match_id, force=force)
    except matches.MatchNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(error)) from None
    except matches.MatchTrainedOnError as error:
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"{error}; add ?force=true to delete it anyway"
        ) from None
    except matches.MatchHasBetsError as error:
        raise HTTPException(status.HTTP_409_CONFLICT, str(error)) from None
    return DeletedMatchOut.model_validate(deleted)


@router.post(
    "/teams/aliases",
    response_model=AliasOut,
    dependencies=[JSON_BODY],
    responses=problem_responses(
        ADMIN,
        {
            404: "No such team.",
            409: "The alias names the team itself, or is already an alias of another team; "
            "or a merge of two teams that look like two, not done: the problem's `preview` "
            'says what it would change; send "confirm": true.',
            413: TOO_LARGE,
            415: NOT_JSON,
            422: INVALID,
        },
        extended={409: MergeConfirmationProblem},
    ),
)
def post_alias(alias: AliasIn, session: WriteSessionDep, settings: SettingsDep) -> AliasOut:
    """Map another source's team name to a stored team (merging a duplicate team if one
    exists: the answer's ``preview`` says what moved; ``dry_run`` looks first)."""
    report = teams.add_alias(
        session,
        alias=alias.alias,
        team=alias.team,
        confirm=alias.confirm,
        dry_run=alias.dry_run,
        window=FlagTerms.of(settings).closing_window,
    )
    return AliasOut.model_validate(report)


# A path parameter: a team's name may hold a "/" ("AC/DC United"), sent as is or as %2F.
@router.delete(
    "/teams/aliases/{alias:path}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_model=None,
    responses={
        200: {"model": UnaliasOut, "description": "The alias had merged a team: what was undone."},
        204: {"description": "The alias is removed (it had merged no team)."},
        **problem_responses(ADMIN, {404: "No such alias.", 422: INVALID}),
    },
)
def delete_alias(
    alias: Annotated[str, Path(description="The alias to remove.", examples=["Manchester United"])],
    session: WriteSessionDep,
) -> Response:
    """Remove an alias. If adding it merged a team, the team is restored with the matches
    that moved over; matches merged into the other team's keep the quotes of both."""
    report = teams.remove_alias(session, alias)
    if not report.restored_team:
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    return JSONResponse(UnaliasOut.model_validate(report).model_dump(mode="json"))


async def _uploaded_bytes(request: Request) -> bytes:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            upload = next((v for v in form.values() if isinstance(v, UploadFile)), None)
        if upload is None:
            msg = "the multipart form has no file; send the CSV as a field named 'file'"
            raise invalid_field(["body", "file"], msg, "missing")
        content = await upload.read()
    else:
        content = await request.body()
    if not content.strip():
        msg = (
            "the request body is empty: send the CSV file as the body "
            "(Content-Type: text/csv) or as a multipart field named 'file'"
        )
        raise invalid_field(["body"], msg, "missing")
    return content
