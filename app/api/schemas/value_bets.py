"""The body of GET /value-bets: one page of value bets, with the terms, the window and each
day's exposure."""

from __future__ import annotations

import datetime as dt
from typing import Any, Generic

from pydantic import Field, computed_field

from app.api.schemas.common import (
    STORED_MATCH_EXAMPLE,
    AnswerModel,
    ItemT,
    Page,
    StoredMatchOut,
    with_examples,
)
from app.api.schemas.predict import NO_MODEL_NOTE
from app.domain.records import Outcome
from app.domain.vocabulary import Basis

BET_EXAMPLE: dict[str, Any] = {
    "match": STORED_MATCH_EXAMPLE,
    "outcome": "1",
    "probability": 0.5,
    "source": "ensemble",
    "basis": "model",
    "model_version": 3,
    "price": 2.2,
    "net_price": 2.2,
    "bookmaker": "WH",
    "captured_at": "2026-11-21T18:30:00Z",
    "expected_value": 0.1,
    "unscaled_stake_fraction": 0.02,
    "day_scale": 1.0,
    "stake_fraction": 0.02,
    "stake": 20.0,
}


class ValueBetOut(AnswerModel):
    """One outcome worth betting on, by the probability used, at the best price of the
    bookmakers allowed."""

    model_config = with_examples(BET_EXAMPLE)

    match: StoredMatchOut
    outcome: Outcome = Field(description="1: home win, X: draw, 2: away win.")
    probability: float = Field(description="The probability the value was judged by.")
    source: str = Field(
        description="Where that probability came from: the link of the source chain that "
        "priced the match, the first that had a line for it: `ensemble` (the served "
        "prediction), `consensus` (the mean of the de-margined lines of the bookmakers that "
        "quoted it) or a bookmaker's code (its de-margined line)."
    )
    basis: Basis = Field(
        description="What the served prediction rests on: `model`, or `consensus` (no model "
        "yet, or none of the match's bookmakers in the model)."
    )
    model_version: int | None = Field(
        description="The model version that served the prediction; null before the first fit."
    )
    price: float = Field(
        description="The best price of the bookmakers allowed, as quoted (the best by net_price)."
    )
    net_price: float = Field(
        description="What that price pays after the bookmaker's commission on net winnings "
        "(an exchange's, ODDSBOOST_EXCHANGE_COMMISSION): 1 + (price − 1) × (1 − commission), "
        "e.g. Betfair Exchange's 2.10 at 5 % pays 2.045; equal to price without one. "
        "expected_value and the stake are computed from it."
    )
    bookmaker: str = Field(description="The bookmaker offering it (its code).")
    captured_at: dt.datetime | None = Field(
        description="When that price was captured (null if the source did not say); always "
        "before kickoff."
    )
    expected_value: float = Field(
        description="probability × net_price − 1: the mean return of a stake of 1, an estimate."
    )
    unscaled_stake_fraction: float = Field(
        description="The bet's own stake as a share of the bankroll: kelly_fraction × "
        "expected_value / (net_price − 1), at most stake_cap."
    )
    day_scale: float = Field(
        description="What the exposure cap of the kickoff's UTC day multiplies the stake by "
        "(1 when the day's stakes are within the cap)."
    )
    stake_fraction: float = Field(
        description="The stake to place, as a share of the bankroll: unscaled_stake_fraction "
        "× day_scale."
    )
    stake: float | None = Field(
        description="stake_fraction × bankroll, rounded down to the cent; null without a bankroll."
    )


class DayExposureOut(AnswerModel):
    """The stakes of one UTC kickoff day, over the whole list (every page)."""

    day: dt.date = Field(description="The UTC day of the kickoffs.")
    bets: int = Field(description="The value bets on that day's matches.")
    unscaled_exposure: float = Field(
        description="The sum of their unscaled stake fractions, before the cap."
    )
    scale: float = Field(
        description="daily_exposure_cap / unscaled_exposure when the sum is over the cap, else 1."
    )
    exposure: float = Field(description="The sum of their stake fractions, after the cap.")
    stake: float | None = Field(
        description="The sum of their stakes in money; null without a bankroll."
    )


class AppliedTermsOut(AnswerModel):
    """The terms the list was made with: the request's, the settings' where it gave none."""

    min_ev: float = Field(
        description="A match's outcome of highest expected value is listed when that "
        "value is above this (one bet a match at most)."
    )
    kelly_fraction: float = Field(description="The share of the Kelly stake suggested.")
    stake_cap: float = Field(description="The largest stake on one bet, a share of the bankroll.")
    daily_exposure_cap: float = Field(
        description="The largest sum of one UTC day's stakes, a share of the bankroll."
    )
    source: str = Field(
        description="The probability source asked for: a chain of links, comma-separated."
    )
    bookmakers: list[str] | None = Field(
        description="The bookmakers allowed, as codes (a name no known bookmaker has, in "
        "lower case); null: any."
    )
    bankroll: float | None = Field(description="The bankroll stakes are in; null: none given.")


class ComingMatchesPage(Page[ItemT], Generic[ItemT]):
    """A page of a list of the coming matches (the board, its value bets), with the window
    and the terms it was made with."""

    kickoff_from: dt.datetime = Field(
        serialization_alias="from", description="The earliest kickoff looked at."
    )
    kickoff_to: dt.datetime = Field(
        serialization_alias="to", description="The latest kickoff looked at."
    )
    terms: AppliedTermsOut
    unfitted: bool = Field(exclude=True)

    @computed_field(  # type: ignore[prop-decorator]
        description="Said when the probabilities are the bookmakers' consensus because no "
        "model has been fitted yet; else null."
    )
    @property
    def note(self) -> str | None:
        return NO_MODEL_NOTE if self.unfitted else None


class ValueBetPage(ComingMatchesPage[ValueBetOut]):
    """One page of value bets of the upcoming matches, highest expected value first."""

    days: list[DayExposureOut] = Field(
        description="Each UTC kickoff day of the whole list, in order, with its exposure."
    )
    model_version: int | None = Field(
        description="The model version that answered; null before the first fit (or when no "
        "match was answered)."
    )
