"""The model versions behind the predictions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, status

from app.api.deps import SessionDep, page_window
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.model_versions import ModelVersionOut
from app.api.schemas.problems import INVALID, problem_responses
from app.services import model_versions
from app.services.pagination import PageWindow

router = APIRouter(prefix="/models", tags=["models"])


@router.get("", response_model=Page[ModelVersionOut], responses=problem_responses({422: INVALID}))
def list_models(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(20))],
) -> Page[ModelVersionOut]:
    """Model versions with their validation metrics, newest first."""
    return Page[ModelVersionOut].of(model_versions.list_versions(session, page))


@router.get(
    "/active",
    response_model=ModelVersionOut,
    responses=problem_responses({404: "No model has been fitted yet."}),
)
def get_active_model(session: SessionDep) -> ModelVersionOut:
    version = model_versions.active_version(session)
    if version is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            "no model has been fitted yet: run `oddsboost refit` or POST /admin/refit",
        )
    return ModelVersionOut.model_validate(version)


@router.get(
    "/{version_id}",
    response_model=ModelVersionOut,
    responses=problem_responses({404: "No such version.", 422: INVALID}),
)
def get_model(
    version_id: Annotated[
        int, Path(ge=1, le=MAX_ID, description="The version's id.", examples=[2])
    ],
    session: SessionDep,
) -> ModelVersionOut:
    version = model_versions.get_version(session, version_id)
    if version is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no model version {version_id}")
    return ModelVersionOut.model_validate(version)
