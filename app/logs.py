"""Logging: one configuration for the server, its workers and the commands.

JSON lines (one object per line) outside development, readable text in development. Every
line written while a request is handled carries that request's id. As a second line of
defence, the configured secrets (the admin key, The Odds API's key, a database password)
are replaced by ``***`` in every field of every line, whatever wrote it.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import functools
import json
import logging
import logging.config
from collections.abc import Mapping
from enum import Enum
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from app.db.engine import DatabaseUrlError, read_database_url, unreadable_password
from app.settings import Settings

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
REDACTED = "***"


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (or None) to every record, and drops uvicorn's terminal-colour
    copy of its messages, which only clutters JSON lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        record.__dict__.pop("color_message", None)
        return True


# What every LogRecord has; anything else on a record came as ``extra`` and is written too.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "color_message",
    "taskName",
}


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record: ``time``, ``level``, ``logger``, ``message``,
    ``request_id``, the traceback if any, then every ``extra`` field.

    Written here rather than with a general-purpose JSON formatter because every request
    writes a line, and this one costs a third as much. The time text is made once per
    second.
    """

    def __init__(self, datefmt: str = "%Y-%m-%dT%H:%M:%S%z") -> None:
        super().__init__(datefmt=datefmt)
        self._second = -1
        self._time_text = ""

    def _time(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:
            self._time_text = self.formatTime(record, self.datefmt)
            self._second = second
        return self._time_text

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "time": self._time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        if record.exc_info:
            fields["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            fields["exc_info"] = record.exc_text
        if record.stack_info:
            fields["stack_info"] = self.formatStack(record.stack_info)
        attributes = vars(record)
        for key in _keys_outside(tuple(attributes), _RECORD_ATTRIBUTES):
            fields[key] = attributes[key]
        # A value JSON does not know is written as its text (timestamps are written in ISO
        # 8601 and enums by value before that).
        try:
            # pydantic-core's writer takes a fifth of the standard library's time on a
            # request line (and writes UTF-8 as it is).
            return to_json(fields, fallback=str).decode()
        except PydanticSerializationError:
            # What it will not write (bytes that are not UTF-8, say) is written as text.
            return json.dumps(fields, default=str)


@functools.lru_cache(maxsize=256)
def _keys_outside(keys: tuple[str, ...], known: frozenset[str]) -> tuple[str, ...]:
    """The record attributes among ``keys`` that are not in ``known``, in order: the
    ``extra`` fields a formatter writes, the fields a filter redacts. The lines of one call
    site all have the same attributes: they are found once for all of them."""
    return tuple(key for key in keys if key not in known)


class SecretFilter(logging.Filter):
    """Replaces known secret values everywhere in a record: its message, its request id,
    every ``extra`` field (nested lists and mappings too), its traceback and stack.

    A secret can arrive in any of them: a path (``GET /<key>``), a caller's request id, an
    exception's text.
    """

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [secret for secret in secrets if secret]

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        # The message is kept formatted, redacted or not, so it is not formatted again.
        record.msg, record.args = self.redact(record.getMessage()), None
        if record.exc_info:
            # Formatted here, once, so the text a formatter writes is the redacted one.
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        fields = vars(record)
        for key in _keys_outside(tuple(fields), _OWN_ATTRIBUTES):
            fields[key] = self._redacted(fields[key])
        return True

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def _redacted(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        # Most fields of most lines are plain numbers: tell them apart by their exact type
        # first, before the isinstance checks that subclasses need.
        if type(value) in _PLAIN or isinstance(
            value, int | float | bool | None | Enum | dt.date | dt.time
        ):
            return value
        if isinstance(value, Mapping):
            return {self._redacted(key): self._redacted(item) for key, item in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._redacted(item) for item in value]
        text = str(value)
        return self.redact(text) if any(secret in text for secret in self.secrets) else value


_PLAIN = frozenset({int, float, bool, type(None)})
# What every record has besides its request id: the logger's, the code's and the process's
# own names and numbers, and the message and traceback, which are redacted on their own.
_OWN_ATTRIBUTES = _RECORD_ATTRIBUTES - {"request_id"}
_TRACEBACKS = logging.Formatter()


def secrets_of(settings: Settings) -> list[str]:
    secrets = []
    for key in (settings.admin_api_key, settings.odds_api_key):
        if key is not None:
            secrets.append(key.get_secret_value())
    try:
        password = read_database_url(settings.database_url).password
    except DatabaseUrlError:
        # The command stops on it with one line when it opens the database; what that line
        # hides as a password is kept out of every other line too.
        password = unreadable_password(settings.database_url)
    if password:
        secrets.append(str(password))
    return secrets


def _formatter(settings: Settings, *, command: bool) -> dict[str, Any]:
    if settings.log_format == "json" or (
        settings.log_format == "auto" and settings.environment != "development" and not command
    ):
        return {"()": JsonLineFormatter}
    if command:
        return {"format": "%(levelname)s %(name)s: %(message)s"}
    return {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}


def logging_config(settings: Settings, *, command: bool = False) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` dictionary (also handed to uvicorn for its workers).

    ``command`` configures a command a person runs, whose own output is on stdout: its log
    lines go to stderr as text (JSON only if ``log_format`` says so), warnings and errors
    only, so they do not bury what the command prints. The server, the scheduler and the
    refits they start write the configured lines.
    """
    formatter = _formatter(settings, command=command)
    level = settings.log_level.upper()
    if command:
        level = max(level, "WARNING", key=logging.getLevelName)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": RequestIdFilter},
            "secrets": {"()": SecretFilter, "secrets": secrets_of(settings)},
        },
        "formatters": {"default": formatter},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "filters": ["request_id", "secrets"],
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            # The service writes its own request lines (with the request id) instead.
            "uvicorn.access": {"handlers": [], "propagate": False, "level": "WARNING"},
            "uvicorn": {"handlers": [], "propagate": True, "level": level},
            "uvicorn.error": {"handlers": [], "propagate": True, "level": level},
            # The scheduler writes its own line per job, with how the refit ended; the
            # executor's "Running job" and "executed successfully" would tell a failed refit
            # as a success. Its errors (a job that raised) still pass.
            "apscheduler.executors": {"level": "WARNING"},
            "sqlalchemy": {"level": "WARNING"},
            "alembic": {"level": "WARNING"},
        },
    }


def configure_logging(settings: Settings, *, command: bool = False) -> None:
    logging.config.dictConfig(logging_config(settings, command=command))
