"""Importing a CSV of bets (POST /bets/import, ``import_bets``) and exporting the book
(GET /bets/export): matches found by competition, day and teams as any source spells them,
every bad row named with its line and column and nothing imported, the bounds, and an
exported file that imports again unchanged."""

from __future__ import annotations

import csv
import datetime as dt
import io
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.orm import Bet, BetChange, Match
from app.domain.bet_csv import (
    BET_CSV_COLUMNS,
    EXPORT_COLUMNS,
    MAX_IMPORT_BYTES,
    MAX_IMPORT_ROWS,
    BetCsvTooLargeError,
    RowError,
    parse_bet_csv,
)
from app.domain.bets import BetChannel, BetStatus
from app.services.bet_book import BetImportError, import_bets
from app.services.ingest import import_football_data
from tests.bet_books import csv_bytes, match_id, settle_book, store_book_matches
from tests.helpers import count_rows

NOW = dt.datetime(2017, 9, 1, 12, tzinfo=dt.UTC)
HEADER = ",".join(BET_CSV_COLUMNS)
# Real matches of the first weeks of 2017/18, spelled as football-data.co.uk spells them,
# by an alias (Manchester United, Atlético Madrid), a day off (Barcelona v Betis was on the
# 20th), in its day-first form, and by id (the last row; its id is filled in by the test).
GOOD_ROWS = (
    "2017-08-12T10:00:00Z,E0,2017-08-13,Man United,West Ham,1,B365,8/13,20,won,opener,,",
    "2017-08-12 11:00,E0,13/08/2017,Newcastle,Tottenham,A,Pinnacle,+115,10,,,,",
    "2017-08-18,E0,2017-08-19,Swansea,Manchester United,away,bet365,evens,5,,,,",
    "2017-08-18T20:00:00+02:00,SP1,2017-08-19,Girona,Atlético Madrid,X,WH,3.4,7.5,void,,,",
    "2017-08-19T09:00:00Z,SP1,2017-08-21,Barcelona,Betis,1,B365,1.2,50,,,,",
    "2017-08-19T09:30:00Z,,,,,2,PS,4.75,2,,,{match_id},",
)


@pytest.fixture
def book_session(session: Session, season_file: Callable[[str], Path]) -> Session:
    store_book_matches(session, season_file)
    return session


@pytest.fixture
def book_client(book_session: Session, client: TestClient) -> TestClient:
    """The app on the test's session, the book's matches stored."""
    assert book_session is not None
    return client


def good_file(session: Session) -> bytes:
    tottenham_chelsea = match_id(session, "E0", "Tottenham", "Chelsea")
    rows = [*GOOD_ROWS[:-1], GOOD_ROWS[-1].format(match_id=tottenham_chelsea)]
    return csv_bytes(HEADER, *rows)


def test_rows_find_their_matches_by_name_alias_day_and_id(book_session: Session) -> None:
    report = import_bets(book_session, good_file(book_session), NOW)

    assert report.imported == 6
    assert not report.dry_run
    assert report.already_recorded == []
    bets = [book_session.get_one(Bet, bet_id) for bet_id in report.bet_ids]
    expected = [
        ("E0", "Man United", "West Ham"),
        ("E0", "Newcastle", "Tottenham"),
        ("E0", "Swansea", "Man United"),
        ("SP1", "Girona", "Ath Madrid"),
        ("SP1", "Barcelona", "Betis"),
        ("E0", "Tottenham", "Chelsea"),
    ]
    assert [bet.match_id for bet in bets] == [match_id(book_session, *m) for m in expected]
    assert [bet.outcome for bet in bets] == ["1", "2", "2", "X", "1", "2"]
    # Known bookmakers by name or any case are kept by code; WH as given.
    assert [bet.bookmaker for bet in bets] == ["B365", "PS", "B365", "WH", "B365", "PS"]
    # 8/13 is 1 + 8/13; +115 is 1 + 115/100; evens is 2.
    assert [bet.price for bet in bets] == pytest.approx([1 + 8 / 13, 2.15, 2.0, 3.4, 1.2, 4.75])
    assert [bet.price_text for bet in bets][:3] == ["8/13", "+115", "evens"]
    assert [bet.stake for bet in bets] == [20, 10, 5, 7.5, 50, 2]
    # A history settles at once: each bet won or lost by its match's stored result (the
    # season file's), the void one left void.
    results = [book_session.get_one(Match, bet.match_id).result for bet in bets]
    assert [bet.status for bet in bets] == [
        BetStatus.VOID
        if index == 3
        else (BetStatus.WON if bet.outcome == result else BetStatus.LOST)
        for index, (bet, result) in enumerate(zip(bets, results, strict=True))
    ]
    # Naive is UTC, a date is its midnight UTC, an offset is kept as the same moment.
    assert [bet.placed_at for bet in bets][1:4] == [
        dt.datetime(2017, 8, 12, 11, tzinfo=dt.UTC),
        dt.datetime(2017, 8, 18, tzinfo=dt.UTC),
        dt.datetime(2017, 8, 18, 18, tzinfo=dt.UTC),
    ]
    assert bets[0].note == "opener"
    changes = book_session.scalars(select(BetChange).where(BetChange.bet_id.in_(report.bet_ids)))
    assert {(change.change, change.channel) for change in changes} == {
        ("created", BetChannel.IMPORT)
    }


