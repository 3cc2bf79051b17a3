"""The routers' dependencies, as ``Annotated`` aliases: all a router gets from the running
application, typed. Services that open their own sessions come already given their session
factory, so no router holds one."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Annotated, Any, Protocol, TypeVar

from fastapi import Depends, Header, HTTPException, Query, Request, Security, status
from fastapi.concurrency import contextmanager_in_threadpool
from fastapi.exceptions import RequestValidationError

from app.api.errors import invalid
from app.api.middleware import admin_key_header, admin_key_refusal, page_admin_key
from app.api.openapi import setting_maximum
from app.api.schemas.common import MAX_ID
from app.api.schemas.problems import FieldError
from app.domain.vocabulary import RunTrigger
from app.domain.wording import counted
from app.services import refit_runs
from app.services.admission import Endpoints
from app.services.caching import KeptBodies
from app.services.catalogue import CatalogueCounts
from app.services.pagination import PageWindow
from app.services.prediction import PredictionService
from app.services.readiness import Readiness, check_readiness
from app.services.serving import ModelCache
from app.services.track_record_answers import TrackRecordAnswers
from app.services.upcoming import UpcomingBoards
from app.settings import Settings
from app.state import AppState, Session, app_state

T = TypeVar("T")


def _state(request: Request) -> AppState:
    return app_state(request.scope.get("state", {}))


def _part_of_state(part: Callable[[AppState], T]) -> Callable[[Request], Awaitable[T]]:
    # Straight from the request (one level of dependencies less on every request), and
    # async: a plain function dependency would be sent to the thread pool.
    async def read(request: Request) -> T:
        return part(_state(request))

    return read


@asynccontextmanager
async def _placed_session(
    state: AppState, unit: Callable[[], Iterator[Session]]
) -> AsyncIterator[Session]:
    # A plain route checks its connection out on a thread, and its answer is validated on
    # another after it returns, the connection still held until the session closes. With more
    # requests than connections on the threads, those holding a connection could wait for a
    # thread while every thread waits for a connection, until the pool's timeout. Taking a
    # place (one per connection) on the event loop first keeps the waiting requests off the
    # threads. The session is opened and closed on threads as FastAPI does for a plain
    # dependency: closing it never waits for one of the routes' threads.
    async with (
        state.session_place(),
        contextmanager_in_threadpool(contextmanager(unit)()) as session,
    ):
        yield session


async def get_session(request: Request) -> AsyncIterator[Session]:
    """Committed if the endpoint returns, rolled back if it raises; with ``scope="function"``
    the commit happens before the response is sent."""
    state = _state(request)
    async with _placed_session(state, state.read_session) as session:
        yield session


async def get_write_session(request: Request) -> AsyncIterator[Session]:
    """Like :func:`get_session`, taking SQLite's write lock up front."""
    state = _state(request)
    async with _placed_session(state, state.write_session) as session:
        yield session


def admitted(kind: Endpoints) -> Any:
    """A route's dependency holding a place of ``kind`` while the route runs: a request over
    the worker's limit waits briefly, then gets 503 with Retry-After. Given first among a
    route's dependencies, it is let go after the request's session is closed."""

    async def admit(request: Request) -> AsyncIterator[None]:
        async with _state(request).admission.admitted(kind):
            yield

    return Depends(admit, scope="function")


BOARD_ADMISSION = admitted(Endpoints.BOARD)
PAGES_ADMISSION = admitted(Endpoints.PAGES)
TRACK_RECORD_ADMISSION = admitted(Endpoints.TRACK_RECORD)
BATCH_ADMISSION = admitted(Endpoints.BATCH)


class QueueRefit(Protocol):
    def __call__(
        self, *, trigger: RunTrigger, until: dt.datetime | None = None
    ) -> refit_runs.QueuedRefit: ...


async def get_queue_refit(request: Request) -> QueueRefit:
    # The run is committed in a transaction of its own before its process starts, so the
    # service takes the write sessions rather than the request's session.
    state = _state(request)
    return partial(refit_runs.queue_refit, state.write_sessions, state.settings)


ReadinessCheck = Callable[[], Awaitable[Readiness]]


async def get_readiness_check(request: Request) -> ReadinessCheck:
    state = _state(request)
    return partial(check_readiness, sessions=state.read_sessions, models=state.models)


async def received_now() -> dt.datetime:
    """When the quotes a request carries count as received (tests override it)."""
    return dt.datetime.now(dt.UTC)


async def board_moment() -> dt.datetime | None:
    """The moment the board is read at; None: the service's own clock, read when a check
    starts (so polls arriving meanwhile share it). Tests replaying a past season override it."""
    return None


