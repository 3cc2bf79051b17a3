"""Conditional requests: the weak ETag that names what an answer shows, and whether a
request already holds it (then the answer is 304, with no body)."""

from __future__ import annotations

from app.domain.digests import digest


def weak_etag(*parts: object) -> str:
    """A weak ETag digesting ``parts`` (see :func:`app.domain.digests.digest`)."""
    return f'W/"{digest(*parts)}"'


def matches_etag(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (or is ``*``), compared weakly as
    RFC 9110 asks of If-None-Match."""
    if if_none_match is None:
        return False
    wanted = etag.removeprefix("W/")
    for held in if_none_match.split(","):
        held = held.strip()
        if held == "*" or held.removeprefix("W/") == wanted:
            return True
    return False
