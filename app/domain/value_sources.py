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

from pydantic import AfterValidator, Field, StringConstraints

from app.domain.bookmakers import BOOKMAKER_NAMES, ODDS_API_KEYS, bookmaker_key

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
        raise ValueSourceError(f"a value source has at most {MAX_CHAIN_LENGTH} characters")
    words = [word.strip() for word in text.split(LINK_SEPARATOR)]
    if any(not word for word in words):
        raise ValueSourceError(
            f"a value source has an empty link: {text!r} (links are comma-separated, "
            "e.g. PS,consensus)"
        )
    if len(words) > MAX_LINKS:
        raise ValueSourceError(f"a value source has at most {MAX_LINKS} links: {text!r}")
    links = tuple(_link(word) for word in words)
    repeated = sorted({link for link in links if links.count(link) > 1})
    if repeated:
        raise ValueSourceError(f"a value source names {', '.join(repeated)} twice: {text!r}")
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


def _link(word: str) -> str:
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


# A chain as settings and requests give it, read as its normalised text.
ValueSourceChain = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CHAIN_LENGTH),
    AfterValidator(normalised_chain),
    Field(
        description="Where a value bet's probability comes from: a chain of up to five links, "
        "comma-separated, each `ensemble` (the served prediction), `consensus` (the mean of "
        "the de-margined lines of the bookmakers that quoted the match) or a known bookmaker "
        "by code or name (its de-margined line). For each match the first link with a line "
        "prices it; a match none has a line for gets no value.",
        examples=["PS,consensus"],
    ),
]
