"""Turn domain errors into HTTP answers that say what was wrong and where."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.api.schemas.ingest import MergePreviewOut
from app.domain.football_data import FileFormatError
from app.services.teams import AliasConflictError, MergeNeedsConfirmationError, TeamNotFoundError


def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # Keep location, message and type; drop the echoed input, which for a list that is too
    # long would be the whole request body.
    errors: list[dict[str, Any]] = [
        {
            "loc": list(error.get("loc", ())),
            "msg": error.get("msg", ""),
            "type": error.get("type", ""),
        }
        for error in exc.errors()
    ]
    return JSONResponse(
        status_code=status.HTTP_422_UNPROCESSABLE_CONTENT,
        content=jsonable_encoder({"detail": errors}),
    )


def _handler(code: int) -> Any:
    def handle(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=code, content={"detail": str(exc)})

    return handle


def _merge_needs_confirmation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MergeNeedsConfirmationError)
    return JSONResponse(
        status_code=status.HTTP_409_CONFLICT,
        content={
            "detail": f'{exc}; send "confirm": true to merge them anyway',
            "preview": MergePreviewOut.model_validate(exc.preview).model_dump(mode="json"),
        },
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(FileFormatError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
    app.add_exception_handler(TeamNotFoundError, _handler(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(AliasConflictError, _handler(status.HTTP_409_CONFLICT))
    app.add_exception_handler(MergeNeedsConfirmationError, _merge_needs_confirmation)
