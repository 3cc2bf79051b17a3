"""Value sources: where a value bet's probability comes from, as a fallback chain of links.

A link is ``ensemble`` (the served prediction), ``consensus`` (the mean of the de-margined
lines of the bookmakers that quoted the match) or a known bookmaker, whose de-margined line
it is. A chain is written with its links comma-separated, ``PS,consensus``: for each match
the first link that has a line prices it; a match none of them has a line for gets no value.
Several chains (the backtest measures many at once) are separated by ``;``:
``ensemble;PS;PS,consensus``.

The one parser of chains, for the settings, the requests and the backtest alike; it loads
light (no numpy), as the settings do.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, JsonValue, StringConstraints

from app.domain.bookmakers import BOOKMAKER_NAMES, ODDS_API_KEYS, bookmaker_key
from app.domain.wording import counted

ENSEMBLE = "ensemble"
CONSENSUS = "consensus"
MODEL_LINKS = (ENSEMBLE, CONSENSUS)
LINK_SEPARATOR = ","
CHAIN_SEPARATOR = ";"
MAX_LINKS = 5
# The longest chain text accepted: five links of long bookmaker names fit.
MAX_CHAIN_LENGTH = 200


class ValueSourceError(ValueError):
    """A chain that cannot be used; the message says why."""


def chain_links(text: str) -> tuple[str, ...]:
    """The links of the chain ``text``, normalised: ``ensemble`` and ``consensus`` in lower
    case, a bookmaker as its code (by code, name or The Odds API's key, any letter case)."""
    if len(text) > MAX_CHAIN_LENGTH:
        raise ValueSourceError(
            f"a value source has at most {counted(MAX_CHAIN_LENGTH, 'character')}"
        )
    words = [word.strip(SPACES) for word in text.split(LINK_SEPARATOR)]
    if any(not word for word in words):
        raise ValueSourceError(
            "a value source has an empty link (links are comma-separated, e.g. PS,consensus)"
        )
    if len(words) > MAX_LINKS:
        raise ValueSourceError(f"a value source has at most {counted(MAX_LINKS, 'link')}")
    links = tuple(link_of(word) for word in words)
    repeated = sorted({link for link in links if links.count(link) > 1})
    if repeated:
        raise ValueSourceError(f"a value source names {', '.join(repeated)} twice")
    return links


def normalised_chain(text: str) -> str:
    """The chain ``text`` as its normalised links, comma-separated (``ps, Consensus`` gives
    ``PS,consensus``): how settings, answers and reports write it."""
    return LINK_SEPARATOR.join(chain_links(text))


def normalised_chains(text: str) -> tuple[str, ...]:
    """Several chains separated by ``;``, each normalised; a chain given twice is refused."""
    chains = tuple(normalised_chain(part) for part in text.split(CHAIN_SEPARATOR))
    repeated = sorted({chain for chain in chains if chains.count(chain) > 1})
    if repeated:
        raise ValueSourceError(f"a value source is given twice: {', '.join(repeated)}")
    return chains


def link_of(word: str) -> str:
    """One link, trimmed word, normalised; :class:`ValueSourceError` if it is unknown."""
    folded = word.casefold()
    if folded in MODEL_LINKS:
        return folded
    code = ODDS_API_KEYS.get(folded) or bookmaker_key(word)
    if code not in BOOKMAKER_NAMES:
        raise ValueSourceError(
            f"unknown value source {word!r}: give ensemble, consensus or a known bookmaker "
            "by code or name (e.g. PS or Pinnacle)"
        )
    return code


# The spaces a link is trimmed of: what str.strip takes off, as a class of a regular
# expression too.
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_SPACE_CLASS = r"[\t\n\x0b-\x0d\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _any_case(word: str) -> str:
    # Only the characters a regular expression reads as syntax are escaped: an escaped space
    # or "&" is an error to JSON Schema's (ECMA 262, Unicode) regular expressions.
    return "".join(
        f"[{c.lower()}{c.upper()}]" if c.isalpha() else "\\" + c if c in _SYNTAX else c
        for c in word
    )


_SYNTAX = frozenset("\\^$.|?*+()[]{}/")


def _chain_schema(schema: dict[str, JsonValue]) -> None:
    """What a chain accepts, in one pattern: one to five known words, comma-separated, each
    in any letter case and trimmed. A link given twice is the one rule it cannot state."""
    spellings = {ENSEMBLE, CONSENSUS, *ODDS_API_KEYS}
    spellings |= {spelling for item in BOOKMAKER_NAMES.items() for spelling in item}
    words = "|".join(_any_case(word) for word in sorted(spellings, key=lambda w: (-len(w), w)))
    link = f"{_SPACE_CLASS}*(?:{words}){_SPACE_CLASS}*"
    schema["pattern"] = f"^{link}(?:,{link}){{0,{MAX_LINKS - 1}}}$"


# A chain as settings and requests give it, read as its normalised text.
ValueSourceChain = Annotated[
    str,
    StringConstraints(max_length=MAX_CHAIN_LENGTH),
    AfterValidator(normalised_chain),
    Field(
        description="Where a value bet's probability comes from: a chain of up to five links, "
        "comma-separated, each `ensemble` (the served prediction), `consensus` (the mean of "
        "the de-margined lines of the bookmakers that quoted the match) or a known bookmaker "
        "by code or name (its de-margined line). For each match the first link with a line "
        "prices it; a match none has a line for gets no value.",
        examples=["PS,consensus"],
        json_schema_extra=_chain_schema,
    ),
]