def test_every_bad_row_is_named_and_nothing_is_imported(book_session: Session) -> None:
    west_ham = match_id(book_session, "E0", "Man United", "West Ham")
    rows = (
        GOOD_ROWS[0],  # line 2: good
        "2017-08-12,E0,2017-08-13,Man Utd,West Ham,1,B365,2.0,10,,,,",  # 3: no such team
        "2017-08-12,E0,2017-08-13,Man United,West Ham,1,B365,abc,10,,,,",  # 4: price
        "2017-08-12,E0,2017-08-13,Man United,West Ham,1,B365,2.0,0,,,,",  # 5: stake
        "yesterday,E0,2017-08-13,Man United,West Ham,W,B365,2.0,10,,,,",  # 6: two errors
        "2017-08-12,E0,2017-08-16,Man United,West Ham,1,B365,2.0,10,,,,",  # 7: not that day
        "2017-08-12,E0,2017-08-13,Man United,West Ham,2,B365,2.0,10,won,,,",  # 8: it lost
        "2017-08-12,,,,,1,B365,2.0,10,,,99999999,",  # 9: no such match
        f"2017-08-12,,,,,1,B365,2.0,10,,,{west_ham},424242",  # 10: no such flag
        "2017-08-12,E1,2017-08-13,Man United,West Ham,1,B365,2.0,10,,,,",  # 11: competition
        "2017-08-12,E0,2017-08-13,,West Ham,1,B365,2.0,10,,,,",  # 12: home missing
        "2017-08-12,,,,,1,B365,2.0,10,,,,",  # 13: no match at all
        "2017-08-12,E0,2017-08-13,Man United,West Ham,1,B365,2.0,10,maybe,,,",  # 14: status
    )
    before = count_rows(book_session, Bet), count_rows(book_session, BetChange)

    with pytest.raises(BetImportError) as raised:
        import_bets(book_session, csv_bytes(HEADER, *rows), NOW)

    assert [(error.line, error.column) for error in raised.value.errors] == [
        (3, "home"),
        (4, "price"),
        (5, "stake"),
        (6, "outcome"),
        (6, "placed_at"),
        (7, "kickoff"),
        (8, "status"),
        (9, "match_id"),
        (10, "flag_id"),
        (11, "competition"),
        (12, "home"),
        (13, "match_id"),
        (14, "status"),
    ]
    messages = {(e.line, e.column): e.message for e in raised.value.errors}
    assert "'Man Utd'" in messages[(3, "home")]
    assert "teams alias" in messages[(3, "home")]
    assert "ended 4-0 (result 1): outcome 2 lost" in messages[(8, "status")]
    assert "2017-08-16 or a day either side" in messages[(7, "kickoff")]
    assert (count_rows(book_session, Bet), count_rows(book_session, BetChange)) == before


def test_a_dry_run_checks_and_records_nothing(book_session: Session) -> None:
    before = count_rows(book_session, Bet)
    report = import_bets(book_session, good_file(book_session), NOW, dry_run=True)
    assert (report.dry_run, report.imported, report.bet_ids) == (True, 6, [])
    assert count_rows(book_session, Bet) == before


