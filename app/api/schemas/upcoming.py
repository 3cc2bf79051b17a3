"""The body of GET /upcoming: one page of the upcoming matches, each with its prediction, the
value of its outcomes, its value bets and the freshness of its quotes, read from the
service's records (``from_attributes``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field, model_validator

from app.api.schemas.common import (
    MODEL_WEIGHT_PRESENT,
    STORED_MATCH_EXAMPLE,
    AnswerModel,
    Outcomes,
    StoredMatchOut,
    fair_odds,
    with_examples,
)
from app.api.schemas.value_bets import ComingMatchesPage, ValueBetOut
from app.domain.prediction import MatchPrediction
from app.domain.records import Outcome
from app.domain.vocabulary import Basis


class UpcomingMatchOut(StoredMatchOut):
    """A stored match, as an answer names it, with its season."""

    model_config = with_examples({**STORED_MATCH_EXAMPLE, "season": "2026/27"})

    season: str


class UpcomingPredictionOut(AnswerModel):
    """The served prediction, as POST /predict gives it for the match's id."""

    probabilities: Outcomes[float] = Field(description="Sum to 1.")
    fair_odds: Outcomes[float] = Field(description="1 / probability.")
    basis: Basis = Field(
        description="'model': the weighted ensemble; 'consensus': the plain mean of the quotes "
        "(no model yet, or none of the match's bookmakers in it)."
    )
    outcome: Outcome = Field(description="The most probable outcome.")
    model_weight_present: float | None = Field(
        ge=0, le=1, description=MODEL_WEIGHT_PRESENT, examples=[0.82]
    )

    @model_validator(mode="before")
    @classmethod
    def _of_prediction(cls, value: Any) -> Any:
        """A prediction of the domain, with the fair odds of its probabilities."""
        if not isinstance(value, MatchPrediction):
            return value
        return {
            "probabilities": value.probabilities,
            "fair_odds": fair_odds(value.probabilities),
            "basis": value.basis,
            "outcome": value.outcome,
            "model_weight_present": value.model_weight_present,
        }


class BoardOutcomeValueOut(AnswerModel):
    """One outcome at the best price of the bookmakers allowed, and what it is worth: as
    /predict's ``OutcomeValueOut``, named by its outcome, without stakes (the board's stakes
    are its value bets')."""

    outcome: Outcome = Field(description="1: home win, X: draw, 2: away win.")
    probability: float | None = Field(
        description="The probability the value was judged by; null when no link of the "
        "source chain had a line for the match."
    )
    price: float | None = Field(
        description="The best price of the bookmakers allowed, as quoted (the best by "
        "net_price); null if none of them quoted it."
    )
    net_price: float | None = Field(
        description="What that price pays after the bookmaker's commission on net winnings "
        "(ODDSBOOST_EXCHANGE_COMMISSION): 1 + (price − 1) × (1 − commission); equal to price "
        "without one. Null with price."
    )
    bookmaker: str | None = Field(description="The bookmaker offering it (its code).")
    captured_at: dt.datetime | None = Field(description="When that price was captured.")
    expected_value: float | None = Field(description="probability × net_price − 1.")
    flagged: bool = Field(
        description="Whether this is the match's value bet: the outcome of highest "
        "expected value, when that value is above min_ev (at most one a match)."
    )


class MatchValueOut(AnswerModel):
    source: str | None = Field(
        description="The link of the source chain that priced the match: the first that had "
        "a line for it (`ensemble`, `consensus` or a bookmaker's code); null when none had, "
        "and the match gets no value."
    )
    outcomes: list[BoardOutcomeValueOut] = Field(description="1, X and 2, in that order.")


class FreshnessOut(AnswerModel):
    """The quotes the prediction read."""

    bookmakers: int = Field(description="How many bookmakers' quotes were read.")
    newest_captured_at: dt.datetime | None = Field(
        description="When the newest of them was captured (never later than it was received); "
        "null if none said."
    )
    oldest_captured_at: dt.datetime | None = Field(
        description="When the oldest of them was captured (never later than it was received); "
        "null if none said."
    )
    age_seconds: float | None = Field(
        description="Seconds from newest_captured_at to answered_at; never negative.", ge=0
    )


class UpcomingOut(AnswerModel):
    """One upcoming match with everything a dashboard shows of it."""

    match: UpcomingMatchOut
    prediction: UpcomingPredictionOut | None = Field(
        description="Null when the match has no usable quote (`reason` says so)."
    )
    reason: str | None = Field(description="Why there is no prediction; else null.")
    value: MatchValueOut | None = Field(description="Null without a prediction.")
    value_bets: list[ValueBetOut] = Field(
        description="The flagged outcomes as GET /value-bets lists them (stakes scaled by "
        "each UTC day's exposure cap over the whole window), highest expected value first."
    )
    freshness: FreshnessOut
    model_version: int | None = Field(
        description="The model version that served the prediction; null before the first fit "
        "or without a prediction."
    )


class UpcomingPage(ComingMatchesPage[UpcomingOut]):
    """One page of the upcoming matches, by kickoff then id."""

    model_version: int | None = Field(
        description="The active model version; null before the first fit."
    )
    answered_at: dt.datetime = Field(description="When this answer was made: the ages' origin.")
