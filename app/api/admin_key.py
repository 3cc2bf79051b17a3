"""The admin API's key: the header it comes in, the paths it guards, and the one check of it.

Every path under ``/admin`` needs it. :class:`app.api.middleware.AdminKeyMiddleware` checks
it before anything else of the request is looked at (the path's parameters, the query, the
body's size, type or content); the admin routers' dependency checks it again and documents
it in the API docs.
"""

from __future__ import annotations

import secrets

from fastapi import HTTPException, status
from fastapi.security import APIKeyHeader
from pydantic import SecretStr

ADMIN_KEY_HEADER = "X-API-Key"
ADMIN_PREFIX = "/admin"
admin_key_header = APIKeyHeader(
    name=ADMIN_KEY_HEADER,
    auto_error=False,
    description="The value of ODDSBOOST_ADMIN_API_KEY.",
)


def is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


def admin_key_refusal(expected: SecretStr | None, given: str | None) -> HTTPException | None:
    """Why a request with ``given`` as its key is refused (503 while the admin API is
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
    if not secrets.compare_digest(given.encode(), expected.get_secret_value().encode()):
        return HTTPException(status.HTTP_403_FORBIDDEN, f"wrong {ADMIN_KEY_HEADER}")
    return None
