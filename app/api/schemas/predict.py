"""Bodies of the predict endpoints, as the API documents them (:mod:`app.api.answers`
writes the answers in these shapes)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, JsonValue, Strict, model_validator

from app.api.openapi import setting_maximum
from app.api.schemas.common import MatchId, StrictModel, price_field
from app.api.schemas.problems import Problem
from app.domain.fields import BookmakerReference, Code, TeamName, UtcDateTime
from app.domain.football_data import BOOKMAKER_NAMES, bookmaker_spellings
from app.domain.prediction import MatchInfo, QuotedMatch, QuotedOdds
from app.domain.records import (
    OVERROUND_MAX,
    OVERROUND_MIN,
    PRICE_MAX,
    check_overround,
    check_price,
)
from app.domain.vocabulary import Basis, Method, Phase
from app.services.prediction import PredictionRequest

INLINE_ODDS_MAX = 100
# The fields of an inline match, absent or null in a request by match_id (as _one_kind reads).
INLINE_FIELDS = ("home_team", "away_team", "competition", "kickoff", "odds")

StrictFloat = Annotated[float, Strict()]
# Far more than any real use; the hard cap behind ODDSBOOST_PREDICT_BATCH_MAX.
BATCH_ITEMS_CAP = 10_000


# Every known bookmaker's spellings, to tell when a request names one bookmaker twice.
KNOWN_SPELLINGS = bookmaker_spellings(BOOKMAKER_NAMES)

ODDS_EXAMPLES: list[JsonValue] = [
    {"bookmaker": "B365", "home": 2.10, "draw": 3.40, "away": 3.60},
    {"bookmaker": "PS", "home": 2.15, "draw": 3.45, "away": 3.55},
]


class OddsIn(StrictModel):
    """One bookmaker's 1X2 prices: a book a bookmaker could offer, its overround (the sum of
    1/price less 1) from -0.05 to +0.50."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": ODDS_EXAMPLES[:1]})

    bookmaker: Annotated[
        BookmakerReference,
        Field(
            description="The bookmaker's code (B365: Bet365, PS: Pinnacle) or its name as GET "
            "/bookmakers lists it, in any letter case: B365, b365 and Bet365 are one "
            "bookmaker. The model weighs bookmakers by code, and each may appear once.",
            examples=["B365"],
        ),
    ]
    # Checked together by _valid_prices, for speed: one comparison chain for the usual case.
    home: Annotated[StrictFloat, price_field("a home win", 2.10)]
    draw: Annotated[StrictFloat, price_field("a draw", 3.40)]
    away: Annotated[StrictFloat, price_field("an away win", 3.60)]

    @model_validator(mode="after")
    def _valid_prices(self) -> OddsIn:
        home, draw, away = self.home, self.draw, self.away
        if (
            1.0 < home <= PRICE_MAX
            and 1.0 < draw <= PRICE_MAX
            and 1.0 < away <= PRICE_MAX
            and OVERROUND_MIN <= 1.0 / home + 1.0 / draw + 1.0 / away - 1.0 <= OVERROUND_MAX
        ):
            return self  # the usual case, decided without a call per check (NaN fails it)
        for name in ("home", "draw", "away"):
            try:
                check_price(getattr(self, name))
            except ValueError as error:
                raise ValueError(f"bookmaker {self.bookmaker!r}, {name}: {error}") from None
        try:
            check_overround(home, draw, away)
        except ValueError as error:
            raise ValueError(f"bookmaker {self.bookmaker!r}: {error}") from None
        return self


class PredictIn(StrictModel):
    """Either a stored match (``match_id``) or an inline match with its ``odds``."""

    match_id: Annotated[
        MatchId | None,
        Field(
            description="A stored match, predicted from its latest quotes; give this or odds, "
            "not both.",
            examples=[17],
        ),
    ] = None
    home_team: Annotated[
        TeamName | None,
        Field(description="Inline only, optional: repeated in the answer.", examples=["Arsenal"]),
    ] = None
    away_team: Annotated[
        TeamName | None,
        Field(
            description="Inline only, optional: repeated in the answer; not home_team.",
            examples=["Chelsea"],
        ),
    ] = None
    competition: Annotated[
        Code | None,
        Field(description="Inline only, optional: repeated in the answer.", examples=["E0"]),
    ] = None
    kickoff: Annotated[
        UtcDateTime | None,
        Field(
            description="Inline only, optional: repeated in the answer (ISO 8601; UTC "
            "without an offset).",
            examples=["2026-11-22T15:00:00Z"],
        ),
    ] = None
    odds: Annotated[
        list[OddsIn] | None,
        Field(
            min_length=1,
            max_length=INLINE_ODDS_MAX,
            description="An inline match's quotes: 1 to 100 bookmakers, each once.",
            examples=[ODDS_EXAMPLES],
        ),
    ] = None

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"match_id": 17},
                {
                    "home_team": "Arsenal",
                    "away_team": "Chelsea",
                    "competition": "E0",
                    "kickoff": "2026-11-22T15:00:00Z",
                    "odds": ODDS_EXAMPLES,
                },
            ],
            # A stored match, or an inline one, as _one_kind checks.
            "oneOf": [
                {
                    "required": ["match_id"],
                    "properties": {
                        "match_id": {"type": "integer"},
                        **{name: {"type": "null"} for name in INLINE_FIELDS},
                    },
                },
                {
                    "required": ["odds"],
                    "properties": {"odds": {"type": "array"}, "match_id": {"type": "null"}},
                },
            ],
        },
    )

    def to_request(self) -> PredictionRequest:
        """What to ask the prediction service: the stored match, or this one with its odds."""
        if self.match_id is not None:
            return self.match_id
        assert self.odds is not None  # checked by _one_kind
        return QuotedMatch(
            MatchInfo(None, self.competition, self.home_team, self.away_team, self.kickoff),
            [QuotedOdds(o.bookmaker, o.home, o.draw, o.away) for o in self.odds],
        )

    @model_validator(mode="after")
    def _one_kind(self) -> PredictIn:
        inline = (self.home_team, self.away_team, self.competition, self.kickoff, self.odds)
        if self.match_id is not None:
            if any(value is not None for value in inline):
                raise ValueError("give either 'match_id' or an inline match with 'odds', not both")
            return self
        if self.odds is None:
            raise ValueError("give 'match_id' or 'odds'")
        names = [odds.bookmaker for odds in self.odds]
        bookmakers = [KNOWN_SPELLINGS.get(n.casefold(), n.casefold()) for n in names]
        if len(set(bookmakers)) < len(bookmakers):
            _refuse_repeated_bookmaker(names, bookmakers)
        if self.home_team is not None and self.home_team == self.away_team:
            raise ValueError("home_team and away_team must differ")
        return self


