"""JSON log lines: the fields every line has, the extra fields a caller adds, tracebacks,
and secrets replaced, as configured for the service."""

from __future__ import annotations

import datetime as dt
import io
import logging
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.domain.vocabulary import Phase
from app.logs import REQUEST_ID, RequestIdFilter, SecretFilter, logging_config
from app.settings import Settings
from tests.apps import ADMIN_KEY
from tests.helpers import json_handler, written

SECRET_KEY = "a-very-secret-admin-key"


@pytest.fixture
def lines() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing into a buffer as the service's JSON configuration writes."""
    handler, buffer = json_handler(Settings(database_url="sqlite://", admin_api_key=SECRET_KEY))
    logger = logging.getLogger("oddsboost.test.lines")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        yield logger, buffer
    finally:
        logger.removeHandler(handler)


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


def test_any_field_makes_one_json_line(lines: tuple[logging.Logger, io.StringIO]) -> None:
    """Text outside ASCII stays as it is; what JSON has no form for is written as its text,
    bytes that are not UTF-8 among them."""

    class Opaque:
        def __str__(self) -> str:
            return "opaque"

    logger, buffer = lines
    logger.info("Málaga – Bayern München", extra={"thing": Opaque()})
    logger.info("raw", extra={"raw": b"\xff\x00", "thing": Opaque()})
    first, second = written(buffer)
    assert first["message"] == "Málaga – Bayern München"
    assert "Málaga" in buffer.getvalue().splitlines()[0]
    assert first["thing"] == "opaque"
    assert second["raw"] == str(b"\xff\x00")
    assert second["thing"] == "opaque"


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


def test_secrets_leave_every_field_of_a_line(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, buffer = lines
    token = REQUEST_ID.set(f"id-{SECRET_KEY}")
    try:
        raise RuntimeError(f"connection with {SECRET_KEY} refused")
    except RuntimeError:
        logger.exception(
            "request failed",
            extra={
                "path": f"/{SECRET_KEY}",
                "headers": {"x-api-key": SECRET_KEY, "accept": ["text/plain", SECRET_KEY]},
                "status": 500,
            },
        )
    finally:
        REQUEST_ID.reset(token)
    (line,) = written(buffer)
    assert SECRET_KEY not in buffer.getvalue()
    assert line["request_id"] == "id-***"
    assert line["path"] == "/***"
    assert line["headers"] == {"x-api-key": "***", "accept": ["text/plain", "***"]}
    assert line["status"] == 500
    assert "RuntimeError: connection with *** refused" in line["exc_info"]


def test_text_lines_lose_secrets_too() -> None:
    settings = Settings(
        database_url="sqlite://", admin_api_key=SECRET_KEY, environment="development"
    )
    config = logging_config(settings)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter(config["formatters"]["default"]["format"]))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(SecretFilter(config["filters"]["secrets"]["secrets"]))
    logger = logging.getLogger("oddsboost.test.text")
    logger.addHandler(handler)
    logger.propagate = False
    token = REQUEST_ID.set(SECRET_KEY)
    try:
        raise RuntimeError(SECRET_KEY)
    except RuntimeError:
        logger.exception("at /%s", SECRET_KEY)
    finally:
        REQUEST_ID.reset(token)
        logger.removeHandler(handler)
    text = buffer.getvalue()
    assert SECRET_KEY not in text
    assert "[***] at /***" in text
    assert "RuntimeError: ***" in text


def test_a_request_for_the_key_leaves_no_trace_of_it(
    client: TestClient, settings: Settings
) -> None:
    handler, buffer = json_handler(settings)
    access = logging.getLogger("oddsboost.access")
    level = access.level
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    try:
        answer = client.get(f"/{ADMIN_KEY}", headers={"X-Request-ID": ADMIN_KEY})
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    assert answer.status_code == 404
    assert ADMIN_KEY not in buffer.getvalue()
    (line,) = written(buffer)
    assert line["path"] == "/***"
    assert line["message"] == "GET /*** 404 " + line["message"].rsplit(" ", 1)[1]
    assert line["request_id"] == answer.headers["X-Request-ID"]


@pytest.mark.parametrize(
    ("database_url", "secrets"),
    [
        # Readable, even of a database the service does not run on: its password is a secret.
        ("postgresql+psycopg://u:pg-password@h:5432/db", [SECRET_KEY, "pg-password"]),
        ("mysql://u:my-password@h/db", [SECRET_KEY, "my-password"]),
        # Not readable as a URL: logging is set up all the same, so that the command can say
        # in one line what is wrong with the URL; what that line hides as a password (between
        # the user's name and the last @) is a secret too.
        ("not a url", [SECRET_KEY]),
        (":memory:", [SECRET_KEY]),
        ("sqlite:/x.db", [SECRET_KEY]),
        ("postgresql+psycopg://u:p4ss@h:notaport/db", [SECRET_KEY, "p4ss"]),
    ],
)
def test_the_secrets_are_the_keys_and_a_database_urls_password(
    database_url: str, secrets: list[str]
) -> None:
    config = logging_config(Settings(database_url=database_url, admin_api_key=SECRET_KEY))
    assert config["filters"]["secrets"]["secrets"] == secrets
