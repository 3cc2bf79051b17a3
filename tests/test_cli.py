"""The ``oddsboost`` command against a real database: run in this process, except where
the process itself is the point (``serve`` end to end, what ``health`` imports)."""

from __future__ import annotations

import ast
import datetime as dt
import functools
import http.server
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import ColumnElement, inspect, select
from sqlalchemy.engine import make_url

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import current_revision, downgrade_to, head_revision
from app.db.orm import Match, ModelVersion
from app.domain.vocabulary import ActivatedBy, Method, Phase
from app.services.model_versions import activate
from app.services.run_bounds import Stop
from app.services.scheduling import build_scheduler
from app.settings import Settings, settings_environment
from tests.admin_requests import season_file_with_bookmakers
from tests.commands import CommandResult, Oddsboost, table_rows
from tests.helpers import count_complete_triples, free_port, hand_made_version, store_versions
from tests.processes import child_environment, running_server
from tests.upstreams import http_server, send_huge

SeasonFile = Callable[[str], Path]
FIXTURES = Path(__file__).parent / "fixtures"


def on(database_url: str) -> dict[str, str]:
    return {"ODDSBOOST_DATABASE_URL": database_url}


def import_json(oddsboost: Oddsboost, database_url: str, *args: str) -> dict[str, Any]:
    result = oddsboost.run("import", *args, "--json", env=on(database_url))
    assert result.returncode == 0, result.stderr + result.stdout
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_help_lists_the_commands(oddsboost: Oddsboost) -> None:
    result = oddsboost.run("--help", env=on("sqlite://"))
    assert result.returncode == 0
    for command in ("serve", "migrate", "import", "teams"):
        assert command in result.stdout


