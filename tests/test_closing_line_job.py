"""The closing-line job against a local server that answers as The Odds API does.

A simulated clock stands for the present. The feed's schedule stored, at noon, the EPL's
two matches (15:00 and 17:30) and the Bundesliga's one (19:30) with prices last updated at
11:58; the job, with the default lead of 15 minutes, must fetch a sport only once one of
its matches kicks off within the lead and no fetch of the sport came inside that window.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine
from app.db.orm import Bookmaker, FetchRun, Match, OddsQuote
from app.domain.vocabulary import FetchStatus, RunTrigger
from app.services.closing_line import closing_line_job, fetch_closing_lines
from app.services.odds_api_feed import OddsApiFetch, fetch_the_odds_api
from app.services.run_bounds import Stop
from app.services.scheduling import JOBS, build_scheduler
from app.settings import Settings
from tests.helpers import count_rows
from tests.odds_api_site import (
    BUNDESLIGA,
    EPL,
    KEY,
    SPORTS,
    Answer,
    FakeOddsApi,
    events_answer,
    quota,
)
from tests.plugins.odds_api import feed_settings

DAY = dt.date(2026, 11, 28)
LEAD_MINUTES = 15  # the setting's default


def at(hour: int, minute: int) -> dt.datetime:
    return dt.datetime.combine(DAY, dt.time(hour, minute), tzinfo=dt.UTC)


def iso(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def event(
    sport: str, kickoff: dt.datetime, home: str, away: str, updated: dt.datetime, home_price: float
) -> dict[str, Any]:
    """One event as The Odds API writes it: Pinnacle's 1X2 prices, updated at ``updated``."""
    return {
        "id": f"{sport}-{home}-{away}".replace(" ", "-").lower(),
        "sport_key": sport,
        "commence_time": iso(kickoff),
        "home_team": home,
        "away_team": away,
        "bookmakers": [
            {
                "key": "pinnacle",
                "title": "Pinnacle",
                "last_update": iso(updated),
                "markets": [
                    {
                        "key": "h2h",
                        "last_update": iso(updated),
                        "outcomes": [
                            {"name": home, "price": home_price},
                            {"name": "Draw", "price": 3.6},
                            {"name": away, "price": 4.2},
                        ],
                    }
                ],
            }
        ],
    }


def epl_events(first_home_price: float, first_updated: dt.datetime) -> list[dict[str, Any]]:
    """The EPL's 15:00 match as priced at ``first_updated``, and its 17:30 one as at noon."""
    return [
        event("soccer_epl", at(15, 0), "Arsenal", "Everton", first_updated, first_home_price),
        event("soccer_epl", at(17, 30), "Chelsea", "Fulham", at(11, 58), 1.9),
    ]


NOON_EPL = events_answer(epl_events(1.8, at(11, 58)), quota(498, 2, 2))
CLOSING_EPL = events_answer(epl_events(1.7, at(14, 49)), quota(494, 6, 2))
NOON_BUNDESLIGA = events_answer(
    [event("soccer_germany_bundesliga", at(19, 30), "Mainz", "Bochum", at(11, 58), 2.1)],
    quota(496, 4, 2),
)


def job_settings(base: str, database_url: str = "sqlite://", **more: Any) -> Settings:
    """The feed's settings with the closing-line job every five minutes."""
    return feed_settings(
        base, database_url=database_url, **({"closing_line_cron": "*/5 * * * *"} | more)
    )


def no_wait(_seconds: float) -> None:
    """Waits between attempts are not spent."""