def test_a_file_imported_again_records_nothing_twice(book_session: Session) -> None:
    data = good_file(book_session)
    import_bets(book_session, data, NOW)
    # One row more: a second identical bet on West Ham is a bet of its own.
    again = import_bets(book_session, data + GOOD_ROWS[0].encode() + b"\n", NOW)
    assert again.imported == 1
    assert again.already_recorded == [2, 3, 4, 5, 6, 7]
    assert count_rows(book_session, Bet) == 7


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (HEADER + ",odds", [(1, "odds")]),
        (HEADER.replace(",stake", ""), [(1, "stake")]),
        (HEADER + ",note", [(1, "note")]),
        (
            "placed_at,outcome,bookmaker,price,stake,home",
            [(1, "away"), (1, "competition"), (1, "kickoff")],
        ),
    ],
)
def test_a_bad_header_is_named(header: str, expected: list[tuple[int, str]]) -> None:
    parsed = parse_bet_csv(csv_bytes(header, GOOD_ROWS[0]))
    assert sorted((error.line, error.column or "") for error in parsed.errors) == expected
    assert parsed.rows == []


def test_encodings_delimiters_and_line_ends() -> None:
    with_bom = b"\xef\xbb\xbf" + csv_bytes(HEADER, GOOD_ROWS[0], newline="\r\n")
    assert [row.line for row in parse_bet_csv(with_bom).rows] == [2]
    # A spreadsheet whose decimal mark is a comma writes ; between fields.
    semicolons = csv_bytes(
        HEADER.replace(",", ";"), "2017-08-12;E0;2017-08-13;Man United;West Ham;1;B365;2,5;12,50"
    )
    (row,) = parse_bet_csv(semicolons).rows
    assert (row.price_text, row.stake) == ("2.5", 12.5)
    latin = csv_bytes(HEADER, GOOD_ROWS[0], "2017-08-12,SP1,2017-08-19,Girona,Atlético Madrid")
    latin = latin.decode().encode("latin-1")
    (error,) = parse_bet_csv(latin).errors
    assert (error.line, error.column) == (3, None)
    assert "not UTF-8" in error.message
    # A quoted note over two lines (refused: a note is one line); the next row is numbered
    # by the line it starts on.
    multi = csv_bytes(HEADER, GOOD_ROWS[0].replace("opener", '"two\nlines"'), "x,,,,,1,B365,2,1")
    errors = parse_bet_csv(multi).errors
    assert {(e.line, e.column) for e in errors} == {
        (2, "note"),
        (4, "placed_at"),
        (4, "match_id"),
    }


def test_the_guide_states_the_bounds() -> None:
    guide = (Path(__file__).parents[1] / "docs/guides/bets-import-and-summary.md").read_text()
    assert f"At most {MAX_IMPORT_ROWS} rows and\n{MAX_IMPORT_BYTES} bytes" in guide


def test_rows_and_bytes_are_bounded() -> None:
    data = csv_bytes(HEADER, *[GOOD_ROWS[0]] * 4)
    assert parse_bet_csv(data, max_rows=4).errors == []
    assert parse_bet_csv(data, max_rows=3).errors == [
        RowError(5, None, "the file has more than 3 rows: split it")
    ]
    with pytest.raises(BetCsvTooLargeError, match="at most 2097152 bytes"):
        parse_bet_csv(b"x" * (MAX_IMPORT_BYTES + 1))


