"""A matchday of two leagues played against local servers in the real formats: the season
files of Football-Data.co.uk and The Odds API's answers, moved a whole number of years into
the future, and a scheduler stepped by the test on a simulated clock. The fixtures that
start the servers and the scheduler live in :mod:`tests.plugins.matchday`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from apscheduler.executors.debug import DebugExecutor
from apscheduler.schedulers.base import BaseScheduler
from fastapi.testclient import TestClient
from scipy.optimize import brentq
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.db.orm import PredictionLogEntry
from app.main import create_app
from app.settings import Settings
from tests.apps import ADMIN_KEY
from tests.football_data_site import AFTER_THE_MATCH, Served, Site, csv_bytes, read_rows
from tests.odds_api_site import BUNDESLIGA, EPL, KEY, FakeOddsApi, events_answer, quota

SeasonFile = Callable[[str], Path]

# The matchday: Saturday 1 September 2018, seven E0 and six D1 matches (counted in the
# season files), before the shift into the future.
MATCHDAY = dt.date(2018, 9, 1)
E0_MATCHDAY = 7
D1_MATCHDAY = 6
# Matches each season file held before the matchday: E0 10-27 August, D1 24-31 August.
E0_BEFORE = 30
D1_BEFORE = 10
# Kickoffs as The Odds API gives them (UTC): 3 pm in England, 3.30 pm in Germany.
KICKOFF_TIME = {"E0": dt.time(14, 0), "D1": dt.time(13, 30)}
SPORT_OF = {"E0": "soccer_epl", "D1": "soccer_germany_bundesliga"}
# The bookmakers The Odds API quotes, by the file's column prefix of their prices.
BOOKMAKERS = {"PS": ("pinnacle", "Pinnacle"), "B365": ("bet365", "Bet365")}


def years_ahead(now: dt.datetime) -> int:
    """Whole years that put the matchday's morning more than a day after ``now``."""
    years = 0
    while dt.datetime(MATCHDAY.year + years, 9, 1, tzinfo=dt.UTC) < now + dt.timedelta(days=1):
        years += 1
    return years


def shifted_rows(path: Path, years: int) -> tuple[list[str], list[list[str]]]:
    """A season file's header and rows, each date moved ``years`` later."""
    header, rows = read_rows(path.read_bytes())
    at = header.index("Date")
    for row in rows:
        day, month, year = row[at].split("/")
        full = int(year) + (2000 if len(year) == 2 else 0)
        row[at] = f"{day}/{month}/{full + years}"
    return header, rows


def row_day(row: list[str], header: list[str]) -> dt.date:
    day, month, year = row[header.index("Date")].split("/")
    return dt.date(int(year), int(month), int(day))


@dataclass(frozen=True)
class MatchdayRow:
    """A matchday match as its season file has it (in the shifted calendar)."""

    league: str
    home: str
    away: str
    kickoff: dt.datetime
    result: str
    prices: dict[str, tuple[float, float, float]]
    closing: tuple[float, float, float]
    cells: dict[str, str]  # the season file's row, every bookmaker's prices included


@dataclass(frozen=True)
class Matchday:
    years: int
    day: dt.date
    history: dict[str, bytes]  # 2017/18 (shifted), by league
    before: dict[str, bytes]  # 2018/19 up to the matchday, by league
    after: dict[str, bytes]  # 2018/19 through the matchday, with its results
    fixtures: bytes
    matches: list[MatchdayRow]


def build_matchday(season_file: SeasonFile, years: int) -> Matchday:
    day = MATCHDAY.replace(year=MATCHDAY.year + years)
    history: dict[str, bytes] = {}
    before: dict[str, bytes] = {}
    after: dict[str, bytes] = {}
    fixtures: list[list[str]] = []
    fixtures_header: list[str] = []
    matches: list[MatchdayRow] = []
    for league in ("E0", "D1"):
        history[league] = csv_bytes(*shifted_rows(season_file(f"{league}_1718"), years))
        header, rows = shifted_rows(season_file(f"{league}_1819"), years)
        fixtures_header = fixtures_header or header
        played = [row for row in rows if row_day(row, header) < day]
        today = [row for row in rows if row_day(row, header) == day]
        before[league] = csv_bytes(header, played)
        after[league] = csv_bytes(header, played + today)
        for row in today:
            cells = dict(zip(header, row, strict=False))
            fixtures.append(
                ["" if name in AFTER_THE_MATCH else cells.get(name, "") for name in fixtures_header]
            )
            matches.append(
                MatchdayRow(
                    league=league,
                    home=cells["HomeTeam"],
                    away=cells["AwayTeam"],
                    kickoff=dt.datetime.combine(day, KICKOFF_TIME[league], tzinfo=dt.UTC),
                    result=cells["FTR"],
                    prices={
                        prefix: tuple(float(cells[prefix + side]) for side in "HDA")  # type: ignore[misc]
                        for prefix in BOOKMAKERS
                    },
                    closing=tuple(float(cells["PSC" + side]) for side in "HDA"),  # type: ignore[arg-type]
                    cells=cells,
                )
            )
    return Matchday(
        years=years,
        day=day,
        history=history,
        before=before,
        after=after,
        fixtures=csv_bytes(fixtures_header, fixtures, site_style=True),
        matches=matches,
    )


