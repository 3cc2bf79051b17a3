"""The Football-Data.co.uk feed against a local copy of the site: real season files served
as the site serves them (ETag, Last-Modified, 304 Not Modified), a fixtures.csv made of
real rows, and the faults a download meets (5xx, a body cut short, no answer in time, an
answer far too large, one that comes a byte at a time, a redirect to another host)."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Competition, FetchedDocument, FetchRun, Match, utcnow
from app.domain.football_data import parse_football_data
from app.domain.football_data_feed import (
    FeedDocument,
    UnknownLeagueError,
    check_leagues,
    documents,
    keep_competitions,
    season_folder,
)
from app.domain.vocabulary import FetchSource, FetchStatus, RunTrigger
from app.metrics import REGISTRY
from app.services.football_data_feed import (
    FeedRequest,
    fetch_football_data,
    football_data_job,
)
from app.services.run_bounds import Stop
from app.settings import Settings
from tests.commands import CommandResult, Oddsboost
from tests.football_data_site import (
    AFTER_THE_MATCH,
    Served,
    Site,
    csv_bytes,
    read_rows,
    site_handler,
)
from tests.helpers import DEADLINE_SECONDS, count_complete_triples, free_port, wait_until
from tests.processes import child_environment, running
from tests.upstreams import ANOTHER_HOST, http_server

SeasonFile = Callable[[str], Path]
E0_BOOKMAKERS = ("B365", "BW", "IW", "PS", "WH", "VC", "PSC")
PLAYED = 370  # E0 2018/19 as the site had it before its last round (10 matches)


@pytest.fixture
def site() -> Iterator[tuple[Site, str]]:
    local = Site()
    with http_server(site_handler(local)) as base:
        yield local, base
        local.release.set()


def fixtures_rows(path: Path, header: list[str], first: int) -> list[list[str]]:
    """The rows of a season file from its ``first`` on, as fixtures: the columns of
    ``header``, blank where only the match tells."""
    own_header, rows = read_rows(path.read_bytes())
    blanked = []
    for row in rows[first:]:
        cells = dict(zip(own_header, row, strict=False))
        blanked.append(["" if name in AFTER_THE_MATCH else cells.get(name, "") for name in header])
    return blanked


@dataclass(frozen=True)
class SeasonFiles:
    """E0 2018/19 before and after its last round, the fixtures file of that round (with
    D1's last round, which an E0 fetch leaves out), and their quotes counted from the
    files."""

    before_last_round: bytes
    whole: bytes
    fixtures: bytes
    quotes: int
    last_round_quotes: int


@pytest.fixture(scope="module")
def season_files(season_file: SeasonFile, tmp_path_factory: pytest.TempPathFactory) -> SeasonFiles:
    e0 = season_file("E0_1819")
    header, rows = read_rows(e0.read_bytes())
    d1_rows = fixtures_rows(season_file("D1_1819"), header, first=297)
    fixtures = csv_bytes(header, fixtures_rows(e0, header, PLAYED) + d1_rows, site_style=True)
    before = tmp_path_factory.mktemp("e0") / "E0_1819_before_last_round.csv"
    before.write_bytes(csv_bytes(header, rows[:PLAYED]))
    # The last round's matches are in the fixtures with the odds the season file has.
    quotes = sum(count_complete_triples(e0, prefix) for prefix in E0_BOOKMAKERS)
    played = sum(count_complete_triples(before, prefix) for prefix in E0_BOOKMAKERS)
    return SeasonFiles(
        before_last_round=before.read_bytes(),
        whole=e0.read_bytes(),
        fixtures=fixtures,
        quotes=quotes,
        last_round_quotes=quotes - played,
    )


E0_PATH = "mmz4281/1819/E0.csv"


def fetch(oddsboost: Oddsboost, url: str, base: str, *args: str, **settings: str) -> CommandResult:
    env = {
        "ODDSBOOST_DATABASE_URL": url,
        "ODDSBOOST_FOOTBALL_DATA_URL": base,
        "ODDSBOOST_FOOTBALL_DATA_RETRIES": "1",
        "ODDSBOOST_FOOTBALL_DATA_RETRY_WAIT_SECONDS": "0",
        **{f"ODDSBOOST_FOOTBALL_DATA_{name.upper()}": value for name, value in settings.items()},
    }
    return oddsboost.run("fetch", "football-data", *args, env=env)


@dataclass(frozen=True)
class Stored:
    matches: int
    settled: int
    competitions: frozenset[str]
    runs: list[FetchRun]


def stored(url: str) -> Stored:
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            matches = session.scalar(select(func.count()).select_from(Match)) or 0
            settled = (
                session.scalar(select(func.count()).select_from(Match).where(Match.is_settled)) or 0
            )
            codes = frozenset(session.scalars(select(Competition.code)))
            runs = list(session.scalars(select(FetchRun).order_by(FetchRun.id)))
            session.expunge_all()
    finally:
        engine.dispose()
    return Stored(matches, settled, codes, runs)


def counts_of(run: FetchRun) -> tuple[int, int, int, int, int]:
    return run.requests, run.changed, run.matches, run.quotes, run.results


def test_files_are_imported_once_then_answered_304_until_they_change(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0-v1"')
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')

    first = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert first.returncode == 0, first.stdout + first.stderr
    after_first = stored(migrated_url)
    # The season's first 370 matches, played, and its last 10 from the fixtures; D1's
    # fixtures were in the file but not asked for.
    assert (after_first.matches, after_first.settled) == (380, PLAYED)
    assert after_first.competitions == {"E0"}
    run = after_first.runs[-1]
    assert (run.status, run.trigger, run.error) == (FetchStatus.SUCCEEDED, RunTrigger.CLI, None)
    assert counts_of(run) == (2, 2, 380, season_files.quotes, PLAYED)
    assert local.asked(E0_PATH)[0].get("if-none-match") is None

    second = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "unchanged" in second.stdout
    after_second = stored(migrated_url)
    assert (after_second.matches, after_second.settled) == (380, PLAYED)
    assert counts_of(after_second.runs[-1]) == (2, 0, 0, 0, 0)
    asked_again = local.asked(E0_PATH)[1]
    assert asked_again["if-none-match"] == '"e0-v1"'
    assert asked_again["if-modified-since"] == "Mon, 13 May 2019 08:00:00 GMT"

    # The last round is played: the site's file has its results, under a new ETag, and the
    # fixtures file has moved on (D1's round only).
    local.documents[E0_PATH] = Served(season_files.whole, '"e0-v2"')
    d1_only = season_files.fixtures.split(b"\r\n")
    local.documents["fixtures.csv"] = Served(
        b"\r\n".join([d1_only[0], *d1_only[1 + 380 - PLAYED :]]), '"fixtures-v2"'
    )
    third = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert third.returncode == 0, third.stdout + third.stderr
    after_third = stored(migrated_url)
    assert (after_third.matches, after_third.settled) == (380, 380)
    assert counts_of(after_third.runs[-1]) == (2, 2, 0, 0, 380 - PLAYED)


def failed_runs() -> float:
    value = REGISTRY.get_sample_value(
        "oddsboost_fetch_runs_total", {"source": "football-data", "status": "failed"}
    )
    return value or 0.0


@pytest.mark.parametrize(
    ("fault", "reason", "requests"),
    [
        ({"status": 500}, "HTTP 500 Internal Server Error (2 attempts)", 2),
        ({"status": 404}, "HTTP 404 Not Found", 1),
        # Cut short: failed at once, and fetched whole on the next run.
        ({"truncated": True}, "the answer was cut short", 1),
        ({"stalled": True}, "no answer in time (2 attempts)", 2),
        # httpx follows 20 redirects, then gives up: that file fails, not the run.
        ({"loops": True}, "TooManyRedirects", 1),
    ],
)
def test_a_document_that_fails_fails_the_run_and_the_others_still_import(
    oddsboost: Oddsboost,
    migrated_url: str,
    site: tuple[Site, str],
    season_files: SeasonFiles,
    fault: dict[str, Any],
    reason: str,
    requests: int,
) -> None:
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0-v1"', **fault)
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    failed_before = failed_runs()

    result = fetch(
        oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19",
        timeout_seconds="0.2",
    )  # fmt: skip
    assert result.returncode == 1
    assert f"failed {E0_PATH}: {reason}" in result.stdout
    after = stored(migrated_url)
    assert after.matches == 380 - PLAYED  # the fixtures' E0 matches
    run = after.runs[-1]
    assert run.status == FetchStatus.FAILED
    assert str(run.error).startswith(f"{E0_PATH}: {reason}")
    last_round = (requests + 1, 1, 380 - PLAYED, season_files.last_round_quotes, 0)
    assert counts_of(run) == last_round
    assert failed_runs() == failed_before + 1

    # Repaired, the file is downloaded whole again (nothing of it was remembered), while
    # the fixtures, imported, are answered 304.
    local.release.set()
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0-v1"')
    repaired = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert local.asked(E0_PATH)[-1].get("if-none-match") is None
    assert counts_of(stored(migrated_url).runs[-1])[:3] == (2, 1, PLAYED)


def test_a_file_that_is_not_a_season_file_is_imported_again_next_time(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    local, base = site
    local.documents[E0_PATH] = Served(b"<html>Service moved</html>\n", '"html"')
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert result.returncode == 1
    assert f"failed {E0_PATH}: FileFormatError: not a football-data.co.uk file" in result.stdout
    again = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert again.returncode == 1
    assert local.asked(E0_PATH)[-1].get("if-none-match") is None


def test_unknown_leagues_and_seasons_are_refused_before_anything_is_fetched(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str]
) -> None:
    local, base = site
    unknown = fetch(oddsboost, migrated_url, base, "--leagues", "E0,XX1,bra")
    assert unknown.returncode == 2
    assert "--leagues: unknown league XX1: the main leagues are E0, E1" in unknown.stderr
    calendar = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2019")
    assert calendar.returncode == 2
    assert "--season: season '2019': the main leagues' seasons run from August" in calendar.stderr
    typo = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/20")
    assert typo.returncode == 2
    assert "--season: season '2018/20' is not" in typo.stderr
    assert local.requests == []
    assert stored(migrated_url).runs == []


def test_the_scheduled_fetch_records_its_failure_and_never_raises(migrated_url: str) -> None:
    settings = Settings(
        database_url=migrated_url,
        football_data_url=f"http://127.0.0.1:{free_port()}",  # nothing listens there
        football_data_leagues="E0",
        football_data_retries=0,
    )
    engine = make_engine(migrated_url)
    try:
        football_data_job(engine, settings)
        with session_scope(make_session_factory(engine)) as session:
            run = session.scalars(select(FetchRun)).one()
            assert (run.status, run.trigger) == (FetchStatus.FAILED, RunTrigger.SCHEDULER)
            assert "ConnectError" in str(run.error)
            assert run.requests == 2  # the season's file and the fixtures, once each
    finally:
        engine.dispose()
    # A database it cannot reach is logged, not raised.
    unreachable = settings.model_copy(update={"database_url": "sqlite:////nonexistent/x.db"})
    nowhere = make_engine(unreachable.database_url)
    football_data_job(nowhere, unreachable)
    nowhere.dispose()


@pytest.mark.parametrize(
    ("today", "folder"),
    [
        (dt.date(2026, 11, 23), "2627"),
        (dt.date(2026, 7, 31), "2526"),
        (dt.date(2026, 8, 1), "2627"),
        (dt.date(2000, 1, 1), "9900"),
    ],
)
def test_the_current_season_runs_from_august_to_july(today: dt.date, folder: str) -> None:
    assert season_folder("current", today) == folder
    assert season_folder("2025/26", today) == "2526"


def test_main_and_extra_leagues_have_their_own_files() -> None:
    leagues = check_leagues(["e0", " SP1", "BRA", "E0", "usa"])
    assert leagues == ("E0", "SP1", "BRA", "USA")
    assert documents(leagues, "2526") == [
        FeedDocument("mmz4281/2526/E0.csv"),
        FeedDocument("mmz4281/2526/SP1.csv"),
        FeedDocument("fixtures.csv", frozenset({"E0", "SP1"})),
        FeedDocument("new/BRA.csv"),
        FeedDocument("new/USA.csv"),
        FeedDocument("new_league_fixtures.csv", frozenset({"BRA", "USA"})),
    ]
    with pytest.raises(UnknownLeagueError, match="no league given"):
        check_leagues([" ", ""])


def test_a_fixtures_file_keeps_the_rows_of_the_leagues_asked_for() -> None:
    content = (
        b"Country,League,Date,Time,Home,Away,PSH,PSD,PSA\r\n"
        b"Brazil,Serie A,29/11/2026,19:00,Flamengo,Santos,1.7,3.6,5.0\r\n"
        b"Norway,Eliteserien,29/11/2026,17:00,Bodo/Glimt,Molde,1.6,4.0,4.6\r\n"
        b"Norway,Eliteserien,30/11/2026,17:00,Molde,Molde,1.6,4.0,4.6\r\n"
        b"Brazil,Serie A,30/11/2026,21:00,Palmeiras,Gremio,1.5,4.1,6.5\r\n"
        b"Brazil,Serie A,30/11/2026,23:00,Bahia,Vasco,1.9,x,4.0\r\n"
    )
    kept = keep_competitions(parse_football_data(content), frozenset({"BRA"}))
    assert [(m.home_team, m.where) for m in kept.matches] == [
        ("Flamengo", "row 2"),
        ("Palmeiras", "row 5"),
        ("Bahia", "row 6"),
    ]
    assert [(q.match, q.home) for q in kept.quotes] == [(0, 1.7), (1, 1.5)]
    # A bad price of Brazil's is reported; so is a row that could not be read as a match,
    # whatever its league (the batch cannot tell it).
    assert [(s.where, s.field) for s in kept.skipped] == [("row 4", "Away"), ("row 6", "PSD")]
    assert kept.rows_read == 4
    assert kept.bookmaker_names == {"PS": "Pinnacle"}


def test_the_feed_settings_are_checked_when_read() -> None:
    with pytest.raises(ValidationError, match="unknown league ZZ"):
        Settings(football_data_leagues="E0,ZZ")
    with pytest.raises(ValidationError, match="not a cron expression"):
        Settings(football_data_cron="every day")
    assert Settings(football_data_cron=" ").football_data_cron is None
    assert Settings(football_data_leagues="sp1, bra").football_data_leagues == "SP1,BRA"


def test_a_shared_fixtures_file_is_imported_again_for_other_leagues(
    oddsboost: Oddsboost,
    migrated_url: str,
    site: tuple[Site, str],
    season_files: SeasonFiles,
    season_file: SeasonFile,
) -> None:
    """The fixtures file holds every league; a run for E0 keeps E0's rows only, so a later
    run for D1 must not be told "unchanged" by the validators E0's run stored."""
    local, base = site
    header, d1_rows = read_rows(season_file("D1_1819").read_bytes())
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0-v1"')
    local.documents["mmz4281/1819/D1.csv"] = Served(csv_bytes(header, d1_rows[:297]), '"d1-v1"')
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')

    assert (
        fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19").returncode
        == 0
    )
    second = fetch(oddsboost, migrated_url, base, "--leagues", "D1", "--season", "2018/19")
    assert second.returncode == 0, second.stdout + second.stderr
    assert local.asked("fixtures.csv")[1].get("if-none-match") is None
    after = stored(migrated_url)
    # D1 2018/19 has 306 matches: 297 from its file, its last round of 9 from the fixtures.
    assert after.competitions == {"E0", "D1"}
    assert after.matches == 380 + 306


# The extra leagues' files, in the site's layout: new/<CODE>.csv holds every season of a
# league, each row naming its own; new_league_fixtures.csv holds every extra league's next
# matches, with no Season column and no result.
EXTRA_HEADER = (
    "Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PSH,PSD,PSA,MaxH,MaxD,MaxA,AvgH,AvgD,AvgA"
)
BRA_FILE = (
    EXTRA_HEADER + "\r\n"
    "Brazil,Serie A,2025,07/12/2025,19:00,Palmeiras,Santos,2,1,H,"
    "1.62,4.1,5.6,1.66,4.2,5.9,1.6,3.95,5.4\r\n"
    "Brazil,Serie A,2026,29/03/2026,21:30,Flamengo,Gremio,1,1,D,"
    "1.8,3.7,4.7,1.84,3.8,4.9,1.77,3.6,4.55\r\n"
    "Brazil,Serie A,2026,22/11/2026,19:00,Santos,Flamengo,0,2,A,"
    "3.9,3.5,2.0,4.0,3.6,2.05,3.8,3.4,1.96\r\n"
).encode()
AUT_FILE = (
    EXTRA_HEADER + "\r\n"
    "Austria,Bundesliga,2025/2026,24/05/2026,15:30,Salzburg,Sturm Graz,3,0,H,"
    "1.45,4.8,6.5,1.5,5.0,7.0,1.43,4.6,6.2\r\n"
    "Austria,Bundesliga,2026/2027,02/08/2026,17:00,Rapid Vienna,Salzburg,1,2,A,"
    "3.6,3.7,2.0,3.7,3.8,2.1,3.5,3.6,1.95\r\n"
).encode()
EXTRA_FIXTURES = (
    b"Country,League,Date,Time,Home,Away,PSH,PSD,PSA,MaxH,MaxD,MaxA,AvgH,AvgD,AvgA\r\n"
    b"Brazil,Serie A,29/11/2026,19:00,Gremio,Palmeiras,2.9,3.3,2.55,3.0,3.4,2.6,2.85,3.2,2.5\r\n"
    b"Austria,Bundesliga,29/11/2026,16:30,Salzburg,Rapid Vienna,"
    b"1.5,4.5,6.0,1.55,4.6,6.3,1.48,4.3,5.7\r\n"
    b"Norway,Eliteserien,29/11/2026,17:00,Bodo/Glimt,Molde,1.65,4.2,4.8,1.7,4.3,5.0,1.6,4.0,4.6\r\n"
)


def extra_matches(url: str) -> dict[tuple[str, str, str], tuple[str, str | None]]:
    """Each stored match, by competition, home and away team: its season and result."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            return {
                (m.competition.code, m.home_team.name, m.away_team.name): (m.season, m.result)
                for m in session.scalars(select(Match))
            }
    finally:
        engine.dispose()


def test_extra_leagues_are_downloaded_from_their_files_and_then_answered_304(
    migrated_url: str, site: tuple[Site, str]
) -> None:
    local, base = site
    local.documents["new/BRA.csv"] = Served(BRA_FILE, '"bra-v1"')
    local.documents["new/AUT.csv"] = Served(AUT_FILE, '"aut-v1"')
    local.documents["new_league_fixtures.csv"] = Served(EXTRA_FIXTURES, '"extra-fixtures-v1"')
    settings = Settings(
        database_url=migrated_url,
        football_data_url=base,
        football_data_leagues="BRA,AUT",
        football_data_retries=0,
    )
    engine = make_engine(migrated_url)
    morning = dt.datetime(2026, 11, 27, 2, 30, tzinfo=dt.UTC)
    try:
        football_data_job(engine, settings, clock=lambda: morning)
    finally:
        engine.dispose()

    after_first = stored(migrated_url)
    run = after_first.runs[-1]
    assert (run.status, run.trigger, run.error) == (
        FetchStatus.SUCCEEDED,
        RunTrigger.SCHEDULER,
        None,
    )
    # Three documents; five played matches and two upcoming ones (Norway's is not asked
    # for), each with Pinnacle's prices (Max and Avg are not bookmakers).
    assert counts_of(run) == (3, 3, 7, 7, 5)
    assert after_first.competitions == {"BRA", "AUT"}
    # A played match's season is its row's; an upcoming one's follows its league's rule:
    # the calendar year in Brazil, July to June in Austria. The results: H, D, A as 1, X, 2.
    assert extra_matches(migrated_url) == {
        ("BRA", "Palmeiras", "Santos"): ("2025", "1"),
        ("BRA", "Flamengo", "Gremio"): ("2026", "X"),
        ("BRA", "Santos", "Flamengo"): ("2026", "2"),
        ("BRA", "Gremio", "Palmeiras"): ("2026", None),
        ("AUT", "Salzburg", "Sturm Graz"): ("2025/26", "1"),
        ("AUT", "Rapid Vienna", "Salzburg"): ("2026/27", "2"),
        ("AUT", "Salzburg", "Rapid Vienna"): ("2026/27", None),
    }

    engine = make_engine(migrated_url)
    try:
        football_data_job(engine, settings, clock=lambda: morning + dt.timedelta(days=1))
    finally:
        engine.dispose()
    after_second = stored(migrated_url)
    assert counts_of(after_second.runs[-1]) == (3, 0, 0, 0, 0)
    assert after_second.runs[-1].status == FetchStatus.SUCCEEDED
    assert (after_second.matches, after_second.settled) == (7, 5)
    for path, etag in (
        ("new/BRA.csv", '"bra-v1"'),
        ("new/AUT.csv", '"aut-v1"'),
        ("new_league_fixtures.csv", '"extra-fixtures-v1"'),
    ):
        first, second = local.asked(path)
        assert first.get("if-none-match") is None
        assert second["if-none-match"] == etag
        assert second["if-modified-since"] == "Mon, 13 May 2019 08:00:00 GMT"


# A cap well above the local site's real files (E0: about 100 KB) and far below what a
# misbehaving answer sends.
CAP = 1_000_000
OVER_THE_CAP = (
    f"the answer is larger than {CAP:,} bytes (ODDSBOOST_FOOTBALL_DATA_MAX_BYTES); not read further"
)


@pytest.mark.parametrize("huge", ["declared", "undeclared", "gzip"])
def test_an_answer_over_the_cap_fails_its_file_naming_the_cap(
    oddsboost: Oddsboost,
    migrated_url: str,
    site: tuple[Site, str],
    season_files: SeasonFiles,
    huge: str,
) -> None:
    """500 MB of season rows (or 50 MB, once inflated, of a small gzip body): read up to the
    cap and no further, the file failed, the others imported."""
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0"', huge=huge)
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(
        oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19",
        max_bytes=str(CAP),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"failed {E0_PATH}: {OVER_THE_CAP}" in result.stdout
    after = stored(migrated_url)
    assert after.matches == 380 - PLAYED  # the fixtures' E0 matches only
    assert after.runs[-1].status == FetchStatus.FAILED
    assert str(after.runs[-1].error).startswith(f"{E0_PATH}: {OVER_THE_CAP}")
    assert len(local.asked(E0_PATH)) == 1  # the same answer would come again: not retried


@pytest.mark.parametrize("trickle", ["body", "headers"])
def test_a_file_that_comes_a_byte_at_a_time_fails_at_the_request_deadline(
    oddsboost: Oddsboost,
    migrated_url: str,
    site: tuple[Site, str],
    season_files: SeasonFiles,
    trickle: str,
) -> None:
    """Each byte well inside the read timeout, so only the request's deadline ends it."""
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0"', trickle=trickle)
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(
        oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19",
        timeout_seconds="30", request_seconds="0.5",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    # Tried again, as a timeout is (ODDSBOOST_FOOTBALL_DATA_RETRIES is 1 here).
    reason = "no whole answer within 0.5 s (ODDSBOOST_FOOTBALL_DATA_REQUEST_SECONDS) (2 attempts)"
    assert f"failed {E0_PATH}: {reason}" in result.stdout
    assert len(local.asked(E0_PATH)) == 2
    assert stored(migrated_url).matches == 380 - PLAYED


def test_a_run_ends_at_its_deadline(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    """The request's own deadline is far off: the run's, nearer, cuts it."""
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0"', trickle="body")
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(
        oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19",
        timeout_seconds="30", request_seconds="600", run_seconds="1",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    ended = (
        "the run's deadline of 1 s (ODDSBOOST_FOOTBALL_DATA_RUN_SECONDS) passed, with 0 of 2 "
        "files done"
    )
    assert f"ended early: {ended}" in result.stdout
    run = stored(migrated_url).runs[-1]
    assert (run.status, run.error) == (FetchStatus.FAILED, ended)
    assert local.asked("fixtures.csv") == []


def test_a_wait_past_the_runs_deadline_ends_the_run_without_waiting(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    """A storm of 503s asking for 30 s each, in a run of 5 s: not waited for."""
    local, base = site
    local.documents[E0_PATH] = Served(b"", '"e0"', status=503, retry_after="30")
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(
        oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19",
        retries="5", run_seconds="5",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    ended = (
        "asked to wait 30 s, past the run's deadline of 5 s "
        "(ODDSBOOST_FOOTBALL_DATA_RUN_SECONDS), with 0 of 2 files done"
    )
    assert stored(migrated_url).runs[-1].error == ended
    assert len(local.asked(E0_PATH)) == 1


@pytest.fixture
def another_host(season_file: SeasonFile) -> Iterator[tuple[list[str], str]]:
    """A site on another address (127.0.0.2) serving the real E0 2018/19 file; the paths
    it was asked for."""
    asked: list[str] = []
    body = season_file("E0_1819").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            return

    with http_server(Handler, host=ANOTHER_HOST) as base:
        yield asked, base


def test_a_redirect_off_the_site_is_refused_and_nothing_of_it_imported(
    oddsboost: Oddsboost,
    migrated_url: str,
    site: tuple[Site, str],
    season_files: SeasonFiles,
    another_host: tuple[list[str], str],
) -> None:
    local, base = site
    elsewhere_asked, elsewhere = another_host
    local.documents[E0_PATH] = Served(b"", '"e0"', location=f"{elsewhere}/E0.csv")
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert result.returncode == 1, result.stdout + result.stderr
    refused = f"redirected to {elsewhere}/E0.csv, off the configured site {base}; not followed"
    assert f"failed {E0_PATH}: {refused}" in result.stdout
    assert elsewhere_asked == []
    after = stored(migrated_url)
    assert after.matches == 380 - PLAYED
    assert after.runs[-1].status == FetchStatus.FAILED


def test_a_redirect_within_the_site_is_followed_and_where_it_led_is_recorded(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    local, base = site
    local.documents[E0_PATH] = Served(b"", '"e0"', location="/moved/E0.csv")
    local.documents["moved/E0.csv"] = Served(season_files.before_last_round, '"e0-v1"')
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    result = fetch(
        oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19", "--json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    body = json.loads(result.stdout)
    assert [(d["path"], d["url"]) for d in body["documents"]] == [
        (E0_PATH, f"{base}/moved/E0.csv"),
        ("fixtures.csv", f"{base}/fixtures.csv"),
    ]
    assert stored(migrated_url).matches == 380
    engine = make_engine(migrated_url)
    try:
        with Session(engine) as session:
            final = session.scalar(
                select(FetchedDocument.final_url).where(FetchedDocument.url == f"{base}/{E0_PATH}")
            )
    finally:
        engine.dispose()
    assert final == f"{base}/moved/E0.csv"


def feed_request(base: str) -> FeedRequest:
    return FeedRequest(base_url=base, leagues=("E0",), folder="1819")


def test_a_run_left_running_by_a_dead_process_is_closed_by_the_next_one(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0-v1"')
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    engine = make_engine(migrated_url)
    try:
        # What a process killed mid-run leaves: its run marked running, and no lock held.
        with Session(engine) as session, session.begin():
            for source in (FetchSource.FOOTBALL_DATA, FetchSource.THE_ODDS_API):
                session.add(
                    FetchRun(
                        source=source,
                        trigger=RunTrigger.SCHEDULER,
                        status=FetchStatus.RUNNING,
                        started_at=utcnow(),
                    )
                )
    finally:
        engine.dispose()

    result = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
    assert result.returncode == 0, result.stdout + result.stderr
    dead, other_source, new = stored(migrated_url).runs
    assert (dead.status, dead.error) == (
        FetchStatus.FAILED,
        "abandoned: the process running it stopped before it finished",
    )
    assert dead.finished_at is not None
    # The Odds API's run is its own feed's to close.
    assert other_source.status == FetchStatus.RUNNING
    assert (new.status, new.matches) == (FetchStatus.SUCCEEDED, 380)


def test_a_fetch_while_another_runs_is_skipped_and_a_stop_ends_the_other_at_once(
    oddsboost: Oddsboost, migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles
) -> None:
    """The first fetch downloads a file that never ends (and would not for ten minutes:
    its request's deadline); a second finds it running and does nothing; a stop (what
    SIGTERM sets in the scheduler) then ends the first at once."""
    local, base = site
    local.documents[E0_PATH] = Served(season_files.before_last_round, '"e0"', trickle="body")
    local.documents["fixtures.csv"] = Served(season_files.fixtures, '"fixtures-v1"')
    settings = Settings(
        database_url=migrated_url,
        football_data_url=base,
        football_data_retries=0,
        football_data_timeout_seconds=60,
        football_data_request_seconds=600,
    )
    engine = make_engine(migrated_url)
    stop = Stop()
    try:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(
                fetch_football_data,
                make_session_factory(engine, for_writes=True),
                settings,
                feed_request(base),
                trigger=RunTrigger.SCHEDULER,
                stop=stop,
            )
            wait_until(lambda: bool(local.asked(E0_PATH)), "the first fetch is downloading")
            second = fetch(oddsboost, migrated_url, base, "--leagues", "E0", "--season", "2018/19")
            stop.set()
            outcome = first.result(timeout=DEADLINE_SECONDS)
    finally:
        engine.dispose()
    assert second.returncode == 0, second.stdout + second.stderr
    skipped = "another fetch of football-data is running (run 1); this one did nothing"
    assert f"fetch run 2 skipped: {skipped}" in second.stdout
    assert len(local.asked(E0_PATH)) == 1  # the second asked for nothing
    stopped = "stopped by a shutdown before it finished, with 0 of 2 files done"
    assert (outcome.status, outcome.error) == (FetchStatus.FAILED, stopped)
    first_run, second_run = stored(migrated_url).runs
    assert (first_run.status, first_run.error) == (FetchStatus.FAILED, stopped)
    assert (second_run.status, second_run.error) == (FetchStatus.SKIPPED, skipped)


@pytest.mark.slow
def test_sigterm_ends_the_scheduler_mid_fetch(
    migrated_url: str, site: tuple[Site, str], season_files: SeasonFiles, tmp_path: Path
) -> None:
    """The scheduler's fetch (on the next minute: its cron fires every minute) downloads a
    file that never ends; SIGTERM ends the fetch, recorded, and then the process."""
    local, base = site
    path = f"mmz4281/{season_folder('current', dt.datetime.now(dt.UTC).date())}/E0.csv"
    local.documents[path] = Served(season_files.before_last_round, '"e0"', trickle="body")
    environment = child_environment(
        Settings(database_url=migrated_url),
        ODDSBOOST_FOOTBALL_DATA_URL=base,
        ODDSBOOST_FOOTBALL_DATA_LEAGUES="E0",
        ODDSBOOST_FOOTBALL_DATA_CRON="* * * * *",
        ODDSBOOST_FOOTBALL_DATA_TIMEOUT_SECONDS="60",
        ODDSBOOST_FOOTBALL_DATA_REQUEST_SECONDS="600",
        ODDSBOOST_REFIT_CRON="0 3 1 1 *",
        ODDSBOOST_TRACK_RECORD_CRON="",
    )
    with running(["scheduler"], environment, tmp_path / "scheduler.log") as process:
        wait_until(
            lambda: bool(local.asked(path)),
            "the scheduled fetch is downloading",
            alive=process.popen,
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait() == 0, process.output()
    assert "scheduler stopped" in process.output()
    run = stored(migrated_url).runs[-1]
    assert (run.status, run.trigger) == (FetchStatus.FAILED, RunTrigger.SCHEDULER)
    assert run.error == "stopped by a shutdown before it finished, with 0 of 2 files done"
