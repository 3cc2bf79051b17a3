"""The body of every error answer (RFC 9457 problem details, ``application/problem+json``),
and the reasons the API docs give for each status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any, Self

from pydantic import BaseModel, Field

from app.api.schemas.common import ERRORS_SHOWN
from app.domain.wording import counted

PROBLEM_MEDIA_TYPE = "application/problem+json"
# Our problems mean no more than their status says: RFC 9457 gives them the type
# "about:blank", with the status's name as the title.
BLANK = "about:blank"
# The names RFC 9110 gives these statuses (Python before 3.13 still has the older ones).
_TITLES = {413: "Content Too Large", 414: "URI Too Long", 422: "Unprocessable Content"}


class FieldError(BaseModel):
    """One thing wrong with the request: where, what, and the kind of error."""

    loc: list[str | int] = Field(
        description="Where: `body`, `query`, `path` or `header`, then the path to the field "
        "(an item of a list by its index). In a batch item's error, the path inside the item.",
        examples=[["body", "quotes", 1, "home"]],
    )
    msg: str = Field(
        description="What is wrong.",
        examples=["Value error, price 0.95 must be greater than 1.0 (decimal odds)"],
    )
    type: str = Field(
        description="The kind of error: `missing`, `value_error`, `json_invalid`, ...",
        examples=["value_error"],
    )

    def where(self) -> str:
        """The location as one dotted path, e.g. ``body.quotes.1.home``."""
        return ".".join(str(part) for part in self.loc)


class Problem(BaseModel):
    """An error answer (RFC 9457 problem details)."""

    type: str = Field(
        default=BLANK,
        description='"about:blank": the problem means what its status means.',
        examples=[BLANK],
    )
    title: str = Field(description="The name of the status.", examples=["Unprocessable Content"])
    status: int = Field(description="The HTTP status.", examples=[422])
    detail: str = Field(
        description="What was wrong, in one line (for invalid fields: the first few of them).",
        examples=[
            "body.quotes.1.home: Value error, price 0.95 must be greater than 1.0 (decimal odds)"
        ],
    )
    instance: str = Field(
        description="The request path; for a batch item, the item in the request body.",
        examples=["/admin/odds"],
    )
    errors: list[FieldError] = Field(
        default_factory=list,
        description="The fields that were wrong; empty when the problem is not about a field.",
    )

    @classmethod
    def of(cls, status: int, detail: str, instance: str, errors: Iterable[FieldError] = ()) -> Self:
        return cls(
            title=_TITLES.get(status) or HTTPStatus(status).phrase,
            status=status,
            detail=detail,
            instance=instance,
            errors=list(errors),
        )

    @classmethod
    def invalid(cls, errors: list[FieldError], instance: str) -> Self:
        """422 for invalid fields, a few named in the detail, the first ones listed."""
        return cls.of(422, summary(errors), instance, shown(errors))


SUMMARY_ERRORS = 3
TOO_MANY_ERRORS = "too_many_errors"


def summary(errors: list[FieldError]) -> str:
    """The first few errors, where and what, in one line."""
    first = "; ".join(f"{error.where()}: {error.msg}" for error in errors[:SUMMARY_ERRORS])
    more = len(errors) - SUMMARY_ERRORS
    return f"{first} (and {more} more)" if more > 0 else first


def shown(errors: list[FieldError]) -> list[FieldError]:
    """The first :data:`ERRORS_SHOWN` errors, then one that says how many more were not."""
    if len(errors) <= ERRORS_SHOWN:
        return errors
    more = counted(len(errors) - ERRORS_SHOWN, "more error")
    return [
        *errors[:ERRORS_SHOWN],
        FieldError(loc=[], msg=f"{more} not shown", type=TOO_MANY_ERRORS),
    ]


def field_errors(errors: Iterable[Mapping[str, Any]]) -> list[FieldError]:
    """pydantic's or FastAPI's errors without the input they echo (a whole long list)."""
    return [_field_error(error) for error in errors]


def _field_error(error: Mapping[str, Any]) -> FieldError:
    loc, msg = list(error.get("loc", ())), error.get("msg", "")
    if error["type"] == "json_invalid" and loc and isinstance(loc[-1], int):
        # FastAPI's JSON error puts the character's offset where a field's path goes; say
        # it as pydantic says its own, so every body that is not JSON reads the same.
        reason = error.get("ctx", {}).get("error", msg)
        loc, msg = loc[:-1], f"Invalid JSON: {reason} at character {loc[-1]}"
    return FieldError(loc=loc, msg=msg, type=error["type"])


# The reasons a status is answered, shared by the operations that may answer it.
INVALID = "Invalid input: `errors` names each field that is wrong, and where."
INTERNAL = "An unexpected failure; the error is logged."
# What the server answers before any operation runs (app/http_protocol.py).
PROTOCOL: dict[int, str] = {
    400: "The request is not valid HTTP/1.1 (the server could not parse it); the connection "
    "is closed.",
    408: "The request's headers did not arrive within ODDSBOOST_HEADER_TIMEOUT_SECONDS of its "
    "first byte, or its body within ODDSBOOST_BODY_TIMEOUT_SECONDS of its headers; the "
    "connection is closed.",
    431: "The request line and headers are over ODDSBOOST_HEADER_LIMIT_BYTES; the connection "
    "is closed.",
}
TOO_LARGE = "The request body is over the size limit, which the message states."
NOT_JSON = (
    "The body was not sent as JSON: its Content-Type is not application/json (or another "
    "+json type), or it has none. Every endpoint that takes JSON takes only JSON."
)
UNAVAILABLE = (
    "The database cannot take the request now: it is busy with other writes (SQLite takes "
    "one writer at a time; nothing was written) or it cannot be reached. Retry-After says in "
    "how many seconds to send the same request again."
)
UNAVAILABLE_OR_AT_LIMIT = (
    UNAVAILABLE[:-1] + ", or this worker is serving as many requests of this kind as it "
    "serves at once (`ODDSBOOST_ADMISSION_*`) and none finished within "
    "`ODDSBOOST_ADMISSION_WAIT_SECONDS`."
)
ADMIN: dict[int, str] = {
    401: "No X-API-Key header. The key is checked before anything else of the request.",
    403: "Wrong X-API-Key.",
    503: "Admin API disabled: ODDSBOOST_ADMIN_API_KEY is not set. Or the database is busy "
    "with other writes (nothing was written) or cannot be reached: Retry-After says when to "
    "send the request again.",
}


def problem_responses(
    *reasons: Mapping[int, str], extended: Mapping[int, type[Problem]] | None = None
) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of an operation: each status it may answer besides its success
    (500 and :data:`PROTOCOL` on every one), with its reason and the problem schema, or
    either of that and the :class:`Problem` subclass ``extended`` names for the status."""
    merged = {500: INTERNAL, **PROTOCOL}
    for reason in reasons:
        merged.update(reason)
    return {
        status: {
            "description": reason,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": _schema((extended or {}).get(status))}},
        }
        for status, reason in sorted(merged.items())
    }


def _reference(model: type[Problem]) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _schema(extension: type[Problem] | None) -> dict[str, Any]:
    if extension is None:
        return _reference(Problem)
    return {"anyOf": [_reference(Problem), _reference(extension)]}
