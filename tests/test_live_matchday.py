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
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine
from app.db.orm import Bookmaker, Match, OddsQuote, RefitRun
from app.domain.vocabulary import FetchSource, FetchStatus, RunStatus
from app.main import create_app
from app.services.run_bounds import Stop
from app.services.scheduling import build_scheduler
from app.settings import Settings
from tests.apps import ADMIN_KEY
from tests.football_data_site import Site
from tests.matchday import (
    CLOSING_FETCH_LEAD,
    CLOSING_WINDOW,
    D1_MATCHDAY,
    E0_MATCHDAY,
    OUTCOMES,
    Matchday,
    SeasonFile,
    SteppedScheduler,
    at,
    build_matchday,
    flags_listed,
    live_settings,
    logged,
    moment_of,
    power_fair,
    row_of,
    script_prices,
    serve_results,
    serve_season_so_far,
    served_prices,
    years_ahead,
)
from tests.odds_api_site import KEY, FakeOddsApi


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
    serve_season_so_far(football_data, matchday)
    assert len(matchday.matches) == E0_MATCHDAY + D1_MATCHDAY

    # The scheduler starts on a fresh database in the close season, and its machine sleeps
    # through the summer.
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
    serve_results(football_data, matchday)
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
