"""The dashboard: four read-only HTML pages, rendered on the server (Jinja2, autoescaped,
charts as inline SVG) under a Content-Security-Policy that allows no script. Times are shown
in the configured zone or the page's ``?tz=``; that, the user's value terms
(``bookmakers``, ``bankroll``, ``min_ev``), the board's order and filter (``sort``,
``value_only``) and the reload period (``refresh``) are the page's options, which every
link and form keeps."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Header, Query, Request, Response, status
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup
from pydantic import StringConstraints
from starlette.concurrency import run_in_threadpool

from app.api import charts
from app.api.conditional import matches_etag, weak_etag
from app.api.deps import (
    BOARD_ADMISSION,
    PAGES_ADMISSION,
    TRACK_RECORD_ADMISSION,
    BoardMomentDep,
    ModelsDep,
    PagesDep,
    SessionDep,
    SettingsDep,
    TrackRecordAnswersDep,
    UpcomingBoardsDep,
    page_window,
    require_admin_page,
)
from app.api.query_params import (
    BankrollParam,
    Blank,
    BookmakersParam,
    MinEvParam,
    check_window,
    given_terms,
)
from app.api.schemas.bet_book import ROI_IS_NOISE
from app.api.schemas.common import MAX_ID, fair_odds
from app.api.schemas.predict import ValueIn
from app.domain.bookmakers import bookmaker_key, display_name
from app.domain.fields import UtcDateTime
from app.domain.leagues import league_name
from app.domain.records import CODE_MAX_LENGTH
from app.domain.time_zones import TimeZoneName
from app.domain.value import ValueTerms, net_price
from app.domain.wording import counted
from app.services import dashboard, dashboard_bets, track_record
from app.services.caching import KeptBodies
from app.services.dashboard import BoardOrder
from app.services.pagination import PageWindow
from app.services.upcoming import UpcomingQuery
from app.services.value_bets import AppliedTerms

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

# A private page's cache policy: the viewer's bets, kept by no cache (nor by KeptBodies).
PRIVATE = {"Cache-Control": "private, no-store"}

router = APIRouter(include_in_schema=False)


# The reload period a page may ask for (``?refresh=``), in seconds, and those its control offers.
REFRESH_MIN, REFRESH_MAX = 30, 3600
REFRESH_CHOICES = (60, 300, 900)
# The pages' own filters, which a link back to the same page keeps (the options aside).
PAGE_FILTERS = frozenset({"competition", "days", "from", "to", "limit", "offset"})

Competition = Annotated[
    Annotated[str, StringConstraints(max_length=CODE_MAX_LENGTH)] | None, Blank, Query()
]
Moment = Annotated[UtcDateTime | None, Blank]


def percent(value: float) -> str:
    return f"{value * 100:.1f} %"


def signed_percent(value: float) -> str:
    return f"{value * 100:+.1f} %"


def _query_number(value: float) -> str:
    """A number as a query string gives it back: whole ones without a decimal point."""
    return str(int(value)) if value.is_integer() else repr(value)


@dataclass(frozen=True, slots=True)
class PageOptions:
    """What the viewer asked every page for, kept by every link and form: the zone
    (``tz``), the value terms given (the settings' for the rest), the board's order and
    filter, and the reload period in seconds (None: no reload)."""

    tz: str | None = None
    terms: ValueIn = field(default_factory=ValueIn)
    order: BoardOrder = BoardOrder.KICKOFF
    value_only: bool = False
    refresh: int | None = None

    @property
    def params(self) -> tuple[tuple[str, str], ...]:
        """The query parameters that ask for these options, in one order; the defaults left
        out."""
        pairs = [] if self.tz is None else [("tz", self.tz)]
        pairs.extend(("bookmakers", name) for name in self.terms.bookmakers or ())
        for name in ("bankroll", "min_ev"):
            number = getattr(self.terms, name)
            if number is not None:
                pairs.append((name, _query_number(number)))
        if self.order is not BoardOrder.KICKOFF:
            pairs.append(("sort", self.order.value))
        if self.value_only:
            pairs.append(("value_only", "true"))
        if self.refresh is not None:
            pairs.append(("refresh", str(self.refresh)))
        return tuple(pairs)


@dataclass(frozen=True, slots=True)
class ShownPage:
    """A page's request, the zone it shows times in, the options asked for (kept by its
    links and forms), the value terms they make with the settings, the model version
    behind it (in the footer), the ETag the request already holds (If-None-Match), and
    the application's pages kept by ETag."""

    request: Request
    zone: ZoneInfo
    options: PageOptions
    terms: ValueTerms
    model_version: int | None
    if_none_match: str | None
    kept: KeptBodies

    @property
    def asked(self) -> str | None:
        """The ``?tz=`` that asked for the zone, if one did."""
        return self.options.tz

    def etag(self, *shown: object) -> str:
        """The weak ETag of a page showing ``shown``, in this zone, with these options
        (its links keep them), under this footer."""
        return weak_etag(self.zone.key, self.options.params, self.model_version, *shown)

    def link(self, url: str, **changes: str | int | None) -> str:
        """``url`` keeping the page's options, but ``changes`` (None: that option left out)."""
        return self._address(url, (), changes)

    def _address(
        self, url: str, own: Sequence[tuple[str, str]], changes: Mapping[str, str | int | None]
    ) -> str:
        pairs = [*own]
        pairs.extend((name, value) for name, value in self.options.params if name not in changes)
        pairs.extend((name, str(value)) for name, value in changes.items() if value is not None)
        if not pairs:
            return url
        return f"{url}{'&' if '?' in url else '?'}{urlencode(pairs)}"

    def here(self, **changes: str | int | None) -> str:
        """This page's address keeping its own filters (those given, not blank) and its
        options, but ``changes`` (None: that filter or option left out)."""
        own = [
            (name, value)
            for name, value in self.request.query_params.multi_items()
            if name in PAGE_FILTERS and name not in changes and value != ""
        ]
        return self._address(self.request.url.path, own, changes)

    def hidden_inputs(self, *fields: str) -> Markup:
        """A form's hidden inputs keeping the page's options, but those the form has as
        ``fields``."""
        return Markup("").join(
            Markup('<input type="hidden" name="{}" value="{}">').format(name, value)
            for name, value in self.options.params
            if name not in fields
        )

    async def answer(
        self, name: str, etag: str, context: Callable[[], Awaitable[dict[str, Any] | Response]]
    ) -> Response:
        """304 if the request holds ``etag``, else template ``name`` with ``context()``,
        rendered once per ETag (on a worker thread, never on the event loop). A ``context()``
        that is a response instead (what the page shows went away since its ETag was made)
        is answered as it is, and not kept."""
        headers = HEADERS | {"ETag": etag, "Cache-Control": "no-cache"}
        if matches_etag(self.if_none_match, etag):
            return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=headers)
        body = self.kept.get(etag)
        if body is None:
            shown = await context()
            if isinstance(shown, Response):
                return shown
            body = await run_in_threadpool(self.body, name, shown)
            self.kept.put(etag, body)
        return HTMLResponse(body, headers=headers)

    def body(self, name: str, context: dict[str, Any]) -> bytes:
        footer = {"model_version": self.model_version, "zone": self}
        return templates().get_template(name).render(footer | context).encode()

    def render(
        self, name: str, context: dict[str, Any], status_code: int = status.HTTP_200_OK
    ) -> Response:
        """Template ``name`` with ``context``, neither kept nor named by an ETag."""
        return HTMLResponse(self.body(name, context), status_code, headers=HEADERS)

    async def private(self, name: str, context: dict[str, Any]) -> Response:
        """Template ``name`` with ``context`` (rendered on a worker thread), for the viewer
        alone: stored by no cache, neither kept nor named by an ETag."""
        body = await run_in_threadpool(self.body, name, context)
        return HTMLResponse(body, headers=HEADERS | PRIVATE)


