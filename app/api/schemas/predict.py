"""Bodies of the predict endpoints: a request by match id or inline, and the answer, read
from the prediction service's records."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Annotated, Any

from pydantic import (
    Discriminator,
    Field,
    JsonValue,
    StrictFloat,
    Tag,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.api.openapi import setting_maximum
from app.api.schemas.common import (
    MODEL_WEIGHT_PRESENT,
    AnswerModel,
    MatchId,
    Outcomes,
    StrictModel,
    fair_odds,
    price_field,
    with_examples,
)
from app.api.schemas.problems import Problem
from app.domain.bookmakers import bookmaker_key
from app.domain.fields import BookmakerReference, Code, TeamName, UtcDateTime
from app.domain.prediction import MatchInfo, QuotedMatch, QuotedOdds
from app.domain.records import (
    OVERROUND_MAX,
    OVERROUND_MIN,
    PRICE_MAX,
    Outcome,
    check_overround,
    check_price,
)
from app.domain.value import ValueTerms
from app.domain.value_sources import ValueSourceChain
from app.domain.vocabulary import Basis, Method, Phase
from app.services.prediction import PredictionAnswer, PredictionRequest

INLINE_ODDS_MAX = 100

# A share of the bankroll or of the Kelly stake.
Share = Annotated[StrictFloat, Field(gt=0, le=1, allow_inf_nan=False)]
# Far more than any real use; the hard cap behind ODDSBOOST_PREDICT_BATCH_MAX.
BATCH_ITEMS_CAP = 10_000


ODDS_EXAMPLES: list[JsonValue] = [
    {"bookmaker": "B365", "home": 2.10, "draw": 3.40, "away": 3.60},
    {"bookmaker": "PS", "home": 2.15, "draw": 3.45, "away": 3.55},
]


class OddsIn(StrictModel):
    """One bookmaker's 1X2 prices: a book a bookmaker could offer, its overround (the sum of
    1/price less 1) from -0.05 to +0.50."""

    model_config = with_examples(ODDS_EXAMPLES[0])

    bookmaker: BookmakerReference = Field(
        description="The bookmaker's code (B365: Bet365, PS: Pinnacle) or its name as GET "
        "/bookmakers lists it, in any letter case: B365, b365 and Bet365 are one "
        "bookmaker. The model weighs bookmakers by code, and each may appear once.",
        examples=["B365"],
    )
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


# The largest bankroll a request may give: far above any real one, and finite.
BANKROLL_MAX = 1e12

VALUE_EXAMPLE: dict[str, JsonValue] = {
    "bookmakers": ["B365", "William Hill"],
    "bankroll": 1000,
    "min_ev": 0.03,
}


class ValueIn(StrictModel):
    """The terms an answer's value is judged by; a field left out takes its setting
    (ODDSBOOST_VALUE_*)."""

    model_config = with_examples(VALUE_EXAMPLE)

    bookmakers: list[BookmakerReference] | None = Field(
        default=None,
        min_length=1,
        max_length=INLINE_ODDS_MAX,
        description="The bookmakers you can bet with, by code or name in any letter case "
        "(B365, b365 and Bet365 are one); only their prices are considered. A name no "
        "quote of the match has is not an error: it matches nothing. Left out: every "
        "bookmaker.",
        examples=[["B365", "William Hill"]],
    )
    bankroll: StrictFloat | None = Field(
        default=None,
        gt=0,
        le=BANKROLL_MAX,
        allow_inf_nan=False,
        description="Your bankroll, in any currency: each stake is then also given in "
        "money. Left out: stakes are shares of a bankroll only.",
        examples=[1000],
    )
    min_ev: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="An outcome is flagged when its expected value is above this "
        "(0 to 1). Left out: ODDSBOOST_VALUE_MIN_EV.",
        examples=[0.03],
    )
    kelly_fraction: Share | None = Field(
        default=None,
        description="The share of the Kelly stake suggested (over 0, at most 1). Left "
        "out: ODDSBOOST_VALUE_KELLY_FRACTION.",
        examples=[0.25],
    )
    stake_cap: Share | None = Field(
        default=None,
        description="The largest stake on one outcome, as a share of the bankroll (over "
        "0, at most 1). Left out: ODDSBOOST_VALUE_STAKE_CAP.",
        examples=[0.02],
    )
    source: ValueSourceChain | None = Field(
        default=None,
        description="Where the probability comes from: a chain of up to five links, "
        "comma-separated, each 'ensemble' (the served prediction), 'consensus' (the mean of "
        "the de-margined lines of the bookmakers that quoted the match) or a known "
        "bookmaker by code or name (e.g. PS, its de-margined line). For each match the "
        "first link with a line prices it; a match none has a line for gets no value. "
        "Left out: ODDSBOOST_VALUE_PROBABILITY_SOURCE.",
        examples=["PS,consensus"],
    )

    def terms(self, defaults: ValueTerms) -> ValueTerms:
        """These terms, each one left out taken from ``defaults``."""
        given = self.model_dump(exclude_none=True)
        if self.bookmakers is not None:
            given["bookmakers"] = frozenset(bookmaker_key(name) for name in self.bookmakers)
        return replace(defaults, **given)


# What the answer's value is judged by, in either kind of request.
ValueField = Annotated[
    ValueIn | None,
    Field(
        description="The terms the answer's value is judged by (bookmakers you can bet with, "
        "bankroll, thresholds, probability source); left out, or any field of it left out: "
        "the service's settings.",
        examples=[VALUE_EXAMPLE],
    ),
]


# A field of the other kind of request, which either leaves it out or gives it as null.
OtherKind = Annotated[
    None,
    Field(description="Of the other kind of request: left out, or null.", examples=[None]),
]


class _Valued:
    """What either kind of request does with the ``value`` terms it gives."""

    value: ValueIn | None

    def value_terms(self, defaults: ValueTerms) -> ValueTerms | None:
        """The terms this request's value is judged by; None: ``defaults``, unchanged."""
        return None if self.value is None else self.value.terms(defaults)


