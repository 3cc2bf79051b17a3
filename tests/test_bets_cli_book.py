"""``oddsboost bets import|export|summary`` against a real database of their own: every bad
row printed with its line and nothing recorded, a dry run, the export to a file or stdout
that imports again, and the summary as text and JSON."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Bet, OddsQuote
from app.domain.bet_csv import BET_CSV_COLUMNS, EXPORT_COLUMNS, MAX_IMPORT_BYTES
from tests.bet_books import csv_bytes, store_book_matches
from tests.commands import Oddsboost
from tests.plugins.track_record import M1, settle, store_match

HEADER = ",".join(BET_CSV_COLUMNS)
ROWS = (
    "2017-08-12T10:00:00Z,E0,2017-08-13,Man United,West Ham,1,B365,8/13,20,,,,",
    "2017-08-12T11:00:00Z,E0,13/08/2017,Newcastle,Tottenham,2,PS,+115,10,,,,",
    "2017-08-18T18:00:00Z,SP1,2017-08-19,Girona,Atlético Madrid,X,WH,3.4,7.5,void,,,",
)


@pytest.fixture
def book_url(migrated_url: str, season_file: Callable[[str], Path]) -> str:
    """A database of its own holding the book's matches, committed."""
    engine = make_engine(migrated_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        store_book_matches(session, season_file)
    engine.dispose()
    return migrated_url


def on(database_url: str) -> dict[str, str]:
    return {"ODDSBOOST_DATABASE_URL": database_url}


def stored_bets(database_url: str) -> int:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return connection.execute(select(func.count()).select_from(Bet)).scalar_one()
    finally:
        engine.dispose()


def test_import_prints_every_bad_row_and_records_nothing(
    oddsboost: Oddsboost, book_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "bets.csv"
    path.write_bytes(
        csv_bytes(
            HEADER,
            *ROWS,
            "2017-08-12,E0,2017-08-13,Man Utd,West Ham,1,B365,2.0,10,,,,",
            "2017-08-12,E0,2017-08-13,Man United,West Ham,1,B365,0.5,-1,,,,",
        )
    )

    result = oddsboost.run("bets", "import", str(path), env=on(book_url))

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "line 5, home: no team or alias 'Man Utd' is stored; map it to a stored team with "
        "`oddsboost teams alias 'Man Utd' 'Stored Name'`",
        "line 6, price: price '0.5' is 0.5 as a decimal; it must be from 1.001 to 1001",
        "line 6, stake: stake '-1' is not an amount above 0, such as 10 or 12.50",
        "3 errors: nothing was recorded",
    ]
    assert stored_bets(book_url) == 0
    as_json = oddsboost.run("bets", "import", str(path), "--json", env=on(book_url))
    assert as_json.returncode == 1
    errors = json.loads(as_json.stdout)["errors"]
    assert [(error["line"], error["column"]) for error in errors] == [
        (5, "home"),
        (6, "price"),
        (6, "stake"),
    ]


def test_import_dry_run_then_for_real(oddsboost: Oddsboost, book_url: str, tmp_path: Path) -> None:
    path = tmp_path / "bets.csv"
    path.write_bytes(csv_bytes(HEADER, *ROWS))

    dry = oddsboost.run("bets", "import", str(path), "--dry-run", env=on(book_url))
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.strip() == f"would record 3 bets from {path}"
    assert stored_bets(book_url) == 0

    done = oddsboost.run("bets", "import", str(path), "--json", env=on(book_url))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["imported"], len(report["bet_ids"])) == (3, 3)
    assert stored_bets(book_url) == 3
    again = oddsboost.run("bets", "import", str(path), env=on(book_url))
    assert again.stdout.splitlines() == [
        f"recorded 0 bets from {path}",
        "3 rows already in the book: lines 2, 3, 4",
    ]


def test_an_unreadable_file_is_one_line(
    oddsboost: Oddsboost, book_url: str, tmp_path: Path
) -> None:
    missing = oddsboost.run("bets", "import", str(tmp_path / "nope.csv"), env=on(book_url))
    assert missing.returncode == 1
    assert missing.stderr.startswith(f"cannot import {tmp_path / 'nope.csv'}: ")
    huge = tmp_path / "huge.csv"
    huge.write_bytes(csv_bytes(HEADER, *ROWS) + b"#" * MAX_IMPORT_BYTES)
    refused = oddsboost.run("bets", "import", str(huge), env=on(book_url))
    assert refused.returncode == 1
    size = huge.stat().st_size
    assert refused.stderr.strip() == (
        f"cannot import {huge}: the file is {size} bytes; at most {MAX_IMPORT_BYTES} bytes are "
        "imported at once: split it"
    )