@pytest.fixture
def stored_at_noon(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> tuple[FakeOddsApi, Settings]:
    """The feed's noon run has stored both sports; the EPL is then answered as at 14:49,
    and the requests seen so far are forgotten."""
    api, base = odds_api
    settings = job_settings(base)
    api.script(EPL, NOON_EPL)
    api.script(BUNDESLIGA, NOON_BUNDESLIGA)
    feed = fetch_the_odds_api(
        factory, settings, trigger=RunTrigger.SCHEDULER, sleep=no_wait, clock=lambda: at(12, 0)
    )
    assert feed.status is FetchStatus.SUCCEEDED, feed.error
    api.script(EPL, CLOSING_EPL)
    api.seen.clear()
    return api, settings


def closing_run(
    factory: sessionmaker[Session], settings: Settings, now: dt.datetime
) -> OddsApiFetch | None:
    return fetch_closing_lines(
        factory, settings, trigger=RunTrigger.SCHEDULER, clock=lambda: now, sleep=no_wait
    )


def fetch_run_count(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return count_rows(session, FetchRun)


def latest_capture(factory: sessionmaker[Session], external_id: str) -> dt.datetime:
    """The capture time of the newest quote of the match with that external id."""
    with factory() as session:
        captured = session.scalar(
            select(OddsQuote.captured_at)
            .join(Match, OddsQuote.match_id == Match.id)
            .where(Match.external_id == external_id)
            .order_by(OddsQuote.captured_at.desc())
            .limit(1)
        )
    assert captured is not None
    return captured


ARSENAL_EVERTON = "soccer_epl-arsenal-everton"


def test_only_the_sport_with_a_match_in_the_window_is_fetched(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session]
) -> None:
    api, settings = stored_at_noon
    # 14:50: Arsenal-Everton kicks off in 10 minutes; the Bundesliga's match at 19:30.
    outcome = closing_run(factory, settings, at(14, 50))

    assert outcome is not None
    assert outcome.status is FetchStatus.SUCCEEDED, outcome.error
    # The free check of the key, then the EPL's odds only: 2 credits (uk, eu), not 4.
    assert api.paths() == [SPORTS, EPL]
    assert [sport.sport for sport in outcome.sports] == ["soccer_epl"]
    with factory() as session:
        run = session.get(FetchRun, outcome.run_id)
        assert run is not None
        # Recorded as a scheduled run of The Odds API's feed, with what it stored: the
        # moved price of the 15:00 match (the 17:30 one's had not moved).
        assert (run.source, run.trigger, run.status) == ("the-odds-api", "scheduler", "succeeded")
        assert (run.requests, run.changed, run.quotes) == (2, 1, 1)


def test_the_last_quote_before_kickoff_is_minutes_old(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session]
) -> None:
    _api, settings = stored_at_noon
    # Before the job, the newest price of the 15:00 match is the one updated at 11:58.
    assert latest_capture(factory, ARSENAL_EVERTON) == at(11, 58)

    closing_run(factory, settings, at(14, 50))

    # Pinnacle's price updated at 14:49 is stored at its capture time, 11 minutes before
    # kickoff, beside the noon one.
    assert latest_capture(factory, ARSENAL_EVERTON) == at(14, 49)
    with factory() as session:
        prices = session.execute(
            select(OddsQuote.captured_at, OddsQuote.home, OddsQuote.received_at)
            .join(Match, OddsQuote.match_id == Match.id)
            .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
            .where(Match.external_id == ARSENAL_EVERTON, Bookmaker.code == "PS")
            .order_by(OddsQuote.captured_at)
        ).all()
    assert [tuple(row) for row in prices] == [
        (at(11, 58), 1.8, at(12, 0)),
        (at(14, 49), 1.7, at(14, 50)),
    ]


def test_a_sport_with_no_match_soon_costs_nothing(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session]
) -> None:
    api, settings = stored_at_noon
    runs = fetch_run_count(factory)
    # 14:44: the 15:00 match is 16 minutes away, outside the 15-minute lead.
    assert closing_run(factory, settings, at(14, 44)) is None
    # 16:00: the 15:00 match has kicked off (its prices would be in-play), the next is 17:30.
    assert closing_run(factory, settings, at(16, 0)) is None
    assert api.paths() == []
    assert fetch_run_count(factory) == runs  # nothing recorded either


def test_a_second_run_inside_the_window_does_not_fetch_again(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session]
) -> None:
    api, settings = stored_at_noon
    assert closing_run(factory, settings, at(14, 46)) is not None
    for minute in (50, 55, 59):
        assert closing_run(factory, settings, at(14, minute)) is None
    assert api.paths() == [SPORTS, EPL]
    # The 17:30 match's own window, later: one more request of the EPL.
    assert closing_run(factory, settings, at(17, 20)) is not None
    assert closing_run(factory, settings, at(17, 25)) is None
    assert api.paths() == [SPORTS, EPL, SPORTS, EPL]


def test_a_feed_run_inside_the_window_stands_for_the_closing_fetch(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session]
) -> None:
    api, settings = stored_at_noon
    feed = fetch_the_odds_api(
        factory, settings, trigger=RunTrigger.SCHEDULER, sleep=no_wait, clock=lambda: at(14, 47)
    )
    assert feed.status is FetchStatus.SUCCEEDED
    api.seen.clear()
    assert closing_run(factory, settings, at(14, 50)) is None
    assert api.paths() == []


