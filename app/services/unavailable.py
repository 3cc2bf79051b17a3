"""A request the service cannot take now but may take later, answered 503 with Retry-After:
its database busy or out of reach (``busy``), its worker at a limit (``admission``)."""

from __future__ import annotations

RETRY_AFTER_SECONDS = 5


class UnavailableError(RuntimeError):
    """The request could not be taken now; the same one may succeed after
    ``retry_after_seconds``."""

    retry_after_seconds = RETRY_AFTER_SECONDS
