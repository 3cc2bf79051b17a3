"""The bettor's book as CSV: one format for import and export.

A row names its match as a spreadsheet user knows it (competition code, kickoff date, home
and away team as any source spells them) or by ``match_id``; the price as typed (decimal,
fractional, American, evens). Parsing here is pure: text to rows, each bad field reported
with its line and column; finding the matches is the service's
(:mod:`app.services.bet_book`). The export writes the same columns, then the settlement's
(:data:`SETTLEMENT_COLUMNS`), which an import reads past: an exported file imports again.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from app.domain.bets import (
    BET_NOTE_MAX_LENGTH,
    PRICE_TEXT_MAX_LENGTH,
    BetStatus,
    decimal_price,
    stake_problem,
)
from app.domain.football_data import parse_date
from app.domain.records import (
    CODE_MAX_LENGTH,
    MAX_ID,
    as_utc,
    check_bookmaker_name,
    check_file_code,
    check_team_name,
    check_text,
)
from app.domain.wording import counted

# The columns a user writes, in the order the export writes them.
BET_CSV_COLUMNS = (
    "placed_at",
    "competition",
    "kickoff",
    "home",
    "away",
    "outcome",
    "bookmaker",
    "price",
    "stake",
    "status",
    "note",
    "match_id",
    "flag_id",
)
# What the export adds: the bet's id and how it was settled. An import reads past them: they
# are the book's, worked out again from the stored result and close.
SETTLEMENT_COLUMNS = (
    "id",
    "result",
    "returned",
    "profit",
    "close_price",
    "closing_probability",
    "clv",
    "close_origin",
    "settled_at",
)
EXPORT_COLUMNS = BET_CSV_COLUMNS + SETTLEMENT_COLUMNS
REQUIRED_COLUMNS = ("placed_at", "outcome", "bookmaker", "price", "stake")
# Without a match_id, a row names its match by these four.
MATCH_NAME_COLUMNS = ("competition", "kickoff", "home", "away")

# Bounds of one import: a season of a busy bettor's book fits many times over.
MAX_IMPORT_ROWS = 10_000
MAX_IMPORT_BYTES = 2 * 1024 * 1024
# Where the header is: a file's first line.
HEADER_LINE = 1

_OUTCOMES = {
    "1": "1",
    "x": "X",
    "2": "2",
    "h": "1",
    "d": "X",
    "a": "2",
    "home": "1",
    "draw": "X",
    "away": "2",
}
_STAKE = re.compile(r"^\d+(?:\.\d+)?$")
_ID = re.compile(r"^\d+$")


@dataclass(frozen=True, slots=True)
class RowError:
    """Why a row (or the file) cannot be imported: its line in the file (1 is the header),
    the column (None: the whole row or file) and what is wrong."""

    line: int
    column: str | None
    message: str


@dataclass(frozen=True, slots=True)
class MatchName:
    """A match as a spreadsheet names it: competition code, kickoff day (the user's, which
    may be a day off the stored UTC date), home and away team as some source spells them."""

    competition: str
    kickoff: dt.date
    home: str
    away: str


@dataclass(frozen=True, slots=True)
class BetRow:
    """One row read: the bet and how it names its match (by id, by name, or both)."""

    line: int
    placed_at: dt.datetime
    outcome: str
    bookmaker: str
    price_text: str
    stake: float
    status: BetStatus | None
    note: str | None
    match_id: int | None
    flag_id: int | None
    match_name: MatchName | None

    @property
    def void(self) -> bool:
        return self.status is BetStatus.VOID


@dataclass(frozen=True, slots=True)
class ParsedBets:
    """A file read: its good rows and every error found (nothing is imported if any)."""

    rows: list[BetRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    # The matches bad rows name (read whole), by line: found too, so that a bad row's
    # match is reported with its other errors.
    names_of_bad_rows: dict[int, MatchName] = field(default_factory=dict)


class BetCsvTooLargeError(ValueError):
    """A file over :data:`MAX_IMPORT_BYTES` (checked before it is read)."""


def check_size(size: int, limit: int = MAX_IMPORT_BYTES) -> None:
    """Refuse a file of more than ``limit`` bytes."""
    if size > limit:
        raise BetCsvTooLargeError(
            f"the file is {counted(size, 'byte')}; at most {counted(limit, 'byte')} are imported "
            "at once: split it"
        )


def parse_bet_csv(data: bytes, *, max_rows: int = MAX_IMPORT_ROWS) -> ParsedBets:
    """The rows of a bet file (UTF-8, a BOM allowed; ``,`` or ``;`` between fields), with
    every error found: a file-wide one (encoding, header, too many rows) stops the reading;
    otherwise every bad field of every row is named."""
    check_size(len(data))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        message = (
            f"the file is not UTF-8 text (byte 0x{data[error.start]:02X}); save it as "
            "'CSV UTF-8' from the spreadsheet"
        )
        return ParsedBets(errors=[RowError(line, None, message)])
    if not text.strip():
        return ParsedBets(errors=[RowError(HEADER_LINE, None, "the file is empty")])
    return _parse_text(text, max_rows)


def _delimiter(header_line: str) -> str:
    """``;`` if the header uses it (spreadsheets where the decimal mark is a comma), else ``,``."""
    return ";" if header_line.count(";") > header_line.count(",") else ","


def _parse_text(text: str, max_rows: int) -> ParsedBets:
    delimiter = _delimiter(text.split("\n", 1)[0])
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except csv.Error as error:
        return ParsedBets(errors=[RowError(HEADER_LINE, None, f"unreadable header: {error}")])
    columns, header_errors = read_header(header)
    if header_errors:
        return ParsedBets(errors=header_errors)
    parsed = ParsedBets()
    for count, (line, cells) in enumerate(_records(reader, parsed.errors)):
        if count >= max_rows:
            message = f"the file has more than {counted(max_rows, 'row')}: split it"
            return ParsedBets(errors=[RowError(line, None, message)])
        named = dict(_zip_cells(columns, cells, line, parsed.errors))
        row = parse_row(line, named, delimiter)
        if isinstance(row, BetRow):
            parsed.rows.append(row)
            continue
        parsed.errors.extend(row)
        match_name = _match_name(line, named, [])
        if match_name is not None:
            parsed.names_of_bad_rows[line] = match_name
    return parsed


def _records(
    reader: Iterator[list[str]], errors: list[RowError]
) -> Iterator[tuple[int, list[str]]]:
    """Each non-blank record with the line it starts on; a malformed record ends the file."""
    line = HEADER_LINE
    while True:
        start = line + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            errors.append(RowError(start, None, f"unreadable CSV: {error}"))
            return
        line = reader.line_num  # type: ignore[attr-defined]
        if any(cell.strip() for cell in cells):
            yield start, cells


def _zip_cells(
    columns: Sequence[str], cells: list[str], line: int, errors: list[RowError]
) -> Iterator[tuple[str, str]]:
    if len(cells) > len(columns) and any(cell.strip() for cell in cells[len(columns) :]):
        errors.append(
            RowError(line, None, f"{len(cells)} fields, but the header names {len(columns)}")
        )
    for index, column in enumerate(columns):
        yield column, cells[index].strip() if index < len(cells) else ""


def read_header(header: Sequence[str]) -> tuple[list[str], list[RowError]]:
    """The header's column names (trimmed, lower case) and what is wrong with it."""
    columns = [name.strip().lower() for name in header]
    errors: list[RowError] = []
    known = set(EXPORT_COLUMNS)
    for name in columns:
        if name not in known:
            errors.append(
                RowError(
                    HEADER_LINE,
                    name,
                    f"unknown column {name!r}; the columns are " + ", ".join(BET_CSV_COLUMNS),
                )
            )
    for name in sorted({name for name in columns if columns.count(name) > 1}):
        errors.append(RowError(HEADER_LINE, name, f"column {name!r} is named twice"))
    for name in REQUIRED_COLUMNS:
        if name not in columns:
            errors.append(RowError(HEADER_LINE, name, f"missing column {name!r}"))
    if "match_id" not in columns:
        for name in MATCH_NAME_COLUMNS:
            if name not in columns:
                errors.append(
                    RowError(
                        HEADER_LINE,
                        name,
                        f"missing column {name!r}: without match_id, a row names its match "
                        "by competition, kickoff, home and away",
                    )
                )
    return columns, errors