def odds_event(match: MatchdayRow, updated: dt.datetime, *, closing: bool) -> dict[str, Any]:
    """The match as The Odds API lists it: its bookmakers' h2h prices, updated at
    ``updated``; ``closing``: Pinnacle's price has moved to its closing line."""
    bookmakers = []
    for prefix, (key, title) in BOOKMAKERS.items():
        home, draw, away = match.closing if closing and prefix == "PS" else match.prices[prefix]
        stamp = updated.strftime("%Y-%m-%dT%H:%M:%SZ")
        outcomes = [
            {"name": match.home, "price": home},
            {"name": match.away, "price": away},
            {"name": "Draw", "price": draw},
        ]
        bookmakers.append(
            {
                "key": key,
                "title": title,
                "last_update": stamp,
                "markets": [{"key": "h2h", "last_update": stamp, "outcomes": outcomes}],
            }
        )
    return {
        "id": f"{match.league}-{match.home}-{match.away}".replace(" ", "-").lower(),
        "sport_key": SPORT_OF[match.league],
        "sport_title": match.league,
        "commence_time": match.kickoff.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "home_team": match.home,
        "away_team": match.away,
        "bookmakers": bookmakers,
    }


def script_prices(
    api: FakeOddsApi, matchday: Matchday, updated: dt.datetime, *, closing: bool
) -> None:
    for league, path, left in (("E0", EPL, 498), ("D1", BUNDESLIGA, 496)):
        events = [
            odds_event(m, updated, closing=closing) for m in matchday.matches if m.league == league
        ]
        api.script(path, events_answer(events, quota(left, 500 - left, 2)))


def live_settings(database_url: str, football_data_url: str, odds_api_url: str) -> Settings:
    """Two leagues, both feeds and the track record on a schedule: Football-Data.co.uk at
    six in the evening, the refit at three in the morning, The Odds API at eight in the
    morning and evening, the closing line every five minutes (off the feed's minute), the
    track record every five minutes (its default)."""
    return Settings(
        database_url=database_url,
        admin_api_key=ADMIN_KEY,
        football_data_url=football_data_url,
        football_data_leagues="E0,D1",
        football_data_retries=0,
        football_data_cron="0 18 * * *",
        refit_cron="0 3 * * *",
        odds_api_key=KEY,
        odds_api_url=odds_api_url,
        odds_api_sports=["soccer_epl", "soccer_germany_bundesliga"],
        odds_api_regions=["uk", "eu"],
        odds_api_cron="0 8,20 * * *",
        closing_line_cron="2-59/5 * * * *",
        refit_rounds_grid=[1, 5, 20],
        model_refresh_seconds=0.5,
    )


@dataclass
class SimulatedClock:
    now: dt.datetime

    def __call__(self) -> dt.datetime:
        return self.now


class SteppedScheduler(BaseScheduler):  # type: ignore[misc]  # untyped upstream
    """APScheduler's scheduler without a loop of its own: the test steps it. A step is
    APScheduler's own pass over the jobs (``_process_jobs``, what each of its schedulers'
    loops calls): which are due, coalescing their missed runs, the misfire grace, the next
    fire time. Jobs run in the test's thread (APScheduler's DebugExecutor), called with the
    arguments they were registered with."""

    def __init__(self, clock: SimulatedClock) -> None:
        super().__init__(timezone=dt.UTC)
        self.clock = clock
        self.ran: list[tuple[dt.datetime, str]] = []
        self.missed: list[tuple[dt.datetime, str]] = []
        self.failed: list[tuple[str, BaseException | None]] = []
        self.add_listener(self._record, EVENT_JOB_EXECUTED | EVENT_JOB_MISSED | EVENT_JOB_ERROR)

    def wakeup(self) -> None:
        """The test decides when the scheduler looks at its jobs."""

    def shutdown(self, wait: bool = True) -> None:
        super().shutdown(wait)

    def _create_default_executor(self) -> DebugExecutor:
        return DebugExecutor()

    def _record(self, event: JobExecutionEvent) -> None:
        moment = event.scheduled_run_time
        if event.code == EVENT_JOB_MISSED:
            self.missed.append((moment, event.job_id))
        elif event.code == EVENT_JOB_ERROR:
            self.failed.append((event.job_id, event.exception))
        else:
            self.ran.append((moment, event.job_id))

    def next_fire_time(self) -> dt.datetime | None:
        return min((job.next_run_time for job in self.get_jobs()), default=None)

    def run_until(self, moment: dt.datetime) -> None:
        """Move the clock to ``moment``, stopping at each fire time on the way."""
        while (due := self.next_fire_time()) is not None and due <= moment:
            self.wake_at(due)
        self.clock.now = moment

    def wake_at(self, moment: dt.datetime) -> None:
        """Move the clock to ``moment`` at once, as a machine that slept, and let
        APScheduler run what fell due meanwhile."""
        self.clock.now = moment
        self._process_jobs()
        assert not self.failed, self.failed

    def runs_of(self, *job_ids: str) -> list[tuple[dt.datetime, str]]:
        return [(moment, job_id) for moment, job_id in self.ran if job_id in job_ids]


