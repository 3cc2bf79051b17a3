"""The model versions behind the predictions, the history of their activations, and
activating one by hand (an admin endpoint)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, HTTPException, Path, status

from app.api.deps import (
    JSON_BODY,
    SessionDep,
    SettingsDep,
    WriteSessionDep,
    found,
    page_window,
    require_admin,
)
from app.api.schemas.common import MAX_ID, Page
from app.api.schemas.model_versions import (
    ActivatedOut,
    ActivateIn,
    ActivationOut,
    ModelVersionOut,
)
from app.api.schemas.problems import (
    ADMIN,
    INVALID,
    NOT_JSON,
    TOO_LARGE,
    UNAVAILABLE,
    problem_responses,
)
from app.domain.vocabulary import ActivatedBy
from app.services import model_versions
from app.services.pagination import PageWindow

router = APIRouter(prefix="/models", tags=["models"])
admin_router = APIRouter(
    prefix="/admin/models", tags=["admin"], dependencies=[Depends(require_admin)]
)
VersionId = Annotated[int, Path(ge=1, le=MAX_ID, description="The version's id.", examples=[2])]
# What a read of the versions may answer besides its success.
PAGE_ERRORS = problem_responses({422: INVALID, 503: UNAVAILABLE})


@router.get("", response_model=Page[ModelVersionOut], responses=PAGE_ERRORS)
def list_models(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(20))],
) -> Page[ModelVersionOut]:
    """Model versions with their validation metrics, newest first."""
    return Page[ModelVersionOut].of(model_versions.list_versions(session, page))


@router.get("/activations", response_model=Page[ActivationOut], responses=PAGE_ERRORS)
def list_activations(
    session: SessionDep,
    page: Annotated[PageWindow, Depends(page_window(20))],
) -> Page[ActivationOut]:
    """Every time a version became the active one (by a refit or an operator), newest first."""
    return Page[ActivationOut].of(model_versions.list_activations(session, page))


@router.get(
    "/active",
    response_model=ModelVersionOut,
    responses=problem_responses({404: "No model has been fitted yet.", 503: UNAVAILABLE}),
)
def get_active_model(session: SessionDep) -> ModelVersionOut:
    version = model_versions.active_version(session)
    detail = "no model has been fitted yet: run `oddsboost refit` or POST /admin/refit"
    return ModelVersionOut.model_validate(found(version, detail))


@router.get(
    "/{version_id}",
    response_model=ModelVersionOut,
    responses=problem_responses({404: "No such version.", 422: INVALID, 503: UNAVAILABLE}),
)
def get_model(version_id: VersionId, session: SessionDep) -> ModelVersionOut:
    version = model_versions.get_version(session, version_id)
    return ModelVersionOut.model_validate(found(version, f"no model version {version_id}"))


@admin_router.post(
    "/{version_id}/activate",
    response_model=ActivatedOut,
    dependencies=[JSON_BODY],
    responses=problem_responses(
        ADMIN, {404: "No such version.", 413: TOO_LARGE, 415: NOT_JSON, 422: INVALID}
    ),
)
def activate_model(
    version_id: VersionId,
    session: WriteSessionDep,
    settings: SettingsDep,
    body: Annotated[ActivateIn | None, Body()] = None,
) -> ActivatedOut:
    """Make a stored version the active one, to roll back or forward; the activation is
    recorded with the reason given.

    Any version may be activated, a rejected one too. One fitted with another phase or
    de-margining method than the settings' is activated all the same, and the answer's
    ``warnings`` say what follows. Every worker serves it within
    ODDSBOOST_MODEL_REFRESH_SECONDS.
    """
    try:
        activation = model_versions.activate_version(
            session,
            version_id,
            by=ActivatedBy.API,
            reason=None if body is None else body.reason,
            settings=settings,
        )
    except model_versions.VersionNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(error)) from None
    return ActivatedOut.model_validate(activation)
