"""Admin endpoints of refits: start one in its own process, follow the runs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, HTTPException, Path, Response, status

from app.api.deps import JSON_BODY, QueueRefitDep, SessionDep, found, page_window, require_admin
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.problems import ADMIN, INVALID, NOT_JSON, TOO_LARGE, problem_responses
from app.api.schemas.refits import RefitAccepted, RefitIn, RefitRunOut
from app.domain.vocabulary import RunTrigger
from app.services import refit_runs
from app.services.pagination import PageWindow

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


@router.post(
    "/refit",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RefitAccepted,
    response_model_exclude_none=True,
    dependencies=[JSON_BODY],
    responses={
        200: {
            "description": "A refit was already queued or running: that run, and no new one.",
            "model": RefitAccepted,
        },
        **problem_responses(
            ADMIN,
            {
                413: TOO_LARGE,
                415: NOT_JSON,
                422: INVALID,
                503: "Admin API disabled (ODDSBOOST_ADMIN_API_KEY is not set), or the refit "
                "process could not be started. Or the database is busy with other writes "
                "(nothing was written) or cannot be reached: Retry-After says when to send "
                "the request again.",
            },
        ),
    },
)
def post_refit(
    queue_refit: QueueRefitDep,
    response: Response,
    body: Annotated[RefitIn | None, Body()] = None,
) -> RefitAccepted:
    """Start a refit in a separate process and answer at once with its run id (202).

    While a refit is queued or running, answer with that run instead (200) and start none.
    Follow it at ``GET /admin/refits/{id}``.
    """
    try:
        queued = queue_refit(trigger=RunTrigger.API, until=None if body is None else body.until)
    except refit_runs.RefitNotStartedError as error:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(error)) from None
    if not queued.started:
        response.status_code = status.HTTP_200_OK
    return RefitAccepted.of(queued)


@router.get(
    "/refits", response_model=Page[RefitRunOut], responses=problem_responses(ADMIN, {422: INVALID})
)
def list_refits(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(20))],
) -> Page[RefitRunOut]:
    """Refit runs, newest first."""
    return Page[RefitRunOut].of(refit_runs.latest_runs(session, page))


@router.get(
    "/refits/{run_id}",
    response_model=RefitRunOut,
    responses=problem_responses(ADMIN, {404: "No such run.", 422: INVALID}),
)
def get_refit(
    run_id: Annotated[int, Path(ge=1, le=MAX_ID, description="The run's id.", examples=[7])],
    session: SessionDep,
) -> RefitRunOut:
    run = refit_runs.get_run(session, run_id)
    return RefitRunOut.model_validate(found(run, f"no refit run {run_id}"))