def folder(season_start: int) -> str:
    return f"{season_start % 100:02d}{(season_start + 1) % 100:02d}"


def logged(engine: Engine) -> list[PredictionLogEntry]:
    with Session(engine) as session:
        entries = list(
            session.scalars(select(PredictionLogEntry).order_by(PredictionLogEntry.match_id))
        )
        session.expunge_all()
    return entries


OUTCOMES = "1X2"  # the service's outcome words, in the file's H, D, A order
# Pinnacle's close counts as live when seen to hold this long before kickoff (the default).
CLOSING_WINDOW = dt.timedelta(minutes=30)
# The closing line's first run within the 15 minutes before a kickoff at :00 or :30 is at
# :47 or :17 (its cron's minutes 2, 7, ..., 57): 13 minutes before.
CLOSING_FETCH_LEAD = dt.timedelta(minutes=13)


def moment_of(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def served_prices(row: MatchdayRow, bookmaker: str, outcome: str) -> set[float]:
    """Every price of ``outcome`` a site served for ``bookmaker``: the fixtures' (the
    season file's opening columns) and The Odds API's, Pinnacle's close included."""
    side = OUTCOMES.index(outcome)
    prices = set()
    column = bookmaker + "HDA"[side]
    if row.cells.get(column):
        prices.add(float(row.cells[column]))
    if bookmaker in row.prices:
        prices.add(row.prices[bookmaker][side])
    if bookmaker == "PS":
        prices.add(row.closing[side])
    return prices


def power_fair(prices: tuple[float, float, float]) -> list[float]:
    """The power method's fair probabilities, solved independently: the exponent k with
    Σ (1/o)^k = 1, by Brent's method."""
    implied = [1 / price for price in prices]
    k = brentq(lambda k: sum(p**k for p in implied) - 1.0, 0.5, 50.0, xtol=1e-14)
    return [p**k for p in implied]


def flags_listed(settings: Settings, **params: str) -> list[dict[str, Any]]:
    with TestClient(create_app(settings)) as client:
        answer = client.get("/flags", params=params | {"limit": "100"})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    assert len(items) == answer.json()["total"]
    return items


def row_of(matchday: Matchday, flag: dict[str, Any]) -> MatchdayRow:
    by_teams = {(m.home, m.away): m for m in matchday.matches}
    return by_teams[(flag["match"]["home_team"], flag["match"]["away_team"])]


def at(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour, minute), tzinfo=dt.UTC)


def serve_season_so_far(site: Site, matchday: Matchday) -> None:
    """The site serves last season's files, this season's up to the matchday and the
    fixtures."""
    past, current = folder(2017 + matchday.years), folder(2018 + matchday.years)
    for league in ("E0", "D1"):
        site.documents[f"mmz4281/{past}/{league}.csv"] = Served(
            matchday.history[league], f'"{league}-{past}"'
        )
        site.documents[f"mmz4281/{current}/{league}.csv"] = Served(
            matchday.before[league], f'"{league}-{current}-v1"'
        )
    site.documents["fixtures.csv"] = Served(matchday.fixtures, '"fixtures-v1"')


def serve_results(site: Site, matchday: Matchday) -> None:
    """This season's files now hold the matchday's results, under new ETags."""
    current = folder(2018 + matchday.years)
    for league in ("E0", "D1"):
        site.documents[f"mmz4281/{current}/{league}.csv"] = Served(
            matchday.after[league], f'"{league}-{current}-v2"'
        )
