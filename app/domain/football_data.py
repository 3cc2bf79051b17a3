"""Parser for football-data.co.uk season files (https://www.football-data.co.uk/notes.txt),
as they are in practice: either layout (main leagues, "new leagues"), every spelling of a
column (:data:`HEADER_NAMES`), UTF-8 or Windows-1252, ragged rows. A bookmaker is any
``<P>H,<P>D,<P>A`` triple (``<P>CH``...: closing), market aggregates excepted. Row numbers in
messages count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo

from app.domain.bookmakers import KNOWN_BOOKMAKERS, display_name
from app.domain.leagues import NEW_LEAGUE_CODES, check_league_season, season_rule
from app.domain.records import (
    CODE_MAX_LENGTH,
    EARLIEST,
    LATEST,
    PRICE_MAX,
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    Skipped,
    check_bookmaker_count,
    check_file_code,
    check_overround,
    check_price,
    check_season,
    check_team_name,
    optional_season,
    result_of,
)
from app.domain.vocabulary import Phase

UK_TIME = ZoneInfo("Europe/London")

# Column prefixes of market aggregates, which are not bookmakers.
AGGREGATE_PREFIXES = frozenset({"Max", "Avg", "BbMx", "BbAv"})

# Our fields and the header names football-data.co.uk has used for each, in the order they
# are looked for (https://www.football-data.co.uk/notes.txt: "FTHG and HG", "FTR and Res";
# the extra leagues write Home and Away; the Greek files of 2000/01 to 2004/05, HT and AT).
HEADER_NAMES: dict[str, tuple[str, ...]] = {
    "date": ("Date",),
    "time": ("Time",),
    "home_team": ("HomeTeam", "Home", "HT"),
    "away_team": ("AwayTeam", "Away", "AT"),
    "home_goals": ("FTHG", "HG"),
    "away_goals": ("FTAG", "AG"),
    "result": ("FTR", "Res"),
    "season": ("Season",),
    "country": ("Country",),
}
REQUIRED_FIELDS = ("date", "home_team", "away_team")
# The main layout names a match's competition in its Div column; the extra leagues' layout
# by Country (and League).
MAIN_COMPETITION = "Div"
EXTRA_COMPETITION = "League"
# A full-time result letter, and the outcome it stands for.
RESULT_LETTERS = {"H": "1", "D": "X", "A": "2"}
_TIME_PATTERN = re.compile(r"^(\d{1,2})[:.](\d{2})$")


class FileFormatError(ValueError):
    """The file is not a football-data.co.uk season file at all (nothing was imported)."""


class LeagueSeasonError(ValueError):
    """The season given for every match of a file is not in the form one of its leagues
    names its seasons (nothing was imported)."""


@dataclass(frozen=True, slots=True)
class PriceColumns:
    """Where one bookmaker's three prices of one phase live in a row."""

    code: str
    phase: Phase
    positions: tuple[int, int, int]
    names: tuple[str, str, str]


