"""A matchday of two leagues, end to end, run by the scheduler's jobs alone: the
Football-Data.co.uk feed fetches the past season and the fixtures, The Odds API feed
fetches prices twice, the refit makes a model active, the board lists the matches, the
track record logs them at kickoff, the feed settles them, and GET /performance scores them.

Both sites are local servers answering in the real formats with real rows (E0 and D1,
2017/18 and the start of 2018/19). The rows are moved a whole number of years into the
future, so that the matchday is still to come by the real clock the HTTP answers read;
the jobs are given the simulated moment where they take one.
"""

from __future__ import annotations

import datetime as dt
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine
from app.db.orm import Match, PredictionLogEntry
from app.domain.vocabulary import FetchSource, FetchStatus, RunStatus, RunTrigger
from app.main import create_app
from app.services.football_data_feed import scheduled_football_data_fetch
from app.services.odds_api_feed import scheduled_fetch
from app.services.refit import run_refit
from app.services.track_record import track_record_job
from app.settings import Settings
from tests.conftest import ADMIN_KEY
from tests.test_cli import http_server
from tests.test_football_data_feed import (
    AFTER_THE_MATCH,
    Served,
    Site,
    csv_bytes,
    read_rows,
    site_handler,
)
from tests.test_odds_api_feed import (
    BUNDESLIGA,
    EPL,
    KEY,
    FakeOddsApi,
    events_answer,
    handler_for,
    quota,
)

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
    return Settings(
        database_url=database_url,
        admin_api_key=ADMIN_KEY,
        football_data_url=football_data_url,
        football_data_leagues="E0,D1",
        football_data_retries=0,
        odds_api_key=KEY,
        odds_api_url=odds_api_url,
        odds_api_sports=["soccer_epl", "soccer_germany_bundesliga"],
        odds_api_regions=["uk", "eu"],
        refit_rounds_grid=[1, 5, 20],
        model_refresh_seconds=0.5,
    )


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
    engine: Engine, settings: Settings, matchday: Matchday, morning: dt.datetime, version: int
) -> dict[int, tuple[str, str]]:
    """The track-record job after kickoff logs each match once, by ``version``, with
    Pinnacle's last quote before kickoff (that of the morning); the teams of each match id."""
    after_kickoff = dt.datetime.combine(matchday.day, dt.time(16, 0), tzinfo=dt.UTC)
    track_record_job(engine, settings, now=after_kickoff)
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
    track_record_job(engine, settings, now=after_kickoff + dt.timedelta(minutes=5))
    assert [e.id for e in logged(engine)] == [e.id for e in entries]
    return teams


def check_scored(settings: Settings, matchday: Matchday) -> None:
    """GET /performance of the day scores every match; GET /admin/fetches lists five runs
    (three of the football-data feed, two of The Odds API), all succeeded."""
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
    assert sorted(run["source"] for run in runs) == sorted(
        [FetchSource.FOOTBALL_DATA] * 3 + [FetchSource.THE_ODDS_API] * 2
    )
    assert {run["status"] for run in runs} == {FetchStatus.SUCCEEDED}


def test_a_matchday_runs_from_fixtures_to_track_record_with_no_manual_step(
    migrated_url: str,
    season_file: SeasonFile,
    sites: tuple[Site, FakeOddsApi, str, str],
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

    # 1. The close season, then the eve of the matchday: last season's files, this
    # season's so far, and the fixtures.
    scheduled_football_data_fetch(engine, settings, today=dt.date(2018 + years, 7, 1))
    eve = matchday.day - dt.timedelta(days=1)
    scheduled_football_data_fetch(engine, settings, today=eve)

    # 2. Prices on the eve and on the morning: Pinnacle's move to its closing line.
    morning = dt.datetime.combine(matchday.day, dt.time(8, 0), tzinfo=dt.UTC)
    script_prices(odds_api, matchday, morning - dt.timedelta(hours=14), closing=False)
    scheduled_fetch(engine, settings)
    script_prices(odds_api, matchday, morning, closing=True)
    scheduled_fetch(engine, settings)

    # 3. The refit of the morning.
    refit = run_refit(engine, settings, trigger=RunTrigger.SCHEDULER, until=morning)
    assert refit.status == RunStatus.SUCCEEDED, refit.message
    assert refit.version_id is not None

    # 4. The board and the value bets list the matchday, predicted by that version.
    check_board(settings, matchday, morning, refit.version_id)

    # 5. Kickoff has passed: each match is logged once, by the version active at kickoff,
    # with the last quotes before it (Pinnacle's closing line).
    teams = check_logged_once(engine, settings, matchday, morning, refit.version_id)

    # 6. The next day the season files hold the results, under new ETags.
    for league in ("E0", "D1"):
        football_data.documents[f"mmz4281/{current}/{league}.csv"] = Served(
            matchday.after[league], f'"{league}-{current}-v2"'
        )
    scheduled_football_data_fetch(engine, settings, today=matchday.day + dt.timedelta(days=1))
    with Session(engine) as session:
        results = {
            (match.home_team.name, match.away_team.name): match.result
            for match in session.scalars(select(Match).where(Match.id.in_(list(teams))))
        }
    # The file's FTR letters (H, D, A) in the service's 1X2 words.
    letters = {"H": "1", "D": "X", "A": "2"}
    assert results == {(m.home, m.away): letters[m.result] for m in matchday.matches}

    # 7. The track record of the day scores every match; every fetch run succeeded.
    check_scored(settings, matchday)
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
