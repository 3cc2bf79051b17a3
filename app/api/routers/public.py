"""Public read API: matches with their latest quotes, bookmakers, competitions, teams."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query

from app.api.deps import CatalogueCountsDep, SessionDep, found, page_window
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.matches import (
    BookmakerOut,
    CompetitionOut,
    MatchDetailOut,
    MatchOut,
    TeamOut,
)
from app.api.schemas.problems import INVALID, UNAVAILABLE, problem_responses
from app.domain.fields import IsoDate, OptionalSeason, UtcDateTime
from app.domain.records import CODE_MAX_LENGTH, TEAM_NAME_MAX_LENGTH
from app.domain.vocabulary import MatchStatus
from app.services import queries, teams
from app.services.pagination import PageWindow

router = APIRouter(tags=["matches"])


@router.get(
    "/matches",
    response_model=Page[MatchOut],
    responses=problem_responses({422: INVALID, 503: UNAVAILABLE}),
)
def list_matches(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    competition: Annotated[
        str | None,
        Query(max_length=CODE_MAX_LENGTH, description="A competition's code.", examples=["E0"]),
    ] = None,
    season: Annotated[
        OptionalSeason,
        Query(
            description="2018/19 (two consecutive years) or 2019 (a calendar year); blank: "
            "any season.",
            examples=["2018/19"],
        ),
    ] = None,
    kickoff_from: Annotated[
        UtcDateTime | None,
        Query(
            alias="from",
            description="Earliest kickoff (ISO 8601; UTC if naive).",
            examples=["2018-08-01T00:00:00Z"],
        ),
    ] = None,
    kickoff_to: Annotated[
        UtcDateTime | None,
        Query(
            alias="to",
            description="Latest kickoff (ISO 8601; UTC if naive).",
            examples=["2019-06-01T00:00:00Z"],
        ),
    ] = None,
    match_status: Annotated[
        MatchStatus | None,
        Query(
            alias="status",
            description="upcoming: no result, kickoff ahead; unsettled: no result, kickoff "
            "passed; settled: result known.",
            examples=["settled"],
        ),
    ] = None,
    order: Annotated[
        Literal["asc", "desc"], Query(description="By kickoff.", examples=["desc"])
    ] = "asc",
    home_team: Annotated[
        str | None,
        Query(
            max_length=TEAM_NAME_MAX_LENGTH,
            description="The home team, by its name or an alias, in any letter case.",
            examples=["Man United"],
        ),
    ] = None,
    away_team: Annotated[
        str | None,
        Query(
            max_length=TEAM_NAME_MAX_LENGTH,
            description="The away team, by its name or an alias, in any letter case.",
            examples=["Leicester"],
        ),
    ] = None,
    kickoff_day: Annotated[
        IsoDate | None,
        Query(
            alias="date",
            description="The UTC calendar day of kickoff (YYYY-MM-DD).",
            examples=["2018-08-10"],
        ),
    ] = None,
) -> Page[MatchOut]:
    """Matches, filtered and paginated (``total`` counts every match that fits the filters).

    A team no match was stored under (by name or alias) is no error: the page is empty."""
    filters = queries.MatchFilter(
        competition=competition,
        season=season,
        kickoff_from=kickoff_from,
        kickoff_to=kickoff_to,
        status=match_status,
        descending=order == "desc",
        home_team=home_team,
        away_team=away_team,
        kickoff_day=kickoff_day,
    )
    return Page[MatchOut].of(queries.list_matches(session, filters, page))


@router.get(
    "/matches/{match_id}",
    response_model=MatchDetailOut,
    responses=problem_responses({404: "No match with that id.", 422: INVALID, 503: UNAVAILABLE}),
)
def get_match(
    match_id: Annotated[int, Path(ge=1, le=MAX_ID, description="The match's id.", examples=[17])],
    session: SessionDep,
) -> MatchDetailOut:
    """One match with the latest quote of each bookmaker in each phase."""
    match = queries.match_detail(session, match_id)
    return MatchDetailOut.model_validate(found(match, f"no match with id {match_id}"))


@router.get(
    "/bookmakers",
    response_model=Page[BookmakerOut],
    tags=["reference"],
    responses=problem_responses({422: INVALID, 503: UNAVAILABLE}),
)
async def list_bookmakers(
    session: SessionDep,
    counts: CatalogueCountsDep,
    page: Annotated[PageWindow, Depends(page_window(100))],
) -> Page[BookmakerOut]:
    """Bookmakers by code with their numbers of quotes, paginated as ``/matches`` is.

    The numbers are counted at most every ODDSBOOST_CATALOGUE_COUNTS_SECONDS per worker
    (30 s by default): quotes stored or removed since show up after at most that long
    and one count."""
    return Page[BookmakerOut].of(await counts.bookmakers(session, page))


@router.get(
    "/competitions",
    response_model=list[CompetitionOut],
    tags=["reference"],
    responses=problem_responses({503: UNAVAILABLE}),
)
async def list_competitions(
    session: SessionDep, counts: CatalogueCountsDep
) -> list[CompetitionOut]:
    """Competitions by code with their numbers of matches, counted as ``/bookmakers``'
    numbers of quotes are."""
    return [CompetitionOut.model_validate(c) for c in await counts.competitions(session)]


@router.get(
    "/teams",
    response_model=Page[TeamOut],
    tags=["reference"],
    responses=problem_responses({422: INVALID, 503: UNAVAILABLE}),
)
def list_teams(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(100))],
    search: Annotated[
        str | None,
        Query(
            max_length=TEAM_NAME_MAX_LENGTH,
            description="Part of a name or alias.",
            examples=["United"],
        ),
    ] = None,
) -> Page[TeamOut]:
    """Teams by name with their aliases, paginated as ``/matches`` is (``total`` counts every
    team that fits the search)."""
    return Page[TeamOut].of(teams.list_teams(session, page, search=search))