def decode(data: bytes) -> str:
    """UTF-8 (with or without BOM) first, then Windows-1252, then Latin-1 (never fails)."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def find_price_columns(header: Sequence[str]) -> list[PriceColumns]:
    """Every bookmaker triple in a header, pre-match and closing, aggregates excluded."""
    index = {name: i for i, name in enumerate(header) if name}
    prefixes = [
        name[:-1]
        for name in index
        if name.endswith("H") and f"{name[:-1]}D" in index and f"{name[:-1]}A" in index
    ]
    # A set: a header of many thousand columns is looked up in once per column.
    every_prefix = frozenset(prefixes)
    pre_prefixes = {p for p in prefixes if not _is_closing(p, every_prefix)}
    found: list[PriceColumns] = []
    for prefix in prefixes:
        closing = prefix not in pre_prefixes
        bookmaker = prefix[:-1] if closing else prefix
        if bookmaker in AGGREGATE_PREFIXES or not bookmaker or len(bookmaker) > CODE_MAX_LENGTH:
            continue
        try:
            check_file_code(bookmaker, "its bookmaker code")
        except ValueError as error:
            raise FileFormatError(f"header column {prefix + 'H'!r}: {error}") from None
        code = KNOWN_BOOKMAKERS.get(bookmaker, (bookmaker, bookmaker))[0]
        names = (f"{prefix}H", f"{prefix}D", f"{prefix}A")
        found.append(
            PriceColumns(
                code=code,
                phase=Phase.CLOSING if closing else Phase.PRE,
                positions=(index[names[0]], index[names[1]], index[names[2]]),
                names=names,
            )
        )
    return found


def _is_closing(prefix: str, prefixes: frozenset[str]) -> bool:
    # "PSC" (PSCH/PSCD/PSCA) is Pinnacle closing, but "VC" (VCH/VCD/VCA) is VC Bet
    # pre-match: a trailing C means closing only when what precedes it is a bookmaker.
    if not prefix.endswith("C") or len(prefix) < 2:
        return False
    base = prefix[:-1]
    return base in prefixes or base in KNOWN_BOOKMAKERS or base in AGGREGATE_PREFIXES


@lru_cache(maxsize=4096)
def parse_date(text: str) -> dt.date:
    """``dd/mm/yy`` or ``dd/mm/yyyy`` (two-digit years are 20xx up to 68, as ``%y``)."""
    parts = text.split("/")
    if len(parts) == 3 and all(part.isdigit() for part in parts):
        day, month, year = (int(part) for part in parts)
        if len(parts[2]) == 2:
            year += 2000 if year <= 68 else 1900
        if len(parts[2]) in (2, 4) and EARLIEST.year <= year < LATEST.year:
            try:
                return dt.date(year, month, day)
            except ValueError:
                pass
    raise ValueError(
        f"date {text!r} is not a valid dd/mm/yy or dd/mm/yyyy date between "
        f"{EARLIEST.year} and {LATEST.year - 1}"
    )


@lru_cache(maxsize=4096)
def parse_kickoff(date_text: str, time_text: str) -> tuple[dt.datetime, bool]:
    """Kickoff in UTC from a UK-local date and optional time; the flag says if a time was given."""
    day = parse_date(date_text)
    if not time_text:
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC), False
    match = _TIME_PATTERN.match(time_text)
    if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ValueError(f"time {time_text!r} is not a valid hh:mm")
    local = dt.datetime(
        day.year, day.month, day.day, int(match.group(1)), int(match.group(2)), tzinfo=UK_TIME
    )
    return local.astimezone(dt.UTC), True


def parse_goals(text: str) -> int:
    value = float(text)
    if not value.is_integer() or value < 0 or value > 99:
        raise ValueError(f"goals {text!r} are not a whole number between 0 and 99")
    return int(value)


def parse_price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"price {text!r} is not a number") from None
    return check_price(value)


def normalise_season(text: str) -> str:
    """'2012/2013', '2012-13' or '1213' -> '2012/13'; a single year, or years that do not
    follow each other (refused later), are kept as written."""
    text = text.strip()
    match = re.fullmatch(r"([0-9]{4})\s*[/-]\s*([0-9]{2}|[0-9]{4})", text)
    if match:
        start, end = int(match.group(1)), match.group(2)
        if int(end) != ((start + 1) % 100 if len(end) == 2 else start + 1):
            return text
        return f"{start}/{(start + 1) % 100:02d}"
    if re.fullmatch(r"\d{4}", text) and not text.startswith(("19", "20")):
        start = 2000 + int(text[:2])
        return f"{start}/{text[2:]}"
    return text


def parse_football_data(data: bytes, *, season: str | None = None) -> IngestBatch:
    """Parse one football-data.co.uk CSV file. ``season`` (blank: not given) is every
    match's (:class:`LeagueSeasonError` if a league of the file names its seasons in the
    other form); else a row's ``Season`` column, else the season holding most of its
    competition's matches in the file."""
    season = optional_season(season)
    header, rows = _read_csv(data)
    columns = Columns.of(header)
    price_columns = find_price_columns(header)
    check_bookmaker_count(column.code for column in price_columns)  # before reading any row
    batch = IngestBatch(bookmaker_names={c.code: display_name(c.code) for c in price_columns})
    first_row_of: dict[tuple[str, str, str, dt.date], int] = {}
    for row_number, row in enumerate(rows, start=2):
        if not columns.cell(row, "competition") and not columns.cell(row, "date"):
            continue  # blank or all-comma row
        batch.rows_read += 1
        where = f"row {row_number}"
        record = _parse_match(row, where, columns, batch.skipped)
        if record is None or not _set_season(record, row, columns, season, batch.skipped):
            continue
        earlier = first_row_of.get(record.identity)
        if earlier is not None:
            batch.skipped.append(
                Skipped(where, f"the same match as row {earlier} (same teams and date)")
            )
            continue
        first_row_of[record.identity] = row_number
        batch.matches.append(record)
        match_index = len(batch.matches) - 1
        for price in price_columns:
            quote = _parse_quote(row, price, match_index, where, batch.skipped)
            if quote is not None:
                batch.quotes.append(quote)
    if season is None:
        undated = [match for match in batch.matches if match.season is None]
        _assign_file_seasons(undated, extra_leagues=columns.extra_leagues)
    return batch