BY_ID_EXAMPLES: list[JsonValue] = [{"match_id": 17}, {"match_id": 17, "value": VALUE_EXAMPLE}]


class PredictByIdIn(_Valued, StrictModel):
    """A stored match, by its id (the fields of an inline match may be given only as null)."""

    model_config = with_examples(*BY_ID_EXAMPLES)

    match_id: MatchId = Field(
        description="A stored match, predicted from its latest quotes.", examples=[17]
    )
    home_team: OtherKind = None
    away_team: OtherKind = None
    competition: OtherKind = None
    kickoff: OtherKind = None
    odds: OtherKind = None
    value: ValueField = None

    def to_request(self) -> PredictionRequest:
        return self.match_id


INLINE_EXAMPLE: dict[str, JsonValue] = {
    "home_team": "Arsenal",
    "away_team": "Chelsea",
    "competition": "E0",
    "kickoff": "2026-11-22T15:00:00Z",
    "odds": ODDS_EXAMPLES,
}


class PredictInlineIn(_Valued, StrictModel):
    """A match given with its odds (``match_id`` may be given only as null)."""

    model_config = with_examples(INLINE_EXAMPLE)

    match_id: OtherKind = None
    home_team: TeamName | None = Field(
        default=None, description="Optional: repeated in the answer.", examples=["Arsenal"]
    )
    away_team: Annotated[
        # An example of its own at each level: no example of a request names one team twice.
        Annotated[TeamName, Field(examples=["Chelsea"])] | None,
        Field(description="Optional: repeated in the answer; not home_team.", examples=["Chelsea"]),
    ] = None
    competition: Code | None = Field(
        default=None, description="Optional: repeated in the answer.", examples=["E0"]
    )
    kickoff: UtcDateTime | None = Field(
        default=None,
        description="Optional: repeated in the answer (ISO 8601; UTC without an offset).",
        examples=["2026-11-22T15:00:00Z"],
    )
    odds: list[OddsIn] = Field(
        min_length=1,
        max_length=INLINE_ODDS_MAX,
        description="The match's quotes: 1 to 100 bookmakers, each once.",
        examples=[ODDS_EXAMPLES],
    )
    value: ValueField = None

    def to_request(self) -> PredictionRequest:
        return QuotedMatch(
            MatchInfo(None, self.competition, self.home_team, self.away_team, self.kickoff),
            [QuotedOdds(o.bookmaker, o.home, o.draw, o.away) for o in self.odds],
        )

    @model_validator(mode="after")
    def _one_match(self) -> PredictInlineIn:
        first: dict[str, str] = {}  # the name each bookmaker is first given by
        for odds in self.odds:
            name, bookmaker = odds.bookmaker, bookmaker_key(odds.bookmaker)
            earlier = first.get(bookmaker)
            if earlier is not None:
                also = "" if earlier == name else f" (also as {earlier!r})"
                raise ValueError(f"bookmaker {name!r} appears more than once in 'odds'{also}")
            first[bookmaker] = name
        if self.home_team is not None and self.home_team == self.away_team:
            raise ValueError("home_team and away_team must differ")
        return self


BY_ID, INLINE = "by_id", "inline"


def _kind(body: Any) -> str | None:
    """A request by id gives a match_id, an inline one its odds (None: both, or neither)."""
    if isinstance(body, dict):
        by_id, inline = body.get("match_id") is not None, body.get("odds") is not None
        if by_id != inline:
            return BY_ID if by_id else INLINE
    return None


