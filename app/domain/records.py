"""Normalised ingest records shared by every source (admin JSON, CSV files, The Odds API).

Parsers turn a source into an :class:`IngestBatch`; the ingest service writes a batch in one
transaction. Nothing here knows about HTTP or the database.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Literal

from app.domain.vocabulary import Phase

Outcome = Literal["1", "X", "2"]
# The order of the outcomes wherever they are an axis (probabilities, odds, results 0/1/2).
OUTCOMES: tuple[Outcome, ...] = ("1", "X", "2")
OUTCOME_INDEX: dict[str, int] = {outcome: index for index, outcome in enumerate(OUTCOMES)}

PRICE_MAX = 1000.0
TEAM_NAME_MAX_LENGTH = 100
CODE_MAX_LENGTH = 64
# A competition or bookmaker code sent as JSON (the admin API, prediction requests, The Odds
# API's keys): a letter or digit, then letters, digits, "_", "." or "-". A season file's
# codes are looser (:func:`check_file_code`).
JSON_CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
# The bookmakers table keeps a display name in a column as wide as a team's name.
BOOKMAKER_NAME_MAX_LENGTH = TEAM_NAME_MAX_LENGTH
SEASON_MAX_LENGTH = 16
EXTERNAL_ID_MAX_LENGTH = 100
# Timestamps outside these years are typing mistakes, and near the ends of Python's range
# date arithmetic overflows.
EARLIEST = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)


def check_price(value: float) -> float:
    """A decimal price: finite and in (1, 1000]. Raises ``ValueError`` with the reason."""
    if not math.isfinite(value):
        raise ValueError("price must be a finite number")
    if value <= 1.0:
        raise ValueError(f"price {value:g} must be greater than 1.0 (decimal odds)")
    if value > PRICE_MAX:
        raise ValueError(f"price {value:g} is above the maximum of {PRICE_MAX:g}")
    return value


def check_text(value: str, what: str, max_length: int) -> str:
    """Trim and check a name or code: 1..max_length characters, no control characters.

    The characters themselves are kept verbatim (quotes, apostrophes, SQL, accents).
    """
    text = value.strip()
    if not text:
        raise ValueError(f"{what} is empty")
    if len(text) > max_length:
        raise ValueError(f"{what} is longer than {max_length} characters")
    if any(ord(character) < 32 or ord(character) == 127 for character in text):
        raise ValueError(f"{what} contains control characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode text (lone surrogate)") from None
    return text


# What str.strip() takes off the ends of a text (the characters of str.isspace), and the
# control characters check_text refuses, as classes of a regular expression.
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_CONTROL = r"\x00-\x1f\x7f"


def text_pattern(max_length: int, *, blank: bool = False) -> str:
    """The texts :func:`check_text` accepts, as a regular expression (for a JSON schema).

    Spaces around the text, then 1 to ``max_length`` characters without a control character,
    which start and end with something other than a space; with ``blank``, spaces only too
    (a text that means "not given"). Lone surrogates, which no JSON text needs, are left out.
    """
    edge = f"[^{_CONTROL}{_SPACE}]"
    text = f"{edge}(?:[^{_CONTROL}]{{0,{max_length - 2}}}{edge})?"
    if blank:
        text = f"(?:{text})?"
    return f"^[{_SPACE}]*{text}[{_SPACE}]*$"


def check_team_name(value: str) -> str:
    return check_text(value, "team name", TEAM_NAME_MAX_LENGTH)


def check_file_code(value: str, what: str = "code") -> str:
    """A competition code as a season file spells it, checked only as text.

    Newer files name a league by its country, and a country without a code of ours is kept
    as the competition's code, spaces and all; a code sent as JSON must match the stricter
    :data:`JSON_CODE_PATTERN`.
    """
    return check_text(value, what, CODE_MAX_LENGTH)


def check_bookmaker_name(value: str, what: str = "bookmaker name") -> str:
    return check_text(value, what, BOOKMAKER_NAME_MAX_LENGTH)


def check_season(value: str) -> str:
    return check_text(value, "season", SEASON_MAX_LENGTH)


def optional_season(value: str | None) -> str | None:
    """A season given by a caller: blank means "not given" (derive it); otherwise checked."""
    if value is None or not value.strip():
        return None
    return check_season(value)


def check_external_id(value: str) -> str:
    return check_text(value, "external id", EXTERNAL_ID_MAX_LENGTH)


def as_utc(value: dt.datetime) -> dt.datetime:
    """Naive timestamps are taken to be UTC (documented in the API); years 1900-2099 only."""
    try:
        moment = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError("timestamp is out of range (years 1900-2099)") from None
    if not EARLIEST <= moment < LATEST:
        raise ValueError("timestamp is out of range (years 1900-2099)")
    return moment


def season_of(day: dt.date) -> str:
    """European season of a date, August to July: 2018-08-10 and 2019-05-12 are "2018/19"."""
    start = day.year if day.month >= 8 else day.year - 1
    return f"{start}/{(start + 1) % 100:02d}"


def result_of(home_goals: int, away_goals: int) -> Outcome:
    if home_goals > away_goals:
        return "1"
    if home_goals < away_goals:
        return "2"
    return "X"


def settled_result(home_goals: int | None, away_goals: int | None) -> Outcome | None:
    """The result once both goals are known; ``None`` while the match is not settled.

    The one rule of a settled match. Code asks it through :attr:`MatchRecord.is_settled` or
    :attr:`app.domain.tables.MatchTable.settled`; in SQL, ``Match.is_settled`` mirrors it.
    """
    if home_goals is None or away_goals is None:
        return None
    return result_of(home_goals, away_goals)


@dataclass(frozen=True, slots=True)
class Skipped:
    """Something in the input that was not written, and why."""

    where: str  # "row 14", "quotes[3]", "events[2].bookmakers[0]"
    reason: str
    field: str | None = None


@dataclass(slots=True)
class MatchRecord:
    competition: str
    home_team: str
    away_team: str
    kickoff: dt.datetime  # aware, UTC
    kickoff_time_known: bool = True
    season: str | None = None  # derived from the kickoff when None
    external_id: str | None = None
    home_goals: int | None = None
    away_goals: int | None = None
    where: str = ""

    @property
    def kickoff_date(self) -> dt.date:
        return self.kickoff.date()

    @property
    def identity(self) -> tuple[str, str, str, dt.date]:
        return (self.competition, self.home_team, self.away_team, self.kickoff_date)

    @property
    def result(self) -> Outcome | None:
        return settled_result(self.home_goals, self.away_goals)

    @property
    def is_settled(self) -> bool:
        return self.result is not None


@dataclass(slots=True)
class QuoteRecord:
    match: int  # index into IngestBatch.matches
    bookmaker: str
    phase: Phase
    home: float
    draw: float
    away: float
    captured_at: dt.datetime | None = None
    where: str = ""


@dataclass(slots=True)
class IngestBatch:
    """Matches and quotes of one source document, already validated field by field."""

    matches: list[MatchRecord] = field(default_factory=list)
    quotes: list[QuoteRecord] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    bookmaker_names: dict[str, str] = field(default_factory=dict)
    rows_read: int = 0
