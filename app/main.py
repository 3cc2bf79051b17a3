"""The ASGI application: ``create_app(settings)`` builds it; nothing connects at import time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from sqlalchemy.exc import SQLAlchemyError

import app as package
from app.api.errors import install_error_handlers
from app.api.middleware import (
    REQUEST_ID_HEADER,
    AdminKeyMiddleware,
    BodyLimitMiddleware,
    NulCharacterMiddleware,
    RequestMiddleware,
)
from app.api.openapi import DocumentedAPI, install_docs
from app.api.routers import (
    admin,
    alerts,
    bet_book,
    bets,
    dashboard,
    fetches,
    flags,
    models,
    ops,
    performance,
    predict,
    public,
    refits,
    upcoming,
    value_bets,
)
from app.domain.bet_csv import MAX_IMPORT_BYTES
from app.logs import secrets_of
from app.services.admission import Endpoints
from app.services.alerts import AlertSender
from app.services.serving import ModelCache
from app.services.upcoming import default_query
from app.settings import Settings, get_settings
from app.state import AppState, LifespanState

log = logging.getLogger(__name__)

DESCRIPTION = """
Football 1X2 forecasts from bookmakers' odds. Each bookmaker is treated as an
already-trained weak hypothesis of AdaBoost.M2; the service stores matches and odds,
learns how much to trust each bookmaker, and serves ensemble probabilities.

Admin endpoints need the `X-API-Key` header (the value of `ODDSBOOST_ADMIN_API_KEY`).
Timestamps are ISO 8601; one without an offset is taken as UTC.

Every error is answered as RFC 9457 problem details (`application/problem+json`): `type`,
`title`, `status`, `detail`, `instance`, and `errors`, each field that was wrong with its
location (`loc`), message and kind.

Every endpoint that takes a JSON body takes it only as JSON: a body sent with another
`Content-Type` (`text/plain`, `application/xml`, a form), or with none, gets 415. A body that
is not valid JSON (not UTF-8, cut short, nested too deeply) gets 422 with `type`
`json_invalid`, on every endpoint. An admin endpoint checks `X-API-Key` before it reads
anything else of the request. Paths are matched as written: a trailing slash is not
redirected. While the database cannot be reached, an endpoint that needs it answers 503 with
`Retry-After`; so does an expensive endpoint (the board, the track record, the dashboard's
pages, a batch) while the worker is serving as many requests of its kind as it serves at once
and none finishes within a few seconds.
"""


async def _keep_model_fresh(
    cache: ModelCache, interval: float, on_activation: Callable[[], Awaitable[None]]
) -> None:
    """Pick up a newly activated model version within ``interval`` seconds, off the event
    loop; a failed check keeps the current model, and the next one tries again."""
    # A thread of its own (as the cache has a connection of its own): never queued behind
    # the requests' work on the shared threads.
    refreshing = ThreadPoolExecutor(1, "model-refresh")
    loop = asyncio.get_running_loop()
    try:
        while True:
            await asyncio.sleep(interval)
            try:
                activated = await loop.run_in_executor(refreshing, cache.refresh)
            except Exception:
                log.exception("could not check for a new model version; keeping the current one")
                continue
            if activated:
                await on_activation()
    finally:
        refreshing.shutdown(wait=False)


async def _warm_board(state: AppState) -> None:
    """Brings the default board up to date (at start, after a model activation) so that no
    viewer waits for its build; if it cannot, the first viewer builds it."""
    if not state.settings.warm_board:
        return
    try:
        # A place of the board's like any viewer's: the build holds a connection of the pool
        # the limits share out.
        async with state.admission.admitted(Endpoints.BOARD):
            await state.upcoming.warm(default_query(state.settings))
    except Exception as error:
        log.warning("could not build the board of upcoming matches in advance: %s", error)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[LifespanState]:
        state = AppState.open(settings)
        try:
            state.models.refresh()
        except SQLAlchemyError:
            # Serve anyway (inline predictions need no database); /ready says why it is not
            # ready, and the refresher keeps trying.
            log.exception("could not read the active model; will retry")
        # A thread of its own, not a job of the scheduler: the alerts of this server's
        # writes leave as they commit, whether or not a scheduler runs.
        sender = (
            AlertSender(settings).start() if settings.alert_urls and settings.alert_sender else None
        )
        warming = asyncio.create_task(_warm_board(state))
        refresher = asyncio.create_task(
            _keep_model_fresh(
                state.models, settings.model_refresh_seconds, lambda: _warm_board(state)
            )
        )
        try:
            yield {"app_state": state}
        finally:
            for task in (warming, refresher):
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            if sender is not None:
                await asyncio.to_thread(sender.stop)
            state.close()

    app = DocumentedAPI(
        settings,
        title="oddsboost",
        version=package.__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        # A redirect to the path with or without its slash would be built from the Host
        # header the client sent, naming whatever site the client chose.
        redirect_slashes=False,
    )
    install_error_handlers(app)
    app.include_router(predict.router)
    install_docs(app)
    app.include_router(models.router)
    app.include_router(models.admin_router)
    app.include_router(public.router)
    app.include_router(value_bets.router)
    app.include_router(flags.router)
    # Before the router of /bets/{bet_id}: /bets/import, /bets/export and /bets/summary are
    # not bets' ids.
    app.include_router(bet_book.router)
    # After the routes of /bets/... with names of their own: a bet's id is a number.
    app.include_router(bets.router)
    app.include_router(performance.router)
    app.include_router(upcoming.router)
    app.include_router(admin.router)
    app.include_router(refits.router)
    app.include_router(fetches.router)
    app.include_router(alerts.router)
    app.include_router(ops.router)
    app.include_router(dashboard.router)
    # Added innermost first: the request middleware is outermost, so every answer (a 413,
    # a CORS preflight, an error) is logged and counted with its request id.
    app.add_middleware(
        BodyLimitMiddleware,
        default_limit=settings.body_limit_bytes,
        limits={
            "/admin/import/": settings.import_body_limit_bytes,
            "/bets/import": MAX_IMPORT_BYTES,
            # As many items as a request may hold must fit in its body.
            "/admin/odds": settings.admin_json_body_limit_bytes,
            "/admin/results": settings.admin_json_body_limit_bytes,
        },
    )
    app.add_middleware(NulCharacterMiddleware)
    # Outside the checks of a request's path, query and body: a caller without the key
    # learns nothing of them.
    app.add_middleware(AdminKeyMiddleware, admin_api_key=settings.admin_api_key)
    if settings.cors_allow_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_allow_origins,
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            # A dashboard on another origin polls /upcoming with If-None-Match.
            allow_headers=["Content-Type", "X-API-Key", REQUEST_ID_HEADER, "If-None-Match"],
            expose_headers=[REQUEST_ID_HEADER, "ETag"],
            max_age=600,
        )
    app.add_middleware(RequestMiddleware, secrets=secrets_of(settings))
    return app
