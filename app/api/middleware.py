"""ASGI middleware: request ids, logs and metrics, the admin key checked first, body
limits, and NUL characters refused in paths and queries.

Each runs on every request, so each works on the raw ASGI scope.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from secrets import compare_digest, token_hex
from urllib.parse import parse_qsl

from fastapi import HTTPException, status
from fastapi.responses import HTMLResponse, Response
from fastapi.security import APIKeyHeader
from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import internal_error, problem_json, problem_response
from app.api.schemas.problems import FieldError, Problem
from app.domain.wording import counted
from app.logs import REQUEST_ID
from app.metrics import observe_request

access_log = logging.getLogger("oddsboost.access")
error_log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_KEY = REQUEST_ID_HEADER.lower().encode("latin-1")
_REQUEST_ID_NAME = REQUEST_ID_HEADER.encode("latin-1")
# A caller's own request id is kept only if it is short and plain.
_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Probes are logged at DEBUG so that they do not drown the request log.
QUIET_PATHS = frozenset({"/health", "/ready", "/metrics"})


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header (``name`` in lower case, as ASGI gives it)."""
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


class RequestMiddleware:
    """Gives every request an id (the caller's X-Request-ID if it is plain and holds none of
    ``secrets``), returns it, logs the request and counts it by route template. An
    unexpected failure below is logged and answered with the 500 problem under that id."""

    def __init__(self, app: ASGIApp, secrets: Sequence[str] = ()) -> None:
        self.app = app
        self.secrets = [secret for secret in secrets if secret]

    def _request_id(self, scope: Scope) -> str:
        given = header(scope, _REQUEST_ID_KEY)
        if (
            given
            and _CLIENT_ID.match(given)
            and not any(secret in given for secret in self.secrets)
        ):
            return given
        return token_hex(16)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = self._request_id(scope)
        encoded_id = request_id.encode("latin-1")
        token = REQUEST_ID.set(request_id)
        status_code: int | None = None  # until the answer begins
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = message["status"]
                message["headers"] = [*message.get("headers", ()), (_REQUEST_ID_NAME, encoded_id)]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # Answered and logged here, where the request id is known: Starlette's own
            # handler of last resort sits outside this middleware, and the server logs
            # what escapes the application after the id is gone.
            if status_code is not None:
                # Too late for another answer: the server drops the connection and logs the
                # traceback; this line ties it to the request id.
                error_log.error(
                    "%s %s failed after its answer began", scope["method"], scope["path"]
                )
                raise
            error_log.exception("%s %s failed unexpectedly", scope["method"], scope["path"])
            await internal_error(scope["path"])(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope["method"]
            observe_request(method, template, status_code or 500, elapsed)
            _log_request(scope["path"], method, template, status_code or 500, elapsed)
            REQUEST_ID.reset(token)


def _log_request(path: str, method: str, template: str, status_code: int, elapsed: float) -> None:
    level = logging.DEBUG if path in QUIET_PATHS else logging.INFO
    if not access_log.isEnabledFor(level):
        return
    # The record is made and handled as ``Logger.log`` would, without looking up the
    # caller's frame: the line's source is always this function.
    record = access_log.makeRecord(
        access_log.name,
        level,
        __file__,
        0,
        "%s %s %s %.1fms",
        (method, path, status_code, elapsed * 1000),
        None,
        "_log_request",
        {
            "method": method,
            "path": path,
            "route": template,
            "status": status_code,
            "duration_ms": round(elapsed * 1000, 2),
        },
    )
    access_log.handle(record)


class NulCharacterMiddleware:
    """Refuses a path or query parameter holding a NUL character with 422: PostgreSQL's
    text cannot hold one, so it is refused where it comes in, on every backend (bodies
    are checked by their fields)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            errors = _nul_errors(scope)
            if errors:
                problem = Problem.invalid(errors, _printable(scope["path"]))
                await problem_response(problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)


_NUL_MESSAGE = "Value error, must not contain a NUL character (\\x00)"


def _nul_errors(scope: Scope) -> list[FieldError]:
    errors: list[FieldError] = []
    if "\x00" in scope["path"]:
        errors.append(FieldError(loc=["path"], msg=_NUL_MESSAGE, type="value_error"))
    query: bytes = scope.get("query_string", b"")
    if b"%00" in query:
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                errors.append(FieldError(loc=["query", name], msg=_NUL_MESSAGE, type="value_error"))
    return errors


ADMIN_KEY_HEADER = "X-API-Key"
_ADMIN_KEY = ADMIN_KEY_HEADER.lower().encode("latin-1")
# What the admin routers' dependency reads, to check the key again and document it.
admin_key_header = APIKeyHeader(
    name=ADMIN_KEY_HEADER, auto_error=False, description="The value of ODDSBOOST_ADMIN_API_KEY."
)


def admin_key_refusal(expected: SecretStr | None, given: str | None) -> HTTPException | None:
    """Why a request with ``given`` as its admin key is refused (503 while the admin API is
    disabled, 401 without a key, 403 with a wrong one), or None when it may go on."""
    if expected is None:
        return HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "admin API disabled: set ODDSBOOST_ADMIN_API_KEY",
        )
    if not given:
        return HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            f"missing {ADMIN_KEY_HEADER} header",
            headers={"WWW-Authenticate": "ApiKey"},
        )
    if not compare_digest(given.encode(), expected.get_secret_value().encode()):
        return HTTPException(status.HTTP_403_FORBIDDEN, f"wrong {ADMIN_KEY_HEADER}")
    return None


def basic_password(authorization: str | None) -> str | None:
    """The password of HTTP Basic credentials (``Authorization: Basic base64(user:password)``,
    any user name), or None when the header holds none."""
    scheme, _, encoded = (authorization or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _user, colon, password = decoded.partition(":")
    return password if colon else None


def page_admin_key(api_key: str | None, authorization: str | None) -> str | None:
    """The admin key a dashboard page's request gives: its X-API-Key header, else the password
    of its HTTP Basic credentials (a browser has no other way to send it)."""
    return api_key or basic_password(authorization)


# The paths the admin key guards: the admin API, the bettor's book and the alerts' log; and
# the dashboard's pages it guards, which also take it as the password of Basic credentials.
GUARDED_PREFIXES = ("/admin/", "/bets/", "/alerts/")
GUARDED_PAGE_PREFIXES = ("/dashboard/bets/",)
BETS_REALM = 'Basic realm="oddsboost bets", charset="UTF-8"'
_PAGE_HEADERS = {
    "Cache-Control": "private, no-store",
    "Content-Security-Policy": "default-src 'none'",
    "X-Content-Type-Options": "nosniff",
}
_SIGN_IN = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} · oddsboost'
    '</title></head><body><h1>{title}</h1><p>{text}</p><p><a href="/dashboard">The board'
    "</a> is public.</p></body></html>"
)


def page_refusal(refusal: HTTPException) -> Response:
    """A guarded page's answer to a refused request, in HTML: 503 while the admin key is not
    configured, else 401 asking the browser for Basic credentials (a wrong key too, so that
    the browser asks again)."""
    if refusal.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
        text = (
            "Bets are off: the operator has not set ODDSBOOST_ADMIN_API_KEY, which guards "
            "the bettor's book (the API's <code>/bets</code> answer 503 too)."
        )
        body = _SIGN_IN.format(title="Bets are off", text=text)
        return HTMLResponse(body, refusal.status_code, headers=_PAGE_HEADERS)
    text = (
        "Your bets are private. Sign in with any user name and the admin key "
        "(ODDSBOOST_ADMIN_API_KEY) as the password, or send the key in the "
        f"{ADMIN_KEY_HEADER} header."
    )
    headers = _PAGE_HEADERS | {"WWW-Authenticate": BETS_REALM}
    body = _SIGN_IN.format(title="Sign in to see your bets", text=text)
    return HTMLResponse(body, status.HTTP_401_UNAUTHORIZED, headers=headers)


class AdminKeyMiddleware:
    """Checks the admin key of every request under ``/admin``, ``/bets`` or
    ``/dashboard/bets`` before its path, query or body are looked at; the page takes it from
    HTTP Basic credentials too, and is refused in HTML (:func:`page_refusal`)."""

    def __init__(self, app: ASGIApp, admin_api_key: SecretStr | None) -> None:
        self.app = app
        self.admin_api_key = admin_api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # "/admin", "/bets" and "/dashboard/bets" themselves and every path under them.
        if scope["type"] == "http":
            path = f"{scope['path']}/"
            if path.startswith(GUARDED_PREFIXES):
                refusal = admin_key_refusal(self.admin_api_key, header(scope, _ADMIN_KEY))
                if refusal is not None:
                    instance = _printable(scope["path"])
                    problem = Problem.of(refusal.status_code, refusal.detail, instance)
                    await problem_response(problem, refusal.headers)(scope, receive, send)
                    return
            elif path.startswith(GUARDED_PAGE_PREFIXES):
                given = page_admin_key(header(scope, _ADMIN_KEY), header(scope, b"authorization"))
                refusal = admin_key_refusal(self.admin_api_key, given)
                if refusal is not None:
                    await page_refusal(refusal)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _printable(text: str) -> str:
    """A path as a problem's instance repeats it: a NUL character written as %00, as sent."""
    return text.replace("\x00", "%00")


def _size(limit: int) -> str:
    return f"{limit / 1024 / 1024:.1f} MiB" if limit >= 1024 * 1024 else f"{limit / 1024:.0f} KiB"


class BodyLimitMiddleware:
    """Refuses request bodies above a limit (by the longest matching path prefix, else the
    default) with 413: a declared Content-Length before anything is read, a chunked body
    as soon as the bytes received pass the limit."""

    def __init__(self, app: ASGIApp, default_limit: int, limits: Mapping[str, int]) -> None:
        self.app = app
        self.default_limit = default_limit
        self.limits = sorted(limits.items(), key=lambda item: -len(item[0]))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        matching = (limit for prefix, limit in self.limits if scope["path"].startswith(prefix))
        limit = next(matching, self.default_limit)
        declared = header(scope, b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                too_large = status.HTTP_413_CONTENT_TOO_LARGE
                problem = Problem.of(too_large, _too_large(limit), scope["path"])
                await problem_response(problem, {"connection": "close"})(scope, receive, send)
                return
            if header(scope, b"transfer-encoding") is None:
                # The server hands over no more than the declared length: nothing to count.
                await self.app(scope, receive, send)
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Raised where the body is read; the error handlers answer it.
                    raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, _too_large(limit))
            return message

        await self.app(scope, limited_receive, send)


def _too_large(limit: int) -> str:
    return f"request body too large: at most {counted(limit, 'byte')} ({_size(limit)}) here"


def error_body(status_code: int, detail: str, instance: str) -> bytes:
    """The problem body of an error answered before the application runs."""
    return problem_json(Problem.of(status_code, detail, instance))
