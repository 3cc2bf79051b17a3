"""Probes and metrics for operators: /health, /ready, /metrics (not part of the API docs)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.metrics import exposition
from app.services.serving import ModelCache

router = APIRouter(include_in_schema=False)

# /ready gives up on a database that does not answer within this many seconds.
READY_TIMEOUT_SECONDS = 3.0


@router.get("/health")
async def health() -> dict[str, str]:
    """The process is alive and answering. Never touches the database."""
    return {"status": "ok"}


def _ping(request: Request) -> None:
    with request.app.state.engine.connect() as connection:
        connection.execute(text("SELECT 1"))


@router.get("/ready")
async def ready(request: Request) -> JSONResponse:
    """Ready to serve: the database answers and the model state is loaded.

    "No model fitted yet" is a ready state (predictions are then the consensus, labelled
    so); a database that does not answer, or a model state never read, is not.
    """
    problems: dict[str, Any] = {}
    try:
        await asyncio.wait_for(run_in_threadpool(_ping, request), READY_TIMEOUT_SECONDS)
        database = "ok"
    except TimeoutError:
        database = problems["database"] = (
            f"the database did not answer within {READY_TIMEOUT_SECONDS:.0f} s"
        )
    except SQLAlchemyError as error:
        database = problems["database"] = f"the database is not reachable: {type(error).__name__}"
    cache: ModelCache = request.app.state.models
    ensemble = cache.ensemble
    if not cache.loaded:
        model: dict[str, Any] = {"state": "unknown"}
        problems["model"] = "the active model has not been read from the database yet"
    elif ensemble is None:
        model = {"state": "none", "detail": "no model fitted yet: predictions are the consensus"}
    else:
        model = {"state": "loaded", "version": ensemble.version}
    body = {
        "status": "not ready" if problems else "ready",
        "database": database,
        "model": model,
        **({"problems": problems} if problems else {}),
    }
    code = status.HTTP_503_SERVICE_UNAVAILABLE if problems else status.HTTP_200_OK
    return JSONResponse(body, status_code=code)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus text format; with several workers, the sum over all of them."""
    body, content_type = exposition(request.app.state.models)
    return Response(body, media_type=content_type)
