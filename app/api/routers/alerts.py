"""The delivery log of alerts to webhook receivers (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app.api.deps import SessionDep, page_window, require_admin
from app.api.schemas.alerts import DeliveryOut
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.problems import ADMIN, INVALID, problem_responses
from app.domain.alerts import DeliveryStatus
from app.services import alerts
from app.services.pagination import PageWindow

router = APIRouter(prefix="/alerts", tags=["admin"], dependencies=[Depends(require_admin)])


@router.get(
    "/deliveries",
    response_model=Page[DeliveryOut],
    responses=problem_responses(ADMIN, {422: INVALID}),
)
def list_deliveries(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(50))],
    status: Annotated[
        DeliveryStatus | None,
        Query(description="pending, delivered or failed.", examples=["failed"]),
    ] = None,
    flag_id: Annotated[
        int | None,
        Query(ge=1, le=MAX_ID, description="The deliveries of one flag.", examples=[4]),
    ] = None,
) -> Page[DeliveryOut]:
    """Every alert to every receiver, newest first: its message, where it stands, and each
    attempt with the receiver's answer (or why none came) and when the next is due."""
    filters = alerts.DeliveryFilter(status, flag_id)
    return Page[DeliveryOut].of(alerts.list_deliveries(session, filters, page))
