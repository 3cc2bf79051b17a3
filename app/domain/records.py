"""Normalised ingest records shared by every source (admin JSON, CSV files, The Odds API).

Parsers turn a source into an :class:`IngestBatch`; the ingest service writes a batch in one
transaction. Nothing here knows about HTTP or the database.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Literal

from app.domain.vocabulary import Phase
from app.domain.wording import counted

Outcome = Literal["1", "X", "2"]
# The order of the outcomes wherever they are an axis (probabilities, odds, results 0/1/2).
OUTCOMES: tuple[Outcome, ...] = ("1", "X", "2")
OUTCOME_INDEX: dict[str, int] = {outcome: index for index, outcome in enumerate(OUTCOMES)}

PRICE_MAX = 1000.0
# A book's overround, Σ 1/price − 1, runs from -0.033 to +0.371 over the 354,894 quotes of
# the season files, but for two typing mistakes: outside these bounds is a mistake.
OVERROUND_MIN = -0.05
OVERROUND_MAX = 0.5
TEAM_NAME_MAX_LENGTH = 100
CODE_MAX_LENGTH = 64
# A competition or bookmaker code sent as JSON; a season file's are looser (check_file_code).
JSON_CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
# The bookmakers table keeps a display name in a column as wide as a team's name.
BOOKMAKER_NAME_MAX_LENGTH = TEAM_NAME_MAX_LENGTH
SEASON_MAX_LENGTH = 16
SEASON_PATTERN = re.compile(r"(?P<start>[0-9]{4})(?:/(?P<end>[0-9]{2}))?")
SEASON_FORMS = "YYYY/YY (two consecutive years, e.g. 2018/19) or YYYY (a calendar year, e.g. 2019)"

# Sources name a few dozen at most; each new code becomes a bookmaker row.
BOOKMAKERS_PER_IMPORT_MAX = 100
EXTERNAL_ID_MAX_LENGTH = 100
# Largest id or offset accepted: the range of a 32-bit integer column.
MAX_ID = 2**31 - 1
# Unicode categories that cannot be seen: format characters (zero-width space, byte-order
# mark, bidirectional overrides) and line and paragraph separators.
INVISIBLE = frozenset({"Cf", "Zl", "Zp"})
# Why an operator activated a model version: a sentence, not an essay.
REASON_MAX_LENGTH = 500
# Outside these years a timestamp is a typing mistake (and date arithmetic may overflow).
EARLIEST = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
# How far a sender's clock may run ahead of ours (see CaptureLimit).
CAPTURE_SKEW = dt.timedelta(minutes=5)


class TooManyBookmakersError(ValueError):
    """A document names more bookmakers than one import takes; nothing was written."""


def check_bookmaker_count(codes: Iterable[str]) -> None:
    count = len(set(codes))
    if count > BOOKMAKERS_PER_IMPORT_MAX:
        raise TooManyBookmakersError(
            f"{counted(count, 'bookmaker')} in one import; at most {BOOKMAKERS_PER_IMPORT_MAX} "
            "are accepted"
        )


def check_price(value: float) -> float:
    """A decimal price: finite and in (1, 1000]. Raises ``ValueError`` with the reason."""
    if not math.isfinite(value):
        raise ValueError("price must be a finite number")
    if value <= 1.0:
        raise ValueError(f"price {value:g} must be greater than 1.0 (decimal odds)")
    if value > PRICE_MAX:
        raise ValueError(f"price {value:g} is above the maximum of {PRICE_MAX:g}")
    return value


def check_overround(home: float, draw: float, away: float) -> None:
    """A book of three valid prices a bookmaker could offer: its overround, Σ 1/price − 1,
    within [OVERROUND_MIN, OVERROUND_MAX]. Raises ``ValueError`` with the overround."""
    overround = 1.0 / home + 1.0 / draw + 1.0 / away - 1.0
    if not OVERROUND_MIN <= overround <= OVERROUND_MAX:
        raise ValueError(
            f"overround {overround:+.3f} is outside {OVERROUND_MIN:+.2f} to "
            f"{OVERROUND_MAX:+.2f} (the sum of 1/price less 1): not a bookmaker's prices"
        )


def normalised(value: str) -> str:
    """Text trimmed and composed (NFC), as every name is stored and looked up."""
    return unicodedata.normalize("NFC", value.strip())


# A season file names each team hundreds of times: each text is checked once.
@lru_cache(maxsize=4096)
def check_text(value: str, what: str, max_length: int) -> str:
    """Trim, compose (NFC) and check a name or code: 1..max_length characters, none of them
    a control or an invisible one (which would make a second name that looks the same)."""
    text = normalised(value)
    if not text:
        raise ValueError(f"{what} is empty")
    if len(text) > max_length:
        raise ValueError(f"{what} is longer than {counted(max_length, 'character')}")
    categories = [unicodedata.category(character) for character in text]
    if "Cc" in categories:
        raise ValueError(f"{what} contains control characters")
    invisible = next((c for c, cat in zip(text, categories, strict=True) if cat in INVISIBLE), None)
    if invisible is not None:
        raise ValueError(
            f"{what} contains the invisible character {describe_character(invisible)}; "
            "type the name without it"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode text (lone surrogate)") from None
    return text


def describe_character(character: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: a character named so that a reader can find it."""
    name = unicodedata.name(character, "")
    return f"U+{ord(character):04X} {name}".rstrip()