SettingsDep = Annotated[Settings, Depends(_part_of_state(lambda state: state.settings))]
ReceivedAtDep = Annotated[dt.datetime, Depends(received_now)]
BoardMomentDep = Annotated[dt.datetime | None, Depends(board_moment)]
ModelsDep = Annotated[ModelCache, Depends(_part_of_state(lambda state: state.models))]
PredictionsDep = Annotated[
    PredictionService, Depends(_part_of_state(lambda state: state.predictions))
]
UpcomingBoardsDep = Annotated[UpcomingBoards, Depends(_part_of_state(lambda state: state.upcoming))]
TrackRecordAnswersDep = Annotated[
    TrackRecordAnswers, Depends(_part_of_state(lambda state: state.track_record))
]
PagesDep = Annotated[KeptBodies, Depends(_part_of_state(lambda state: state.pages))]
UpcomingBodiesDep = Annotated[
    KeptBodies, Depends(_part_of_state(lambda state: state.upcoming_bodies))
]
CatalogueCountsDep = Annotated[
    CatalogueCounts, Depends(_part_of_state(lambda state: state.catalogue))
]
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
WriteSessionDep = Annotated[Session, Depends(get_write_session, scope="function")]
QueueRefitDep = Annotated[QueueRefit, Depends(get_queue_refit)]
ReadinessCheckDep = Annotated[ReadinessCheck, Depends(get_readiness_check)]


def invalid_field(loc: list[str | int], msg: str, kind: str) -> RequestValidationError:
    """A 422 naming one field, found wrong by a route's own check."""
    return invalid([FieldError(loc=loc, msg=msg, type=kind)])


def found(value: T | None, detail: str) -> T:
    """``value``, or a 404 saying ``detail`` when there is none."""
    if value is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail)
    return value


def page_window(default_limit: int) -> Callable[..., Awaitable[PageWindow]]:
    """A dependency reading ``limit`` (1 to the page_size_max setting) and ``offset``."""

    async def window(
        settings: SettingsDep,
        limit: Annotated[
            int,
            Query(
                ge=1,
                description="Items per page, at most ODDSBOOST_PAGE_SIZE_MAX.",
                examples=[20],
                json_schema_extra=setting_maximum("page_size_max"),
            ),
        ] = default_limit,
        offset: Annotated[
            int,
            Query(ge=0, le=MAX_ID, description="Items skipped before the page.", examples=[0]),
        ] = 0,
    ) -> PageWindow:
        if limit > settings.page_size_max:
            msg = f"limit must be at most {settings.page_size_max}"
            raise invalid_field(["query", "limit"], msg, "less_than_equal")
        return PageWindow(limit, offset)

    return window


JSON_MEDIA_TYPE = "application/json"


def _is_json(content_type: str) -> bool:
    if content_type == JSON_MEDIA_TYPE:
        return True  # as nearly every client sends it: no parsing
    media_type = content_type.partition(";")[0].strip().lower()
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


async def require_json(request: Request) -> None:
    """A body read as JSON must be sent as JSON (``application/json`` or a ``+json`` type),
    else 415, whatever it holds; an empty body needs no type. Without it a body sent as text
    or a form would be read by some endpoints and fail with a puzzling "Input should be a
    valid dictionary" on others."""
    content_type = request.headers.get("content-type")
    if not await request.body() or (content_type is not None and _is_json(content_type)):
        return
    sent = f"not {content_type}" if content_type else "the request has no Content-Type"
    raise HTTPException(
        status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
        f"send the body as JSON (Content-Type: {JSON_MEDIA_TYPE}); {sent}",
    )


JSON_BODY = Depends(require_json)


def check_item_count(count: int, limit: int, loc: list[str | int], *, per: str = "request") -> None:
    """Refuse a list of more than ``limit`` items (422 naming ``loc``), once its body is read."""
    if count > limit:
        msg = f"at most {counted(limit, 'item')} per {per}, got {count}"
        raise invalid_field(loc, msg, "too_long")


def require_admin(
    settings: SettingsDep, api_key: Annotated[str | None, Security(admin_key_header)]
) -> None:
    """The admin key, checked (again: the middleware checked it first) and documented."""
    refusal = admin_key_refusal(settings.admin_api_key, api_key)
    if refusal is not None:
        raise refusal


def require_admin_page(
    settings: SettingsDep,
    api_key: Annotated[str | None, Security(admin_key_header)],
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> None:
    """The admin key of a guarded dashboard page (the middleware checked it first): its
    X-API-Key header or the password of its HTTP Basic credentials."""
    refusal = admin_key_refusal(settings.admin_api_key, page_admin_key(api_key, authorization))
    if refusal is not None:
        raise refusal
