"""The leagues of football-data.co.uk and their calendars: which league plays from August
to July, from July to June or within a calendar year, and so how it names its seasons."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

# Competition codes football-data.co.uk uses for the "new leagues" files, by country.
NEW_LEAGUE_CODES = {
    "Argentina": "ARG",
    "Austria": "AUT",
    "Brazil": "BRA",
    "China": "CHN",
    "Denmark": "DNK",
    "Finland": "FIN",
    "Ireland": "IRL",
    "Japan": "JPN",
    "Mexico": "MEX",
    "Norway": "NOR",
    "Poland": "POL",
    "Romania": "ROU",
    "Russia": "RUS",
    "Sweden": "SWE",
    "Switzerland": "SWZ",
    "USA": "USA",
}
# The extra leagues, by the codes the importer gives their countries.
EXTRA_LEAGUES = tuple(NEW_LEAGUE_CODES.values())
# The main leagues' division codes; each plays from August to July.
MAIN_LEAGUES = (
    "E0", "E1", "E2", "E3", "EC",
    "SC0", "SC1", "SC2", "SC3",
    "D1", "D2", "I1", "I2", "SP1", "SP2", "F1", "F2",
    "N1", "B1", "P1", "T1", "G1",
)  # fmt: skip
# Each league's name as people know it, by its code (the main divisions, then the extra
# leagues by country); an unknown code is shown as itself (``league_name``).
LEAGUE_NAMES = {
    "E0": "Premier League",
    "E1": "Championship",
    "E2": "League One",
    "E3": "League Two",
    "EC": "National League",
    "SC0": "Scottish Premiership",
    "SC1": "Scottish Championship",
    "SC2": "Scottish League One",
    "SC3": "Scottish League Two",
    "D1": "Bundesliga",
    "D2": "2. Bundesliga",
    "I1": "Serie A",
    "I2": "Serie B",
    "SP1": "La Liga",
    "SP2": "Segunda División",
    "F1": "Ligue 1",
    "F2": "Ligue 2",
    "N1": "Eredivisie",
    "B1": "Belgian First Division A",
    "P1": "Primeira Liga",
    "T1": "Süper Lig",
    "G1": "Greek Super League",
    "ARG": "Argentine Primera División",
    "AUT": "Austrian Bundesliga",
    "BRA": "Brasileirão Série A",
    "CHN": "Chinese Super League",
    "DNK": "Danish Superliga",
    "FIN": "Veikkausliiga",
    "IRL": "League of Ireland Premier Division",
    "JPN": "J1 League",
    "MEX": "Liga MX",
    "NOR": "Eliteserien",
    "POL": "Ekstraklasa",
    "ROU": "Liga I",
    "RUS": "Russian Premier League",
    "SWE": "Allsvenskan",
    "SWZ": "Swiss Super League",
    "USA": "Major League Soccer",
}
# The extra leagues that play from July to June ("2016/2017"); the others, and a country
# without a code of ours, play within a calendar year ("2016").
JULY_TO_JUNE_LEAGUES = frozenset({"AUT", "DNK", "JPN", "MEX", "POL", "ROU", "RUS", "SWZ"})
# Leagues that moved to July-June, by the year both forms meet (J1: 2025, 2026, 2026/27).
MOVED_TO_JULY_TO_JUNE = {"JPN": 2026}


def league_name(code: str) -> str:
    """A competition's name; an unknown code is its own."""
    return LEAGUE_NAMES.get(code, code)


def check_league_season(competition: str, season: str) -> str:
    """``season`` if ``competition`` names its seasons in that form (an unknown competition
    takes either), else ``ValueError`` saying which form it takes."""
    over_two_years = "/" in season
    start = int(season[:4])
    if _plays_in_form(competition, start, over_two_years=over_two_years):
        return season
    moved = MOVED_TO_JULY_TO_JUNE.get(competition)
    until = "" if moved is None else f" until {moved}"
    since = "" if moved is None else f" from {moved}/{(moved + 1) % 100:02d}"
    if over_two_years:
        raise ValueError(
            f"season {season!r} runs over two years, but {competition} plays within a "
            f"calendar year{until}, as {start} or {start + 1}"
        )
    raise ValueError(
        f"season {season!r} is a calendar year, but {competition} plays over two years"
        f"{since}, as {start - 1}/{start % 100:02d} or {start}/{(start + 1) % 100:02d}"
    )


def _plays_in_form(competition: str, start: int, *, over_two_years: bool) -> bool:
    moved = MOVED_TO_JULY_TO_JUNE.get(competition)
    if moved is not None:
        return start >= moved if over_two_years else start <= moved
    if competition in MAIN_LEAGUES or competition in JULY_TO_JUNE_LEAGUES:
        return over_two_years
    if competition in EXTRA_LEAGUES:
        return not over_two_years
    return True


def season_of(day: dt.date, *, first_month: int = 8) -> str:
    """Season of a date, from ``first_month`` on: 2018-08-10 and 2019-05-12 are "2018/19"."""
    start = day.year if day.month >= first_month else day.year - 1
    return f"{start}/{(start + 1) % 100:02d}"


def calendar_season(day: dt.date) -> str:
    return str(day.year)


def season_for(competition: str, day: dt.date) -> str:
    """The season ``competition`` names ``day`` in, where a source gives none."""
    return season_rule(competition, extra_league=competition in EXTRA_LEAGUES)(day)


def season_rule(competition: str, *, extra_league: bool) -> Callable[[dt.date], str]:
    """How a competition names its season from a date (``extra_league``: as a season file's
    layout says)."""
    if not extra_league:
        return season_of
    moved = MOVED_TO_JULY_TO_JUNE.get(competition)
    if moved is not None:
        # Calendar years until the one it moved in, July to June from that July on.
        return lambda day: (
            calendar_season(day) if day < dt.date(moved, 7, 1) else season_of(day, first_month=7)
        )
    if competition in JULY_TO_JUNE_LEAGUES:
        return lambda day: season_of(day, first_month=7)
    return calendar_season