def _located_in_the_body(body: Any, validate: ValidatorFunctionWrapHandler) -> Any:
    """The union's tag is no place in the request: an error is located as in the body."""
    try:
        return validate(body)
    except ValidationError as error:
        raise ValidationError.from_exception_data(
            error.title,
            [
                InitErrorDetails(
                    type=PydanticCustomError(e["type"], e["msg"]),
                    loc=e["loc"][1:],
                    input=e["input"],
                )
                for e in error.errors(include_url=False)
            ],
        ) from None


# A request of /predict (and each item of a batch): a stored match by id, or an inline one.
PredictIn = Annotated[
    Annotated[PredictByIdIn, Tag(BY_ID)] | Annotated[PredictInlineIn, Tag(INLINE)],
    Discriminator(
        _kind,
        custom_error_type="predict_kind",
        custom_error_message="Value error, give either 'match_id' (a stored match) or 'odds' "
        "(an inline match), not both",
    ),
    WrapValidator(_located_in_the_body),
    Field(
        title="PredictIn",
        description="Either a stored match (``match_id``) or an inline match with its "
        "``odds``; either may give the ``value`` terms its answer's value is judged by.",
        examples=[*BY_ID_EXAMPLES, INLINE_EXAMPLE],
    ),
]


class BatchIn(StrictModel):
    model_config = with_examples({"items": [{"match_id": 17}, {"odds": ODDS_EXAMPLES}]})

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


class ModelRef(AnswerModel):
    version: int | None
    algorithm: str
    fitted_at: dt.datetime | None
    rounds: int
    method: Method
    phase: Phase


class BookmakerUse(AnswerModel):
    code: str
    weight: float | None = Field(description="Weight in the model; null when no model is active.")
    probabilities: Outcomes[float] = Field(
        description="This bookmaker's de-margined probabilities."
    )


class IgnoredOut(AnswerModel):
    code: str
    reason: str


class MatchSummary(AnswerModel):
    """The match predicted: a stored one with every field, an inline one with what its
    sender gave (possibly nothing)."""

    id: int | None = None
    competition: str | None = None
    home_team: str | None = None
    away_team: str | None = None
    kickoff: dt.datetime | None = None


NO_MODEL_NOTE = "no model has been fitted yet: the probabilities are the bookmakers' consensus"
OUTSIDE_POOL_NOTE = (
    "none of the quoted bookmakers has weight in the model: the probabilities are their consensus"
)


class QuotesOut(AnswerModel):
    """Which of a stored match's quotes the prediction read."""

    phase: Phase = Field(description="The phase of the quotes read.")
    fallback: bool = Field(
        description="false: the latest quote of each bookmaker in the model's phase captured "
        "before kickoff. true: the match has no quote of the model's phase captured before "
        "kickoff, so the latest quote of each bookmaker captured before kickoff, whatever its "
        "phase."
    )


# What the API docs of every value (/predict's, /value-bets, /upcoming) say about using it.
RESPONSIBLE_USE = (
    "The expected value is an estimate, only as good as the probability it is judged by, "
    "not a promise: a small error in the probability makes or removes an edge of a few per "
    "cent. The return over a few hundred bets is mostly noise, and bookmakers limit or close "
    "accounts that win."
)


class OutcomeValueOut(AnswerModel):
    """One outcome at the best price of the allowed bookmakers, and what it is worth."""

    probability: float | None = Field(
        description="The probability the value is judged by: the line of the link of the "
        "source chain that priced the match (see source_used); null when none had one."
    )
    price: float | None = Field(
        description="The best price of the outcome among the allowed bookmakers' quotes the "
        "prediction read, as quoted (the best by net_price); null when none of them quoted "
        "the match."
    )
    net_price: float | None = Field(
        description="What that price pays after the bookmaker's commission on net winnings "
        "(an exchange's, ODDSBOOST_EXCHANGE_COMMISSION): 1 + (price − 1) × (1 − commission), "
        "e.g. Betfair Exchange's 2.10 at 5 % pays 2.045; equal to price without one. "
        "expected_value and the stake are computed from it. Null with price."
    )
    bookmaker: str | None = Field(
        description="Who offers that price, as its quote names it (its code for a stored "
        "match); null with price."
    )
    captured_at: dt.datetime | None = Field(
        description="When that price was captured: for a stored match the latest quote of "
        "the bookmaker captured before kickoff, never one after; null for the sender's odds."
    )
    expected_value: float | None = Field(
        description="probability × net_price − 1: the mean return of a stake of 1 if the "
        "probability is right. An estimate, see value. Null with price."
    )
    stake_fraction: float = Field(
        description="The suggested stake as a share of the bankroll: kelly_fraction × "
        "expected_value / (net_price − 1), at most stake_cap; 0 unless flagged."
    )
    stake: float | None = Field(
        description="stake_fraction × bankroll, rounded down to the cent; null without a bankroll."
    )
    flagged: bool = Field(
        description="Whether this is the match's value bet: of the outcomes whose "
        "expected_value is above min_ev, the one whose expected_value is highest (the first "
        "in 1, X, 2 order on a tie). At most one outcome a match is flagged."
    )


