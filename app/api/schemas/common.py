"""What every part of the API shares: strict request bodies, ids, pages, a match named in
an answer, and one value per outcome."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, Strict, model_validator

from app.domain.fields import PRICE_RANGE
from app.domain.records import MAX_ID as MAX_ID
from app.services.pagination import Paged

# An answer lists at most this many errors (or skipped items), then says how many more.
ERRORS_SHOWN = 100

# A JSON integer only: "3", true or 3.0 are a client's mistake, not match 3 or match 1.
MatchId = Annotated[int, Strict(), Field(ge=1, le=MAX_ID)]

ItemT = TypeVar("ItemT")


def price_field(outcome: str, example: float) -> Any:
    """The description, example and range of the price of one outcome in a request body."""
    return Field(
        description=f"Decimal odds of {outcome}: 1.0 < price ≤ 1000, a JSON number.",
        examples=[example],
        json_schema_extra=PRICE_RANGE,
    )


def with_examples(*examples: JsonValue) -> ConfigDict:
    """A model's config whose JSON schema gives these examples."""
    return ConfigDict(json_schema_extra={"examples": list(examples)})


class AnswerModel(BaseModel):
    """A part of an answer, read from the attributes of what a service returns."""

    model_config = ConfigDict(from_attributes=True)


class StrictModel(BaseModel):
    """A request body: a field it does not know is an error, not something to ignore."""

    model_config = ConfigDict(extra="forbid")


class Page(AnswerModel, Generic[ItemT]):
    """One page of a list, with the total over all pages."""

    items: list[ItemT]
    total: int
    limit: int
    offset: int

    @classmethod
    def of(cls, paged: Paged[Any]) -> Self:
        """The page a service returned, its rows read into this page's item type."""
        return cls.model_validate(paged)


OutcomeT = TypeVar("OutcomeT")


class Outcomes(AnswerModel, Generic[OutcomeT]):
    """One value for each outcome of a match: a home win, a draw, an away win. Read from the
    ``(home, draw, away)`` triple the domain gives, or from attributes of those names."""

    home: OutcomeT
    draw: OutcomeT
    away: OutcomeT

    @model_validator(mode="before")
    @classmethod
    def _of_triple(cls, value: Any) -> Any:
        if isinstance(value, tuple):
            home, draw, away = value
            return {"home": home, "draw": draw, "away": away}
        return value


# A probability is never taken as smaller than this, so that a fair price stays finite.
PROBABILITY_FLOOR = 1e-12


def fair_odds(probabilities: tuple[float, float, float]) -> tuple[float, float, float]:
    """The fair price of each outcome, without margin: 1 / its probability."""
    home, draw, away = probabilities
    floor = PROBABILITY_FLOOR
    return (1.0 / max(home, floor), 1.0 / max(draw, floor), 1.0 / max(away, floor))


STORED_MATCH_EXAMPLE: dict[str, JsonValue] = {
    "id": 17,
    "competition": "E0",
    "home_team": "Arsenal",
    "away_team": "Chelsea",
    "kickoff": "2026-11-22T15:00:00Z",
}


class StoredMatchOut(AnswerModel):
    """A stored match, as an answer names it."""

    model_config = with_examples(STORED_MATCH_EXAMPLE)

    id: int
    competition: str
    home_team: str
    away_team: str
    kickoff: dt.datetime


MODEL_WEIGHT_PRESENT = (
    "The share of the model's total weight held by the bookmakers that quoted this match, "
    "from 0 to 1: 1, all of them quoted it; 0, none did, and the answer is the consensus "
    "(basis says so too). Null when no model is active."
)
