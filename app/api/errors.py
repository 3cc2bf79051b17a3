"""Turn every error into one answer, a problem (:mod:`app.api.schemas.problems`), that says
what was wrong and where; the middleware writes the same body with :func:`problem_json`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic_core import to_json
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from app.api.schemas.ingest import MergeConfirmationProblem, MergePreviewOut
from app.api.schemas.problems import (
    PROBLEM_MEDIA_TYPE,
    FieldError,
    Problem,
    field_errors,
)
from app.domain.football_data import FileFormatError
from app.domain.records import CapturedInFutureError, TooManyBookmakersError
from app.services.teams import AliasConflictError, MergeNeedsConfirmationError, TeamNotFoundError
from app.services.unavailable import UnavailableError

INTERNAL_DETAIL = "the request failed unexpectedly; the error is logged"


def problem_json(problem: Problem) -> bytes:
    return to_json(problem)


def problem_response(problem: Problem, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        problem_json(problem),
        status_code=problem.status,
        headers=headers,
        media_type=PROBLEM_MEDIA_TYPE,
    )


def invalid(errors: Iterable[FieldError]) -> RequestValidationError:
    """Field errors found by a route's own checks, raised to be answered as any other 422."""
    return RequestValidationError([error.model_dump() for error in errors])


def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return problem_response(Problem.invalid(field_errors(exc.errors()), request.url.path))


def _undecodable_body(exc: HTTPException) -> str | None:
    """Why a JSON body could not be read, where FastAPI answers 400: 422, as for any other
    malformed body."""
    if exc.status_code != status.HTTP_400_BAD_REQUEST:
        return None
    if isinstance(exc.__cause__, UnicodeError):  # not text (not UTF-8, say)
        return f"JSON decode error: {exc.__cause__}"
    if isinstance(exc.__cause__, RecursionError):  # arrays or objects nested too deeply
        return "Invalid JSON: nested too deeply (recursion limit exceeded)"
    return None


def _detail(request: Request, exc: HTTPException) -> str:
    """The exception's message; the framework's bare status names are made to say more."""
    if exc.detail != HTTPStatus(exc.status_code).phrase:
        return str(exc.detail)
    if exc.status_code == status.HTTP_404_NOT_FOUND:
        return f"nothing at {request.url.path}"
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        allowed = (exc.headers or {}).get("Allow", "")
        return f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    return str(exc.detail)


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    undecodable = _undecodable_body(exc)
    if undecodable is not None:
        error = FieldError(loc=["body"], msg=undecodable, type="json_invalid")
        return problem_response(Problem.invalid([error], request.url.path))
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        exc = HTTPException(exc.status_code, exc.detail, {"Allow": _allowed_methods(request, exc)})
    problem = Problem.of(exc.status_code, _detail(request, exc), request.url.path)
    return problem_response(problem, exc.headers)


def _allowed_methods(request: Request, exc: HTTPException) -> str:
    """Every method the path takes: the router names only those of the first route that
    matched it (``/bets`` has a route for GET and another for POST), so the documented
    operations of every path template the path fits are added."""
    methods = {method.strip() for method in (exc.headers or {}).get("Allow", "").split(",")}
    app = request.scope.get("app")
    paths = app.openapi().get("paths", {}) if isinstance(app, FastAPI) else {}
    for template, operations in paths.items():
        if _template_pattern(template, _numbers(operations)).fullmatch(request.url.path):
            methods.update(method.upper() for method in operations if method != "parameters")
    return ", ".join(sorted(method for method in methods if method))


def _numbers(operations: Mapping[str, Any]) -> frozenset[str]:
    """The path parameters of ``operations`` that are integers (their routes take digits)."""
    return frozenset(
        parameter["name"]
        for operation in operations.values()
        if isinstance(operation, dict)
        for parameter in operation.get("parameters", [])
        if parameter.get("in") == "path" and parameter.get("schema", {}).get("type") == "integer"
    )


def _template_pattern(template: str, numbers: frozenset[str] = frozenset()) -> re.Pattern[str]:
    """A path template of the API docs as a pattern: ``{name}`` one segment (digits for one
    of ``numbers``: ``/bets/summary`` is not ``/bets/{bet_id}``), ``{name:path}`` the rest of
    the path."""
    pattern = re.sub(r"\\\{[^}:]+:path\\\}", ".+", re.escape(template))
    for name in numbers:
        pattern = pattern.replace(re.escape("{" + name + "}"), "[0-9]+")
    return re.compile(re.sub(r"\\\{[^}]+\\\}", "[^/]+", pattern))


def _handler(code: int) -> Callable[[Request, Exception], Response]:
    def handle(request: Request, exc: Exception) -> Response:
        return problem_response(Problem.of(code, str(exc), request.url.path))

    return handle


def _merge_needs_confirmation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MergeNeedsConfirmationError)
    conflict = status.HTTP_409_CONFLICT
    problem = MergeConfirmationProblem(
        **Problem.of(
            conflict, f'{exc}; send "confirm": true to merge them anyway', request.url.path
        ).model_dump(),
        preview=MergePreviewOut.model_validate(exc.preview),
    )
    return problem_response(problem)


def _captured_in_future(request: Request, exc: Exception) -> Response:
    """422 naming the field of each quote's capture time in the body."""
    assert isinstance(exc, CapturedInFutureError)
    errors = [
        FieldError(loc=["body", *quote.capture_path], msg=reason, type="value_error")
        for quote, reason in exc.reasons()
    ]
    return problem_response(Problem.invalid(errors, request.url.path))


def _unavailable(request: Request, exc: Exception) -> Response:
    # A database busy or unreachable, a worker at its limit: the same request may succeed
    # later, and Retry-After says when.
    assert isinstance(exc, UnavailableError)
    problem = Problem.of(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc), request.url.path)
    return problem_response(problem, {"Retry-After": str(exc.retry_after_seconds)})


def _client_gone(request: Request, _exc: Exception) -> Response:
    # Nobody receives this answer; it gives the request's log line a status, not a traceback.
    detail = "the connection closed before the request body was complete"
    return problem_response(Problem.of(status.HTTP_400_BAD_REQUEST, detail, request.url.path))


def internal_error(instance: str) -> Response:
    """A 500 that tells nothing of the error (which the request middleware logs)."""
    return problem_response(
        Problem.of(status.HTTP_500_INTERNAL_SERVER_ERROR, INTERNAL_DETAIL, instance)
    )


def _internal_error(request: Request, _exc: Exception) -> Response:
    # Reached only by a failure outside the request middleware, which answers and logs
    # every one below it; the server logs this one once the answer is sent.
    return internal_error(request.url.path)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(UnavailableError, _unavailable)
    app.add_exception_handler(CapturedInFutureError, _captured_in_future)
    app.add_exception_handler(FileFormatError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
    app.add_exception_handler(
        TooManyBookmakersError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT)
    )
    app.add_exception_handler(TeamNotFoundError, _handler(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(AliasConflictError, _handler(status.HTTP_409_CONFLICT))
    app.add_exception_handler(MergeNeedsConfirmationError, _merge_needs_confirmation)
    app.add_exception_handler(Exception, _internal_error)