async def page_options(
    tz: Annotated[TimeZoneName | None, Blank, Query()] = None,
    bookmakers: BookmakersParam = None,
    bankroll: Annotated[BankrollParam, Blank] = None,
    min_ev: Annotated[MinEvParam, Blank] = None,
    sort: Annotated[BoardOrder | None, Blank, Query()] = None,
    value_only: Annotated[bool | None, Blank, Query()] = None,
    # Blank after the bounds: the bounds then apply to a number only, never to a blank's None.
    refresh: Annotated[int | None, Query(ge=REFRESH_MIN, le=REFRESH_MAX), Blank] = None,
) -> PageOptions:
    """The page's options; the value terms read as GET /upcoming reads them."""
    terms = given_terms(min_ev=min_ev, bookmakers=bookmakers, bankroll=bankroll)
    return PageOptions(tz, terms, sort or BoardOrder.KICKOFF, bool(value_only), refresh)


def shown_page(
    request: Request,
    settings: SettingsDep,
    models: ModelsDep,
    kept: PagesDep,
    options: Annotated[PageOptions, Depends(page_options)],
    if_none_match: Annotated[str | None, Header()] = None,
) -> ShownPage:
    ensemble = models.ensemble
    version = None if ensemble is None else ensemble.version
    zone = ZoneInfo(options.tz or settings.dashboard_time_zone)
    terms = options.terms.terms(settings.value_terms())
    return ShownPage(request, zone, options, terms, version, if_none_match, kept)


