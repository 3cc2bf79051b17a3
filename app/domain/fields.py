"""Field types of every input read with pydantic (the HTTP API, The Odds API): one home for
what a price, a team name, a code and a timestamp accept; and how JSON written with pydantic
leaves out what is absent.

Each input type is an ``Annotated`` type whose check is the one in :mod:`app.domain.records`,
so a value refused here is refused with the same message by the file parsers.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, TypeVar

from pydantic import AfterValidator, Field, Strict

from app.domain.records import CODE_MAX_LENGTH, as_utc, check_price, check_team_name

T = TypeVar("T")

DecimalPrice = Annotated[
    float,
    AfterValidator(check_price),
    Field(description="Decimal odds, 1.0 < price ≤ 1000.", examples=[2.1]),
]
"""Decimal odds; a number sent as text is read as that number."""

Price = Annotated[DecimalPrice, Strict()]
"""Decimal odds sent as a JSON number: "2.1", true or null are a client's mistake."""

TeamName = Annotated[
    str,
    AfterValidator(check_team_name),
    Field(description="Trimmed; 1-100 characters; stored verbatim.", examples=["Man United"]),
]

Code = Annotated[
    str,
    Field(
        min_length=1,
        max_length=CODE_MAX_LENGTH,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$",
        examples=["E0"],
    ),
]
"""A competition or bookmaker code."""

UtcDateTime = Annotated[
    dt.datetime,
    AfterValidator(as_utc),
    Field(description="ISO 8601; a timestamp without an offset is taken as UTC."),
]


def _is_none(value: object) -> bool:
    return value is None


AbsentWhenNone = Annotated[T | None, Field(exclude_if=_is_none)]
"""A field whose key is left out of the JSON when it holds nothing (rather than written as
null): JSON written before the field existed, or with nothing to say, keeps its shape."""
