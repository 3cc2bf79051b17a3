"""The body of GET /performance: how the logged predictions of a window fared, read from
the service's records (``from_attributes``)."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field


class _Read(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class ScoresOut(_Read):
    """Mean scores on ``matches`` matches; null without any."""

    matches: int
    log_loss: float | None = Field(description="Mean −ln p(result), natural log.")
    brier: float | None = Field(description="Mean Σ (p − o)² over the three outcomes.")
    rps: float | None = Field(description="Mean ranked probability score, 1 < X < 2.")
    accuracy: float | None = Field(description="Share of matches whose likeliest outcome won.")


class DifferenceOut(_Read):
    """Mean log loss of the served prediction minus the other forecast's, on the same
    matches: negative when the served one did better."""

    matches: int
    mean: float | None
    low: float | None = Field(description="95 % t interval's lower end (from 2 matches).")
    high: float | None = Field(description="95 % t interval's upper end.")
    p_value: float | None = Field(description="Two-sided paired t-test.")


class BestBookmakerOut(_Read):
    """Among the bookmakers that quoted at least `best_coverage` of the window's matches,
    the one of lowest log loss on the matches it quoted (chosen on this window, which
    flatters it), and the served prediction on those same matches; null when none did."""

    code: str | None
    coverage: float | None
    scores: ScoresOut
    served: ScoresOut
    served_minus_best: DifferenceOut


class MeanOut(_Read):
    mean: float | None
    low: float | None = Field(description="95 % t interval's lower end (from 2 values).")
    high: float | None


class BankrollPointOut(_Read):
    kickoff: dt.datetime
    bankroll: float = Field(description="The bankroll (from 1) after the bets of that kickoff.")


class ValueBetsOut(_Read):
    """The served forecast's value bets: the outcome each logged prediction valued most
    (judged by the served prediction itself, whatever the value source)."""

    bets: int
    bets_with_closing: int = Field(
        description="Bets on matches the closing reference bookmaker quoted before kickoff."
    )
    clv: MeanOut = Field(
        description="Closing-line value: price × the reference's de-margined probability − 1."
    )
    roi: MeanOut = Field(description="Net return of a stake of 1 on each bet.")
    profit: float = Field(description="Sum of those returns.")
    bankroll: list[BankrollPointOut] = Field(
        description="Staking `kelly_fraction` of Kelly (at most `stake_cap`) on each bet, "
        "from 1 at the window's start; its points are those of the days of `days`."
    )


class DayOut(_Read):
    day: dt.date
    matches: int
    served_log_loss: float
    consensus_log_loss: float
    best_bookmaker_matches: int = Field(
        description="The day's matches the window's best bookmaker (`best_bookmaker`) quoted."
    )
    best_bookmaker_log_loss: float | None = Field(
        description="Its mean log loss on them; null when it quoted none, or none was best."
    )
    bets: int
    profit: float


class PerformanceBody(_Read):
    matches: int = Field(description="Logged matches settled in the window.")
    served: ScoresOut
    consensus: ScoresOut
    served_minus_consensus: DifferenceOut
    best_bookmaker: BestBookmakerOut
    value_bets: ValueBetsOut
    days: list[DayOut] = Field(
        description="Per UTC day of kickoff, for plotting: the latest `days_max` days of the "
        "window with a settled logged match (ask for an earlier `to` to see earlier ones)."
    )


class FlagGroupOut(_Read):
    """Settled flags of the ledger, each scored from the net price it was raised at."""

    name: str | None = Field(
        description="The value source (`by_source`) or competition (`by_competition`); "
        "null for all flags together."
    )
    flags: int = Field(description="Settled flags whose match kicked off in the window.")
    flags_with_close: int = Field(
        description="Those scored against a closing line of the closing reference bookmaker."
    )
    clv: MeanOut = Field(
        description="Closing-line value from flag time: net price when raised × the close's "
        "de-margined probability − 1, over the flags with a close."
    )
    roi: MeanOut = Field(
        description="Flat return: net price − 1 if the flagged outcome won, else −1 (a stake "
        "of 1 at the net price when raised)."
    )
    profit: float = Field(description="Sum of those returns.")


class FlagsOut(_Read):
    """The flag ledger's settled flags of the window (GET /flags lists them one by one), by
    value source (the chain link that priced each) and by competition. CLV is the figure to
    watch: a few hundred flags pin it to about a point, while ROI stays noise for thousands."""

    all: FlagGroupOut
    by_source: list[FlagGroupOut] = Field(description="One per value source, by name.")
    by_competition: list[FlagGroupOut] = Field(description="One per competition, by code.")


class PerformanceOut(_Read):
    """The track record of a window: what was served at kickoff, scored by the results
    as they are now."""

    kickoff_from: dt.datetime | None = Field(serialization_alias="from")
    kickoff_to: dt.datetime | None = Field(serialization_alias="to")
    competition: str | None
    best_coverage: float = Field(description="Share of matches the best bookmaker must quote.")
    closing_reference: str = Field(description="The bookmaker whose last quote is the close.")
    closing_method: str = Field(description="How its line is de-margined.")
    kelly_fraction: float
    stake_cap: float
    days_max: int = Field(
        description="The most days `days` lists (ODDSBOOST_PERFORMANCE_DAYS_MAX); every other "
        "figure covers the whole window."
    )
    performance: PerformanceBody
    flags: FlagsOut = Field(
        description="The flag ledger's flags of the window's settled matches, scored from "
        "when they were raised (the `value_bets` of `performance` are those served at kickoff)."
    )
