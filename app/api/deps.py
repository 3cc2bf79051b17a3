"""Shared dependencies of the routers, as ``Annotated`` aliases.

Everything a router needs from the running application comes through here, typed: the
application state the lifespan built, its settings, a session per request, the model in
memory, the prediction service, and the services that open sessions of their own (queueing
a refit, checking readiness) already given the session factory they
use: no router holds one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from typing import Annotated, Protocol

from fastapi import Depends, HTTPException, Query, Request, Security, status

from app.api.admin_key import admin_key_header, admin_key_refusal
from app.api.errors import invalid
from app.api.openapi import setting_maximum
from app.api.schemas.common import MAX_ID
from app.api.schemas.problems import FieldError
from app.domain.vocabulary import RunTrigger
from app.domain.wording import counted
from app.services import refit_runs
from app.services.pagination import PageWindow
from app.services.prediction import PredictionService
from app.services.readiness import Readiness, check_readiness
from app.services.serving import ModelCache
from app.services.track_record_answers import TrackRecordAnswers
from app.services.upcoming import UpcomingBoards
from app.settings import Settings
from app.state import AppState, Session, app_state

# The dependencies below are async where they only read: a plain function dependency would
# be sent to the thread pool on every request.


def _state_of(request: Request) -> AppState:
    return app_state(request.scope.get("state", {}))


async def get_app_state(request: Request) -> AppState:
    return _state_of(request)


AppStateDep = Annotated[AppState, Depends(get_app_state)]


async def app_settings(state: AppStateDep) -> Settings:
    return state.settings


async def get_models(state: AppStateDep) -> ModelCache:
    return state.models


async def get_predictions(request: Request) -> PredictionService:
    # Straight from the request rather than through get_app_state: one level of dependencies
    # less, a few microseconds of every request.
    return _state_of(request).predictions


async def get_track_record_answers(request: Request) -> TrackRecordAnswers:
    return _state_of(request).track_record


async def get_upcoming_boards(request: Request) -> UpcomingBoards:
    # Straight from the request, as get_predictions: a dashboard polls these boards.
    return _state_of(request).upcoming


def get_session(state: AppStateDep) -> Iterator[Session]:
    """One session per request: committed if the endpoint returns, rolled back if it raises.

    Used with ``scope="function"`` so the commit happens before the response is sent; a
    client never sees success for work that was not committed.
    """
    yield from state.read_session()


def get_write_session(state: AppStateDep) -> Iterator[Session]:
    """Like :func:`get_session`, for endpoints that write (they take SQLite's write lock
    up front)."""
    yield from state.write_session()


class QueueRefit(Protocol):
    """Queue a refit run and start its process, or find the run already under way (see
    :func:`app.services.refit_runs.queue_refit`)."""

    def __call__(
        self, *, trigger: RunTrigger, until: dt.datetime | None = None
    ) -> refit_runs.QueuedRefit: ...


async def get_queue_refit(state: AppStateDep) -> QueueRefit:
    # The run is committed in a transaction of its own before its process starts, so the
    # service takes the write sessions rather than the request's session.
    return partial(refit_runs.queue_refit, state.write_sessions, state.settings)


# Whether the process is ready (see :func:`app.services.readiness.check_readiness`).
ReadinessCheck = Callable[[], Awaitable[Readiness]]


async def get_readiness_check(state: AppStateDep) -> ReadinessCheck:
    # The database is asked off the event loop, with a session of its own and a timeout.
    return partial(check_readiness, sessions=state.read_sessions, models=state.models)


async def received_now() -> dt.datetime:
    """The moment a request is handled: when the quotes it carries count as received (a
    test moves it by overriding this dependency)."""
    return dt.datetime.now(dt.UTC)


SettingsDep = Annotated[Settings, Depends(app_settings)]
ReceivedAtDep = Annotated[dt.datetime, Depends(received_now)]
ModelsDep = Annotated[ModelCache, Depends(get_models)]
PredictionsDep = Annotated[PredictionService, Depends(get_predictions)]
UpcomingBoardsDep = Annotated[UpcomingBoards, Depends(get_upcoming_boards)]
TrackRecordAnswersDep = Annotated[TrackRecordAnswers, Depends(get_track_record_answers)]
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
WriteSessionDep = Annotated[Session, Depends(get_write_session, scope="function")]
QueueRefitDep = Annotated[QueueRefit, Depends(get_queue_refit)]
ReadinessCheckDep = Annotated[ReadinessCheck, Depends(get_readiness_check)]


def page_window(default_limit: int) -> Callable[..., Awaitable[PageWindow]]:
    """A dependency reading ``limit`` (1 to the page_size_max setting; 422 above) and
    ``offset`` for a paginated list."""

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
            raise invalid(
                [
                    FieldError(
                        loc=["query", "limit"],
                        msg=f"limit must be at most {settings.page_size_max}",
                        type="less_than_equal",
                    )
                ]
            )
        return PageWindow(limit, offset)

    return window


JSON_MEDIA_TYPE = "application/json"


def _is_json(content_type: str) -> bool:
    if content_type == JSON_MEDIA_TYPE:
        return True  # as nearly every client sends it: no parsing
    media_type = content_type.partition(";")[0].strip().lower()
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def check_json_body(content_type: str | None, body: bytes) -> None:
    """The one rule of every endpoint that reads its body as JSON: the body must be sent as
    JSON (``application/json``, or a ``+json`` type), else 415, whatever it holds. An empty
    body needs no type.

    Without it a body sent as text or as a form would be read anyway by some endpoints and
    fail validation with a puzzling "Input should be a valid dictionary" on others.
    """
    if not body or (content_type is not None and _is_json(content_type)):
        return
    sent = f"not {content_type}" if content_type else "the request has no Content-Type"
    raise HTTPException(
        status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
        f"send the body as JSON (Content-Type: {JSON_MEDIA_TYPE}); {sent}",
    )


async def require_json(request: Request) -> None:
    """:func:`check_json_body`, as a dependency of the routes whose body FastAPI reads."""
    check_json_body(request.headers.get("content-type"), await request.body())


JSON_BODY = Depends(require_json)


def check_item_count(count: int, limit: int, loc: list[str | int], *, per: str = "request") -> None:
    """Refuse a list of more than ``limit`` items (422, the list named by ``loc``), once its
    body is read."""
    if count > limit:
        raise invalid(
            [
                FieldError(
                    loc=loc,
                    msg=f"at most {counted(limit, 'item')} per {per}, got {count}",
                    type="too_long",
                )
            ]
        )


def require_admin(
    settings: SettingsDep, api_key: Annotated[str | None, Security(admin_key_header)]
) -> None:
    """The admin key, checked (again: the middleware checked it first) and documented."""
    refusal = admin_key_refusal(settings.admin_api_key, api_key)
    if refusal is not None:
        raise refusal
