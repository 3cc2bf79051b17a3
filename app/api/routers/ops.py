"""Probes and metrics for operators: /health, /ready, /metrics (not part of the API docs)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import ModelsDep, ReadinessCheckDep
from app.api.schemas.ops import ReadinessOut
from app.domain.vocabulary import ReadyStatus
from app.metrics import exposition

router = APIRouter(include_in_schema=False)


@router.get("/health")
async def health() -> dict[str, str]:
    """The process is alive and answering. Never touches the database."""
    return {"status": "ok"}


@router.get("/ready", response_model=ReadinessOut)
async def ready(check_readiness: ReadinessCheckDep, response: Response) -> ReadinessOut:
    """Ready to serve: the database answers and the model state is loaded (503 and the
    cause otherwise)."""
    readiness = await check_readiness()
    if readiness.status is ReadyStatus.NOT_READY:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return ReadinessOut.model_validate(readiness)


@router.get("/metrics")
async def metrics(models: ModelsDep) -> Response:
    """Prometheus text format; with several workers, the sum over all of them."""
    body, content_type = exposition(models)
    return Response(body, media_type=content_type)