Parser = Callable[[str, str], object]


def parse_row(line: int, cells: dict[str, str], delimiter: str = ",") -> BetRow | list[RowError]:
    """One row's bet, or every error in it."""
    errors: list[RowError] = []
    values: dict[str, object] = {}
    decimal_comma = delimiter == ";"
    for column, (name, parse) in _FIELDS.items():
        text = cells.get(column, "")
        if decimal_comma and column in ("price", "stake"):
            text = text.replace(",", ".")
        try:
            values[name] = parse(text, column)
        except ValueError as error:
            errors.append(RowError(line, column, str(error)))
    match_name = _match_name(line, cells, errors)
    if values.get("match_id") is None and match_name is None and not _names_given(cells):
        errors.append(
            RowError(line, "match_id", "give match_id, or competition, kickoff, home and away")
        )
    if errors:
        return errors
    return BetRow(line=line, match_name=match_name, **values)  # type: ignore[arg-type]


def _names_given(cells: dict[str, str]) -> bool:
    return any(cells.get(column, "") for column in MATCH_NAME_COLUMNS)


def _match_name(line: int, cells: dict[str, str], errors: list[RowError]) -> MatchName | None:
    """The row's match by name when it gives any of the four; a missing one is an error."""
    if not _names_given(cells):
        return None
    found: dict[str, object] = {}
    for column, parse in _NAME_PARSERS.items():
        text = cells.get(column, "")
        if not text:
            errors.append(RowError(line, column, f"{column} is empty: name the match whole"))
            continue
        try:
            found[column] = parse(text, column)
        except ValueError as error:
            errors.append(RowError(line, column, str(error)))
    if len(found) < len(_NAME_PARSERS):
        return None
    return MatchName(**found)  # type: ignore[arg-type]