class ValueTermsOut(AnswerModel):
    """The terms the value was judged by: the request's, each field it left out (or all,
    without ``value``) from the settings."""

    source: str = Field(
        description="The probability source asked for: a chain of links, comma-separated "
        "('ensemble', 'consensus' or a bookmaker's code), normalised."
    )
    bookmakers: list[str] | None = Field(
        description="The bookmakers whose prices were considered, as codes (a name not known "
        "as a code is shown in lower case); null: every bookmaker."
    )
    min_ev: float = Field(
        description="A match's outcome of highest expected value is flagged when that "
        "value is above it."
    )
    kelly_fraction: float = Field(description="The share of the Kelly stake suggested.")
    stake_cap: float = Field(description="The largest stake on one outcome, as a share.")
    bankroll: float | None = Field(description="The bankroll stakes are given in; null: none.")

    @field_validator("bookmakers", mode="before")
    @classmethod
    def _in_order(cls, bookmakers: Any) -> Any:
        return sorted(bookmakers) if isinstance(bookmakers, frozenset) else bookmakers


class ValueOut(AnswerModel):
    """Where the match's outcomes offer value: expected value and suggested stake of each
    at the best price the allowed bookmakers quoted."""

    terms: ValueTermsOut
    source_used: str | None = Field(
        description="The link of the source chain that priced the match: the first that had "
        "a line for it; null when none had, and no outcome is flagged."
    )
    outcomes: Outcomes[OutcomeValueOut]


class PredictionOut(AnswerModel):
    match: MatchSummary
    probabilities: Outcomes[float] = Field(description="Sum to 1.")
    outcome: Outcome = Field(description="The most probable outcome.")
    fair_odds: Outcomes[float] = Field(description="1 / probability.")
    model: ModelRef | None = Field(description="The model version used; null before the first fit.")
    quotes: QuotesOut | None = Field(
        description="For a stored match (match_id), which of its quotes were read; null for "
        "an inline match, whose odds are the ones sent."
    )
    basis: Basis = Field(
        description="'model': the weighted ensemble; 'consensus': the plain mean of the quotes."
    )
    model_weight_present: float | None = Field(
        ge=0, le=1, description=MODEL_WEIGHT_PRESENT, examples=[0.82]
    )
    note: str | None = None
    bookmakers: list[BookmakerUse] = Field(description="Bookmakers whose quotes were used.")
    ignored_bookmakers: list[IgnoredOut]
    consensus: Outcomes[float] = Field(description="Plain mean of all de-margined quotes.")
    value: ValueOut = Field(
        description="Where the outcomes offer value, by the request's terms or the "
        "settings'. " + RESPONSIBLE_USE
    )

    @model_validator(mode="before")
    @classmethod
    def _of_answer(cls, answer: Any) -> Any:
        """An answer of the prediction service, laid out as this model."""
        if not isinstance(answer, PredictionAnswer):
            return answer
        prediction, model = answer.prediction, answer.model
        note = None
        if model is None:
            note = NO_MODEL_NOTE
        elif prediction.basis == Basis.CONSENSUS:
            note = OUTSIDE_POOL_NOTE
        return {
            "match": answer.match,
            "probabilities": prediction.probabilities,
            "outcome": prediction.outcome,
            "fair_odds": fair_odds(prediction.probabilities),
            "model": model,
            "quotes": answer.quotes,
            "basis": prediction.basis,
            "model_weight_present": prediction.model_weight_present,
            "note": note,
            "bookmakers": prediction.used,
            "ignored_bookmakers": prediction.ignored,
            "consensus": prediction.consensus,
            "value": {
                "terms": answer.terms,
                "source_used": answer.value.source,
                "outcomes": answer.value.outcomes,
            },
        }


class BatchItemOut(AnswerModel):
    """One item of a batch answer, in the order the items were sent."""

    index: int
    status: int = Field(description="The HTTP status this item would have had on /predict.")
    prediction: PredictionOut | None = None
    error: Problem | None = Field(
        default=None,
        description="Why the item has no prediction, as the problem /predict would have "
        "answered (404, 422, 503); a validation error's location is inside the item.",
    )


class BatchOut(AnswerModel):
    results: list[BatchItemOut]
