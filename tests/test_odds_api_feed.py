"""The Odds API feed against a local server that answers as The Odds API does: its JSON,
its quota headers, its errors. No test waits for real: the waits between attempts are
recorded by an injected sleep, and a slow answer is held only until the client's short
timeout has passed."""

from __future__ import annotations

import copy
import datetime as dt
import http.server
import json
import logging
import signal
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine
from app.db.orm import Bookmaker, FetchedDocument, FetchRun, Match, OddsQuote
from app.domain.vocabulary import FetchStatus, RunTrigger
from app.metrics import REGISTRY
from app.services.http_retry import GaveUpError, RetryPolicy, send_with_retries
from app.services.locks import run_lock
from app.services.odds_api_feed import (
    SKIPPED_RUN_PAUSE_SECONDS,
    OddsApiFetch,
    fetch_the_odds_api,
    odds_api_job,
)
from app.services.run_bounds import Stop
from app.settings import Settings
from tests.commands import Oddsboost
from tests.helpers import DEADLINE_SECONDS, count_rows, wait_until
from tests.odds_api_site import (
    BUNDESLIGA,
    EPL,
    EPL_EVENTS,
    KEY,
    SPORTS,
    Answer,
    FakeOddsApi,
    events_answer,
    quota,
)
from tests.plugins.odds_api import feed_settings
from tests.upstreams import ANOTHER_HOST, http_server


def utc(year: int, month: int, day: int, hour: int, minute: int) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC)