def _required(text: str, column: str) -> str:
    if not text:
        raise ValueError(f"{column} is empty")
    return text


def parse_moment(text: str, column: str = "placed_at") -> dt.datetime:
    """ISO 8601 (``2018-08-10T19:45:00Z``, ``2018-08-10 19:45``, ``2018-08-10``) or a day as
    football-data writes it (``10/08/2018``, day first); without an offset, UTC."""
    _required(text, column)
    try:
        if "/" in text:
            day = parse_date(text)
            return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        return as_utc(dt.datetime.fromisoformat(text))
    except ValueError as error:
        raise ValueError(
            f"{column} {text!r} is not a time: write 2018-08-10T19:45:00Z, 2018-08-10 or "
            f"10/08/2018 ({error})"
        ) from None


def parse_day(text: str, column: str = "kickoff") -> dt.date:
    """A kickoff's day: ISO 8601 (a time, if given, read in UTC) or ``10/08/2018``."""
    return parse_moment(text, column).date()


def parse_outcome(text: str, column: str = "outcome") -> str:
    outcome = _OUTCOMES.get(_required(text, column).lower())
    if outcome is None:
        raise ValueError(f"outcome {text!r} is not 1, X or 2 (or H, D, A; home, draw, away)")
    return outcome


def parse_bookmaker(text: str, column: str = "bookmaker") -> str:
    name = check_bookmaker_name(_required(text, column), column)
    if len(name) > CODE_MAX_LENGTH:
        raise ValueError(f"{column} is longer than {counted(CODE_MAX_LENGTH, 'character')}")
    return name


def parse_price_text(text: str, column: str = "price") -> str:
    """The price as typed (read as a decimal price when the bet is recorded)."""
    decimal_price(_required(text, column))
    if len(text) > PRICE_TEXT_MAX_LENGTH:
        raise ValueError(f"price is longer than {counted(PRICE_TEXT_MAX_LENGTH, 'character')}")
    return text