def _read_csv(data: bytes) -> tuple[list[str], list[list[str]]]:
    """The header (trimmed, trailing empty names dropped) and the rows after it."""
    text = decode(data)
    if text.lstrip().startswith(("[", "{")):
        raise FileFormatError(
            "not a football-data.co.uk file: this is JSON, not CSV; a saved The Odds API "
            "response is imported by `oddsboost import the-odds-api` or POST "
            "/admin/import/the-odds-api"
        )
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise FileFormatError(f"not a readable CSV file: {error}") from None
    if not rows:
        raise FileFormatError("the file is empty")
    header = [name.strip() for name in rows[0]]
    while header and not header[-1]:
        header.pop()
    return header, rows[1:]


@dataclass(frozen=True, slots=True)
class Columns:
    """Where a file keeps each of our fields, and the header name it goes by (for messages)."""

    position: dict[str, int]
    name: dict[str, str]

    @classmethod
    def of(cls, header: Sequence[str]) -> Columns:
        """The columns of a header, or :class:`FileFormatError` naming what it lacks."""
        index = {name: i for i, name in enumerate(header) if name}
        names = {
            "competition": MAIN_COMPETITION if MAIN_COMPETITION in index else EXTRA_COMPETITION
        }
        for field, spellings in HEADER_NAMES.items():
            found = next((name for name in spellings if name in index), None)
            if found is not None:
                names[field] = found
        missing = [
            _spellings(field)
            for field in ("competition", *REQUIRED_FIELDS)
            if names.get(field) not in index
        ]
        if missing:
            raise FileFormatError(
                "not a football-data.co.uk file: the header lacks " + ", ".join(missing)
            )
        return cls({field: index[name] for field, name in names.items()}, names)

    @property
    def extra_leagues(self) -> bool:
        """The extra leagues' layout (Country, League), not the main one (Div)."""
        return self.name["competition"] == EXTRA_COMPETITION

    def cell(self, row: list[str], field: str) -> str:
        """The trimmed cell of one of our fields, or "" if the file or the row lacks it."""
        position = self.position.get(field)
        if position is None or position >= len(row):
            return ""
        return row[position].strip()


def _spellings(field: str) -> str:
    """How a header may name a field: "'HomeTeam' (or 'Home', 'HT')"."""
    first, *others = (
        (MAIN_COMPETITION, EXTRA_COMPETITION) if field == "competition" else HEADER_NAMES[field]
    )
    alternatives = f" (or {', '.join(repr(name) for name in others)})" if others else ""
    return repr(first) + alternatives


def _set_season(
    record: MatchRecord,
    row: list[str],
    columns: Columns,
    season: str | None,
    skipped: list[Skipped],
) -> bool:
    """The file's season, else the row's own; False if the row's is invalid."""
    if season is not None:
        try:
            record.season = check_league_season(record.competition, season)
        except ValueError as error:
            raise LeagueSeasonError(str(error)) from None
    elif columns.cell(row, "season"):
        try:
            own = check_season(normalise_season(columns.cell(row, "season")))
            record.season = check_league_season(record.competition, own)
        except ValueError as error:
            skipped.append(Skipped(record.where, str(error), columns.name["season"]))
            return False
    return True


