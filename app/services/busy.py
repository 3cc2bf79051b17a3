"""A database too busy to take a write now, as the services report it to their callers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import OperationalError

from app.db.engine import is_database_locked

# How long a caller is asked to wait before sending the same write again.
RETRY_AFTER_SECONDS = 5


class DatabaseBusyError(RuntimeError):
    """Another writer held the database (SQLite's single write lock) for longer than the busy
    timeout: nothing was written, and the same request may succeed when sent again."""

    retry_after_seconds = RETRY_AFTER_SECONDS


@contextmanager
def busy_as_service_error() -> Iterator[None]:
    """Work inside the block whose "database is locked" driver error is raised as a
    :class:`DatabaseBusyError`; any other error passes unchanged."""
    try:
        yield
    except OperationalError as error:
        if not is_database_locked(error):
            raise
        raise DatabaseBusyError(
            "the database is busy with other writes (SQLite takes one writer at a time); "
            f"nothing was written, send the same request again in {RETRY_AFTER_SECONDS} s"
        ) from error
