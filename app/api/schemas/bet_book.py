"""The bettor's book in and out: what an import recorded (POST /bets/import) and the book's
summary (GET /bets/summary), read from the service's records (``from_attributes``)."""

from __future__ import annotations

import datetime as dt

from pydantic import AliasPath, Field

from app.api.schemas.common import AnswerModel
from app.api.schemas.performance import MeanOut

ROI_IS_NOISE = (
    "ROI over a few hundred bets is noise; CLV is the signal: at 300 bets at price 2.0 the "
    "ROI's 95 % interval is about ±11 points wide either way, while the mean CLV of the same "
    "bets is pinned to about ±1 point."
)


class BetImportOut(AnswerModel):
    """What the import recorded, or (a dry run) would record."""

    dry_run: bool
    imported: int = Field(description="Bets recorded (in a dry run: that would be).")
    bet_ids: list[int] = Field(
        description="The new bets' ids, in the file's order; empty in a dry run."
    )
    already_recorded: list[int] = Field(
        description="Lines of rows already in the book (the same match, outcome, bookmaker, "
        "price, stake and time placed), not recorded twice: importing a file again changes "
        "nothing."
    )


class BookFiguresOut(AnswerModel):
    """Figures of some bets. Won and lost bets make the money figures; void bets are only
    counted; open bets are counted and their stakes summed apart."""

    bets: int
    open: int
    settled: int = Field(description="Won or lost.")
    void: int = Field(description="Returned their stake; out of the ROI and CLV.")
    open_stake: float = Field(description="Sum of the open bets' stakes.")
    staked: float = Field(description="Sum of the settled bets' stakes.")
    returned: float = Field(description="What the settled bets paid back, stakes included.")
    profit: float = Field(description="returned − staked.")
    roi: MeanOut = Field(
        description="profit / staked, with its 95 % interval by the delta method (the t "
        "interval of (profit_i − ROI·stake_i) / mean stake, shifted by the ROI). " + ROI_IS_NOISE
    )
    clv: MeanOut = Field(
        description="Mean CLV of the settled bets with a closing line, with its 95 % t "
        "interval: price × p_close(outcome) − 1 against the reference bookmaker's close."
    )
    bets_with_close: int = Field(
        validation_alias=AliasPath("clv", "n"), description="Settled bets with a closing line."
    )


class BookGroupOut(AnswerModel):
    key: str = Field(
        description="The bookmaker's code, the competition's code, the month placed "
        "(YYYY-MM in `tz`) or the value source (`none`: not from a flag)."
    )
    figures: BookFiguresOut


class BookBankrollPointOut(AnswerModel):
    """The bankroll just after one settled bet, plotted at its match's kickoff."""

    bet_id: int
    kickoff: dt.datetime = Field(
        description="The kickoff of the bet's match: the curve's order and its time axis."
    )
    settled_at: dt.datetime = Field(
        description="When the bet was (last) settled: for an imported history, the import's "
        "moment; a late close or a corrected result moves it."
    )
    bankroll: float = Field(description="The starting bankroll plus the profits so far.")


class BookSummaryOut(AnswerModel):
    """The book summed up, as a whole and by bookmaker, competition, month placed and source;
    the bankroll after each settled bet, in the order of their matches' kickoffs (then the
    time placed, then the bet's id)."""

    overall: BookFiguresOut
    by_bookmaker: list[BookGroupOut]
    by_competition: list[BookGroupOut]
    by_month: list[BookGroupOut]
    by_source: list[BookGroupOut]
    time_zone: str = Field(description="The time zone of the months.")
    starting_bankroll: float
    bankroll: list[BookBankrollPointOut]
