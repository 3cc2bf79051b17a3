"""Logging: one configuration for the server, its workers and the commands.

Every line written while a request is handled carries its id, and the configured secrets
(the admin key, The Odds API's key, a database password) are replaced by ``***`` in every
field of every line, whatever wrote it.
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
from urllib.parse import urlsplit

from pydantic_core import PydanticSerializationError, to_json

from app.db.engine import DatabaseUrlError, read_database_url, unreadable_url
from app.settings import Settings

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
REDACTED = "***"


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (or None) to every record; drops uvicorn's coloured copy of its
    messages."""

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
    """One JSON object per record: time, level, logger, message, request id, traceback, and
    every ``extra`` field. Hand-written because every request writes a line, and this costs
    a third of a general-purpose formatter."""

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
        try:
            # A fifth of the standard library's time on a request line.
            return to_json(fields, fallback=str).decode()
        except PydanticSerializationError:  # bytes that are not UTF-8, say
            return json.dumps(fields, default=str)


@functools.lru_cache(maxsize=256)
def _keys_outside(keys: tuple[str, ...], known: frozenset[str]) -> tuple[str, ...]:
    """The record attributes among ``keys`` not in ``known``; cached, as the lines of one call
    site all have the same ones."""
    return tuple(key for key in keys if key not in known)


class SecretFilter(logging.Filter):
    """Replaces known secret values everywhere in a record: its message, request id, every
    ``extra`` field (nested too), traceback and stack."""

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
        # Most fields are plain numbers: an exact type check first is cheaper.
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
# What every record has besides its request id; the message and traceback are redacted apart.
_OWN_ATTRIBUTES = _RECORD_ATTRIBUTES - {"request_id"}
_TRACEBACKS = logging.Formatter()


def secrets_of(settings: Settings) -> list[str]:
    secrets = []
    for key in (settings.admin_api_key, settings.odds_api_key, settings.alert_secret):
        if key is not None:
            secrets.append(key.get_secret_value())
    try:
        password = read_database_url(settings.database_url).password
    except DatabaseUrlError:
        # What the command's one line about it hides as a password is hidden everywhere.
        password = unreadable_url(settings.database_url)[1]
    if password:
        secrets.append(str(password))
    # An alert receiver's whole URL (a chat's token sits in it), wherever a library writes it.
    secrets.extend(receiver.url for receiver in settings.alert_receivers())
    if settings.redis_url is not None:
        redis_password = urlsplit(settings.redis_url).password
        if redis_password:
            secrets.append(redis_password)
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
    """A ``dictConfig`` dictionary (also handed to uvicorn for its workers). A ``command``
    a person runs logs warnings and errors only, as text unless ``log_format`` says json."""
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
            # The scheduler logs how each job ended; the executor's "executed successfully"
            # would tell a failed refit as a success.
            "apscheduler.executors": {"level": "WARNING"},
            "sqlalchemy": {"level": "WARNING"},
            "alembic": {"level": "WARNING"},
            # httpx logs each request's full URL at INFO: an alert's URL may hold a token.
            "httpx": {"level": "WARNING"},
            "httpcore": {"level": "WARNING"},
        },
    }


def configure_logging(settings: Settings, *, command: bool = False) -> None:
    logging.config.dictConfig(logging_config(settings, command=command))