def _parse_match(
    row: list[str],
    where: str,
    columns: Columns,
    skipped: list[Skipped],
) -> MatchRecord | None:
    try:
        competition = check_file_code(_competition(row, columns), "competition")
    except ValueError as error:
        field = "country" if columns.cell(row, "country") else "competition"
        skipped.append(Skipped(where, str(error), columns.name[field]))
        return None
    try:
        kickoff, time_known = parse_kickoff(columns.cell(row, "date"), columns.cell(row, "time"))
    except ValueError as error:
        skipped.append(Skipped(where, str(error), columns.name["date"]))
        return None
    teams: list[str] = []
    for field in ("home_team", "away_team"):
        try:
            teams.append(check_team_name(columns.cell(row, field)))
        except ValueError as error:
            skipped.append(Skipped(where, str(error), columns.name[field]))
            return None
    if teams[0] == teams[1]:
        reason = f"home and away team are both {teams[0]!r}"
        skipped.append(Skipped(where, reason, columns.name["away_team"]))
        return None
    record = MatchRecord(
        competition=competition,
        home_team=teams[0],
        away_team=teams[1],
        kickoff=kickoff,
        kickoff_time_known=time_known,
        where=where,
    )
    _set_result(record, row, columns, skipped)
    return record


def _competition(row: list[str], columns: Columns) -> str:
    """A row's competition as the file names it: its Div, or the code of its country."""
    country = columns.cell(row, "country")
    if country:
        return NEW_LEAGUE_CODES.get(country, country)
    return columns.cell(row, "competition")


def leading_competitions(head: bytes) -> frozenset[str]:
    """The competitions of the rows in a season file's first bytes (a line they cut short
    left out); :class:`FileFormatError` if the header is not a season file's."""
    complete = head[: head.rfind(b"\n") + 1] or head
    header, rows = _read_csv(complete)
    columns = Columns.of(header)
    return frozenset(filter(None, (_competition(row, columns) for row in rows)))


def _set_result(
    record: MatchRecord, row: list[str], columns: Columns, skipped: list[Skipped]
) -> None:
    """The full-time goals, when both are given and agree with the result letter if any."""
    home_goals, away_goals = columns.cell(row, "home_goals"), columns.cell(row, "away_goals")
    if not (home_goals and away_goals):
        return
    where = record.where
    try:
        goals = parse_goals(home_goals), parse_goals(away_goals)
    except ValueError as error:
        field = f"{columns.name['home_goals']}/{columns.name['away_goals']}"
        skipped.append(Skipped(where, f"result not set: {error}", field))
        return
    letter = columns.cell(row, "result")
    if letter and RESULT_LETTERS.get(letter.upper()) != result_of(*goals):
        reason = f"result not set: the result is {letter!r} but the goals are {goals[0]}-{goals[1]}"
        skipped.append(Skipped(where, reason, columns.name["result"]))
        return
    record.home_goals, record.away_goals = goals


def _parse_quote(
    row: list[str],
    columns: PriceColumns,
    match_index: int,
    where: str,
    skipped: list[Skipped],
) -> QuoteRecord | None:
    width = len(row)
    home_at, draw_at, away_at = columns.positions
    cells = (
        row[home_at].strip() if home_at < width else "",
        row[draw_at].strip() if draw_at < width else "",
        row[away_at].strip() if away_at < width else "",
    )
    if not (cells[0] or cells[1] or cells[2]):
        return None  # this bookmaker did not price this match
    try:
        home, draw, away = float(cells[0]), float(cells[1]), float(cells[2])
    except ValueError:
        pass
    else:
        if 1.0 < home <= PRICE_MAX and 1.0 < draw <= PRICE_MAX and 1.0 < away <= PRICE_MAX:
            try:
                check_overround(home, draw, away)
            except ValueError as error:
                skipped.append(Skipped(where, str(error), "/".join(columns.names)))
                return None
            return QuoteRecord(
                match_index, columns.code, columns.phase, home, draw, away, None, where
            )
    # Something is wrong with this quote: find the first bad cell and say why.
    for name, text in zip(columns.names, cells, strict=True):
        if not text:
            skipped.append(Skipped(where, "price is blank while the others are set", name))
            return None
        try:
            parse_price(text)
        except ValueError as error:
            skipped.append(Skipped(where, str(error), name))
            return None
    return None  # pragma: no cover - one of the cells failed above


def _assign_file_seasons(matches: list[MatchRecord], *, extra_leagues: bool) -> None:
    # A file is one season of each competition, but leagues start early or finish late:
    # the season holding most of a competition's matches names all of them (ties go to the
    # earlier season).
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for match in matches:
        name = season_rule(match.competition, extra_league=extra_leagues)
        counts[match.competition][name(match.kickoff_date)] += 1
    label = {
        competition: min(seasons, key=lambda season: (-seasons[season], season))
        for competition, seasons in counts.items()
    }
    for match in matches:
        match.season = label[match.competition]
