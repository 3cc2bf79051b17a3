"""Admin endpoints of the feeds: follow the fetches of fixtures, odds and results."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from app.api.deps import SessionDep, found, page_window, require_admin
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.fetches import FetchRunOut
from app.api.schemas.problems import ADMIN, INVALID, problem_responses
from app.domain.vocabulary import FetchSource
from app.services import fetch_runs
from app.services.pagination import PageWindow

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


@router.get(
    "/fetches",
    response_model=Page[FetchRunOut],
    responses=problem_responses(ADMIN, {422: INVALID}),
)
def list_fetches(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(20))],
    source: Annotated[FetchSource | None, Query(description="One feed's runs only.")] = None,
) -> Page[FetchRunOut]:
    """Fetch runs, newest first: source, start and end, status, counts, quota left, error."""
    return Page[FetchRunOut].of(fetch_runs.latest_fetches(session, page, source))


@router.get(
    "/fetches/{run_id}",
    response_model=FetchRunOut,
    responses=problem_responses(ADMIN, {404: "No such run.", 422: INVALID}),
)
def get_fetch(
    run_id: Annotated[int, Path(ge=1, le=MAX_ID, description="The run's id.", examples=[12])],
    session: SessionDep,
) -> FetchRunOut:
    run = fetch_runs.get_fetch(session, run_id)
    return FetchRunOut.model_validate(found(run, f"no fetch run {run_id}"))