PageDep = Annotated[ShownPage, Depends(shown_page)]


def local_time(page: ShownPage, moment: dt.datetime) -> str:
    return charts.shown_time(moment, page.zone, weekday=True)


@pass_context
def shown_local_time(context: Context, moment: dt.datetime) -> str:
    return local_time(context["zone"], moment)


@pass_context
def kept(context: Context, url: str, **changes: str | int | None) -> str:
    """``url`` keeping the page's options (the ``?tz=`` asked for, the terms, ...), but
    ``changes``."""
    page: ShownPage = context["zone"]
    return page.link(url, **changes)


def _named(name: str, code: str) -> Markup:
    return Markup('<span class="named" title="{}">{}</span>').format(code, name)


def bookmaker_named(code: str) -> Markup:
    """A bookmaker's name, its code in the ``title`` (an unknown code shown as itself)."""
    return _named(display_name(code), code)


def league_named(code: str) -> Markup:
    """A competition's name, its code in the ``title`` (an unknown code shown as itself)."""
    return _named(league_name(code), code)


def duration(seconds: int) -> str:
    """A reload period as people say it: "45 s", "5 min", "1 h"."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def money(amount: float) -> str:
    """An amount of money, to the cent, its thousands grouped."""
    return f"{amount:,.2f}"


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
        local=shown_local_time,
        kept=kept,
        bookmaker=bookmaker_named,
        league=league_named,
        league_name=league_name,
        bookmaker_name=display_name,
        money=money,
        duration=duration,
        age=age,
        counted=counted,
        fair_odds=fair_odds,
    )
    made.env.globals.update(
        charts=charts,
        refresh_choices=REFRESH_CHOICES,
        BoardOrder=BoardOrder,
        bookmaker_key=bookmaker_key,
        net_price=net_price,
    )
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


@router.api_route("/dashboard", methods=["GET", "HEAD"], dependencies=[BOARD_ADMISSION])
async def upcoming_page(
    page: PageDep,
    boards: UpcomingBoardsDep,
    session: SessionDep,
    settings: SettingsDep,
    moment: BoardMomentDep,
    competition: Competition = None,
    days: Annotated[int, Query(ge=1, le=30)] = 7,
) -> Response:
    query = UpcomingQuery(
        terms=page.terms,
        daily_exposure_cap=settings.value_daily_exposure_cap,
        competition=competition,
        horizon=dt.timedelta(days=days),
    )
    options = page.options
    view = await dashboard.upcoming_view(
        boards, session, query, order=options.order, value_only=options.value_only, now=moment
    )
    board = view.board
    # The times shown change with the clock: the window's ends to the minute, the ages.
    times = (
        *(local_time(page, moment) for moment in (board.kickoff_from, board.kickoff_to)),
        *(age(item.freshness.age_seconds) for item in board.items),
    )
    shown = (board.revision, board.terms, view.competitions, competition, days, times)
    etag = page.etag("upcoming", *shown)

    async def context() -> dict[str, Any]:
        return {"view": view, "page": "upcoming"}

    return await page.answer("dashboard/upcoming.html", etag, context)


@router.api_route(
    "/dashboard/matches/{match_id}", methods=["GET", "HEAD"], dependencies=[PAGES_ADMISSION]
)
async def match_page(
    page: PageDep,
    models: ModelsDep,
    session: SessionDep,
    settings: SettingsDep,
    match_id: Annotated[int, PathParam(ge=1, le=MAX_ID)],
) -> Response:
    snapshot = models.snapshot()  # read once: the page is made with this one
    stamp = await run_in_threadpool(dashboard.match_stamp, session, match_id)
    missing = {"match_id": match_id, "page": None}
    if stamp is None:
        return page.render("dashboard/not_found.html", missing, status.HTTP_404_NOT_FOUND)
    terms = AppliedTerms.of(page.terms, settings.value_daily_exposure_cap)
    model = (snapshot.version, snapshot.phase, snapshot.method)
    etag = page.etag("match", match_id, stamp.shown, model, terms)

    async def context() -> dict[str, Any] | Response:
        view = await run_in_threadpool(
            dashboard.match_page, session, snapshot, page.terms, match_id, now=stamp.at
        )
        if view is None:  # deleted since its stamp was read
            return page.render("dashboard/not_found.html", missing, status.HTTP_404_NOT_FOUND)
        return {"view": view, "page": None}

    return await page.answer("dashboard/match.html", etag, context)


@router.api_route("/dashboard/model", methods=["GET", "HEAD"], dependencies=[PAGES_ADMISSION])
async def model_page(
    page: PageDep,
    session: SessionDep,
    settings: SettingsDep,
    answers: TrackRecordAnswersDep,
    boards: UpcomingBoardsDep,
    moment: BoardMomentDep,
) -> Response:
    stamp = await dashboard.model_page_stamp(boards, answers, session, settings, now=moment)
    etag = page.etag("model", *stamp.shown)

    async def context() -> dict[str, Any]:
        view = await dashboard.model_view(session, answers, settings, stamp)
        return {"view": view, "page": "model"}

    return await page.answer("dashboard/model.html", etag, context)


@router.api_route(
    "/dashboard/track-record", methods=["GET", "HEAD"], dependencies=[TRACK_RECORD_ADMISSION]
)
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
    stamp = await answers.stamp(session)
    etag = page.etag("track record", stamp, query)

    async def context() -> dict[str, Any]:
        view = await answers.answer(
            session,
            ("track record page", query),
            partial(dashboard.track_record_page, query=query, settings=settings),
            stamp=stamp,
        )
        return {"view": view, "page": "track-record"}

    return await page.answer("dashboard/track_record.html", etag, context)


# The bets the bets page lists at once; ``limit`` and ``offset`` page through the rest.
BETS_PAGE_SIZE = 50


@router.api_route(
    "/dashboard/bets",
    methods=["GET", "HEAD"],
    # The admin key first (the middleware checked it already), before any option is read.
    dependencies=[Depends(require_admin_page), PAGES_ADMISSION],
)
async def bets_page(
    page: PageDep,
    session: SessionDep,
    window: Annotated[PageWindow, Depends(page_window(BETS_PAGE_SIZE))],
) -> Response:
    """The user's bets (guarded by the admin key, as the API's /bets): the book's summary,
    its bankroll curve from the page's bankroll, the CLVs, and the bets, newest first."""
    starting = page.terms.bankroll or 0.0
    view = await run_in_threadpool(
        dashboard_bets.bets_view,
        session,
        window,
        starting_bankroll=starting,
        time_zone=page.zone.key,
    )
    context = {"view": view, "page": "bets", "roi_is_noise": ROI_IS_NOISE}
    return await page.private("dashboard/bets.html", context)