@pytest.mark.parametrize("why", ["settled", "kickoff time unknown"])
def test_a_match_settled_or_of_unknown_kickoff_time_is_not_fetched(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session], why: str
) -> None:
    api, settings = stored_at_noon
    with factory.begin() as session:
        match = session.scalars(select(Match).where(Match.external_id == ARSENAL_EVERTON)).one()
        if why == "settled":
            match.result, match.home_goals, match.away_goals = "1", 1, 0
        else:
            match.kickoff_time_known = False
    assert closing_run(factory, settings, at(14, 50)) is None
    assert api.paths() == []


def test_the_lead_is_the_setting(
    stored_at_noon: tuple[FakeOddsApi, Settings], factory: sessionmaker[Session]
) -> None:
    api, settings = stored_at_noon
    longer = settings.model_copy(update={"closing_line_minutes": 20})
    # 14:41: 19 minutes before the 15:00 kickoff, inside a lead of 20.
    assert closing_run(factory, longer, at(14, 41)) is not None
    assert api.paths() == [SPORTS, EPL]


def failing_answer(failure: str, api: FakeOddsApi) -> Answer:
    if failure == "timeout":
        return Answer(hold=api.released)  # held until the test ends
    return Answer(int(failure), b'{"message": "try later"}', quota(496, 4, 0))


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        ("429", "soccer_epl: HTTP 429 Too Many Requests (2 attempts)"),
        ("500", "soccer_epl: HTTP 500 Internal Server Error (2 attempts)"),
        # Sent and not answered in time: not sent again, it may have cost credits.
        ("timeout", "soccer_epl: no answer in time"),
    ],
)
def test_an_upstream_error_is_recorded_stores_nothing_and_is_fetched_again(
    stored_at_noon: tuple[FakeOddsApi, Settings],
    factory: sessionmaker[Session],
    failure: str,
    said: str,
) -> None:
    api, settings = stored_at_noon
    failing = failing_answer(failure, api)
    api.script(EPL, failing, failing, CLOSING_EPL)
    quick = settings.model_copy(update={"odds_api_attempts": 2, "odds_api_timeout_seconds": 0.2})
    with factory() as session:
        quotes = count_rows(session, OddsQuote)

    outcome = closing_run(factory, quick, at(14, 50))

    assert outcome is not None
    assert (outcome.status, outcome.error) == (FetchStatus.FAILED, said)
    with factory() as session:
        run = session.get(FetchRun, outcome.run_id)
        assert run is not None
        assert (run.status, run.error, run.quotes) == ("failed", said, 0)
        assert count_rows(session, OddsQuote) == quotes
    assert latest_capture(factory, ARSENAL_EVERTON) == at(11, 58)
    # The sport's fetch was not stored, so the next run inside the window asks again.
    api.script(EPL, CLOSING_EPL)
    again = closing_run(factory, quick, at(14, 55))
    assert again is not None
    assert again.status is FetchStatus.SUCCEEDED, again.error
    assert latest_capture(factory, ARSENAL_EVERTON) == at(14, 49)


def test_the_scheduled_job_is_stopped_by_the_stop(
    stored_at_noon: tuple[FakeOddsApi, Settings],
    migrated_url: str,
    factory: sessionmaker[Session],
) -> None:
    """A stop already set (what SIGTERM sets in the scheduler) ends the job's run before
    it asks for any odds; the run is recorded as failed and nothing is stored."""
    api, settings = stored_at_noon
    runs = fetch_run_count(factory)
    stop = Stop()
    stop.set()
    engine = make_engine(migrated_url)
    try:
        closing_line_job(
            engine,
            settings.model_copy(update={"database_url": migrated_url}),
            clock=lambda: at(14, 50),
            stop=stop,
        )
    finally:
        engine.dispose()
    assert EPL not in api.paths()
    with factory() as session:
        run = session.scalars(select(FetchRun).order_by(FetchRun.id.desc()).limit(1)).one()
    assert fetch_run_count(factory) == runs + 1
    assert (run.status, run.trigger) == ("failed", "scheduler")
    # One sport due (the EPL), none fetched.
    assert run.error == "stopped by a shutdown before it finished, with 0 of 1 sport done"
    assert latest_capture(factory, ARSENAL_EVERTON) == at(11, 58)


