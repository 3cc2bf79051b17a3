"""A short digest naming a set of values: the same in every process and every replica, so
that what one made another can recognise (an ETag, a key of a shared store)."""

from __future__ import annotations

import hashlib

DIGEST_BYTES = 12


def digest(*parts: object) -> str:
    """The hex digest of ``parts``, whose ``repr`` must be the same in every process (no
    sets, no objects shown by address)."""
    return hashlib.blake2b(repr(parts).encode(), digest_size=DIGEST_BYTES).hexdigest()
