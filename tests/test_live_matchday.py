"""A matchday of two leagues, end to end, run by the scheduler's jobs alone: the
Football-Data.co.uk feed fetches the past season and the fixtures, The Odds API feed
fetches prices twice, the refit makes a model active, the board lists the matches and the
flag ledger records its flags (GET /flags), the closing-line job fetches each kickoff's
prices again just before it, the track record logs the matches at kickoff, the feed settles
them, GET /performance scores them and the ledger scores each flag against Pinnacle's live
close: a price unchanged since the morning, seen to hold by the closing-line job.

The jobs are those the service gives its scheduler (``build_scheduler``), fired by
APScheduler itself (its cron triggers, coalescing and misfire grace) as a simulated clock
moves on, and they read that clock. Both
sites are local servers answering in the real formats with real rows (E0 and D1, 2017/18
and the start of 2018/19). The rows are moved a whole number of years into the future, so
that the matchday is still to come by the real clock the board (GET /upcoming) reads.
"""

from __future__ import annotations

import datetime as dt
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apscheduler.executors.base
import apscheduler.schedulers.base
import pytest
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from apscheduler.executors.debug import DebugExecutor
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from fastapi.testclient import TestClient
from scipy.optimize import brentq
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine
from app.db.orm import Bookmaker, Match, OddsQuote, PredictionLogEntry, RefitRun
from app.domain.vocabulary import FetchSource, FetchStatus, RunStatus
from app.main import create_app
from app.services.run_bounds import Stop
from app.services.scheduling import build_scheduler
from app.settings import Settings
from tests.apps import ADMIN_KEY
from tests.football_data_site import (
    AFTER_THE_MATCH,
    Served,
    Site,
    csv_bytes,
    read_rows,
    site_handler,
)
from tests.odds_api_site import BUNDESLIGA, EPL, KEY, FakeOddsApi, events_answer, handler_for, quota
from tests.upstreams import http_server

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


@pytest.fixture
def sites() -> Iterator[tuple[Site, FakeOddsApi, str, str]]:
    football_data = Site()
    odds_api = FakeOddsApi()
    with (
        http_server(site_handler(football_data)) as fd_base,
        http_server(handler_for(odds_api)) as api_base,
    ):
        yield football_data, odds_api, fd_base, api_base
        football_data.release.set()
        odds_api.released.set()


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