def test_the_scheduler_runs_the_job_on_its_cron_with_the_stop() -> None:
    job = next(job for job in JOBS if job.name == "closing-line")
    assert (job.cron_setting, job.run, job.stoppable) == (
        "closing_line_cron",
        closing_line_job,
        True,
    )
    settings = Settings(odds_api_key=KEY, closing_line_cron="*/5 * * * *")
    stop = Stop()
    engine = make_engine("sqlite://")
    try:
        scheduler = build_scheduler(engine, settings, stop=stop, into=BackgroundScheduler())
        scheduled = scheduler.get_job("closing-line")
        assert scheduled is not None
        assert str(scheduled.trigger) == str(
            CronTrigger.from_crontab("*/5 * * * *", timezone=dt.UTC)
        )
        assert scheduled.kwargs["stop"] is stop
        off = build_scheduler(engine, Settings(), stop=stop, into=BackgroundScheduler())
        assert off.get_job("closing-line") is None
    finally:
        engine.dispose()


def test_the_settings_default_to_off_and_need_the_key() -> None:
    defaults = Settings()
    assert (defaults.closing_line_cron, defaults.closing_line_minutes) == (None, 15)
    with pytest.raises(ValidationError, match="ODDSBOOST_CLOSING_LINE_CRON is set but"):
        Settings(closing_line_cron="*/5 * * * *")
    with pytest.raises(ValidationError, match="not a cron expression"):
        Settings(odds_api_key=KEY, closing_line_cron="every five minutes")
    with pytest.raises(ValidationError, match="closing_line_minutes"):
        Settings(closing_line_minutes=0)


# The worked example of the live-feeds guide: a weekend's kickoffs (UTC), by sport.
WEEKEND = dt.date(2026, 11, 27)  # a Friday
WEEKEND_KICKOFFS = {
    "soccer_epl": [(1, 12, 30, 1), (1, 15, 0, 5), (1, 17, 30, 1), (2, 14, 0, 2), (2, 16, 30, 1)],
    "soccer_germany_bundesliga": [
        (0, 19, 30, 1),
        (1, 14, 30, 5),
        (1, 17, 30, 1),
        (2, 14, 30, 1),
        (2, 16, 30, 1),
    ],
}  # (days after Friday, hour, minute, matches)


def weekend_events(sport: str, priced: dt.datetime) -> list[dict[str, Any]]:
    events = []
    for days, hour, minute, matches in WEEKEND_KICKOFFS[sport]:
        kickoff = dt.datetime.combine(
            WEEKEND + dt.timedelta(days=days), dt.time(hour, minute), tzinfo=dt.UTC
        )
        events += [
            event(sport, kickoff, f"Home {kickoff:%a%H%M} {n}", f"Away {n}", priced, 2.0)
            for n in range(matches)
        ]
    return events


def test_a_weekend_costs_one_request_a_kickoff_time_and_sport(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    """The guide's example: the EPL's 10 matches at 5 kickoff times and the Bundesliga's 9
    at 5, with the job every 5 minutes from Friday 00:00 to Monday 00:00, cost 10 requests
    of 2 credits (uk, eu): 20 credits."""
    api, base = odds_api
    settings = job_settings(base)
    start = dt.datetime.combine(WEEKEND, dt.time(0, 0), tzinfo=dt.UTC)
    api.script(EPL, events_answer(weekend_events("soccer_epl", start), quota(498, 2, 2)))
    api.script(
        BUNDESLIGA,
        events_answer(weekend_events("soccer_germany_bundesliga", start), quota(496, 4, 2)),
    )
    # The feed stored the weekend's matches just before it began, three days before the
    # first kickoff: its fetch covers none of their windows.
    stored = fetch_the_odds_api(
        factory, settings, trigger=RunTrigger.SCHEDULER, sleep=no_wait, clock=lambda: start
    )
    assert (stored.status, stored.counts.matches) == (FetchStatus.SUCCEEDED, 19)
    api.seen.clear()

    runs = [start + dt.timedelta(minutes=5 * step) for step in range(3 * 24 * 12)]
    fetched = [now for now in runs if closing_run(factory, settings, now) is not None]

    odds_requests = [path for path in api.paths() if path != SPORTS]
    # Saturday 17:30 and Sunday 16:30 are one run for both sports: 8 runs of the 864.
    assert len(fetched) == 8
    assert (odds_requests.count(EPL), odds_requests.count(BUNDESLIGA)) == (5, 5)
    assert len(odds_requests) * len(settings.odds_api_regions) == 20
    # Each fetch came in the first run inside its kickoff's window: 15 minutes before it.
    assert fetched[0] == dt.datetime(2026, 11, 27, 19, 15, tzinfo=dt.UTC)