def test_migrate(oddsboost: Oddsboost, fresh_database_url: str) -> None:
    result = oddsboost.run("migrate", env=on(fresh_database_url))
    assert result.returncode == 0, result.stderr
    engine = make_engine(fresh_database_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def table_names(database_url: str) -> set[str]:
    """The tables the database has, Alembic's own left out."""
    engine = make_engine(database_url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def listed_after_heading(printed: str) -> tuple[str, list[str]]:
    """The first line of a command's output, and the comma-separated names the lines after
    it list."""
    heading, *rest = printed.splitlines()
    return heading, " ".join(line.strip() for line in rest).split(", ")


def test_migrate_says_what_it_created(oddsboost: Oddsboost, fresh_database_url: str) -> None:
    created = oddsboost.run("migrate", env=on(fresh_database_url), columns=None)
    assert created.returncode == 0, created.stderr
    tables = table_names(fresh_database_url)
    heading, listed = listed_after_heading(created.stdout)
    assert heading == (
        f"the database had no schema: created the newest, revision {head_revision()}, "
        f"{len(tables)} tables:"
    )
    assert sorted(listed) == sorted(tables)
    assert max(len(line) for line in created.stdout.splitlines()) <= 80
    again = oddsboost.run("migrate", env=on(fresh_database_url))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"the database is at the newest schema, revision {head_revision()}: nothing to do"
    ]


def test_migrate_says_what_an_upgrade_created(oddsboost: Oddsboost, migrated_url: str) -> None:
    downgrade_to(migrated_url, "0005")
    before = table_names(migrated_url)
    upgraded = oddsboost.run("migrate", env=on(migrated_url))
    assert upgraded.returncode == 0, upgraded.stderr
    new_tables = table_names(migrated_url) - before
    heading, listed = listed_after_heading(upgraded.stdout)
    assert heading == (
        f"upgraded the schema from revision 0005 to {head_revision()}: "
        f"{len(new_tables)} tables created:"
    )
    assert sorted(listed) == sorted(new_tables)


def revision_of(database_url: str) -> str | None:
    engine = make_engine(database_url)
    try:
        return current_revision(engine)
    finally:
        engine.dispose()


def test_import_into_a_new_database_creates_the_schema_first(
    oddsboost: Oddsboost, fresh_database_url: str, season_file: SeasonFile
) -> None:
    """The README's import works as written on a new machine: no `migrate` needed first."""
    result = oddsboost.run(
        "import", "football-data", str(season_file("I1_0203")), "--json", env=on(fresh_database_url)
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"]["matches_created"] == 306
    said = [line for line in result.stderr.splitlines() if "newest schema" in line]
    assert said == [f"the database had no tables: created the newest schema ({head_revision()})"]
    assert revision_of(fresh_database_url) == head_revision()


@pytest.mark.parametrize(
    "command",
    [
        ("import", "the-odds-api", str(FIXTURES / "the_odds_api_epl.json")),
        ("teams", "alias", "Man Utd", "Manchester United"),
        ("teams", "unalias", "Man Utd"),
        ("matches", "delete", "1"),
        ("refit",),
    ],
    ids=["import the-odds-api", "teams alias", "teams unalias", "matches delete", "refit"],
)
def test_every_command_that_writes_creates_the_schema_of_an_empty_database(
    oddsboost: Oddsboost, fresh_database_url: str, command: tuple[str, ...]
) -> None:
    result = oddsboost.run(*command, env=on(fresh_database_url))
    assert "created the newest schema" in result.stderr
    assert "Traceback" not in result.stderr
    assert revision_of(fresh_database_url) == head_revision()


def test_an_outdated_database_with_tables_is_left_for_migrate(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile
) -> None:
    downgrade_to(migrated_url, "0003")
    result = oddsboost.run(
        "import", "football-data", str(season_file("E0_1819")), env=on(migrated_url)
    )
    assert result.returncode == 1
    assert "run `oddsboost migrate`" in result.stderr
    assert "Traceback" not in result.stderr
    assert revision_of(migrated_url) == "0003"


@pytest.mark.slow
def test_import_every_season_file(oddsboost: Oddsboost, migrated_url: str, data_dir: Path) -> None:
    """All 110 files of the data set: SOURCE.md counts 43,218 match rows."""
    report = import_json(oddsboost, migrated_url, "football-data", str(data_dir / "football-data"))
    assert len(report["files"]) == 110
    total = report["total"]
    assert total["matches_created"] == 43_218
    assert total["rows_read"] == 43_218
    assert total["results_set"] == 43_218
    assert {(s["where"], s["field"]) for s in total["skipped"]} == {
        ("row 532", "B365H"),  # E1_1213: price 0
        ("row 348", "B365H"),  # E1_1819: price 0
        ("row 91", "VCD"),  # I1_0708: blank draw price
        ("row 304", "WHH/WHD/WHA"),  # D1_1112: a draw at 1.02, overround +0.730
        ("row 56", "SBH/SBD/SBA"),  # E1_0910: a draw at 1.2, overround +0.620
    }
    again = import_json(
        oddsboost, migrated_url, "football-data", str(data_dir / "football-data" / "E0_1819.csv")
    )
    assert again["total"]["matches_unchanged"] == 380
    assert again["total"]["quotes_inserted"] == 0


@pytest.mark.parametrize(
    ("kind", "setting"),
    [
        ("football-data", "ODDSBOOST_FOOTBALL_DATA_MAX_BYTES"),
        ("the-odds-api", "ODDSBOOST_ODDS_API_MAX_BYTES"),
    ],
)
def test_an_import_from_a_url_reads_up_to_the_cap_and_no_further(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, kind: str, setting: str
) -> None:
    """500 MB of season rows (or of events) at a URL: the import stops at the cap of what
    it imports, naming it, and imports nothing."""
    if kind == "football-data":
        head, _, filler = season_file("E0_1819").read_bytes().partition(b"\n")
        head += b"\n"
    else:
        head, filler = b"[", (FIXTURES / "the_odds_api_epl.json").read_bytes().strip(b"[]\n") + b","

    class Huge(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            send_huge(self, head=head, filler=filler, declared=False)

        def log_message(self, *_args: Any) -> None:
            return

    with http_server(Huge) as base:
        result = oddsboost.run(
            "import", kind, f"{base}/huge", env={**on(migrated_url), setting: "1000000"}
        )
    assert result.returncode == 1
    refused = f"the answer is larger than 1,000,000 bytes ({setting}); not read further"
    assert refused in " ".join((result.stdout + result.stderr).split())
    engine = make_engine(migrated_url)
    try:
        with make_session_factory(engine)() as session:
            assert session.scalars(select(Match)).first() is None
    finally:
        engine.dispose()


def test_import_from_a_url(
    oddsboost: Oddsboost, migrated_url: str, data_dir: Path, season_file: SeasonFile
) -> None:
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(data_dir / "football-data")
    )
    with http_server(handler) as base:
        report = import_json(oddsboost, migrated_url, "football-data", f"{base}/E0_1819.csv")
        expected = sum(
            count_complete_triples(season_file("E0_1819"), p)
            for p in ("B365", "BW", "IW", "PS", "WH", "VC", "PSC")
        )
        assert report["total"]["matches_created"] == 380
        assert report["total"]["quotes_inserted"] == expected
        missing = oddsboost.run(
            "import", "football-data", f"{base}/XX_9999.csv", env=on(migrated_url)
        )
        assert missing.returncode == 1
        assert "404" in missing.stdout


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """Serves a folder's files without a line on stderr for each request."""

    def log_message(self, *_args: Any) -> None:
        return


def test_a_bad_file_fails_alone(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    bogus = tmp_path / "notes.csv"
    bogus.write_text("name,age\nann,3\n")
    result = oddsboost.run(
        "import", "football-data", str(season_file("I1_0203")), str(bogus), env=on(migrated_url)
    )
    assert result.returncode == 1
    assert "not a football-data.co.uk file" in result.stdout
    assert "I1_0203.csv" in result.stdout
    # The good file was imported in its own transaction.
    report = import_json(oddsboost, migrated_url, "football-data", str(season_file("I1_0203")))
    assert report["total"]["matches_unchanged"] == 306


def test_a_file_naming_too_many_bookmakers_fails_alone(
    oddsboost: Oddsboost, migrated_url: str, tmp_path: Path
) -> None:
    crowded = tmp_path / "crowded.csv"
    crowded.write_bytes(season_file_with_bookmakers(101))
    result = oddsboost.run("import", "football-data", str(crowded), env=on(migrated_url))
    assert result.returncode == 1
    assert "101 bookmakers in one import; at most 100 are accepted" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_broken_file_in_a_directory_does_not_stop_the_others(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    folder = tmp_path / "season"
    folder.mkdir()
    (folder / "A_broken.csv").write_bytes(
        b'Div,Date,HomeTeam,AwayTeam\nE0,01/03/2019,"A' + b"x" * 200_000
    )
    (folder / "B_good.csv").write_bytes(season_file("I1_0203").read_bytes())
    result = oddsboost.run("import", "football-data", str(folder), env=on(migrated_url))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "A_broken.csv: FileFormatError: not a readable CSV file" in result.stdout
    report = import_json(oddsboost, migrated_url, "football-data", str(folder / "B_good.csv"))
    assert report["total"]["matches_unchanged"] == 306


def test_a_blank_or_too_long_season_option(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile
) -> None:
    path = str(season_file("I1_0203"))
    report = import_json(oddsboost, migrated_url, "football-data", path, "--season", " ")
    assert report["total"]["matches_created"] == 306
    too_long = oddsboost.run(
        "import", "football-data", path, "--season", "x" * 17, env=on(migrated_url)
    )
    assert too_long.returncode == 2
    assert "season is longer than 16 characters" in too_long.stderr


@pytest.mark.parametrize("season", ["banana", "x; DROP", "2018/20"])
def test_a_season_option_that_is_not_a_season_is_a_usage_error(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, season: str
) -> None:
    result = oddsboost.run(
        "import",
        "football-data",
        str(season_file("I1_0203")),
        "--season",
        season,
        env=on(migrated_url),
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"--season: season {season!r} is not YYYY/YY")
    assert "e.g. 2018/19" in line


def test_a_calendar_year_for_a_league_that_plays_over_two_years_is_a_usage_error(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    # A Brazilian league file plays within a calendar year: 2019 fits it, not the E0 file.
    brazil = tmp_path / "BRA.csv"
    brazil.write_bytes(
        b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA\n"
        b"Brazil,Serie A,2019,28/04/2019,20:00,Palmeiras,Fortaleza,4,0,H,1.4,4.5,8.5\n"
    )
    premier_league = str(season_file("E0_1819"))
    result = oddsboost.run(
        "import",
        "football-data",
        premier_league,
        str(brazil),
        "--season",
        "2019",
        env=on(migrated_url),
    )
    assert result.returncode == 2, result.stderr
    assert (
        f"failed {premier_league}: --season: season '2019' is a calendar year, but E0 plays "
        "over two years, as 2018/19 or 2019/20 (nothing imported)"
    ) in result.stdout
    assert match_ids(migrated_url, Match.season == "2019") == match_ids(
        migrated_url, Match.competition.has(code="BRA")
    )
    assert len(match_ids(migrated_url, Match.season == "2019")) == 1
    assert match_ids(migrated_url, Match.competition.has(code="E0")) == []


def test_a_rescheduled_fixture_is_shown_in_the_summary(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    header = "Div,Date,HomeTeam,AwayTeam,FTHG,FTAG\n"
    announced, moved = tmp_path / "announced.csv", tmp_path / "moved.csv"
    announced.write_text(header + "E0,04/08/2018,Man United,Leicester,,\n")
    moved.write_text(header + "E0,05/08/2018,Man United,Leicester,,\n")
    import_json(oddsboost, migrated_url, "football-data", str(announced))
    report = import_json(oddsboost, migrated_url, "football-data", str(moved))
    assert report["total"]["matches_rescheduled"] == 1
    assert report["files"][0]["matches_rescheduled"] == 1
    # The season file has the match on 10 August 2018, its first row.
    result = oddsboost.run(
        "import", "football-data", str(season_file("E0_1819")), env=on(migrated_url)
    )
    assert result.returncode == 0, result.stderr
    (row,) = [row for row in table_rows(result.stdout, "file") if row["file"] == "E0_1819.csv"]
    assert row["rescheduled"] == "1"
    assert row["matches"] == "379/1/0"


def test_import_the_odds_api_file(oddsboost: Oddsboost, migrated_url: str, tmp_path: Path) -> None:
    report = import_json(
        oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json")
    )
    assert report["total"]["matches_created"] == 2
    assert report["total"]["quotes_inserted"] == 3
    broken = json.loads((FIXTURES / "the_odds_api_epl.json").read_text())
    broken[0]["bookmakers"][0]["markets"][0]["outcomes"][0]["price"] = "abc"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = oddsboost.run("import", "the-odds-api", str(path), env=on(migrated_url))
    assert result.returncode == 1
    assert "[0].bookmakers[0].markets[0].h2h.outcomes[0].price" in result.stderr


def test_an_odds_api_file_with_many_errors_shows_some_and_counts_the_rest(
    oddsboost: Oddsboost, migrated_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "empty-events.json"
    path.write_text(json.dumps([{}] * 30))  # five fields missing in each: 150 errors
    result = oddsboost.run("import", "the-odds-api", str(path), env=on(migrated_url))
    assert result.returncode == 1
    assert result.stderr.count(": Field required") == 20
    assert "... and 130 more" in result.stderr


def test_a_file_given_to_the_other_importer_names_the_right_command(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile
) -> None:
    response = str(FIXTURES / "the_odds_api_epl.json")
    as_season = oddsboost.run("import", "football-data", response, env=on(migrated_url))
    assert as_season.returncode == 1
    # The failure's line, as long as its path makes it, is wrapped at the output's width.
    assert "oddsboost import the-odds-api" in " ".join(as_season.stdout.split())
    as_response = oddsboost.run(
        "import", "the-odds-api", str(season_file("E0_1819")), env=on(migrated_url)
    )
    assert as_response.returncode == 1
    assert "Traceback" not in as_response.stderr
    assert "oddsboost import football-data" in as_response.stderr


def test_import_the_odds_api_from_a_url(oddsboost: Oddsboost, migrated_url: str) -> None:
    handler = functools.partial(QuietFiles, directory=str(FIXTURES))
    with http_server(handler) as base:
        report = import_json(
            oddsboost, migrated_url, "the-odds-api", f"{base}/the_odds_api_epl.json"
        )
        assert report["total"]["matches_created"] == 2
        assert report["total"]["quotes_inserted"] == 3
        missing = oddsboost.run(
            "import", "the-odds-api", f"{base}/no-such-response.json", env=on(migrated_url)
        )
    assert missing.returncode == 1
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1, missing.stderr
    assert f"{base}/no-such-response.json" in lines[0]
    assert "HTTP 404" in lines[0]
    unreachable = f"http://127.0.0.1:{free_port()}/odds.json"
    refused = oddsboost.run("import", "the-odds-api", unreachable, env=on(migrated_url))
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert unreachable in refused.stderr


def test_a_season_file_url_that_fails_is_one_line(
    oddsboost: Oddsboost, migrated_url: str, data_dir: Path
) -> None:
    handler = functools.partial(QuietFiles, directory=str(data_dir / "football-data"))
    with http_server(handler) as base:
        missing = oddsboost.run(
            "import", "football-data", f"{base}/XX_9999.csv", env=on(migrated_url)
        )
    assert missing.returncode == 1
    failed = [line for line in missing.stdout.splitlines() if "XX_9999.csv:" in line]
    assert failed == [f"failed {base}/XX_9999.csv: HTTP 404 File not found (nothing imported)"]


def test_team_alias_command(oddsboost: Oddsboost, migrated_url: str) -> None:
    import_json(oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    added = oddsboost.run("teams", "alias", "Man Utd", "Manchester United", env=on(migrated_url))
    assert added.returncode == 0, added.stderr
    assert "'Man Utd' now maps to 'Manchester United'" in added.stdout
    unknown = oddsboost.run("teams", "alias", "Spurs", "Nobody FC", env=on(migrated_url))
    assert unknown.returncode == 1
    assert "no team named 'Nobody FC'" in unknown.stderr
    removed = oddsboost.run("teams", "unalias", "Man Utd", env=on(migrated_url))
    assert removed.returncode == 0


# --- a database that cannot be used -----------------------------------------------------

PASSWORD = "s3cret-Pa55"


def unusable_urls(database_url: str, tmp_path: Path) -> dict[str, tuple[str, str, str]]:
    """Database URLs that cannot work, with the URL as the message must show it (password
    hidden) and what the message must say."""
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        # The server under test, a database it does not have.
        missing = url.set(database="oddsboost_no_such_database", password=PASSWORD)
        unreachable = (missing.render_as_string(hide_password=False), "does not exist")
    else:
        # Nothing listens on a free port.
        unreachable = (
            f"postgresql+psycopg://oddsboost:{PASSWORD}@127.0.0.1:{free_port()}/oddsboost",
            "refused",
        )
    missing_folder = f"sqlite:///{tmp_path}/no-such-folder/oddsboost.db"
    mysql = f"mysql://oddsboost:{PASSWORD}@localhost/oddsboost"
    return {
        "postgresql": (unreachable[0], hidden(unreachable[0]), unreachable[1]),
        "sqlite in a missing folder": (
            missing_folder,
            missing_folder,
            "no-such-folder does not exist",
        ),
        "mysql": (mysql, hidden(mysql), "not supported"),
        # Not URLs at all: SQLAlchemy cannot read them, so the message shows them as given,
        # with what would be a password hidden by hand.
        "not a url": ("not a url", "'not a url'", "cannot be read"),
        "a bare sqlite file name": (":memory:", "':memory:'", "cannot be read"),
        "sqlite with one slash": ("sqlite:/x.db", "'sqlite:/x.db'", "cannot be read"),
        "a port that is not a number": (
            f"postgresql+psycopg://oddsboost:{PASSWORD}@localhost:notaport/oddsboost",
            "'postgresql+psycopg://oddsboost:***@localhost:notaport/oddsboost'",
            "cannot be read",
        ),
    }


def hidden(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


@pytest.mark.parametrize(
    "kind",
    [
        "postgresql",
        "sqlite in a missing folder",
        "mysql",
        "not a url",
        "a bare sqlite file name",
        "sqlite with one slash",
        "a port that is not a number",
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ("migrate",),
        ("serve", "--port", "0"),
        ("serve", "--no-migrate", "--port", "0"),
        ("import", "the-odds-api", str(FIXTURES / "the_odds_api_epl.json")),
        # The file is not read: the database is opened first.
        ("import", "football-data", "E0_1819.csv"),
        ("fetch", "football-data"),
        ("teams", "alias", "Man Utd", "Manchester United"),
        ("teams", "unalias", "Man Utd"),
        ("matches", "delete", "1"),
        ("refit",),
        ("scheduler",),
        ("backtest", "--database"),
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_a_database_that_cannot_be_used_is_one_line(
    oddsboost: Oddsboost,
    database_url: str,
    tmp_path: Path,
    kind: str,
    command: tuple[str, ...],
) -> None:
    url, shown, reason = unusable_urls(database_url, tmp_path)[kind]
    result = oddsboost.run(*command, env=on(url))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert shown in lines[0]
    assert reason in lines[0]
    assert PASSWORD not in result.stdout + result.stderr


def test_merging_teams_of_two_leagues_and_undoing_it(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile
) -> None:
    for name in ("E0_1819", "SP1_1819"):
        import_json(oddsboost, migrated_url, "football-data", str(season_file(name)))
    env = on(migrated_url)
    getafe = match_ids(migrated_url, Match.home_team.has(name="Getafe"))
    getafe += match_ids(migrated_url, Match.away_team.has(name="Getafe"))
    assert len(getafe) == 38  # a 20-team league: 19 home and 19 away matches

    refused = oddsboost.run("teams", "alias", "Getafe", "Arsenal", env=env)
    assert refused.returncode == 1
    assert "'Getafe' into 'Arsenal' moves 38 matches" in refused.stdout
    assert "'Getafe' played SP1 2018/19: 38 matches" in refused.stdout
    assert "2018/19: 'Getafe' in SP1, 'Arsenal' in E0" in refused.stderr
    assert refused.stderr.strip().endswith("run again with --yes to merge them anyway")

    looked = oddsboost.run("teams", "alias", "Getafe", "Arsenal", "--dry-run", env=env)
    assert looked.returncode == 0, looked.stderr
    assert "'Getafe' into 'Arsenal' moves 38 matches" in looked.stdout
    assert "dry run: nothing was changed" in looked.stdout
    assert len(match_ids(migrated_url, Match.home_team.has(name="Getafe"))) == 19

    merged = oddsboost.run("teams", "alias", "Getafe", "Arsenal", "--yes", env=env)
    assert merged.returncode == 0, merged.stderr
    assert "'Getafe' now maps to 'Arsenal'; merged the team stored under that name" in (
        merged.stdout
    )
    assert match_ids(migrated_url, Match.home_team.has(name="Getafe")) == []

    undone = oddsboost.run("teams", "unalias", "Getafe", env=env)
    assert undone.returncode == 0, undone.stderr
    assert "removed alias 'Getafe'" in undone.stdout
    assert "restored the team 'Getafe': 38 matches moved back" in undone.stdout
    back = match_ids(migrated_url, Match.home_team.has(name="Getafe"))
    back += match_ids(migrated_url, Match.away_team.has(name="Getafe"))
    assert sorted(back) == sorted(getafe)


def test_unalias_says_what_stays_merged(
    oddsboost: Oddsboost, migrated_url: str, tmp_path: Path
) -> None:
    env = on(migrated_url)
    import_json(oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    # The Odds API's first match again, as a season file names its home team.
    season = tmp_path / "E0.csv"
    season.write_text(
        "Div,Date,HomeTeam,AwayTeam,FTHG,FTAG\nE0,10/08/2018,Man United,Leicester City,2,1\n"
    )
    import_json(oddsboost, migrated_url, "football-data", str(season))
    (kept,) = match_ids(migrated_url, Match.home_team.has(name="Man United"))
    merged = oddsboost.run("teams", "alias", "Manchester United", "Man United", env=env)
    assert merged.returncode == 0, merged.stderr
    assert "0 matches moved, 1 merged" in merged.stdout
    undone = oddsboost.run("teams", "unalias", "Manchester United", env=env)
    assert undone.returncode == 0, undone.stderr
    assert "restored the team 'Manchester United': 0 matches moved back" in undone.stdout
    assert f"match {kept} stays merged: it keeps the quotes of both" in undone.stdout


# --- matches delete -----------------------------------------------------------------------


def match_ids(database_url: str, *conditions: ColumnElement[bool]) -> list[int]:
    engine = make_engine(database_url)
    with make_session_factory(engine)() as session:
        found = list(session.scalars(select(Match.id).where(*conditions).order_by(Match.id)))
    engine.dispose()
    return found


def test_delete_a_match_a_model_was_trained_on(
    oddsboost: Oddsboost, refit_settings: Settings
) -> None:
    url = refit_settings.database_url
    environment = settings_environment(refit_settings)
    # The seeded seasons end in May 2018: a refit until 1 June 2018 trains on all of them.
    refit = oddsboost.run("refit", "--until", "2018-06-01T00:00:00Z", env=environment)
    assert refit.returncode == 0, refit.stderr + refit.stdout
    first, *_ = match_ids(url)
    refused = oddsboost.run("matches", "delete", str(first), env=environment)
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert f"match {first} is inside the data window of model version 1 (" in line
    assert line.endswith("pass --force to delete it anyway")
    assert first in match_ids(url)
    forced = oddsboost.run("matches", "delete", str(first), "--force", env=environment)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith(f"deleted match {first} (")
    assert "model versions trained on it: 1" in forced.stdout
    assert first not in match_ids(url)
    gone = oddsboost.run("matches", "delete", str(first), env=environment)
    assert (gone.returncode, gone.stderr.strip()) == (1, f"no match with id {first}")


def test_delete_a_match_outside_every_window(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile
) -> None:
    import_json(oddsboost, migrated_url, "football-data", str(season_file("I1_0203")))
    first, *others = match_ids(migrated_url)
    deleted = oddsboost.run("matches", "delete", str(first), env=on(migrated_url))
    assert deleted.returncode == 0, deleted.stderr
    (line,) = deleted.stdout.strip().splitlines()
    assert line.startswith(f"deleted match {first} (I1 2002/03, ")
    assert line.endswith(" quotes")
    assert match_ids(migrated_url) == others


@pytest.mark.parametrize("match_id", ["0", "abc", "2147483648"])
def test_delete_an_id_that_cannot_be_one_is_a_usage_error(
    oddsboost: Oddsboost, migrated_url: str, match_id: str
) -> None:
    result = oddsboost.run("matches", "delete", match_id, env=on(migrated_url))
    assert result.returncode == 2
    assert "ID" in result.stderr


# --- models -------------------------------------------------------------------------------


def test_models_list_and_activate_roll_back_and_forward(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    empty = oddsboost.run("models", "list", env=on(migrated_url))
    assert empty.returncode == 0, empty.stderr
    assert "no model version yet: run `oddsboost refit`" in empty.stdout
    first, second = store_versions(
        migrated_url, hand_made_version(), hand_made_version(weights={"PS": 1.0})
    )
    listed = oddsboost.run("models", "list", env=on(migrated_url))
    assert listed.returncode == 0, listed.stderr
    assert [
        [row["id"], row["status"], row["phase"], row["method"]]
        for row in table_rows(listed.stdout, "id")
    ] == [
        [str(second), "active", "pre", "power"],
        [str(first), "retired", "pre", "power"],
    ]

    back = oddsboost.run(
        "models",
        "activate",
        str(first),
        "--reason",
        "back to the pool of two",
        env=on(migrated_url),
    )
    assert back.returncode == 0, back.stderr
    assert f"version {first} is active, in place of version {second}" in back.stdout
    assert "warning" not in back.stderr
    again = oddsboost.run("models", "activate", str(first), env=on(migrated_url))
    assert again.returncode == 0
    assert f"version {first} is already the active version" in again.stdout
    history = oddsboost.run("models", "activations", env=on(migrated_url))
    assert history.returncode == 0, history.stderr
    rows = table_rows(history.stdout, "activated")
    assert [[row["version"], row["previous"], row["by"], row["run"]] for row in rows] == [
        [str(first), str(second), "cli", ""],
        [str(second), "", "refit", ""],
    ]
    assert rows[0]["reason"] == "back to the pool of two"


def test_models_activate_warns_and_refuses_what_it_cannot_do(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    (closing,) = store_versions(migrated_url, hand_made_version(phase=Phase.CLOSING))
    store_versions(migrated_url, hand_made_version())
    switched = oddsboost.run("models", "activate", str(closing), env=on(migrated_url))
    assert switched.returncode == 0, switched.stderr
    assert f"version {closing} was fitted on closing quotes while ODDSBOOST_REFIT_PHASE is pre" in (
        switched.stderr
    )
    unknown = oddsboost.run("models", "activate", "99", env=on(migrated_url))
    assert unknown.returncode == 1
    assert "no model version 99" in unknown.stderr
    for reason, error in (("  ", "reason is empty"), ("a\tb", "reason contains control")):
        bad = oddsboost.run("models", "activate", "1", "--reason", reason, env=on(migrated_url))
        assert bad.returncode == 2
        assert f"--reason: {error}" in bad.stderr
    not_a_number = oddsboost.run("models", "activate", "first", env=on(migrated_url))
    assert not_a_number.returncode == 2
    assert "Traceback" not in unknown.stderr + not_a_number.stderr


def test_a_command_writes_log_lines_as_text_apart_from_its_output(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    # An empty database: the refit fails at once, and warns in its log.
    result = oddsboost.run("refit", env=on(migrated_url))
    assert result.returncode == 1
    assert result.stdout.startswith("refit run 1 failed: only 0 settled matches")
    logged = result.stderr.splitlines()
    assert not [line for line in logged if line.lstrip().startswith("{")]
    assert any("WARNING" in line and "refit 1 failed" in line for line in logged), logged


def test_a_merge_counts_in_the_singular_and_the_plural(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    import_json(oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    # Tottenham's one match (against Newcastle) moves over to Leicester.
    merged = oddsboost.run(
        "teams", "alias", "Tottenham Hotspur", "Leicester City", env=on(migrated_url)
    )
    assert merged.returncode == 0, merged.stderr
    assert "1 match moved, 0 merged, 0 quotes moved" in merged.stdout


def test_a_merge_preview_counts_in_the_singular_and_the_plural(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    import_json(oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    # Tottenham's one match, against Newcastle, quoted by one bookmaker in the fixture.
    previewed = oddsboost.run(
        "teams", "alias", "Tottenham Hotspur", "Leicester City", "--dry-run", env=on(migrated_url)
    )
    assert previewed.returncode == 0, previewed.stderr
    assert "'Tottenham Hotspur' into 'Leicester City' moves 1 match with 1 quote, " in (
        previewed.stdout
    )
    assert "(0 quotes moved to them, 0 they already had)" in previewed.stdout
    assert "'Tottenham Hotspur' played E0 2018/19: 1 match\n" in previewed.stdout


def test_a_match_deleted_with_one_quote_says_one_quote(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    import_json(oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    (tottenham,) = match_ids(migrated_url, Match.away_team.has(name="Tottenham Hotspur"))
    deleted = oddsboost.run("matches", "delete", str(tottenham), env=on(migrated_url))
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip().endswith(", 2018-08-11) and its 1 quote")


# --- lists: on a terminal and on a pipe, and as JSON --------------------------------------

BOX_DRAWING = re.compile("[\u2500-\u257f]")
LONG_REASON = "back to the version before the pool lost a bookmaker; " * 4


def assert_fits(printed: str, *, columns: int = 80) -> None:
    """Something printed, in lines of at most ``columns``, with no box characters and no
    terminal codes."""
    assert printed.strip()
    too_wide = [line for line in printed.splitlines() if len(line) > columns]
    assert not too_wide, printed
    assert not BOX_DRAWING.search(printed), printed
    assert "\x1b" not in printed


def store_listed_versions(database_url: str) -> None:
    """A version with the longest words a list shows, rejected, then activated by hand with
    a long reason; and the version active now."""
    first, _ = store_versions(
        database_url,
        hand_made_version(
            phase=Phase.CLOSING,
            method=Method.MULTIPLICATIVE,
            rejected_reason="worse than the consensus",
            n_matches=123_456,
        ),
        hand_made_version(),
    )
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        activate(session, session.get_one(ModelVersion, first), by=ActivatedBy.CLI)
        session.flush()
        activate(
            session,
            session.get_one(ModelVersion, first + 1),
            by=ActivatedBy.CLI,
            reason=LONG_REASON.strip(),
        )
    engine.dispose()


LISTS = [("models", "list"), ("models", "activations")]


@pytest.mark.parametrize("command", LISTS, ids=[" ".join(c) for c in LISTS])
def test_a_list_fits_80_columns_on_a_pipe_and_a_terminal(
    oddsboost: Oddsboost, migrated_url: str, command: tuple[str, ...]
) -> None:
    store_listed_versions(migrated_url)
    # A pipe, from a shell in a terminal of 200 columns: COLUMNS is not exported.
    piped = oddsboost.run(*command, env=on(migrated_url), columns=None)
    assert piped.returncode == 0, piped.stderr
    assert_fits(piped.stdout)
    on_terminal = oddsboost.run(*command, env=on(migrated_url), terminal=True, columns=80)
    assert on_terminal.returncode == 0, on_terminal.stderr
    assert_fits(on_terminal.stdout)
    # Nothing is cut short: the long reason is all there, folded over lines.
    if command[-1] == "activations":
        assert " ".join(LONG_REASON.split()) in " ".join(piped.stdout.split())


def test_an_import_summary_fits_80_columns(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    deep = tmp_path / ("a-folder-whose-name-is-long-" * 3)
    deep.mkdir()
    broken = deep / "season-file-with-a-long-name-that-is-not-one.csv"
    broken.write_text("name,age\nann,3\n")
    # E1 2012/13 has a row skipped: a price of 0.
    files = (str(season_file("E0_1819")), str(season_file("E1_1213")), str(broken))
    piped = oddsboost.run("import", "football-data", *files, env=on(migrated_url), columns=None)
    assert piped.returncode == 1
    assert_fits(piped.stdout)
    assert "skipped E1_1213.csv row 532 B365H: price 0" in piped.stdout
    # The path, longer than a line, is broken over two.
    assert f"failed{broken}:FileFormatError:" in "".join(piped.stdout.split())


def test_a_merge_preview_fits_80_columns(
    oddsboost: Oddsboost, migrated_url: str, season_file: SeasonFile
) -> None:
    for name in ("E0_1819", "SP1_1819"):
        import_json(oddsboost, migrated_url, "football-data", str(season_file(name)))
    looked = oddsboost.run(
        "teams", "alias", "Getafe", "Arsenal", "--dry-run", env=on(migrated_url), columns=None
    )
    assert looked.returncode == 0, looked.stderr
    assert_fits(looked.stdout)


def test_commands_print_results_only_through_the_bounded_helpers() -> None:
    """Every table and line of results goes through ``new_table``/``show_table``, ``say`` and
    ``show_json`` (app/cli/common.py), which keep to the output's width: no command makes a
    rich table or writes to the results' console itself."""
    cli_dir = Path(__file__).resolve().parents[1] / "app" / "cli"
    wrong = []
    for path in sorted(cli_dir.rglob("*.py")):
        if path.name == "common.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "rich.table":
                wrong.append(f"{path.name} imports rich.table")
            if isinstance(node, ast.ImportFrom) and any(a.name == "output" for a in node.names):
                wrong.append(f"{path.name} imports the results' console")
    assert not wrong


VERSION_KEYS = {
    "id",
    "status",
    "phase",
    "method",
    "rounds",
    "n_matches",
    "window_start",
    "window_end",
    "log_loss",
    "consensus_log_loss",
    "created_at",
    "activated_at",
}
ACTIVATION_KEYS = {"id", "version_id", "previous_version_id", "activated_at", "by", "reason"}


def json_of(result: CommandResult) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_lists_take_json(oddsboost: Oddsboost, migrated_url: str) -> None:
    store_listed_versions(migrated_url)
    engine = make_engine(migrated_url)
    with make_session_factory(engine)() as session:
        stored = list(session.scalars(select(ModelVersion).order_by(ModelVersion.id.desc())))
        expected = [(v.id, str(v.status), str(v.method), v.n_matches) for v in stored]
    engine.dispose()
    versions = json_of(oddsboost.run("models", "list", "--json", env=on(migrated_url)))
    assert (versions["total"], versions["limit"], versions["offset"]) == (2, 20, 0)
    assert {key for item in versions["items"] for key in item} == VERSION_KEYS
    assert [
        (item["id"], item["status"], item["method"], item["n_matches"])
        for item in versions["items"]
    ] == expected
    activations = json_of(
        oddsboost.run("models", "activations", "--limit", "2", "--json", env=on(migrated_url))
    )
    assert (activations["total"], len(activations["items"])) == (3, 2)
    assert {key for item in activations["items"] for key in item} == ACTIVATION_KEYS | {"run_id"}
    newest = activations["items"][0]
    assert (newest["by"], newest["reason"]) == ("cli", LONG_REASON.strip())
    assert newest["version_id"] == expected[0][0]
    assert newest["previous_version_id"] == expected[1][0]


def test_teams_refit_and_track_record_take_json(oddsboost: Oddsboost, migrated_url: str) -> None:
    env = on(migrated_url)
    import_json(oddsboost, migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    merged = json_of(
        oddsboost.run("teams", "alias", "Tottenham Hotspur", "Leicester City", "--json", env=env)
    )
    assert (merged["created"], merged["merged_team"], merged["matches_moved"]) == (True, True, 1)
    assert merged["preview"]["competitions"] == [
        {"competition": "E0", "season": "2018/19", "matches": 1}
    ]
    undone = json_of(oddsboost.run("teams", "unalias", "Tottenham Hotspur", "--json", env=env))
    assert (undone["restored_team"], undone["matches_moved_back"]) == (True, 1)
    # Two matches stored, neither settled: the refit fails, and says so as a document too.
    refit = oddsboost.run("refit", "--json", env=env)
    assert refit.returncode == 1
    run = json.loads(refit.stdout)
    assert (run["status"], run["version_id"]) == ("failed", None)
    assert run["message"].startswith("only 0 settled matches")
    logged = json_of(
        oddsboost.run("track-record", "rebuild", "--from", "2018-08-01", "--json", env=env)
    )
    # Both matches have quotes, but no model version was active at their kickoffs.
    assert set(logged) == {"written", "already_logged", "without_quotes"}


# --- scheduler ----------------------------------------------------------------------------

CRON_SETTINGS = (
    "refit_cron",
    "track_record_cron",
    "odds_api_cron",
    "closing_line_cron",
    "football_data_cron",
    "quote_history_cron",
)


def test_scheduler_help_names_every_job_it_runs(oddsboost: Oddsboost) -> None:
    """Every job the scheduler is given, each told by the cron setting that times it."""
    crons = {name: f"{minute} 4 * * *" for minute, name in enumerate(CRON_SETTINGS)}
    settings = Settings(
        database_url="sqlite://",
        odds_api_key="key-of-the-test",
        refit_cron=crons["refit_cron"],
        track_record_cron=crons["track_record_cron"],
        odds_api_cron=crons["odds_api_cron"],
        closing_line_cron=crons["closing_line_cron"],
        football_data_cron=crons["football_data_cron"],
        quote_history_cron=crons["quote_history_cron"],
    )
    engine = make_engine(settings.database_url)
    try:
        scheduler = build_scheduler(engine, settings, stop=Stop(), into=BackgroundScheduler())
        timed_by = {
            str(job.trigger): name
            for name in CRON_SETTINGS
            for job in scheduler.get_jobs()
            if str(job.trigger) == str(CronTrigger.from_crontab(crons[name], timezone=dt.UTC))
        }
        assert len(timed_by) == len(scheduler.get_jobs()) == 6
    finally:
        engine.dispose()
    result = oddsboost.run("scheduler", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "Run the service's six jobs, each on its own cron (UTC)" in text
    for name in timed_by.values():
        assert f"ODDSBOOST_{name.upper()}" in text
    defaults = Settings()
    assert f"ODDSBOOST_REFIT_CRON (default {defaults.refit_cron})" in text
    assert defaults.track_record_cron == "*/5 * * * *"
    assert "ODDSBOOST_TRACK_RECORD_CRON (default every 5 minutes; empty: off)" in text
    assert (defaults.odds_api_cron, defaults.football_data_cron) == (None, None)
    assert "ODDSBOOST_ODDS_API_CRON (unset: off)" in text
    assert defaults.closing_line_cron is None
    assert "ODDSBOOST_CLOSING_LINE_CRON (unset: off)" in text
    assert "ODDSBOOST_FOOTBALL_DATA_CRON (unset: off)" in text


# --- serve --------------------------------------------------------------------------------


@pytest.mark.slow
def test_serve_migrates_then_serves_over_http(
    fresh_database_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    """End to end: the installed command migrates an empty database, then two workers serve."""
    settings = Settings(database_url=fresh_database_url, admin_api_key="cli-test-key-4242")
    with running_server(
        child_environment(settings), tmp_path / "serve.log", "--workers", "2"
    ) as server:
        engine = make_engine(fresh_database_url)
        assert current_revision(engine) == head_revision()
        engine.dispose()
        response = httpx.post(
            f"{server.base_url}/admin/import/football-data",
            content=season_file("I1_0203").read_bytes(),
            headers={"X-API-Key": "cli-test-key-4242", "Content-Type": "text/csv"},
            timeout=60,
        )
        assert response.status_code == 200, response.text
        assert response.json()["matches_created"] == 306
        # Both workers see the committed import.
        totals = {
            httpx.get(f"{server.base_url}/matches", timeout=5).json()["total"] for _ in range(8)
        }
        assert totals == {306}


def test_serve_without_migrating_refuses_an_empty_database(
    oddsboost: Oddsboost, fresh_database_url: str
) -> None:
    result = oddsboost.run(
        "serve", "--no-migrate", "--port", str(free_port()), env=on(fresh_database_url)
    )
    assert result.returncode != 0
    assert "run `oddsboost migrate`" in result.stdout + result.stderr


def test_serve_refuses_a_weak_admin_key_without_repeating_it(oddsboost: Oddsboost) -> None:
    result = oddsboost.run(
        "serve",
        "--port",
        str(free_port()),
        env={"ODDSBOOST_ADMIN_API_KEY": "weak-key-1", "ODDSBOOST_DATABASE_URL": "sqlite://"},
    )
    assert result.returncode == 2
    assert "configuration error" in result.stderr
    assert "at least 16 characters" in result.stderr
    assert "weak-key-1" not in result.stdout + result.stderr


def test_a_configuration_error_says_the_variable_and_the_reason_only(
    oddsboost: Oddsboost,
) -> None:
    """Each refused setting on its own line, as the operator set it; none of pydantic's
    headings or links to its documentation."""
    bounds = oddsboost.run(
        "models",
        "list",
        env={"ODDSBOOST_PORT": "99999", "ODDSBOOST_REFIT_ROUNDS_GRID": '[50, "many"]'},
    )
    assert bounds.returncode == 2
    assert bounds.stderr.splitlines() == [
        # Settings.port is bounded by the highest TCP port.
        "configuration error: ODDSBOOST_PORT: Input should be less than or equal to 65535",
        "configuration error: ODDSBOOST_REFIT_ROUNDS_GRID[1]: Input should be a valid "
        "integer, unable to parse string as an integer",
    ]
    cron = oddsboost.run("migrate", env={"ODDSBOOST_REFIT_CRON": "at three"})
    assert cron.returncode == 2
    (line,) = cron.stderr.splitlines()
    assert line.startswith("configuration error: ODDSBOOST_REFIT_CRON: not a cron expression (")
    key = oddsboost.run("serve", env={"ODDSBOOST_ADMIN_API_KEY": "weak-key-1"})
    (line,) = key.stderr.splitlines()
    assert line.startswith(
        "configuration error: ODDSBOOST_ADMIN_API_KEY must have at least 16 characters"
    )
    for result in (bounds, cron, key):
        assert "pydantic" not in result.stderr
        assert "validation error" not in result.stderr
        assert "Value error" not in result.stderr


# --- health -------------------------------------------------------------------------------


def answering(status: int) -> type[http.server.BaseHTTPRequestHandler]:
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Answer


def test_health_is_ok_when_the_service_answers(oddsboost: Oddsboost) -> None:
    with http_server(answering(200)) as base:
        result = oddsboost.run("health", "--url", f"{base}/health")
    assert result.returncode == 0, result.stderr
    assert f"{base}/health: ok" in result.stdout


class HealthOnly(http.server.BaseHTTPRequestHandler):
    """A service that answers /health and nothing else."""

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.mark.parametrize("suffix", ["", "/", "/health"])
def test_health_takes_the_base_url_or_the_health_url(oddsboost: Oddsboost, suffix: str) -> None:
    with http_server(HealthOnly) as base:
        result = oddsboost.run("health", "--url", base + suffix)
    assert result.returncode == 0, result.stderr
    assert f"{base}/health: ok" in result.stdout


def test_health_reads_the_port_from_the_settings(oddsboost: Oddsboost) -> None:
    with http_server(answering(200)) as base:
        port = base.rsplit(":", 1)[1]
        result = oddsboost.run("health", env={"ODDSBOOST_PORT": port})
    assert result.returncode == 0, result.stderr
    assert f"http://127.0.0.1:{port}/health: ok" in result.stdout


def test_health_fails_with_the_status_of_an_error(oddsboost: Oddsboost) -> None:
    with http_server(answering(500)) as base:
        result = oddsboost.run("health", "--url", f"{base}/health")
    assert result.returncode == 1
    assert f"{base}/health: HTTP 500" in result.stderr


def test_health_fails_when_nothing_listens(oddsboost: Oddsboost) -> None:
    url = f"http://127.0.0.1:{free_port()}/health"
    result = oddsboost.run("health", "--url", url, "--timeout", "5")
    assert result.returncode == 1
    assert url in result.stderr
    assert "refused" in result.stderr.lower()


HEAVY_MODULES = ("sqlalchemy", "numpy", "fastapi", "httpx")


def imported_modules(result: subprocess.CompletedProcess[str]) -> set[str]:
    """Top-level names of the modules a ``-X importtime`` run imported."""
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.slow
@pytest.mark.parametrize("settings_port", [False, True], ids=["url", "port-from-settings"])
def test_the_health_check_imports_nothing_heavy(settings_port: bool) -> None:
    """``python -m app health`` in a process of its own: what it imports is the point."""
    with http_server(answering(200)) as base:
        port = base.rsplit(":", 1)[1]
        arguments = [] if settings_port else ["--url", f"{base}/health"]
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "app", "health", *arguments],
            env=child_environment(ODDSBOOST_PORT=port),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = imported_modules(result)
    assert {"app", "typer"} <= imported  # it did run the command
    assert not imported & set(HEAVY_MODULES), sorted(imported & set(HEAVY_MODULES))