@pytest.fixture
def stepped_scheduler(monkeypatch: pytest.MonkeyPatch) -> Iterator[SteppedScheduler]:
    """A stepped scheduler whose time is a simulated clock. APScheduler reads the time from
    ``datetime.now`` in two modules; those two alone read the simulated clock, so the
    service's own code keeps the real one, and a record it stamps from the real clock
    instead of the clock it was given still fails the test."""
    clock = SimulatedClock(dt.datetime(2000, 1, 1, tzinfo=dt.UTC))

    class SimulatedDatetime(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> SimulatedDatetime:
            moment = clock.now.astimezone(tz)
            return cls.combine(moment.date(), moment.timetz())

    monkeypatch.setattr(apscheduler.schedulers.base, "datetime", SimulatedDatetime)
    monkeypatch.setattr(apscheduler.executors.base, "datetime", SimulatedDatetime)
    scheduler = SteppedScheduler(clock)
    yield scheduler
    if scheduler.running:
        scheduler.shutdown()


def folder(season_start: int) -> str:
    return f"{season_start % 100:02d}{(season_start + 1) % 100:02d}"


def logged(engine: Engine) -> list[PredictionLogEntry]:
    with Session(engine) as session:
        entries = list(
            session.scalars(select(PredictionLogEntry).order_by(PredictionLogEntry.match_id))
        )
        session.expunge_all()
    return entries


def check_board(settings: Settings, matchday: Matchday, morning: dt.datetime, version: int) -> None:
    """GET /upcoming and GET /value-bets on the morning: the matchday, predicted by ``version``."""
    window = {
        "from": morning.isoformat(),
        "to": (morning + dt.timedelta(days=1)).isoformat(),
    }
    with TestClient(create_app(settings)) as client:
        board = client.get("/upcoming", params=window | {"limit": 100})
        assert board.status_code == 200, board.text
        items = board.json()["items"]
        assert sorted((i["match"]["home_team"], i["match"]["away_team"]) for i in items) == sorted(
            (m.home, m.away) for m in matchday.matches
        )
        assert all(i["prediction"] is not None for i in items)
        assert {i["model_version"] for i in items} == {version}
        value_bets = client.get("/value-bets", params=window)
        assert value_bets.status_code == 200, value_bets.text
        assert value_bets.json()["model_version"] in (version, None)


def check_logged_once(
    engine: Engine,
    scheduler: SteppedScheduler,
    matchday: Matchday,
    morning: dt.datetime,
    version: int,
) -> dict[int, tuple[str, str]]:
    """The track-record job after kickoff logs each match once, by ``version``, with
    Pinnacle's last quote before kickoff (that of the morning); the teams of each match id."""
    after_kickoff = dt.datetime.combine(matchday.day, dt.time(16, 0), tzinfo=dt.UTC)
    scheduler.run_until(after_kickoff)
    entries = logged(engine)
    assert len(entries) == E0_MATCHDAY + D1_MATCHDAY
    assert {entry.served.model_version for entry in entries} == {version}
    with Session(engine) as session:
        teams = {
            match.id: (match.home_team.name, match.away_team.name)
            for match in session.scalars(
                select(Match).where(Match.id.in_([e.match_id for e in entries]))
            )
        }
    by_teams = {(m.home, m.away): m for m in matchday.matches}
    for entry in entries:
        row = by_teams[teams[entry.match_id]]
        assert entry.kickoff == row.kickoff
        pinnacle = [q for q in entry.served.quotes if q.bookmaker == "PS"]
        assert len(pinnacle) == 1
        assert pinnacle[0].captured_at == morning
    scheduler.run_until(after_kickoff + dt.timedelta(minutes=5))
    assert scheduler.runs_of("track-record")[-1] == (
        after_kickoff + dt.timedelta(minutes=5),
        "track-record",
    )
    assert [e.id for e in logged(engine)] == [e.id for e in entries]
    return teams


def check_scored(settings: Settings, matchday: Matchday) -> None:
    """GET /performance of the day scores every match; GET /admin/fetches lists seven runs
    (three of the football-data feed, four of The Odds API), all succeeded."""
    with TestClient(create_app(settings)) as client:
        day = {
            "from": matchday.day.isoformat() + "T00:00:00Z",
            "to": (matchday.day + dt.timedelta(days=1)).isoformat() + "T00:00:00Z",
        }
        scored = client.get("/performance", params=day)
        assert scored.status_code == 200, scored.text
        body = scored.json()["performance"]
        assert body["matches"] == E0_MATCHDAY + D1_MATCHDAY
        assert body["served"]["matches"] == E0_MATCHDAY + D1_MATCHDAY
        assert body["consensus"]["matches"] == E0_MATCHDAY + D1_MATCHDAY
        assert body["best_bookmaker"]["code"] in {"PS", "B365"}
        fetches = client.get("/admin/fetches", headers={"X-API-Key": ADMIN_KEY})
        assert fetches.status_code == 200, fetches.text
        runs = fetches.json()["items"]
    # The Odds API: its two scheduled runs and the closing line's, one per kickoff time.
    assert sorted(run["source"] for run in runs) == sorted(
        [FetchSource.FOOTBALL_DATA] * 3 + [FetchSource.THE_ODDS_API] * 4
    )
    assert {run["status"] for run in runs} == {FetchStatus.SUCCEEDED}


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


def check_flags_raised(
    settings: Settings, matchday: Matchday, morning: dt.datetime
) -> dict[int, dict[str, Any]]:
    """GET /flags on the morning: flags of the matchday, raised (and changed) by the
    ingests and the activation up to the morning, at prices the sites served, with
    EV = probability × net price − 1; none settled. By id."""
    flags = flags_listed(settings)
    assert flags
    for flag in flags:
        row = row_of(matchday, flag)
        assert flag["status"] in {"open", "withdrawn"}
        assert (flag["result"], flag["close"], flag["clv"]) == (None, None, None)
        assert moment_of(flag["raised_at"]) <= morning
        assert flag["price"] in served_prices(row, flag["bookmaker"], flag["outcome"])
        assert flag["expected_value"] == pytest.approx(
            flag["probability"] * flag["net_price"] - 1, abs=1e-12
        )
        assert flag["expected_value"] > 0
        for event in flag["events"]:
            assert moment_of(flag["raised_at"]) <= moment_of(event["at"]) <= morning
    # The morning's prices moved the ledger: some flag was raised or changed then.
    moments = [moment_of(f["raised_at"]) for f in flags]
    moments += [moment_of(e["at"]) for f in flags for e in f["events"]]
    assert morning in moments
    return {flag["id"]: flag for flag in flags}


def check_closing_fetches(
    engine: Engine, scheduler: SteppedScheduler, matchday: Matchday, morning: dt.datetime
) -> None:
    """Each match's Pinnacle history: the evening's price, then the morning's, which the
    closing-line job fetched again 13 minutes before kickoff and found unchanged: no new
    quote, its sighting moved on."""
    eve_update = morning - dt.timedelta(hours=14)  # the prices of the eve, fetched at 20:00
    eve_fetch = morning - dt.timedelta(hours=12)
    kickoffs = sorted({m.kickoff for m in matchday.matches})
    for kickoff in kickoffs:
        assert (kickoff - CLOSING_FETCH_LEAD, "closing-line") in scheduler.runs_of("closing-line")
    with Session(engine) as session:
        for row in matchday.matches:
            history = session.execute(
                select(OddsQuote.captured_at, OddsQuote.received_at, OddsQuote.seen_at)
                .join(Match, OddsQuote.match_id == Match.id)
                .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
                .where(
                    Match.kickoff == row.kickoff,
                    Match.home_team.has(name=row.home),
                    Bookmaker.code == "PS",
                    OddsQuote.captured_at.is_not(None),
                )
                .order_by(OddsQuote.captured_at)
            ).all()
            assert [tuple(quote) for quote in history] == [
                (eve_update, eve_fetch, eve_fetch),
                (morning, morning, row.kickoff - CLOSING_FETCH_LEAD),
            ]


def check_flags_settled(
    settings: Settings, matchday: Matchday, morning: dt.datetime, raised: dict[int, Any]
) -> None:
    """GET /flags after the results: every flag raised is settled against Pinnacle's live
    close, the price it served in the morning, last updated five hours and more before
    kickoff but seen to hold by the closing-line job inside the window; each CLV worked out
    from the served prices: net price × power-de-margined close probability − 1."""
    letters = {"H": "1", "D": "X", "A": "2"}
    flags = flags_listed(settings, status="settled")
    assert sorted(flag["id"] for flag in flags) == sorted(raised)
    for flag in flags:
        row = row_of(matchday, flag)
        close = flag["close"]
        assert close is not None
        assert close["origin"] == "live", close
        assert moment_of(close["captured_at"]) == morning
        seen = moment_of(close["seen_at"])
        assert seen == row.kickoff - CLOSING_FETCH_LEAD
        assert row.kickoff - CLOSING_WINDOW <= seen < row.kickoff
        assert (close["home"], close["draw"], close["away"]) == row.closing
        assert flag["result"] == letters[row.result]
        won = flag["outcome"] == flag["result"]
        assert flag["flat_return"] == pytest.approx(flag["net_price"] - 1 if won else -1.0)
        fair = power_fair(row.closing)[OUTCOMES.index(flag["outcome"])]
        assert flag["closing_probability"] == pytest.approx(fair, abs=1e-9)
        assert flag["clv"] == pytest.approx(flag["net_price"] * fair - 1, abs=1e-9)


@pytest.mark.slow
def test_a_matchday_runs_from_fixtures_to_track_record_with_no_manual_step(
    migrated_url: str,
    season_file: SeasonFile,
    sites: tuple[Site, FakeOddsApi, str, str],
    stepped_scheduler: SteppedScheduler,
) -> None:
    football_data, odds_api, fd_base, api_base = sites
    matchday = build_matchday(season_file, years_ahead(dt.datetime.now(dt.UTC)))
    settings = live_settings(migrated_url, fd_base, api_base)
    engine = make_engine(migrated_url)
    years = matchday.years
    past, current = folder(2017 + years), folder(2018 + years)
    for league in ("E0", "D1"):
        football_data.documents[f"mmz4281/{past}/{league}.csv"] = Served(
            matchday.history[league], f'"{league}-{past}"'
        )
        football_data.documents[f"mmz4281/{current}/{league}.csv"] = Served(
            matchday.before[league], f'"{league}-{current}-v1"'
        )
    football_data.documents["fixtures.csv"] = Served(matchday.fixtures, '"fixtures-v1"')
    assert len(matchday.matches) == E0_MATCHDAY + D1_MATCHDAY

    # The scheduler starts on a fresh database in the close season, and its machine sleeps
    # through the summer.
    def at(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(hour, minute), tzinfo=dt.UTC)

    eve = matchday.day - dt.timedelta(days=1)
    morning = at(matchday.day, 8)
    scheduler = stepped_scheduler
    clock = scheduler.clock
    clock.now = at(dt.date(2018 + years, 7, 1), 18)
    build_scheduler(engine, settings, stop=Stop(), clock=clock, into=scheduler)
    scheduler.start()
    script_prices(odds_api, matchday, morning - dt.timedelta(hours=14), closing=False)

    # 1. The close season: last season's files, and the fixtures. Then the eve of the
    # matchday: this season's files so far, the prices of the evening and the refit of
    # the night.
    scheduler.run_until(clock.now)
    scheduler.wake_at(at(eve, 18))
    scheduler.run_until(at(matchday.day, 7))

    # 2. The prices of the morning: Pinnacle's move to its closing line.
    script_prices(odds_api, matchday, morning, closing=True)
    scheduler.run_until(morning)

    # 3. The refit of the night made a version active.
    with Session(engine) as session:
        refit = session.scalars(select(RefitRun)).one()
    assert refit.status == RunStatus.SUCCEEDED, refit.message
    assert refit.version_id is not None

    # 4. The board and the value bets list the matchday, predicted by that version; the
    # ledger holds the flags the ingests and the activation raised, none settled yet.
    check_board(settings, matchday, morning, refit.version_id)
    raised = check_flags_raised(settings, matchday, morning)

    # 5. Kickoff has passed: each match is logged once, by the version active at kickoff,
    # with the last quotes before it (Pinnacle's closing line). Pinnacle had not moved since
    # the morning, and the closing-line job saw it so just before each kickoff.
    teams = check_logged_once(engine, scheduler, matchday, morning, refit.version_id)
    check_closing_fetches(engine, scheduler, matchday, morning)

    # 6. In the evening the season files hold the results, under new ETags.
    for league in ("E0", "D1"):
        football_data.documents[f"mmz4281/{current}/{league}.csv"] = Served(
            matchday.after[league], f'"{league}-{current}-v2"'
        )
    scheduler.run_until(at(matchday.day, 19))
    with Session(engine) as session:
        results = {
            (match.home_team.name, match.away_team.name): match.result
            for match in session.scalars(select(Match).where(Match.id.in_(list(teams))))
        }
    # The file's FTR letters (H, D, A) in the service's 1X2 words.
    letters = {"H": "1", "D": "X", "A": "2"}
    assert results == {(m.home, m.away): letters[m.result] for m in matchday.matches}

    # Each feed and the refit ran when their crons said, from the eve on; over the summer
    # the sleeping machine missed them.
    assert scheduler.runs_of("football-data", "the-odds-api", "refit") == [
        (at(dt.date(2018 + years, 7, 1), 18), "football-data"),
        (at(eve, 18), "football-data"),
        (at(eve, 20), "the-odds-api"),
        (at(matchday.day, 3), "refit"),
        (morning, "the-odds-api"),
        (at(matchday.day, 18), "football-data"),
    ]
    assert {job_id for _, job_id in scheduler.missed} == {"refit", "the-odds-api"}
    assert all(moment < at(eve, 18) for moment, _ in scheduler.missed)

    # 7. The track record of the day scores every match; every fetch run succeeded.
    check_scored(settings, matchday)

    # 8. Every flag is settled and scored against Pinnacle's live close, as the closing-line
    # job saw it just before kickoff.
    check_flags_settled(settings, matchday, morning, raised)
    engine.dispose()


def test_the_scheduler_registers_all_four_jobs_on_their_crons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from apscheduler.schedulers.blocking import BlockingScheduler

    from app.services.scheduling import run_scheduler

    registered: dict[str, str] = {}

    def start(scheduler: BlockingScheduler) -> None:
        registered.update({job.id: str(job.trigger) for job in scheduler.get_jobs()})

    monkeypatch.setattr(BlockingScheduler, "start", start)
    # The test process keeps its own signal handlers.
    monkeypatch.setattr(signal, "signal", lambda *_args: None)
    engine = make_engine("sqlite://")
    settings = Settings(
        refit_cron="30 4 * * *",
        football_data_cron="0 6 * * *",
        odds_api_key=KEY,
        odds_api_cron="0 */3 * * *",
        track_record_cron="*/5 * * * *",
    )
    run_scheduler(engine, settings)
    engine.dispose()
    # APScheduler's cron trigger names each field it was given.
    assert registered == {
        "refit": "cron[month='*', day='*', day_of_week='*', hour='4', minute='30']",
        "football-data": "cron[month='*', day='*', day_of_week='*', hour='6', minute='0']",
        "the-odds-api": "cron[month='*', day='*', day_of_week='*', hour='*/3', minute='0']",
        "track-record": "cron[month='*', day='*', day_of_week='*', hour='*', minute='*/5']",
    }