def _refuse_repeated_bookmaker(names: list[str], bookmakers: list[str]) -> NoReturn:
    """Say which bookmaker of ``odds`` is named twice, and how (``bookmakers``: the one
    each name means)."""
    first: dict[str, str] = {}
    for name, bookmaker in zip(names, bookmakers, strict=True):
        earlier = first.get(bookmaker)
        if earlier is not None:
            also = "" if earlier == name else f" (also as {earlier!r})"
            raise ValueError(f"bookmaker {name!r} appears more than once in 'odds'{also}")
        first[bookmaker] = name
    raise AssertionError("a bookmaker is repeated")  # pragma: no cover


def _inlined_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with its $defs inlined (an OpenAPI request body cannot
    point into a schema's own $defs)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref", "")
            if reference.startswith("#/$defs/"):
                return resolve(definitions[reference.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


# /predict reads its body itself (straight from the bytes); this documents it.
PREDICT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": _inlined_schema(PredictIn)}},
    }
}


class BatchIn(StrictModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"items": [{"match_id": 17}, {"odds": ODDS_EXAMPLES}]}]},
    )

    items: list[Any] = Field(
        min_length=1,
        max_length=BATCH_ITEMS_CAP,
        description="Up to ODDSBOOST_PREDICT_BATCH_MAX predict requests; each is checked on "
        "its own, so one bad item does not fail the others.",
        json_schema_extra=setting_maximum("predict_batch_max"),
        examples=[
            [
                {"match_id": 17},
                {"odds": [{"bookmaker": "PS", "home": 2.1, "draw": 3.4, "away": 3.6}]},
            ]
        ],
    )


class OutcomeValues(BaseModel):
    home: float
    draw: float
    away: float


class ModelRef(BaseModel):
    version: int | None
    algorithm: str
    fitted_at: dt.datetime | None
    rounds: int
    method: Method
    phase: Phase


class BookmakerUse(BaseModel):
    code: str
    weight: float | None = Field(description="Weight in the model; null when no model is active.")
    probabilities: OutcomeValues = Field(description="This bookmaker's de-margined probabilities.")


class IgnoredOut(BaseModel):
    code: str
    reason: str


class MatchSummary(BaseModel):
    id: int | None = None
    competition: str | None = None
    home_team: str | None = None
    away_team: str | None = None
    kickoff: dt.datetime | None = None


NO_MODEL_NOTE = "no model has been fitted yet: the probabilities are the bookmakers' consensus"
OUTSIDE_POOL_NOTE = (
    "none of the quoted bookmakers has weight in the model: the probabilities are their consensus"
)


class QuotesOut(BaseModel):
    """Which of a stored match's quotes the prediction read."""

    phase: Phase = Field(description="The phase of the quotes read.")
    fallback: bool = Field(
        description="false: the latest quote of each bookmaker in the model's phase captured "
        "before kickoff. true: the match has no quote of the model's phase captured before "
        "kickoff, so the latest quote of each bookmaker captured before kickoff, whatever its "
        "phase."
    )


class PredictionOut(BaseModel):
    match: MatchSummary
    probabilities: OutcomeValues = Field(description="Sum to 1.")
    outcome: Literal["1", "X", "2"] = Field(description="The most probable outcome.")
    fair_odds: OutcomeValues = Field(description="1 / probability.")
    model: ModelRef | None = Field(description="The model version used; null before the first fit.")
    quotes: QuotesOut | None = Field(
        description="For a stored match (match_id), which of its quotes were read; null for "
        "an inline match, whose odds are the ones sent."
    )
    basis: Basis = Field(
        description="'model': the weighted ensemble; 'consensus': the plain mean of the quotes."
    )
    note: str | None = None
    bookmakers: list[BookmakerUse] = Field(description="Bookmakers whose quotes were used.")
    ignored_bookmakers: list[IgnoredOut]
    consensus: OutcomeValues = Field(description="Plain mean of all de-margined quotes.")


class BatchItemOut(BaseModel):
    """One item of a batch answer, in the order the items were sent."""

    index: int
    status: int = Field(description="The HTTP status this item would have had on /predict.")
    prediction: PredictionOut | None = None
    error: Problem | None = Field(
        default=None,
        description="Why the item has no prediction, as the problem /predict would have "
        "answered (404, 422, 503); a validation error's location is inside the item.",
    )


class BatchOut(BaseModel):
    results: list[BatchItemOut]