# What str.strip() takes off, and the control characters check_text refuses, as regex classes.
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_CONTROL = r"\x00-\x1f\x7f-\x9f"


def _escaped(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@cache
def _invisible_class() -> str:
    """The characters of the :data:`INVISIBLE` categories, as ranges of a regular
    expression's class, from the Unicode data check_text reads."""
    codes = [
        code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) in INVISIBLE
    ]
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(
        _escaped(first) if first == last else f"{_escaped(first)}-{_escaped(last)}"
        for first, last in ranges
    )


def text_pattern(max_length: int, *, blank: bool = False) -> str:
    """The texts :func:`check_text` accepts, as a regular expression for a JSON schema (with
    ``blank``, spaces only too); the length is the one sent, before composition."""
    refused = f"{_CONTROL}{_invisible_class()}"
    edge = f"[^{refused}{_SPACE}]"
    text = f"{edge}(?:[^{refused}]{{0,{max_length - 2}}}{edge})?"
    if blank:
        text = f"(?:{text})?"
    return f"^[{_SPACE}]*{text}[{_SPACE}]*$"


def season_pattern(*, blank: bool = False) -> str:
    """The seasons :func:`check_season` accepts, as a regular expression for a JSON schema
    (with ``blank``, spaces only too)."""
    consecutive = "|".join(f"{year:02d}/{year + 1:02d}" for year in range(99))
    first, last = EARLIEST.year // 100, LATEST.year // 100 - 1
    season = f"(?:{first}|{last})(?:[0-9]{{2}}|{consecutive})|{first}99/00"
    if blank:
        season = f"(?:{season})?"
    return f"^[{_SPACE}]*(?:{season})[{_SPACE}]*$"


def check_team_name(value: str) -> str:
    return check_text(value, "team name", TEAM_NAME_MAX_LENGTH)


def check_file_code(value: str, what: str = "code") -> str:
    """A competition code as a season file spells it (a country's name, spaces and all),
    checked only as text; JSON codes must match :data:`JSON_CODE_PATTERN` too."""
    return check_text(value, what, CODE_MAX_LENGTH)


def check_bookmaker_name(value: str, what: str = "bookmaker name") -> str:
    return check_text(value, what, BOOKMAKER_NAME_MAX_LENGTH)


def check_reason(value: str) -> str:
    return check_text(value, "reason", REASON_MAX_LENGTH)