def test_the_endpoint_records_and_answers_the_ids(
    book_client: TestClient,
    book_session: Session,
    admin_headers: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    headers = {**admin_headers, "Content-Type": "text/csv; charset=utf-8"}
    data = good_file(book_session)
    caplog.set_level(logging.INFO, logger="app.services.bet_book")
    dry = book_client.post("/bets/import?dry_run=true", content=data, headers=headers)
    assert dry.status_code == 200
    assert dry.json()["imported"] == 6
    assert count_rows(book_session, Bet) == 0
    assert caplog.messages == []
    answer = book_client.post("/bets/import", content=data, headers=headers)
    # Logged once the request's transaction committed.
    assert caplog.messages == ["imported 6 bets (0 already in the book)"]
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["imported"] == 6
    assert len(body["bet_ids"]) == 6
    assert count_rows(book_session, Bet) == 6


def test_the_endpoint_names_every_bad_row_in_one_problem(
    book_client: TestClient, book_session: Session, admin_headers: dict[str, str]
) -> None:
    headers = {**admin_headers, "Content-Type": "text/csv"}
    rows = (GOOD_ROWS[0], "2017-08-12,E0,2017-08-13,Man Utd,West Ham,1,B365,1.0,10,,,,")
    answer = book_client.post("/bets/import", content=csv_bytes(HEADER, *rows), headers=headers)
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert [error["loc"] for error in problem["errors"]] == [
        ["body", 3, "home"],
        ["body", 3, "price"],
    ]
    assert problem["detail"].startswith("body.3.home: no team or alias 'Man Utd'")
    assert count_rows(book_session, Bet) == 0


@pytest.mark.parametrize(
    ("stake", "refused"),
    [
        ("1000000000", False),
        ("1000000000.01", True),
        # 1e306 in digits: at 1000/1 it would return 1.001e309, more than a float holds.
        ("1" + "0" * 306, True),
    ],
)
def test_a_stake_is_bounded_as_the_api_bounds_it(
    book_client: TestClient,
    book_session: Session,
    admin_headers: dict[str, str],
    stake: str,
    refused: bool,
) -> None:
    # Man United 4-0 West Ham: the home bet won.
    united = match_id(book_session, "E0", "Man United", "West Ham")
    body = {
        "match_id": united,
        "outcome": "1",
        "bookmaker": "B365",
        "price": "1000/1",
        "stake": float(stake),
        "placed_at": "2017-08-12T10:00:00Z",
    }
    posted = book_client.post("/bets", json=body, headers=admin_headers)
    data = csv_bytes(
        "placed_at,match_id,outcome,bookmaker,price,stake",
        f"2017-08-12T10:00:00Z,{united},1,B365,1000/1,{stake}",
    )
    headers = {**admin_headers, "Content-Type": "text/csv"}
    imported = book_client.post("/bets/import", content=data, headers=headers)
    if refused:
        assert (posted.status_code, imported.status_code) == (422, 422), imported.text
        (error,) = imported.json()["errors"]
        assert error["loc"] == ["body", 2, "stake"]
        assert error["msg"].endswith("must be above 0 and at most 1000000000")
        assert count_rows(book_session, Bet) == 0
    else:
        assert (posted.status_code, imported.status_code) == (201, 201), imported.text
        # The row is the bet just posted: read, and not recorded twice.
        assert imported.json()["already_recorded"] == [2]
    # Whatever was stored, the summary sums it: 1e9 at 1000/1 returns 1.0e12 (finite).
    assert book_client.get("/bets/summary", headers=admin_headers).status_code == 200


def test_the_endpoint_refuses_what_it_cannot_read(
    book_client: TestClient, admin_headers: dict[str, str]
) -> None:
    data = csv_bytes(HEADER, GOOD_ROWS[0])
    unkeyed = book_client.post("/bets/import", content=data, headers={"Content-Type": "text/csv"})
    assert unkeyed.status_code == 401
    as_json = book_client.post(
        "/bets/import", content=data, headers={**admin_headers, "Content-Type": "application/json"}
    )
    assert as_json.status_code == 415
    assert "text/csv" in as_json.json()["detail"]
    too_large = book_client.post(
        "/bets/import",
        content=data + b"#" * MAX_IMPORT_BYTES,
        headers={**admin_headers, "Content-Type": "text/csv"},
    )
    assert too_large.status_code == 413
    assert too_large.json()["detail"].startswith("request body too large: at most 2097152 bytes")
    empty = book_client.post(
        "/bets/import", content=b"", headers={**admin_headers, "Content-Type": "text/csv"}
    )
    assert empty.status_code == 422
    assert empty.json()["errors"][0]["loc"] == ["body", 1]


def exported(client: TestClient, headers: dict[str, str], query: str = "") -> list[dict[str, str]]:
    answer = client.get(f"/bets/export{query}", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    assert answer.headers["content-disposition"] == 'attachment; filename="bets.csv"'
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert answer.text.split("\n", 1)[0] == ",".join(EXPORT_COLUMNS)
    return rows


def test_an_exported_file_imports_again_unchanged(
    book_client: TestClient, book_session: Session, admin_headers: dict[str, str]
) -> None:
    import_bets(book_session, good_file(book_session), NOW)
    newcastle = match_id(book_session, "E0", "Newcastle", "Tottenham")
    closes = {(newcastle, "2"): 0.5}
    settle_book(book_session, closes)
    first = exported(book_client, admin_headers)
    assert len(first) == 6
    # Newcastle 0-2 Tottenham: the away bet at +115 (2.15) for 10 returned 21.5, and its CLV
    # against a close of probability 0.5 is 2.15 × 0.5 − 1 = 0.075.
    newcastle_row = next(row for row in first if row["match_id"] == str(newcastle))
    assert newcastle_row["status"] == "won"
    assert float(newcastle_row["returned"]) == pytest.approx(21.5)
    assert float(newcastle_row["clv"]) == pytest.approx(0.075)
    text = book_client.get("/bets/export", headers=admin_headers).content

    book_session.execute(delete(BetChange))
    book_session.execute(delete(Bet))
    report = import_bets(book_session, text, NOW)
    assert report.imported == 6
    settle_book(book_session, closes)
    second = exported(book_client, admin_headers)

    def without_id(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{k: v for k, v in row.items() if k != "id"} for row in rows]

    assert without_id(second) == without_id(first)
    assert [row["id"] for row in second] != [row["id"] for row in first]


def test_the_export_filters(
    book_client: TestClient, book_session: Session, admin_headers: dict[str, str]
) -> None:
    import_bets(book_session, good_file(book_session), NOW)
    by_bookmaker = exported(book_client, admin_headers, "?bookmaker=bet365")
    assert {row["bookmaker"] for row in by_bookmaker} == {"B365"}
    assert len(by_bookmaker) == 3
    in_spain = exported(book_client, admin_headers, "?competition=SP1")
    assert [(row["home"], row["away"]) for row in in_spain] == [
        ("Girona", "Ath Madrid"),
        ("Barcelona", "Betis"),
    ]
    window = exported(
        book_client, admin_headers, "?from=2017-08-18T00:00:00Z&to=2017-08-19T09:00:00Z"
    )
    # Both ends included: Barcelona v Betis was placed at 09:00 on the 19th.
    assert [row["away"] for row in window] == ["Man United", "Ath Madrid", "Betis"]
    backwards = book_client.get("/bets/export?from=2017-08-19&to=2017-08-18", headers=admin_headers)
    assert backwards.status_code == 422
    assert backwards.json()["errors"][0]["loc"] == ["query", "to"]


def test_two_matches_within_a_day_need_the_match_id(book_session: Session) -> None:
    # A second Man United v West Ham the next day (a replay, say): the settled first one
    # stays where it is, so a row naming either day could mean both.
    import_football_data(
        book_session,
        b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG,FTR\nE0,14/08/2017,Man United,West Ham,1,1,D\n",
    )
    first = match_id(book_session, "E0", "Man United", "West Ham", day=dt.date(2017, 8, 13))
    second = match_id(book_session, "E0", "Man United", "West Ham", day=dt.date(2017, 8, 14))
    with pytest.raises(BetImportError) as raised:
        import_bets(book_session, csv_bytes(HEADER, GOOD_ROWS[0]), NOW)
    (error,) = raised.value.errors
    assert (error.line, error.column) == (2, "kickoff")
    assert error.message == (
        f"E0 Man United v West Ham on 2017-08-13 could be matches {first}, {second}: give match_id"
    )
    # With the match's id too, the row is the first match's.
    row = GOOD_ROWS[0].replace(",won,opener,,", f",won,opener,{first},")
    report = import_bets(book_session, csv_bytes(HEADER, row), NOW)
    assert book_session.get_one(Bet, report.bet_ids[0]).match_id == first
    # An id of another match than the names fit is refused.
    other = match_id(book_session, "E0", "Tottenham", "Chelsea")
    row = GOOD_ROWS[0].replace(",won,opener,,", f",,,{other},")
    with pytest.raises(BetImportError) as contradicted:
        import_bets(book_session, csv_bytes(HEADER, row), NOW)
    (error,) = contradicted.value.errors
    assert (error.line, error.column) == (2, "match_id")
    assert error.message.startswith(
        f"match {other} is not the match the row names (E0 Man United v West Ham on "
        f"2017-08-13: match {first}, {second})"
    )
