"""A database that cannot take a request now, busy or unreachable, as the services report it
to their callers: the same request may succeed when sent again a little later."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from app.db.engine import is_database_locked, is_database_unreachable

# How long a caller is asked to wait before sending the same request again.
RETRY_AFTER_SECONDS = 5


class DatabaseUnavailableError(RuntimeError):
    """The database could not take the request now; ``retry_after_seconds`` says when to
    send it again."""

    retry_after_seconds = RETRY_AFTER_SECONDS


class DatabaseBusyError(DatabaseUnavailableError):
    """Another writer held the database (SQLite's single write lock) for longer than the busy
    timeout: nothing was written, and the same request may succeed when sent again."""


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
    """Work inside the block whose driver error says the database is locked or unreachable
    is raised as a :class:`DatabaseBusyError` or a :class:`DatabaseUnreachableError`, as is
    a wait for a pooled connection that timed out; any other error passes unchanged."""
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
