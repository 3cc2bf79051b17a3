"""Turn domain errors into HTTP answers that say what was wrong and where."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from app.api.schemas.common import ERRORS_SHOWN
from app.api.schemas.ingest import MergePreviewOut
from app.domain.football_data import FileFormatError
from app.domain.records import TooManyBookmakersError
from app.domain.wording import counted
from app.services.busy import DatabaseBusyError
from app.services.teams import AliasConflictError, MergeNeedsConfirmationError, TeamNotFoundError


def shown_errors(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each error's location, message and type, the first :data:`ERRORS_SHOWN` of them, and
    then, if there were more, one that says how many more were left out.

    The echoed input is dropped: for a list that is too long it would be the whole body.
    """
    shown: list[dict[str, Any]] = [
        {
            "loc": list(error.get("loc", ())),
            "msg": error.get("msg", ""),
            "type": error.get("type", ""),
        }
        for error in errors[:ERRORS_SHOWN]
    ]
    if len(errors) > ERRORS_SHOWN:
        more = counted(len(errors) - ERRORS_SHOWN, "more error")
        shown.append({"loc": [], "msg": f"{more} not shown", "type": "too_many_errors"})
    return shown


def validation_error_response(errors: Sequence[Mapping[str, Any]]) -> JSONResponse:
    """The 422 answer of invalid input: where each error is and what it says."""
    return JSONResponse(
        status_code=status.HTTP_422_UNPROCESSABLE_CONTENT,
        content=jsonable_encoder({"detail": shown_errors(errors)}),
    )


def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return validation_error_response(exc.errors())


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


def _busy(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DatabaseBusyError)
    return JSONResponse(
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        content={"detail": str(exc)},
        headers={"Retry-After": str(exc.retry_after_seconds)},
    )


def _client_gone(_request: Request, _exc: Exception) -> JSONResponse:
    # Nobody receives this answer; it gives the request's log line a status, not a traceback.
    return JSONResponse(
        status_code=status.HTTP_400_BAD_REQUEST,
        content={"detail": "the connection closed before the request body was complete"},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(DatabaseBusyError, _busy)
    app.add_exception_handler(FileFormatError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
    app.add_exception_handler(
        TooManyBookmakersError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT)
    )
    app.add_exception_handler(TeamNotFoundError, _handler(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(AliasConflictError, _handler(status.HTTP_409_CONFLICT))
    app.add_exception_handler(MergeNeedsConfirmationError, _merge_needs_confirmation)
