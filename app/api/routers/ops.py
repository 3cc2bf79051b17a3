"""Probes and metrics for operators: /health, /ready, /metrics (not part of the API docs)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response, status
from fastapi.responses import JSONResponse

from app.api.deps import ModelsDep, ReadinessCheckDep
from app.metrics import exposition
from app.services.readiness import NO_MODEL_DETAIL, ModelReadiness

router = APIRouter(include_in_schema=False)


@router.get("/health")
async def health() -> dict[str, str]:
    """The process is alive and answering. Never touches the database."""
    return {"status": "ok"}


def _model_body(model: ModelReadiness) -> dict[str, Any]:
    if model.state == "loaded":
        return {"state": "loaded", "version": model.version}
    if model.state == "none":
        return {"state": "none", "detail": NO_MODEL_DETAIL}
    return {"state": "unknown"}


@router.get("/ready")
async def ready(check_readiness: ReadinessCheckDep) -> JSONResponse:
    """Ready to serve: the database answers and the model state is loaded (503 and the
    cause otherwise)."""
    readiness = await check_readiness()
    problems = readiness.problems
    body = {
        "status": "not ready" if problems else "ready",
        "database": readiness.database_problem or "ok",
        "model": _model_body(readiness.model),
        **({"problems": problems} if problems else {}),
    }
    code = status.HTTP_503_SERVICE_UNAVAILABLE if problems else status.HTTP_200_OK
    return JSONResponse(body, status_code=code)


@router.get("/metrics")
async def metrics(models: ModelsDep) -> Response:
    """Prometheus text format; with several workers, the sum over all of them."""
    body, content_type = exposition(models)
    return Response(body, media_type=content_type)
