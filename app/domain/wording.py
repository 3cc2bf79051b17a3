"""How a message counts things: "1 match", "2 matches", "0 quotes"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and the noun in the number it takes: the singular for exactly one, else
    ``plural``, by default the noun with "es" after s, x, z, ch or sh and "s" otherwise."""
    if count == 1:
        return f"{count} {noun}"
    if plural is None:
        plural = noun + ("es" if noun.endswith(("s", "x", "z", "ch", "sh")) else "s")
    return f"{count} {plural}"
