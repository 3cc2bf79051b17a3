"""The dashboard: four read-only HTML pages, rendered on the server (Jinja2, autoescaped,
charts as inline SVG) under a Content-Security-Policy that allows no script. Times are shown
in the configured zone or the page's ``?tz=``, which links and forms keep."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache, partial
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Query, Request, Response, status
from fastapi import Path as PathParam
from fastapi.responses import RedirectResponse
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from pydantic import BeforeValidator, StringConstraints
from starlette.concurrency import run_in_threadpool

from app.api import charts
from app.api.deps import (
    BOARD_ADMISSION,
    PAGES_ADMISSION,
    TRACK_RECORD_ADMISSION,
    BoardMomentDep,
    ModelsDep,
    SessionDep,
    SettingsDep,
    TrackRecordAnswersDep,
    UpcomingBoardsDep,
)
from app.api.query_params import check_window
from app.api.schemas.common import MAX_ID, fair_odds
from app.domain.fields import UtcDateTime
from app.domain.records import CODE_MAX_LENGTH
from app.domain.time_zones import TimeZoneName
from app.domain.wording import counted
from app.services import dashboard, track_record
from app.services.serving import ModelCache
from app.services.upcoming import UpcomingQuery

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(include_in_schema=False)


def _blank_is_none(value: object) -> object:
    # A form submitted with a field left empty sends it as "": that means "any".
    return None if value == "" else value


Blank = BeforeValidator(_blank_is_none)
Competition = Annotated[
    Annotated[str, StringConstraints(max_length=CODE_MAX_LENGTH)] | None, Blank, Query()
]
Moment = Annotated[UtcDateTime | None, Blank]


def percent(value: float) -> str:
    return f"{value * 100:.1f} %"


def signed_percent(value: float) -> str:
    return f"{value * 100:+.1f} %"


@dataclass(frozen=True, slots=True)
class ShownPage:
    """A page's request, the zone it shows times in, the ``?tz=`` that asked for it (if one
    did), and the model behind it (its version is in the footer)."""

    request: Request
    zone: ZoneInfo
    asked: str | None
    models: ModelCache

    def render(
        self, name: str, context: dict[str, Any], status_code: int = status.HTTP_200_OK
    ) -> Response:
        ensemble = self.models.ensemble
        footer = {"model_version": None if ensemble is None else ensemble.version, "zone": self}
        return templates().TemplateResponse(
            self.request, name, footer | context, status_code=status_code, headers=HEADERS
        )


def shown_page(
    request: Request,
    settings: SettingsDep,
    models: ModelsDep,
    tz: Annotated[TimeZoneName | None, Blank, Query()] = None,
) -> ShownPage:
    return ShownPage(request, ZoneInfo(tz or settings.dashboard_time_zone), tz, models)


PageDep = Annotated[ShownPage, Depends(shown_page)]


@pass_context
def local_time(context: Context, moment: dt.datetime) -> str:
    return charts.shown_time(moment, context["zone"].zone, weekday=True)


@pass_context
def zoned(context: Context, url: str) -> str:
    """``url`` keeping the page's ``?tz=``, if one was asked for."""
    asked = context["zone"].asked
    if asked is None:
        return url
    return f"{url}{'&' if '?' in url else '?'}{urlencode({'tz': asked})}"


def age(seconds: float | None) -> str:
    if seconds is None:
        return "capture time unknown"
    minutes = max(int(seconds // 60), 0)
    if minutes < 60:
        return f"updated {minutes} min ago"
    if minutes < 48 * 60:
        return f"updated {minutes // 60} h ago"
    return f"updated {counted(minutes // 1440, 'day')} ago"


@cache
def templates() -> Jinja2Templates:
    made = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")
    made.env.autoescape = True
    made.env.filters.update(
        percent=percent,
        signed_percent=signed_percent,
        local=local_time,
        zoned=zoned,
        age=age,
        counted=counted,
        fair_odds=fair_odds,
    )
    made.env.globals["charts"] = charts
    return made


@cache
def _stylesheet() -> bytes:
    return resources.files("app.api").joinpath("static/dashboard.css").read_bytes()


@router.get("/")
async def home() -> RedirectResponse:
    return RedirectResponse("/dashboard", status.HTTP_307_TEMPORARY_REDIRECT)


@router.get("/dashboard/static/dashboard.css")
async def stylesheet() -> Response:
    return Response(
        _stylesheet(),
        media_type="text/css",
        headers=HEADERS | {"Cache-Control": "public, max-age=3600"},
    )


@router.get("/dashboard", dependencies=[BOARD_ADMISSION])
async def upcoming_page(
    page: PageDep,
    boards: UpcomingBoardsDep,
    settings: SettingsDep,
    moment: BoardMomentDep,
    competition: Competition = None,
    days: Annotated[int, Query(ge=1, le=30)] = 7,
) -> Response:
    query = UpcomingQuery(
        terms=settings.value_terms(),
        daily_exposure_cap=settings.value_daily_exposure_cap,
        competition=competition,
        horizon=dt.timedelta(days=days),
    )
    view = await dashboard.upcoming_view(boards, query, now=moment)
    return page.render("dashboard/upcoming.html", {"view": view, "page": "upcoming"})


@router.get("/dashboard/matches/{match_id}", dependencies=[PAGES_ADMISSION])
def match_page(
    page: PageDep,
    session: SessionDep,
    settings: SettingsDep,
    match_id: Annotated[int, PathParam(ge=1, le=MAX_ID)],
) -> Response:
    view = dashboard.match_page(session, page.models, settings, match_id)
    if view is None:
        context = {"match_id": match_id, "page": None}
        return page.render("dashboard/not_found.html", context, status.HTTP_404_NOT_FOUND)
    return page.render("dashboard/match.html", {"view": view, "page": None})


@router.get("/dashboard/model", dependencies=[PAGES_ADMISSION])
async def model_page(
    page: PageDep,
    session: SessionDep,
    settings: SettingsDep,
    answers: TrackRecordAnswersDep,
    boards: UpcomingBoardsDep,
    moment: BoardMomentDep,
) -> Response:
    reliability = await answers.answer(
        session, ("reliability",), partial(dashboard.served_reliability, settings=settings)
    )
    on_board = await dashboard.weight_on_board(boards, settings, now=moment)
    view = await run_in_threadpool(dashboard.model_page, session, on_board, reliability)
    # Rendered on a worker thread, as a page of a plain route is: never on the event loop.
    context = {"view": view, "page": "model"}
    return await run_in_threadpool(page.render, "dashboard/model.html", context)


@router.get("/dashboard/track-record", dependencies=[TRACK_RECORD_ADMISSION])
async def track_record_page(
    page: PageDep,
    session: SessionDep,
    settings: SettingsDep,
    answers: TrackRecordAnswersDep,
    kickoff_from: Annotated[Moment, Query(alias="from")] = None,
    kickoff_to: Annotated[Moment, Query(alias="to")] = None,
    competition: Competition = None,
) -> Response:
    check_window(kickoff_from, kickoff_to)
    query = track_record.PerformanceQuery(kickoff_from, kickoff_to, competition)
    view = await answers.answer(
        session,
        ("track record page", query),
        partial(dashboard.track_record_page, query=query, settings=settings),
    )
    context = {"view": view, "page": "track-record"}
    return await run_in_threadpool(page.render, "dashboard/track_record.html", context)