def parse_stake(text: str, column: str = "stake") -> float:
    if not _STAKE.match(_required(text, column)) or float(text) <= 0:
        raise ValueError(f"stake {text!r} is not an amount above 0, such as 10 or 12.50")
    stake = float(text)
    if (problem := stake_problem(stake)) is not None:
        raise ValueError(problem)
    return stake


def parse_status(text: str, column: str = "status") -> BetStatus | None:
    """Blank or open; void (the stake returned); won or lost as the user recorded them, which
    must agree with the stored result."""
    if not text:
        return None
    try:
        return BetStatus(text.lower())
    except ValueError:
        raise ValueError(f"{column} {text!r} is not open, won, lost or void (or blank)") from None


def parse_note(text: str, column: str = "note") -> str | None:
    if not text:
        return None
    return check_text(text, column, BET_NOTE_MAX_LENGTH)


def parse_id(text: str, column: str) -> int | None:
    if not text:
        return None
    if not _ID.match(text) or not 1 <= int(text) <= MAX_ID:
        raise ValueError(f"{column} {text!r} is not an id (a whole number from 1)")
    return int(text)


# Each column a row's bet is read from: the field of :class:`BetRow` it fills, and how.
_FIELDS: dict[str, tuple[str, Parser]] = {
    "placed_at": ("placed_at", parse_moment),
    "outcome": ("outcome", parse_outcome),
    "bookmaker": ("bookmaker", parse_bookmaker),
    "price": ("price_text", parse_price_text),
    "stake": ("stake", parse_stake),
    "status": ("status", parse_status),
    "note": ("note", parse_note),
    "match_id": ("match_id", parse_id),
    "flag_id": ("flag_id", parse_id),
}
_NAME_PARSERS: dict[str, Parser] = {
    "competition": lambda text, column: check_file_code(text, column),
    "kickoff": parse_day,
    "home": lambda text, _column: check_team_name(text),
    "away": lambda text, _column: check_team_name(text),
}


@dataclass(frozen=True, slots=True)
class ExportedBet:
    """One bet as the export writes it: the columns a user writes, then the settlement's."""

    id: int
    placed_at: dt.datetime
    competition: str
    kickoff: dt.datetime
    home: str
    away: str
    outcome: str
    bookmaker: str
    price_text: str
    stake: float
    status: str
    note: str | None
    match_id: int
    flag_id: int | None
    result: str | None
    returned: float | None
    profit: float | None
    close_price: float | None
    closing_probability: float | None
    clv: float | None
    close_origin: str | None
    settled_at: dt.datetime | None


def bets_csv(bets: Iterable[ExportedBet]) -> str:
    """The bets as CSV, header first (:data:`EXPORT_COLUMNS`)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    writer.writerows(_exported_row(bet) for bet in bets)
    return out.getvalue()


def _exported_row(bet: ExportedBet) -> list[str]:
    return [
        _moment(bet.placed_at),
        bet.competition,
        _moment(bet.kickoff),
        bet.home,
        bet.away,
        bet.outcome,
        bet.bookmaker,
        bet.price_text,
        _amount(bet.stake),
        bet.status,
        bet.note or "",
        str(bet.match_id),
        _blank(bet.flag_id),
        str(bet.id),
        bet.result or "",
        _amount(bet.returned),
        _amount(bet.profit),
        _blank(bet.close_price),
        _blank(bet.closing_probability),
        _blank(bet.clv),
        bet.close_origin or "",
        _moment(bet.settled_at),
    ]


def _blank(value: object) -> str:
    return "" if value is None else str(value)


def _amount(value: float | None) -> str:
    """An amount as plain digits (``12.5``), never in an exponent form a stake refuses."""
    if value is None:
        return ""
    text = repr(value)
    return format(value, "f").rstrip("0").rstrip(".") if "e" in text else text


def _moment(value: dt.datetime | None) -> str:
    return "" if value is None else value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