def check_season(value: str) -> str:
    """A season, ``YYYY/YY`` (two consecutive years) or ``YYYY``, so that a typing mistake
    never becomes a new season (a league's form: ``leagues.check_league_season``)."""
    text = check_text(value, "season", SEASON_MAX_LENGTH)
    form = SEASON_PATTERN.fullmatch(text)
    if form is None:
        raise ValueError(f"season {text!r} is not {SEASON_FORMS}")
    start = int(form["start"])
    last = start if form["end"] is None else start + 1
    if form["end"] is not None and int(form["end"]) != last % 100:
        raise ValueError(
            f"season {text!r} is not {SEASON_FORMS}: after {start} comes {start}/{last % 100:02d}"
        )
    if start < EARLIEST.year or last >= LATEST.year:
        raise ValueError(
            f"season {text!r} is not {SEASON_FORMS} in the years {EARLIEST.year}-{LATEST.year - 1}"
        )
    return text


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


def result_of(home_goals: int, away_goals: int) -> Outcome:
    if home_goals > away_goals:
        return "1"
    if home_goals < away_goals:
        return "2"
    return "X"


def settled_result(home_goals: int | None, away_goals: int | None) -> Outcome | None:
    """The result once both goals are known: the one rule of a settled match, which
    ``Match.is_settled`` mirrors in SQL."""
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
    # None: not given; a new match takes the season its league names the kickoff in
    # (season_for in app.domain.leagues).
    season: str | None = None
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
    # Where the source document gives the capture time (a path of JSON keys and indices),
    # so that a refusal can name the field.
    capture_path: tuple[str | int, ...] = ()


@dataclass(frozen=True, slots=True)
class CaptureLimit:
    """The latest capture time a quote received at ``received_at`` may carry: no price is
    offered in the future, but the sender's clock may run ``skew`` ahead."""

    received_at: dt.datetime
    skew: dt.timedelta = CAPTURE_SKEW

    def refuses(self, captured_at: dt.datetime | None) -> bool:
        return captured_at is not None and captured_at > self.received_at + self.skew

    def reason(self, captured_at: dt.datetime) -> str:
        return (
            f"{_utc_text(captured_at)} is in the future: later than the moment the prices were "
            f"received, {_utc_text(self.received_at)}, by more than the "
            f"{self.skew.total_seconds():g} s allowed for a clock running ahead"
        )


def _utc_text(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class CapturedInFutureError(ValueError):
    """Quotes whose capture time the :class:`CaptureLimit` refuses; nothing was written."""

    def __init__(self, quotes: Sequence[QuoteRecord], limit: CaptureLimit) -> None:
        self.quotes = tuple(quotes)
        self.limit = limit
        first = quotes[0]
        assert first.captured_at is not None
        super().__init__(f"{first.where}: {limit.reason(first.captured_at)}")

    def reasons(self) -> list[tuple[QuoteRecord, str]]:
        return [
            (quote, self.limit.reason(quote.captured_at))
            for quote in self.quotes
            if quote.captured_at is not None
        ]


def credible_capture(
    captured_at: dt.datetime | None, received_at: dt.datetime | None
) -> dt.datetime | None:
    """A stored quote's capture time, but never later than its receipt (a later one is a
    clock mistake, and would outrank quotes captured after it arrived).
    ``OddsQuote.credible_captured_at`` mirrors this rule in SQL."""
    if captured_at is None or received_at is None:
        return captured_at
    return min(captured_at, received_at)


@dataclass(slots=True)
class IngestBatch:
    """Matches and quotes of one source document, already validated field by field."""

    matches: list[MatchRecord] = field(default_factory=list)
    quotes: list[QuoteRecord] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    bookmaker_names: dict[str, str] = field(default_factory=dict)
    rows_read: int = 0

    def captured_beyond(self, limit: CaptureLimit) -> list[QuoteRecord]:
        return [quote for quote in self.quotes if limit.refuses(quote.captured_at)]

    def skip_captured_beyond(self, limit: CaptureLimit) -> None:
        """Leave out, as skipped, the quotes whose capture time ``limit`` refuses."""
        kept: list[QuoteRecord] = []
        for quote in self.quotes:
            if quote.captured_at is not None and limit.refuses(quote.captured_at):
                field_name = str(quote.capture_path[-1]) if quote.capture_path else "captured_at"
                self.skipped.append(
                    Skipped(quote.where, limit.reason(quote.captured_at), field_name)
                )
            else:
                kept.append(quote)
        self.quotes = kept