def test_export_writes_a_file_that_imports_again(
    oddsboost: Oddsboost, book_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "bets.csv"
    path.write_bytes(csv_bytes(HEADER, *ROWS))
    assert oddsboost.run("bets", "import", str(path), env=on(book_url)).returncode == 0

    exported = tmp_path / "book.csv"
    written = oddsboost.run("bets", "export", "--output", str(exported), env=on(book_url))
    assert written.returncode == 0, written.stderr
    assert written.stderr.strip() == f"wrote 3 bets to {exported}"
    lines = exported.read_text().splitlines()
    assert lines[0] == ",".join(EXPORT_COLUMNS)
    assert lines[1].startswith("2017-08-12T10:00:00Z,E0,2017-08-13T00:00:00Z,Man United,West Ham,")
    spain = oddsboost.run("bets", "export", "--competition", "SP1", env=on(book_url))
    assert [line.split(",")[4] for line in spain.stdout.splitlines()[1:]] == ["Ath Madrid"]
    # The exported file, imported again: every row is already in the book.
    again = oddsboost.run("bets", "import", str(exported), "--json", env=on(book_url))
    assert json.loads(again.stdout)["already_recorded"] == [2, 3, 4]


def test_summary_as_text_and_json(oddsboost: Oddsboost, book_url: str, tmp_path: Path) -> None:
    path = tmp_path / "bets.csv"
    path.write_bytes(csv_bytes(HEADER, *ROWS))
    assert oddsboost.run("bets", "import", str(path), env=on(book_url)).returncode == 0

    text = oddsboost.run("bets", "summary", env=on(book_url))
    assert text.returncode == 0, text.stderr
    # Bets on played matches settle as they are imported: two settled and one void.
    assert text.stdout.splitlines()[0] == "3 bets: 2 settled, 0 open (staking 0.00), 1 void"
    assert "ROI over a few hundred bets is noise; CLV is the signal." in text.stdout
    as_json = oddsboost.run("bets", "summary", "--json", "--tz", "Europe/Madrid", env=on(book_url))
    summary = json.loads(as_json.stdout)
    assert summary["overall"]["open_stake"] == 0.0
    assert [group["key"] for group in summary["by_bookmaker"]] == ["B365", "PS", "WH"]
    assert summary["time_zone"] == "Europe/Madrid"
    bad = oddsboost.run("bets", "summary", "--tz", "Mars/Olympus", env=on(book_url))
    assert bad.returncode == 2
    assert "is not a time zone of the IANA database" in bad.stderr


@pytest.mark.parametrize(("minutes", "origin"), [(30, None), (60, "live")])
def test_import_settles_with_the_configured_closing_window(
    oddsboost: Oddsboost, migrated_url: str, tmp_path: Path, minutes: int, origin: str | None
) -> None:
    # Arsenal 2-1 Chelsea with Pinnacle's prices captured 45 minutes before kickoff: a live
    # close within a window of 60 minutes, none within 30 (and no season file's close).
    captured = M1.kickoff - dt.timedelta(minutes=45)
    engine = make_engine(migrated_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        match_id = store_match(session, M1, captured=captured)
        # Received when captured, and not seen again: the prices held until then only.
        session.execute(
            update(OddsQuote)
            .where(OddsQuote.match_id == match_id)
            .values(received_at=captured, seen_at=captured)
        )
        settle(session, match_id, M1.goals)
    path = tmp_path / "bets.csv"
    path.write_bytes(
        csv_bytes(
            "placed_at,match_id,outcome,bookmaker,price,stake",
            f"2026-03-01T12:00:00Z,{match_id},1,B365,2.0,10",
        )
    )
    env = {**on(migrated_url), "ODDSBOOST_CLOSING_WINDOW_MINUTES": str(minutes)}
    result = oddsboost.run("bets", "import", str(path), env=env)
    assert result.returncode == 0, result.stderr
    try:
        with engine.connect() as connection:
            stored = connection.execute(select(Bet.status, Bet.close_origin)).one()
    finally:
        engine.dispose()
    assert (str(stored.status), stored.close_origin) == ("won", origin)
