"""The ``oddsboost`` command, run as a real process against a real database."""

from __future__ import annotations

import functools
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db.engine import make_engine
from app.db.migrate import current_revision, head_revision, upgrade_to_head
from tests.helpers import count_complete_triples, free_port

SeasonFile = Callable[[str], Path]
FIXTURES = Path(__file__).parent / "fixtures"
ODDSBOOST = Path(sys.executable).with_name("oddsboost")


def run(database_url: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    assert ODDSBOOST.is_file(), f"console script not installed at {ODDSBOOST}"
    env = {**os.environ, "ODDSBOOST_DATABASE_URL": database_url, "COLUMNS": "200"}
    return subprocess.run(
        [str(ODDSBOOST), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def import_json(database_url: str, *args: str) -> dict[str, Any]:
    result = run(database_url, "import", *args, "--json")
    assert result.returncode == 0, result.stderr + result.stdout
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.fixture
def migrated_url(fresh_database_url: str) -> str:
    upgrade_to_head(fresh_database_url)
    return fresh_database_url


def test_help_lists_the_commands() -> None:
    result = run("sqlite://", "--help")
    assert result.returncode == 0
    for command in ("serve", "migrate", "import", "teams"):
        assert command in result.stdout


def test_migrate(fresh_database_url: str) -> None:
    result = run(fresh_database_url, "migrate")
    assert result.returncode == 0, result.stderr
    engine = make_engine(fresh_database_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_import_into_an_unmigrated_database_says_what_to_do(
    fresh_database_url: str, season_file: SeasonFile
) -> None:
    result = run(fresh_database_url, "import", "football-data", str(season_file("E0_1819")))
    assert result.returncode == 1
    assert "run `oddsboost migrate`" in result.stderr
    assert "Traceback" not in result.stderr


def test_import_every_season_file(migrated_url: str, data_dir: Path) -> None:
    """All 110 files of the data set: SOURCE.md counts 43,218 match rows."""
    report = import_json(migrated_url, "football-data", str(data_dir / "football-data"))
    assert len(report["files"]) == 110
    total = report["total"]
    assert total["matches_created"] == 43_218
    assert total["rows_read"] == 43_218
    assert total["results_set"] == 43_218
    assert {(s["where"], s["field"]) for s in total["skipped"]} == {
        ("row 532", "B365H"),  # E1_1213: price 0
        ("row 348", "B365H"),  # E1_1819: price 0
        ("row 91", "VCD"),  # I1_0708: blank draw price
    }
    again = import_json(
        migrated_url, "football-data", str(data_dir / "football-data" / "E0_1819.csv")
    )
    assert again["total"]["matches_unchanged"] == 380
    assert again["total"]["quotes_inserted"] == 0


def test_import_from_a_url(migrated_url: str, data_dir: Path, season_file: SeasonFile) -> None:
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(data_dir / "football-data")
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        report = import_json(migrated_url, "football-data", f"{base}/E0_1819.csv")
        expected = sum(
            count_complete_triples(season_file("E0_1819"), p)
            for p in ("B365", "BW", "IW", "PS", "WH", "VC", "PSC")
        )
        assert report["total"]["matches_created"] == 380
        assert report["total"]["quotes_inserted"] == expected
        missing = run(migrated_url, "import", "football-data", f"{base}/XX_9999.csv")
        assert missing.returncode == 1
        assert "404" in missing.stdout
    finally:
        server.shutdown()
        thread.join()


def test_a_bad_file_fails_alone(migrated_url: str, season_file: SeasonFile, tmp_path: Path) -> None:
    bogus = tmp_path / "notes.csv"
    bogus.write_text("name,age\nann,3\n")
    result = run(migrated_url, "import", "football-data", str(season_file("I1_0203")), str(bogus))
    assert result.returncode == 1
    assert "not a football-data.co.uk file" in result.stdout
    assert "I1_0203.csv" in result.stdout
    # The good file was imported in its own transaction.
    report = import_json(migrated_url, "football-data", str(season_file("I1_0203")))
    assert report["total"]["matches_unchanged"] == 306


def test_a_broken_file_in_a_directory_does_not_stop_the_others(
    migrated_url: str, season_file: SeasonFile, tmp_path: Path
) -> None:
    folder = tmp_path / "season"
    folder.mkdir()
    (folder / "A_broken.csv").write_bytes(
        b'Div,Date,HomeTeam,AwayTeam\nE0,01/03/2019,"A' + b"x" * 200_000
    )
    (folder / "B_good.csv").write_bytes(season_file("I1_0203").read_bytes())
    result = run(migrated_url, "import", "football-data", str(folder))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "A_broken.csv: FileFormatError: not a readable CSV file" in result.stdout
    report = import_json(migrated_url, "football-data", str(folder / "B_good.csv"))
    assert report["total"]["matches_unchanged"] == 306


def test_a_blank_or_too_long_season_option(migrated_url: str, season_file: SeasonFile) -> None:
    path = str(season_file("I1_0203"))
    report = import_json(migrated_url, "football-data", path, "--season", " ")
    assert report["total"]["matches_created"] == 306
    too_long = run(migrated_url, "import", "football-data", path, "--season", "x" * 17)
    assert too_long.returncode == 2
    assert "season is longer than 16 characters" in too_long.stderr


def test_import_the_odds_api_file(migrated_url: str, tmp_path: Path) -> None:
    report = import_json(migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    assert report["total"]["matches_created"] == 2
    assert report["total"]["quotes_inserted"] == 3
    broken = json.loads((FIXTURES / "the_odds_api_epl.json").read_text())
    broken[0]["bookmakers"][0]["markets"][0]["outcomes"][0]["price"] = "abc"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = run(migrated_url, "import", "the-odds-api", str(path))
    assert result.returncode == 1
    assert "[0].bookmakers[0].markets[0].h2h.outcomes[0].price" in result.stderr


def test_team_alias_command(migrated_url: str) -> None:
    import_json(migrated_url, "the-odds-api", str(FIXTURES / "the_odds_api_epl.json"))
    added = run(migrated_url, "teams", "alias", "Man Utd", "Manchester United")
    assert added.returncode == 0, added.stderr
    assert "'Man Utd' now maps to 'Manchester United'" in added.stdout
    unknown = run(migrated_url, "teams", "alias", "Spurs", "Nobody FC")
    assert unknown.returncode == 1
    assert "no team named 'Nobody FC'" in unknown.stderr
    removed = run(migrated_url, "teams", "unalias", "Man Utd")
    assert removed.returncode == 0


@pytest.fixture
def server(fresh_database_url: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    env = {
        **os.environ,
        "ODDSBOOST_DATABASE_URL": fresh_database_url,
        "ODDSBOOST_ADMIN_API_KEY": "cli-test-key-42",
    }
    process = subprocess.Popen(
        [str(ODDSBOOST), "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/matches", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        yield base, process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_serve_migrates_then_serves_over_http(
    server: tuple[str, subprocess.Popen[str]], fresh_database_url: str, season_file: SeasonFile
) -> None:
    base, _process = server
    engine = make_engine(fresh_database_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()
    response = httpx.post(
        f"{base}/admin/import/football-data",
        content=season_file("I1_0203").read_bytes(),
        headers={"X-API-Key": "cli-test-key-42", "Content-Type": "text/csv"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    assert response.json()["matches_created"] == 306
    # Both workers see the committed import.
    totals = {httpx.get(f"{base}/matches", timeout=5).json()["total"] for _ in range(8)}
    assert totals == {306}


def test_serve_without_migrating_refuses_an_empty_database(fresh_database_url: str) -> None:
    result = run(
        fresh_database_url, "serve", "--no-migrate", "--port", str(free_port()), timeout=60
    )
    assert result.returncode != 0
    assert "run `oddsboost migrate`" in result.stdout + result.stderr
