"""Field types of every input read with pydantic (the HTTP API, The Odds API), checked by the
functions of :mod:`app.domain.records` the file parsers call, so that both refuse a value
with the same message; and how JSON written with pydantic leaves out what is absent.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, JsonValue, Strict, StringConstraints

from app.domain.records import (
    BOOKMAKER_NAME_MAX_LENGTH,
    CODE_MAX_LENGTH,
    EARLIEST,
    EXTERNAL_ID_MAX_LENGTH,
    JSON_CODE_PATTERN,
    LATEST,
    PRICE_MAX,
    REASON_MAX_LENGTH,
    TEAM_NAME_MAX_LENGTH,
    as_utc,
    check_external_id,
    check_price,
    check_reason,
    check_team_name,
    optional_season,
    season_pattern,
    text_pattern,
)

T = TypeVar("T")


def text_rule(max_length: int) -> Callable[[dict[str, JsonValue]], None]:
    """A field's ``json_schema_extra`` stating :func:`~app.domain.records.text_pattern`, made
    only when a schema is asked for: it reads the whole Unicode table (about 0.1 s)."""

    def add_pattern(schema: dict[str, JsonValue]) -> None:
        schema["pattern"] = text_pattern(max_length)

    return add_pattern


# The range of a price as a JSON schema states it (check_price checks it, with its message).
PRICE_RANGE: dict[str, JsonValue] = {"exclusiveMinimum": 1.0, "maximum": PRICE_MAX}

DecimalPrice = Annotated[
    float,
    AfterValidator(check_price),
    Field(
        description="Decimal odds, 1.0 < price ≤ 1000.",
        examples=[2.1],
        json_schema_extra=PRICE_RANGE,
    ),
]
"""Decimal odds; a number sent as text is read as that number."""

Price = Annotated[DecimalPrice, Strict()]
"""Decimal odds sent as a JSON number: "2.1", true or null are a client's mistake."""

TeamName = Annotated[
    str,
    AfterValidator(check_team_name),
    Field(
        description="Trimmed; 1-100 characters; stored verbatim.",
        examples=["Man United"],
        json_schema_extra=text_rule(TEAM_NAME_MAX_LENGTH),
    ),
]

ExternalId = Annotated[
    str,
    AfterValidator(check_external_id),
    Field(json_schema_extra=text_rule(EXTERNAL_ID_MAX_LENGTH)),
]
"""A source's own id of a match: trimmed, 1-100 characters."""

OptionalSeason = Annotated[
    str | None,
    AfterValidator(optional_season),
    Field(json_schema_extra={"pattern": season_pattern(blank=True)}),
]
"""A season given by a caller, 2018/19 or 2019 (``check_season``); blank or absent: not given
(derived)."""

Reason = Annotated[
    str,
    AfterValidator(check_reason),
    Field(
        description="Trimmed; 1-500 characters, no control characters.",
        examples=["version 7 over-weights one bookmaker; back to version 6"],
        json_schema_extra=text_rule(REASON_MAX_LENGTH),
    ),
]
"""Why an operator did something, in their words."""

Code = Annotated[
    str,
    Field(
        min_length=1,
        max_length=CODE_MAX_LENGTH,
        pattern=JSON_CODE_PATTERN,
        examples=["E0"],
    ),
]
"""A competition or bookmaker code sent as JSON: ``JSON_CODE_PATTERN``, 1-64 characters."""

# The spaces pydantic's strip_whitespace takes off (Unicode's White_Space), and the control
# characters a bookmaker reference refuses, as classes of a regular expression.
_TRIMMED = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_REFERENCE_CONTROL = r"\x00-\x1f\x7f"


def _reference_schema(schema: dict[str, JsonValue]) -> None:
    """A bookmaker reference's rules in one pattern, as they apply once it is trimmed."""
    schema.pop("minLength", None)
    schema.pop("maxLength", None)
    edge = f"[^{_REFERENCE_CONTROL}{_TRIMMED}]"
    inner = f"[^{_REFERENCE_CONTROL}]{{0,{BOOKMAKER_NAME_MAX_LENGTH - 2}}}"
    schema["pattern"] = f"^[{_TRIMMED}]*{edge}(?:{inner}{edge})?[{_TRIMMED}]*$"


BookmakerReference = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        min_length=1,
        max_length=BOOKMAKER_NAME_MAX_LENGTH,
        pattern=f"^[^{_REFERENCE_CONTROL}]+$",
    ),
    Field(
        description="A bookmaker's code or its name as GET /bookmakers lists it, in any "
        "letter case: B365, b365 and Bet365 are one bookmaker.",
        examples=["B365"],
        json_schema_extra=_reference_schema,
    ),
]
"""A bookmaker a prediction request names: its code or display name, checked as text (the
checks run in pydantic's core: this is on the prediction path)."""

_NUMBER = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")


def _not_a_number(value: object) -> object:
    # pydantic reads a number, or a number as text, as seconds since 1970: a typing mistake.
    if isinstance(value, int | float) or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError("a timestamp is ISO 8601 text, e.g. 2018-08-10T19:00:00Z; not a number")
    return value


UtcDateTime = Annotated[
    dt.datetime,
    BeforeValidator(_not_a_number),
    AfterValidator(as_utc),
    Field(
        description="ISO 8601, years 1900-2099; a timestamp without an offset is taken as UTC.",
        json_schema_extra={"pattern": "^(19|20)[0-9]{2}-"},
    ),
]


def _day_in_range(day: dt.date) -> dt.date:
    if not EARLIEST.year <= day.year < LATEST.year:
        raise ValueError(f"day is out of range (years {EARLIEST.year}-{LATEST.year - 1})")
    return day


# A calendar day, as ISO 8601 text only: pydantic would read 0 as 1970-01-01.
IsoDate = Annotated[
    dt.date,
    BeforeValidator(_not_a_number),
    AfterValidator(_day_in_range),
    Field(
        description="A calendar day, YYYY-MM-DD.",
        json_schema_extra={"pattern": "^(19|20)[0-9]{2}-[0-9]{2}-[0-9]{2}$"},
    ),
]


AbsentWhenNone = Annotated[T | None, Field(exclude_if=lambda value: value is None)]
"""A field left out of the JSON, not written as null, when it holds nothing."""
