"""A time zone as settings and query parameters name it; apart from :mod:`app.domain.fields`,
which is slow to import, for commands that only read the settings."""

from __future__ import annotations

from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, Field, StringConstraints

TIME_ZONE_NAME_MAX_LENGTH = 64


def _known_time_zone(name: str) -> str:
    # ZoneInfo refuses names that are not plain relative paths below the zone files; a
    # folder there (``Europe``) or a file of another kind is an OSError or a ValueError.
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"{name!r} is not a time zone of the IANA database (such as UTC or Europe/London)"
        ) from None
    return name


TimeZoneName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=TIME_ZONE_NAME_MAX_LENGTH),
    AfterValidator(_known_time_zone),
    Field(description="An IANA time zone, such as UTC or Europe/London.", examples=["UTC"]),
]
