"""A database that cannot take a request now, busy or unreachable, as services report it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from app.db.engine import is_database_locked, is_database_unreachable
from app.services.unavailable import RETRY_AFTER_SECONDS, UnavailableError

__all__ = [
    "RETRY_AFTER_SECONDS",
    "DatabaseBusyError",
    "DatabaseUnavailableError",
    "DatabaseUnreachableError",
    "unavailable_as_service_error",
]


class DatabaseUnavailableError(UnavailableError):
    """The database could not take the request now; the same one may succeed later."""


class DatabaseBusyError(DatabaseUnavailableError):
    """Another writer held SQLite's write lock past the busy timeout: nothing was written."""


class DatabaseUnreachableError(DatabaseUnavailableError):
    """No connection to the database could be had, or the one in use was lost."""


BUSY_DETAIL = (
    "the database is busy with other writes (SQLite takes one writer at a time); "
    f"nothing was written, send the same request again in {RETRY_AFTER_SECONDS} s"
)
POOL_DETAIL = (
    "every connection to the database is in use by other requests; "
    f"send the same request again in {RETRY_AFTER_SECONDS} s"
)
UNREACHABLE_DETAIL = (
    f"the database is not reachable now; send the same request again in {RETRY_AFTER_SECONDS} s"
)


@contextmanager
def unavailable_as_service_error() -> Iterator[None]:
    """A driver error saying the database is locked or unreachable, or a timed-out wait for a
    pooled connection, raised as the matching :class:`DatabaseUnavailableError`."""
    try:
        yield
    except PoolTimeoutError as error:
        raise DatabaseBusyError(POOL_DETAIL) from error
    except DBAPIError as error:
        if is_database_locked(error):
            raise DatabaseBusyError(BUSY_DETAIL) from error
        if is_database_unreachable(error):
            raise DatabaseUnreachableError(UNREACHABLE_DETAIL) from error
        raise
