"""Public read API: matches with their latest quotes, bookmakers, competitions, teams."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, status
from pydantic import AfterValidator

from app.api.deps import SessionDep, page_window
from app.api.schemas import (
    MAX_ID,
    BookmakerOut,
    CompetitionOut,
    MatchDetailOut,
    MatchOut,
    Page,
    QuoteOut,
    TeamOut,
)
from app.db.orm import Match, utcnow
from app.domain.records import as_utc
from app.services import queries, teams
from app.services.pagination import PageWindow


def _optional_utc(value: dt.datetime | None) -> dt.datetime | None:
    return None if value is None else as_utc(value)


OptionalUtc = AfterValidator(_optional_utc)

router = APIRouter(tags=["matches"])

NOT_FOUND: dict[int | str, dict[str, str]] = {404: {"description": "No match with that id."}}


def _match_out(match: Match, now: dt.datetime) -> MatchOut:
    return MatchOut(
        id=match.id,
        competition=match.competition.code,
        season=match.season,
        kickoff=match.kickoff,
        kickoff_time_known=match.kickoff_time_known,
        home_team=match.home_team.name,
        away_team=match.away_team.name,
        home_goals=match.home_goals,
        away_goals=match.away_goals,
        result=match.result,
        status=queries.status_of(match, now),
        external_id=match.external_id,
    )


@router.get("/matches", response_model=Page[MatchOut])
def list_matches(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    competition: Annotated[str | None, Query(max_length=32, examples=["E0"])] = None,
    season: Annotated[str | None, Query(max_length=16, examples=["2018/19"])] = None,
    kickoff_from: Annotated[
        dt.datetime | None,
        Query(alias="from", description="Earliest kickoff (ISO 8601; UTC if naive)."),
        OptionalUtc,
    ] = None,
    kickoff_to: Annotated[
        dt.datetime | None,
        Query(alias="to", description="Latest kickoff (ISO 8601; UTC if naive)."),
        OptionalUtc,
    ] = None,
    match_status: Annotated[
        Literal["upcoming", "unsettled", "settled"] | None,
        Query(
            alias="status",
            description="upcoming: no result, kickoff ahead; unsettled: no result, kickoff "
            "passed; settled: result known.",
        ),
    ] = None,
    order: Annotated[Literal["asc", "desc"], Query(description="By kickoff.")] = "asc",
) -> Page[MatchOut]:
    """Matches, filtered and paginated (``total`` counts every match that fits the filters)."""
    filters = queries.MatchFilter(
        competition=competition,
        season=season,
        kickoff_from=kickoff_from,
        kickoff_to=kickoff_to,
        status=match_status,
        descending=order == "desc",
    )
    now = utcnow()
    matches = queries.list_matches(session, filters, page, now=now)
    return Page[MatchOut](
        items=[_match_out(m, now) for m in matches.items],
        total=matches.total,
        limit=matches.limit,
        offset=matches.offset,
    )


@router.get("/matches/{match_id}", response_model=MatchDetailOut, responses=NOT_FOUND)
def get_match(
    match_id: Annotated[int, Path(ge=1, le=MAX_ID, examples=[17])], session: SessionDep
) -> MatchDetailOut:
    """One match with the latest quote of each bookmaker in each phase."""
    match = queries.get_match(session, match_id)
    if match is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no match with id {match_id}")
    quotes = [
        QuoteOut(
            bookmaker=q.bookmaker.code,
            bookmaker_name=q.bookmaker.name,
            phase=q.phase,
            home=q.home,
            draw=q.draw,
            away=q.away,
            captured_at=q.captured_at,
            received_at=q.received_at,
        )
        for q in queries.latest_quotes(session, match.id)
    ]
    return MatchDetailOut(**_match_out(match, utcnow()).model_dump(), quotes=quotes)


@router.get("/bookmakers", response_model=list[BookmakerOut], tags=["reference"])
def list_bookmakers(session: SessionDep) -> list[BookmakerOut]:
    return [
        BookmakerOut(code=b.code, name=b.name, quotes=count)
        for b, count in queries.list_bookmakers(session)
    ]


@router.get("/competitions", response_model=list[CompetitionOut], tags=["reference"])
def list_competitions(session: SessionDep) -> list[CompetitionOut]:
    return [
        CompetitionOut(code=c.code, name=c.name, matches=count)
        for c, count in queries.list_competitions(session)
    ]


@router.get("/teams", response_model=list[TeamOut], tags=["reference"])
def list_teams(
    session: SessionDep,
    search: Annotated[
        str | None, Query(max_length=100, description="Part of a name or alias.")
    ] = None,
) -> list[TeamOut]:
    return [
        TeamOut(id=t.id, name=t.name, aliases=[a.alias for a in t.aliases])
        for t in teams.list_teams(session, search=search)
    ]
