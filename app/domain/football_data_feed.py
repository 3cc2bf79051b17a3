"""What the Football-Data.co.uk feed downloads for some leagues and a season: a main league's
season file (``mmz4281/1819/E0.csv``), an extra league's file of every season
(``new/BRA.csv``), and the part of each shared fixtures file that belongs to them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from app.domain.leagues import EXTRA_LEAGUES, MAIN_LEAGUES, season_of
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord, check_season

MAIN_FIXTURES = "fixtures.csv"
EXTRA_FIXTURES = "new_league_fixtures.csv"


class UnknownLeagueError(ValueError):
    """A league code the site has no file for."""


@dataclass(frozen=True, slots=True)
class FeedDocument:
    """One file to download: its path under the site's address, and the leagues to keep
    from it (``None``: every row, the file is one league's)."""

    path: str
    keep: frozenset[str] | None = None


def check_leagues(codes: Iterable[str]) -> tuple[str, ...]:
    """The codes, upper-cased and without repeats, in the order given; an unknown one is
    refused naming the codes there are."""
    leagues = tuple(dict.fromkeys(code.strip().upper() for code in codes if code.strip()))
    if not leagues:
        raise UnknownLeagueError("no league given")
    unknown = [code for code in leagues if code not in MAIN_LEAGUES + EXTRA_LEAGUES]
    if unknown:
        raise UnknownLeagueError(
            f"unknown league {', '.join(unknown)}: the main leagues are "
            f"{', '.join(MAIN_LEAGUES)}; the extra ones {', '.join(EXTRA_LEAGUES)}"
        )
    return leagues


def season_folder(season: str, today: dt.date) -> str:
    """The folder of a main-league season: ``current`` (the August-July season holding
    ``today``) or ``2025/26`` as ``2526``."""
    if season.strip().lower() == "current":
        season = season_of(today)
    checked = check_season(season.strip())
    if "/" not in checked:
        raise ValueError(
            f"season {checked!r}: the main leagues' seasons run from August to July, "
            "as 2025/26 (or current)"
        )
    return checked[2:4] + checked[5:7]


def documents(leagues: tuple[str, ...], folder: str) -> list[FeedDocument]:
    """The files that hold the results and upcoming matches of ``leagues`` (checked codes)
    in the main leagues' season ``folder``; an extra league's file holds all its seasons."""
    main = [code for code in leagues if code in MAIN_LEAGUES]
    extra = [code for code in leagues if code not in MAIN_LEAGUES]
    found = [FeedDocument(f"mmz4281/{folder}/{code}.csv") for code in main]
    if main:
        found.append(FeedDocument(MAIN_FIXTURES, frozenset(main)))
    found.extend(FeedDocument(f"new/{code}.csv") for code in extra)
    if extra:
        found.append(FeedDocument(EXTRA_FIXTURES, frozenset(extra)))
    return found


def keep_competitions(batch: IngestBatch, competitions: frozenset[str]) -> IngestBatch:
    """The part of ``batch`` in ``competitions``: their matches with their quotes, and what
    was skipped in their rows or in rows whose league could not be read."""
    kept: list[MatchRecord] = []
    new_index: dict[int, int] = {}
    other_rows: set[str] = set()
    for index, match in enumerate(batch.matches):
        if match.competition in competitions:
            new_index[index] = len(kept)
            kept.append(match)
        else:
            other_rows.add(match.where)
    quotes: list[QuoteRecord] = [
        dataclasses.replace(quote, match=new_index[quote.match])
        for quote in batch.quotes
        if quote.match in new_index
    ]
    skipped = [item for item in batch.skipped if item.where not in other_rows]
    quoting = {quote.bookmaker for quote in quotes}
    return IngestBatch(
        matches=kept,
        quotes=quotes,
        skipped=skipped,
        bookmaker_names={
            code: name for code, name in batch.bookmaker_names.items() if code in quoting
        },
        rows_read=batch.rows_read - len(other_rows),
    )
