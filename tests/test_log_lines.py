"""JSON log lines: the fields every line has, the extra fields a caller adds, tracebacks,
and secrets replaced, as configured for the service."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from app.domain.vocabulary import Phase
from app.logs import REQUEST_ID, RequestIdFilter, SecretFilter, logging_config
from app.settings import Settings

SECRET_KEY = "a-very-secret-admin-key"


@pytest.fixture
def lines() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing into a buffer with the formatter and filters of the service's JSON
    configuration."""
    settings = Settings(database_url="sqlite://", admin_api_key=SECRET_KEY, log_format="json")
    config = logging_config(settings)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(config["formatters"]["default"]["()"]())
    handler.addFilter(RequestIdFilter())
    handler.addFilter(SecretFilter(config["filters"]["secrets"]["secrets"]))
    logger = logging.getLogger("oddsboost.test.lines")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        yield logger, buffer
    finally:
        logger.removeHandler(handler)


def written(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_a_line_has_the_common_fields_then_the_extra_ones(
    lines: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, buffer = lines
    token = REQUEST_ID.set("req-1")
    try:
        logger.info(
            "%s %s",
            "POST",
            "/predict",
            extra={"status": 200, "phase": Phase.PRE, "at": dt.date(2018, 8, 10)},
        )
    finally:
        REQUEST_ID.reset(token)
    logger.warning("outside a request")
    first, second = written(buffer)
    assert list(first) == [
        "time",
        "level",
        "logger",
        "message",
        "request_id",
        "status",
        "phase",
        "at",
    ]
    assert first["message"] == "POST /predict"
    assert (first["level"], first["logger"], first["request_id"]) == (
        "INFO",
        "oddsboost.test.lines",
        "req-1",
    )
    assert (first["status"], first["phase"], first["at"]) == (200, "pre", "2018-08-10")
    assert dt.datetime.strptime(first["time"], "%Y-%m-%dT%H:%M:%S%z").tzinfo is not None
    assert second["request_id"] is None
    assert second["level"] == "WARNING"


def test_a_traceback_is_one_field_and_secrets_leave_the_message(
    lines: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, buffer = lines
    try:
        raise RuntimeError("the refit failed")
    except RuntimeError:
        logger.exception("failed with key %s", SECRET_KEY)
    (line,) = written(buffer)
    assert line["message"] == "failed with key ***"
    assert "RuntimeError: the refit failed" in line["exc_info"]
    assert line["exc_info"].startswith("Traceback")
    assert SECRET_KEY not in buffer.getvalue()