class Waits:
    """The injected sleep: records each wait instead of spending it."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def fetch(
    factory: sessionmaker[Session], settings: Settings, waits: Waits | None = None
) -> OddsApiFetch:
    return fetch_the_odds_api(factory, settings, trigger=RunTrigger.CLI, sleep=waits or Waits())


def stored_run(factory: sessionmaker[Session], run_id: int) -> FetchRun:
    with factory() as session:
        run = session.get(FetchRun, run_id)
        assert run is not None
        session.expunge(run)
        return run


def quote_count(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return count_rows(session, OddsQuote)


def test_a_fetch_stores_each_sport_and_records_the_run(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    outcome = fetch(factory, feed_settings(base))

    assert outcome.status is FetchStatus.SUCCEEDED, outcome.error
    assert api.paths() == [SPORTS, EPL, BUNDESLIGA]
    query = api.seen[1][1]
    assert query == {
        "regions": ["uk,eu"],
        "markets": ["h2h"],
        "oddsFormat": ["decimal"],
        "dateFormat": ["iso"],
        "apiKey": [KEY],
    }
    with factory() as session:
        assert count_rows(session, Match) == 2
        stored = session.execute(
            select(Bookmaker.code, OddsQuote.captured_at, OddsQuote.home)
            .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
            .order_by(Bookmaker.code)
        ).all()
    # Pinnacle (PS), Unibet (no football-data code: its key in capitals), Betfair's exchange
    # (BFE), each at its own last_update; William Hill's in-play price is left out.
    assert [tuple(row) for row in stored] == [
        ("BFE", utc(2018, 8, 11, 9, 0), 4.8),
        ("PS", utc(2018, 8, 10, 18, 55), 1.56),
        ("UNIBET_EU", utc(2018, 8, 10, 12, 0), 1.55),
    ]
    run = stored_run(factory, outcome.run_id)
    assert (run.status, run.error, run.trigger) == ("succeeded", None, "cli")
    assert (run.requests, run.changed, run.matches, run.quotes, run.skipped) == (3, 2, 2, 3, 1)
    # The last answer's headers: 500 credits, 2 per sport for two regions.
    assert (run.quota_remaining, run.quota_used) == (496, 4)
    assert [(s.sport, s.counts.quotes, s.error) for s in outcome.sports] == [
        ("soccer_epl", 3, None),
        ("soccer_germany_bundesliga", 0, None),
    ]


def test_prices_that_moved_add_quotes_and_the_same_ones_add_nothing(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    settings = feed_settings(base, odds_api_sports=["soccer_epl"])
    assert fetch(factory, settings).counts.quotes == 3
    again = fetch(factory, settings)
    assert (again.counts.quotes, again.counts.matches) == (0, 0)
    assert quote_count(factory) == 3

    moved = copy.deepcopy(EPL_EVENTS)
    pinnacle = moved[0]["bookmakers"][0]
    pinnacle["last_update"] = pinnacle["markets"][0]["last_update"] = "2018-08-10T18:58:00Z"
    pinnacle["markets"][0]["outcomes"][1]["price"] = 1.52
    api.script(EPL, events_answer(moved, quota(496, 4, 2)))
    later = fetch(factory, settings)
    assert later.counts.quotes == 1
    with factory() as session:
        history = session.execute(
            select(OddsQuote.captured_at, OddsQuote.home)
            .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
            .where(Bookmaker.code == "PS")
            .order_by(OddsQuote.captured_at)
        ).all()
    assert [tuple(row) for row in history] == [
        (utc(2018, 8, 10, 18, 55), 1.56),
        (utc(2018, 8, 10, 18, 58), 1.52),
    ]


def test_a_sport_is_remembered_as_fetched_at_each_fetch_and_changed_when_it_stored(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    settings = feed_settings(base, odds_api_sports=["soccer_epl"])

    def fetched_at(moment: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        fetch_the_odds_api(
            factory, settings, trigger=RunTrigger.CLI, sleep=Waits(), clock=lambda: moment
        )
        with factory() as session:
            row = session.scalar(select(FetchedDocument).where(FetchedDocument.url.like("%/odds")))
            assert row is not None
            return row.checked_at, row.changed_at

    first, second, third = (
        utc(2018, 8, 10, 18, 56),
        utc(2018, 8, 10, 18, 57),
        utc(2018, 8, 10, 18, 59),
    )
    assert fetched_at(first) == (first, first)
    # The same answer again stores nothing: fetched, not changed.
    assert fetched_at(second) == (second, first)
    moved = copy.deepcopy(EPL_EVENTS)
    pinnacle = moved[0]["bookmakers"][0]
    pinnacle["last_update"] = pinnacle["markets"][0]["last_update"] = "2018-08-10T18:58:00Z"
    pinnacle["markets"][0]["outcomes"][1]["price"] = 1.52
    api.script(EPL, events_answer(moved, quota(496, 4, 2)))
    assert fetched_at(third) == (third, third)


def test_prices_updated_after_the_answer_arrived_are_skipped_and_counted(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    _, base = odds_api
    # The answer arrives at 12:30 on the day of the first match: Pinnacle's price of 18:55
    # and Betfair's of the next morning are from the future; Unibet's of 12:00 is not.
    arrived = utc(2018, 8, 10, 12, 30)
    outcome = fetch_the_odds_api(
        factory,
        feed_settings(base, odds_api_sports=["soccer_epl"]),
        trigger=RunTrigger.CLI,
        sleep=Waits(),
        clock=lambda: arrived,
    )
    assert outcome.status is FetchStatus.SUCCEEDED, outcome.error
    with factory() as session:
        stored = session.execute(
            select(Bookmaker.code, OddsQuote.captured_at, OddsQuote.received_at).join(
                Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id
            )
        ).all()
    assert [tuple(row) for row in stored] == [("UNIBET_EU", utc(2018, 8, 10, 12, 0), arrived)]
    run = stored_run(factory, outcome.run_id)
    # William Hill's in-play price, and the two from the future.
    assert (run.quotes, run.skipped) == (1, 3)


def test_a_refused_key_fails_at_once(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    refused = b'{"message": "API key is not valid", "error_code": "INVALID_KEY"}'
    api.script(SPORTS, Answer(401, refused))
    waits = Waits()
    outcome = fetch(factory, feed_settings(base), waits)
    assert outcome.status is FetchStatus.FAILED
    assert api.paths() == [SPORTS]  # never tried again, no sport asked for
    assert waits.seconds == []
    assert outcome.error is not None
    assert "refused the key" in outcome.error
    assert "ODDSBOOST_ODDS_API_KEY" in outcome.error
    run = stored_run(factory, outcome.run_id)
    assert (run.status, run.requests, run.quotes) == ("failed", 1, 0)
    assert quote_count(factory) == 0


def test_a_429_is_waited_out_as_retry_after_says(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    busy = Answer(429, b'{"message": "Too many requests"}', {"Retry-After": "7"})
    api.script(EPL, busy, events_answer(EPL_EVENTS, quota(498, 2, 2)))
    waits = Waits()
    outcome = fetch(factory, feed_settings(base, odds_api_sports=["soccer_epl"]), waits)
    assert outcome.status is FetchStatus.SUCCEEDED, outcome.error
    assert waits.seconds == [7.0]
    assert api.paths() == [SPORTS, EPL, EPL]
    assert (outcome.counts.requests, outcome.counts.quotes) == (3, 3)


def test_a_server_error_is_tried_again_after_a_backoff(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    api.script(EPL, Answer(500, b"oops"), events_answer(EPL_EVENTS, quota(498, 2, 2)))
    waits = Waits()
    outcome = fetch(factory, feed_settings(base, odds_api_sports=["soccer_epl"]), waits)
    assert outcome.status is FetchStatus.SUCCEEDED, outcome.error
    assert waits.seconds == [0.5]
    assert quote_count(factory) == 3


def test_a_server_that_keeps_failing_fails_the_sport_and_stores_nothing(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    api.script(EPL, Answer(503, b"", quota(500, 0, 0)))
    waits = Waits()
    settings = feed_settings(base, odds_api_sports=["soccer_epl"], odds_api_attempts=3)
    outcome = fetch(factory, settings, waits)
    assert outcome.status is FetchStatus.FAILED
    # 0.5 s, then twice that: the backoff doubles.
    assert waits.seconds == [0.5, 1.0]
    assert api.paths() == [SPORTS, EPL, EPL, EPL]
    assert outcome.error == "soccer_epl: HTTP 503 Service Unavailable (3 attempts)"
    run = stored_run(factory, outcome.run_id)
    assert (run.status, run.requests, run.changed, run.quotes) == ("failed", 4, 0, 0)
    assert run.error == outcome.error
    assert quote_count(factory) == 0


@pytest.mark.parametrize(
    ("slow", "error", "paths"),
    [
        # The Odds API counts a request it answered, even too late: sent again, the odds
        # would be paid for twice. The sport fails; the next run asks again.
        (EPL, "soccer_epl: no answer in time", [SPORTS, EPL, BUNDESLIGA]),
        # The check of the key costs nothing: asked again.
        (
            SPORTS,
            "The Odds API did not answer: no answer in time (3 attempts); nothing fetched",
            [SPORTS, SPORTS, SPORTS],
        ),
    ],
)
def test_an_answer_slower_than_the_timeout_is_asked_again_only_if_free(
    odds_api: tuple[FakeOddsApi, str],
    factory: sessionmaker[Session],
    slow: str,
    error: str,
    paths: list[str],
) -> None:
    api, base = odds_api
    api.script(slow, Answer(hold=api.released))
    settings = feed_settings(
        base, odds_api_timeout_seconds=0.2, odds_api_attempts=3, odds_api_backoff_seconds=0
    )
    outcome = fetch(factory, settings)
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error == error
    assert api.paths() == paths
    assert stored_run(factory, outcome.run_id).requests == len(paths)


@pytest.mark.parametrize(
    ("failure", "sent"),
    [
        # The request never left: sending it again cannot make it counted twice.
        (httpx.ConnectError("connection refused"), 2),
        (httpx.ConnectTimeout("no connection in time"), 2),
        (httpx.PoolTimeout("no free connection in time"), 2),
        # It left, and may have been answered (and counted) already.
        (httpx.ReadTimeout("no answer in time"), 1),
        (httpx.ReadError("connection reset"), 1),
        (httpx.WriteTimeout("not sent whole in time"), 1),
    ],
)
def test_a_counted_request_is_sent_again_only_when_it_never_left(
    failure: httpx.TransportError, sent: int
) -> None:
    calls = 0

    def once() -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise failure
        return httpx.Response(200)

    policy = RetryPolicy(attempts=3, backoff=0.0, max_wait=60.0, sleep=Waits())
    counted = policy.for_counted_requests()
    if sent == 1:
        with pytest.raises(type(failure)):
            send_with_retries(once, counted)
    else:
        assert send_with_retries(once, counted).status_code == 200
    assert calls == sent


@pytest.mark.parametrize(
    ("cut", "why"),
    [
        # The announced length arrives, but the JSON stops in the middle of an event.
        ("body", "not a valid answer, nothing stored: the document: Invalid JSON"),
        # The connection closes before the announced length has arrived.
        ("connection", "the answer was cut short"),
    ],
)
def test_a_truncated_answer_stores_nothing_of_its_sport(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session], cut: str, why: str
) -> None:
    api, base = odds_api
    body = json.dumps(EPL_EVENTS).encode()
    half = len(body) // 2
    if cut == "body":
        api.script(EPL, Answer(body=body[:half], headers=quota(498, 2, 2)))
    else:
        api.script(EPL, Answer(body=body, headers=quota(498, 2, 2), cut_to=half))
    outcome = fetch(factory, feed_settings(base, odds_api_sports=["soccer_epl"]))
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error is not None
    assert outcome.error.startswith(f"soccer_epl: {why}")
    assert api.paths() == [SPORTS, EPL]  # what may have cost credits is not asked again
    with factory() as session:
        assert (count_rows(session, Match), count_rows(session, OddsQuote)) == (0, 0)


def test_the_reserve_is_kept_unspent(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    # 14 left: the EPL (2 credits for two regions) leaves 12, the Bundesliga would leave 10,
    # under a reserve of 11.
    api.script(SPORTS, Answer(body=b"[]", headers=quota(14, 486, 0)))
    api.script(EPL, events_answer(EPL_EVENTS, quota(12, 488, 2)))
    outcome = fetch(factory, feed_settings(base, odds_api_quota_reserve=11))
    assert api.paths() == [SPORTS, EPL]
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error == (
        "soccer_germany_bundesliga: not fetched: 12 credits left, it costs 2 and 11 are kept "
        "in reserve (ODDSBOOST_ODDS_API_QUOTA_RESERVE)"
    )
    run = stored_run(factory, outcome.run_id)
    assert (run.quotes, run.quota_remaining, run.quota_used) == (3, 12, 488)

    # One region costs 1: 12 - 1 = 11 is still within the reserve.
    one_region = fetch(
        factory, feed_settings(base, odds_api_quota_reserve=11, odds_api_regions="uk")
    )
    assert one_region.status is FetchStatus.SUCCEEDED, one_region.error


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_runs_are_counted_and_the_quota_shown_in_the_metrics(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    labels = {"source": "the-odds-api"}
    succeeded = metric("oddsboost_fetch_runs_total", **labels, status="succeeded")
    failed = metric("oddsboost_fetch_runs_total", **labels, status="failed")
    fetch(factory, feed_settings(base))
    assert metric("oddsboost_fetch_quota_remaining", **labels) == 496
    api.script(SPORTS, Answer(401, b"{}"))
    fetch(factory, feed_settings(base))
    assert metric("oddsboost_fetch_runs_total", **labels, status="succeeded") == succeeded + 1
    assert metric("oddsboost_fetch_runs_total", **labels, status="failed") == failed + 1


def test_the_key_is_in_no_log_line_error_or_stored_run(
    odds_api: tuple[FakeOddsApi, str],
    factory: sessionmaker[Session],
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, base = odds_api
    caplog.set_level(logging.DEBUG)
    api.script(EPL, Answer(500, KEY.encode()), events_answer(EPL_EVENTS, quota(498, 2, 2)))
    api.script(BUNDESLIGA, Answer(404, json.dumps({"message": f"no sport for {KEY}"}).encode()))
    settings = feed_settings(base)
    outcomes = [fetch(factory, settings)]
    api.script(SPORTS, Answer(401, b"{}"))
    outcomes.append(fetch(factory, settings))

    # The key was sent, and the client did log each request's URL: without it.
    assert all(query["apiKey"] == [KEY] for _, query in api.seen)
    requests = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert any(EPL in line and "HTTP Request" in line for line in requests), requests
    for record in caplog.records:
        assert KEY not in record.getMessage(), record.name
        assert KEY not in str(record.exc_text or ""), record.name
    assert outcomes[0].error is not None
    assert "soccer_germany_bundesliga: HTTP 404 Not Found: no sport for ***" in outcomes[0].error
    with factory() as session:
        runs = session.scalars(select(FetchRun)).all()
        assert len(runs) == 2
        for run in runs:
            assert KEY not in repr({c.key: getattr(run, c.key) for c in FetchRun.__table__.c})


def test_the_scheduled_job_records_a_failure_and_raises_nothing(
    odds_api: tuple[FakeOddsApi, str], migrated_url: str, factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    api.script(SPORTS, Answer(401, b"{}"))
    engine = make_engine(migrated_url)
    odds_api_job(engine, feed_settings(base, database_url=migrated_url))
    engine.dispose()
    with factory() as session:
        run = session.scalars(select(FetchRun)).one()
    assert (run.status, run.trigger) == ("failed", "scheduler")


def test_a_scheduled_run_skipped_for_the_lock_fetches_what_was_not_fetched_meanwhile(
    odds_api: tuple[FakeOddsApi, str], migrated_url: str, factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    settings = feed_settings(base, database_url=migrated_url)
    moment = utc(2018, 8, 10, 18, 56)
    engine = make_engine(migrated_url)
    held = ExitStack()
    # A closing-line run of the EPL holds the feed's lock when the schedule's run starts.
    held.enter_context(run_lock(engine, "fetch-the-odds-api"))
    pauses: list[float] = []

    def closing_line_run_ends(seconds: float) -> bool:
        pauses.append(seconds)
        held.close()
        fetch_the_odds_api(
            factory,
            settings,
            trigger=RunTrigger.SCHEDULER,
            sports=("soccer_epl",),
            sleep=Waits(),
            clock=lambda: moment,
        )
        return False  # no stop: go on

    try:
        odds_api_job(engine, settings, clock=lambda: moment, pause=closing_line_run_ends)
    finally:
        held.close()
        engine.dispose()
    # One pause; then only the Bundesliga, which the closing-line run did not fetch.
    assert pauses == [SKIPPED_RUN_PAUSE_SECONDS]
    assert [path for path in api.paths() if path != SPORTS] == [EPL, BUNDESLIGA]
    with factory() as session:
        runs = session.execute(select(FetchRun.status).order_by(FetchRun.id)).scalars().all()
    assert runs == ["skipped", "succeeded", "succeeded"]


def test_a_scheduled_run_skipped_for_the_lock_stops_when_every_sport_was_fetched(
    odds_api: tuple[FakeOddsApi, str], migrated_url: str, factory: sessionmaker[Session]
) -> None:
    # Another scheduler's run of the schedule held the lock: nothing is fetched twice.
    api, base = odds_api
    settings = feed_settings(base, database_url=migrated_url)
    moment = utc(2018, 8, 10, 18, 56)
    engine = make_engine(migrated_url)
    held = ExitStack()
    held.enter_context(run_lock(engine, "fetch-the-odds-api"))

    def other_run_ends(_seconds: float) -> bool:
        held.close()
        fetch_the_odds_api(
            factory, settings, trigger=RunTrigger.SCHEDULER, sleep=Waits(), clock=lambda: moment
        )
        return False

    try:
        odds_api_job(engine, settings, clock=lambda: moment, pause=other_run_ends)
    finally:
        held.close()
        engine.dispose()
    assert [path for path in api.paths() if path != SPORTS] == [EPL, BUNDESLIGA]


def test_the_retry_after_of_a_date_is_waited_until_it_or_refused_when_too_far() -> None:
    def answering(retry_after: str) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": retry_after})

    waits = Waits()
    policy = RetryPolicy(attempts=2, backoff=1.0, max_wait=60.0, sleep=waits)
    past = iter([answering("Wed, 21 Oct 2015 07:28:00 GMT"), httpx.Response(200)])
    assert send_with_retries(lambda: next(past), policy).status_code == 200
    assert waits.seconds == [0.0]
    with pytest.raises(GaveUpError, match=r"asked to wait \d+ s, more than the 60 s allowed"):
        send_with_retries(lambda: answering("Fri, 01 Jan 2100 00:00:00 GMT"), policy)


def on(database_url: str, base: str, **more: str) -> dict[str, str]:
    return {
        "ODDSBOOST_DATABASE_URL": database_url,
        "ODDSBOOST_ODDS_API_URL": base,
        "ODDSBOOST_ODDS_API_KEY": KEY,
        **more,
    }


def test_the_command_fetches_and_says_what_it_stored(
    odds_api: tuple[FakeOddsApi, str], migrated_url: str, oddsboost: Oddsboost
) -> None:
    api, base = odds_api
    result = oddsboost.run(
        "fetch",
        "the-odds-api",
        "--sports",
        "soccer_epl,soccer_germany_bundesliga",
        "--regions",
        "uk",
        "--json",
        env=on(migrated_url, base),
    )
    assert result.returncode == 0, result.stderr + result.stdout
    body = json.loads(result.stdout)
    assert (body["status"], body["quotes"], body["quota_remaining"]) == ("succeeded", 3, 496)
    assert [sport["sport"] for sport in body["sports"]] == [
        "soccer_epl",
        "soccer_germany_bundesliga",
    ]
    assert api.seen[1][1]["regions"] == ["uk"]
    assert KEY not in result.stdout + result.stderr

    api.script(SPORTS, Answer(401, b"{}"))
    refused = oddsboost.run("fetch", "the-odds-api", env=on(migrated_url, base))
    assert refused.returncode == 1
    assert "refused the key" in refused.stdout
    assert KEY not in refused.stdout + refused.stderr


def test_the_command_refuses_bad_options_and_a_missing_key(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    bad_region = oddsboost.run(
        "fetch", "the-odds-api", "--regions", "uk,mars", env=on(migrated_url, "http://x")
    )
    assert bad_region.returncode == 2
    assert "--regions: unknown region 'mars'" in bad_region.stderr
    bad_sport = oddsboost.run(
        "fetch", "the-odds-api", "--sports", "EPL", env=on(migrated_url, "http://x")
    )
    assert bad_sport.returncode == 2
    assert "--sports: 'EPL' is not a sport key" in bad_sport.stderr
    no_key = oddsboost.run("fetch", "the-odds-api", env={"ODDSBOOST_DATABASE_URL": migrated_url})
    assert no_key.returncode == 2
    assert "ODDSBOOST_ODDS_API_KEY is not set" in no_key.stderr


def test_the_scheduler_runs_the_feed_only_when_its_cron_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from apscheduler.schedulers.blocking import BlockingScheduler

    from app.services.scheduling import run_scheduler

    registered: list[list[str]] = []

    def start(scheduler: BlockingScheduler) -> None:
        registered.append(sorted(job.id for job in scheduler.get_jobs()))

    monkeypatch.setattr(BlockingScheduler, "start", start)
    # The test process keeps its own signal handlers.
    monkeypatch.setattr(signal, "signal", lambda *_args: None)
    engine = make_engine("sqlite://")
    run_scheduler(engine, Settings(odds_api_key=KEY, odds_api_cron="0 */3 * * *"))
    run_scheduler(engine, Settings())
    engine.dispose()
    # The track record's job runs on its default schedule in both.
    assert registered == [["refit", "the-odds-api", "track-record"], ["refit", "track-record"]]


CAP = 100_000  # well above the fixture's answer (3 KB), far below a misbehaving one


@pytest.mark.parametrize("huge", ["declared", "undeclared", "gzip"])
def test_an_answer_over_the_cap_fails_its_sport_naming_the_cap(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session], huge: str
) -> None:
    api, base = odds_api
    api.script(
        EPL, Answer(body=json.dumps(EPL_EVENTS).encode(), headers=quota(498, 2, 2), huge=huge)
    )
    outcome = fetch(factory, feed_settings(base, odds_api_max_bytes=CAP))
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error == (
        f"soccer_epl: the answer is larger than {CAP:,} bytes (ODDSBOOST_ODDS_API_MAX_BYTES); "
        "not read further"
    )
    assert api.paths() == [SPORTS, EPL, BUNDESLIGA]  # not asked again; the next sport asked
    assert [sport.error is None for sport in outcome.sports] == [False, True]
    assert quote_count(factory) == 0


def test_an_answer_that_comes_a_byte_at_a_time_fails_its_sport_at_the_request_deadline(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    api.script(EPL, Answer(headers=quota(498, 2, 2), trickle=True))
    settings = feed_settings(base, odds_api_timeout_seconds=30, odds_api_request_seconds=0.5)
    outcome = fetch(factory, settings)
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error == (
        "soccer_epl: no whole answer within 0.5 s (ODDSBOOST_ODDS_API_REQUEST_SECONDS)"
    )
    # It may have cost credits: not sent again.
    assert api.paths() == [SPORTS, EPL, BUNDESLIGA]


def test_a_redirect_to_another_host_is_refused_and_the_key_never_leaves(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    elsewhere_asked: list[str] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            elsewhere_asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *_args: Any) -> None:
            return

    with http_server(Elsewhere, host=ANOTHER_HOST) as elsewhere:
        api.script(EPL, Answer(302, location=f"{elsewhere}{EPL}"))
        outcome = fetch(factory, feed_settings(base, odds_api_sports=["soccer_epl"]))
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error == (
        f"soccer_epl: redirected to {elsewhere}{EPL}, off the configured site {base}; not followed"
    )
    assert elsewhere_asked == []


def test_a_stop_ends_a_run_at_once_keeping_what_it_stored(
    odds_api: tuple[FakeOddsApi, str], migrated_url: str, factory: sessionmaker[Session]
) -> None:
    """The Bundesliga's answer never ends (and would not for ten minutes: its request's
    deadline); a stop (what SIGTERM sets in the scheduler) ends the run at once."""
    api, base = odds_api
    api.script(BUNDESLIGA, Answer(headers=quota(496, 4, 2), trickle=True))
    settings = feed_settings(
        base, migrated_url, odds_api_timeout_seconds=60, odds_api_request_seconds=600
    )
    engine = make_engine(migrated_url)
    stop = Stop()
    try:
        with ThreadPoolExecutor(1) as pool:
            job = pool.submit(odds_api_job, engine, settings, stop=stop)
            wait_until(lambda: BUNDESLIGA in api.paths(), "the run is fetching the Bundesliga")
            stop.set()
            job.result(timeout=DEADLINE_SECONDS)
    finally:
        engine.dispose()
    with factory() as session:
        run = session.scalars(select(FetchRun)).one()
    assert (run.status, run.trigger) == ("failed", "scheduler")
    assert run.error == "stopped by a shutdown before it finished, with 1 of 2 sports done"
    assert (run.quotes, quote_count(factory)) == (3, 3)  # the EPL's, stored before


def test_a_wait_past_the_runs_deadline_ends_the_run(
    odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    api.script(EPL, Answer(429, b'{"message": "Too many requests"}', {"Retry-After": "30"}))
    waits = Waits()
    settings = feed_settings(base, odds_api_run_seconds=5, odds_api_max_wait_seconds=600)
    outcome = fetch(factory, settings, waits)
    assert outcome.status is FetchStatus.FAILED
    assert outcome.error == (
        "asked to wait 30 s, past the run's deadline of 5 s (ODDSBOOST_ODDS_API_RUN_SECONDS), "
        "with 0 of 2 sports done"
    )
    assert waits.seconds == []
    assert api.paths() == [SPORTS, EPL]


def test_a_fetch_while_another_runs_is_skipped_asking_nothing(
    odds_api: tuple[FakeOddsApi, str], migrated_url: str, factory: sessionmaker[Session]
) -> None:
    api, base = odds_api
    engine = make_engine(migrated_url)
    try:
        # Another process's fetch of The Odds API, under way: it holds the feed's lock.
        with run_lock(engine, "fetch-the-odds-api") as other:
            assert other.taken
            outcome = fetch(factory, feed_settings(base))
    finally:
        engine.dispose()
    assert outcome.status is FetchStatus.SKIPPED
    assert outcome.error == "another fetch of the-odds-api is running; this one did nothing"
    assert api.paths() == []
    run = stored_run(factory, outcome.run_id)
    assert (run.status, run.requests, run.error) == ("skipped", 0, outcome.error)
