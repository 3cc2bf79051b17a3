"""football-data.co.uk parsing against the real season files and their documented quirks.

Expected figures come from outside the parser: the file table in the data's SOURCE.md
(match counts, bookmaker lists), counts taken with the standard csv module, and
hand-computed conversions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from app.domain.football_data import (
    FileFormatError,
    LeagueSeasonError,
    decode,
    find_price_columns,
    leading_competitions,
    normalise_season,
    parse_date,
    parse_football_data,
    parse_kickoff,
)
from app.domain.leagues import check_league_season
from tests.football_data_site import EXTRA_FIXTURES, MAIN_FIXTURES
from tests.helpers import count_complete_triples, csv_rows

SeasonFile = Callable[[str], Path]

# From SOURCE.md: "bookmakers with 1X2 odds (opening/pre-match)" per file.
DOCUMENTED_BOOKMAKERS = {
    "E0_1819": {"B365", "BW", "IW", "PS", "WH", "VC"},
    "D1_0304": {"B365", "GB", "IW", "LB", "SO", "SB", "WH"},
    "SP1_1213": {"B365", "BW", "GB", "IW", "LB", "PS", "WH", "SJ", "VC", "BS"},
    "E0_0001": {"GB", "IW", "LB", "SB", "WH"},
}


@pytest.mark.parametrize(
    ("name", "matches"),
    [("E0_1819", 380), ("D1_0304", 306), ("I1_0203", 306), ("E1_1213", 552), ("F1_0203", 380)],
)
def test_match_count_equals_the_documented_rows(
    season_file: SeasonFile, name: str, matches: int
) -> None:
    batch = parse_football_data(season_file(name).read_bytes())
    assert len(batch.matches) == matches
    assert batch.rows_read == matches


@pytest.mark.parametrize("name", sorted(DOCUMENTED_BOOKMAKERS))
def test_bookmakers_are_the_documented_ones_and_aggregates_are_not(
    season_file: SeasonFile, name: str
) -> None:
    batch = parse_football_data(season_file(name).read_bytes())
    pre = {q.bookmaker for q in batch.quotes if q.phase == "pre"}
    assert pre == DOCUMENTED_BOOKMAKERS[name]
    assert not pre & {"BbMx", "BbAv", "Max", "Avg"}


def test_first_row_of_e0_1819(season_file: SeasonFile) -> None:
    batch = parse_football_data(season_file("E0_1819").read_bytes())
    first = batch.matches[0]
    assert (first.competition, first.home_team, first.away_team) == (
        "E0",
        "Man United",
        "Leicester",
    )
    assert first.kickoff == dt.datetime(2018, 8, 10, tzinfo=dt.UTC)
    assert first.kickoff_time_known is False
    assert (first.home_goals, first.away_goals) == (2, 1)
    assert first.season == "2018/19"
    b365 = next(q for q in batch.quotes if q.match == 0 and q.bookmaker == "B365")
    assert (b365.home, b365.draw, b365.away, b365.phase) == (1.57, 3.9, 7.5, "pre")
    closing = next(q for q in batch.quotes if q.match == 0 and q.phase == "closing")
    assert (closing.bookmaker, closing.home, closing.draw, closing.away) == ("PS", 1.55, 4.07, 7.69)


@pytest.mark.parametrize(
    ("name", "prefix"), [("E0_1819", "B365"), ("E0_1819", "PSC"), ("SP1_1213", "BS")]
)
def test_quote_counts_match_an_independent_count(
    season_file: SeasonFile, name: str, prefix: str
) -> None:
    path = season_file(name)
    batch = parse_football_data(path.read_bytes())
    code, phase = ("PS", "closing") if prefix == "PSC" else (prefix, "pre")
    parsed = sum(1 for q in batch.quotes if q.bookmaker == code and q.phase == phase)
    assert parsed == count_complete_triples(path, prefix)


def test_windows_1252_file_decodes(season_file: SeasonFile) -> None:
    # D1_0001 is cp1252 (referee "Jörg Kessler"); it is not valid UTF-8.
    content = season_file("D1_0001").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        content.decode("utf-8")
    assert "Jörg Kessler" in decode(content)
    assert len(parse_football_data(content).matches) == 306


def test_byte_order_mark_and_crlf_give_the_same_batch(season_file: SeasonFile) -> None:
    content = season_file("E0_1819").read_bytes()
    assert b"\r\n" not in content
    variant = b"\xef\xbb\xbf" + content.replace(b"\n", b"\r\n")
    plain, with_bom = parse_football_data(content), parse_football_data(variant)
    assert [m.identity for m in with_bom.matches] == [m.identity for m in plain.matches]
    assert len(with_bom.quotes) == len(plain.quotes)


def test_crlf_file_as_published(season_file: SeasonFile) -> None:
    content = season_file("D1_1213").read_bytes()
    assert b"\r\n" in content
    batch = parse_football_data(content)
    assert len(batch.matches) == 306
    assert not any("\r" in m.away_team for m in batch.matches)


def test_trailing_empty_header_columns_and_short_rows(season_file: SeasonFile) -> None:
    path = season_file("D1_0304")
    header, rows = csv_rows(path)
    assert header[-1] == ""  # SOURCE.md: 5 trailing empty header columns
    assert any(len(row) != len(header) for row in rows)
    batch = parse_football_data(path.read_bytes())
    assert len(batch.matches) == 306
    assert batch.skipped == []


def test_rows_longer_than_the_header(season_file: SeasonFile) -> None:
    path = season_file("E0_0203")
    header, rows = csv_rows(path)
    assert any(len(row) > len(header) for row in rows)
    assert len(parse_football_data(path.read_bytes()).matches) == 380


def test_blank_all_comma_rows_are_ignored(season_file: SeasonFile) -> None:
    content = season_file("I1_0203").read_bytes()
    lines = content.decode("ascii").splitlines()
    blank = [line for line in lines if line and set(line) == {","}]
    assert len(blank) == 9  # SOURCE.md: 9 blank/all-comma rows
    batch = parse_football_data(content)
    assert len(batch.matches) == 306
    assert batch.skipped == []


def test_two_and_four_digit_years(season_file: SeasonFile) -> None:
    two = parse_football_data(season_file("E0_1617").read_bytes())
    four = parse_football_data(season_file("E0_1718").read_bytes())
    assert two.matches[0].kickoff_date == dt.date(2016, 8, 13)
    assert four.matches[0].kickoff_date == dt.date(2017, 8, 11)
    assert {m.season for m in two.matches} == {"2016/17"}
    assert {m.season for m in four.matches} == {"2017/18"}


def test_zero_price_is_skipped_with_row_and_column_and_the_row_still_imports(
    season_file: SeasonFile,
) -> None:
    # E1_1213 row 532 (Blackpool v Derby, 27/04/13) has B365H = 0.
    batch = parse_football_data(season_file("E1_1213").read_bytes())
    assert [(s.where, s.field) for s in batch.skipped] == [("row 532", "B365H")]
    assert "greater than 1.0" in batch.skipped[0].reason
    index = next(
        i
        for i, m in enumerate(batch.matches)
        if (m.home_team, m.away_team) == ("Blackpool", "Derby")
    )
    bookmakers = {q.bookmaker for q in batch.quotes if q.match == index}
    assert "B365" not in bookmakers
    assert {"BW", "IW", "LB", "WH", "VC"} <= bookmakers


def test_one_blank_price_of_three_is_reported(season_file: SeasonFile) -> None:
    batch = parse_football_data(season_file("I1_0708").read_bytes())
    assert [(s.where, s.field) for s in batch.skipped] == [("row 91", "VCD")]


def test_time_column_is_uk_local_time() -> None:
    # The 2019/20+ layout: a Time column in UK time. 11 Aug 2023 is summer time (UTC+1),
    # 30 Dec 2023 winter time (UTC+0).
    content = (
        b"Div,Date,Time,HomeTeam,AwayTeam,FTHG,FTAG,FTR,B365H,B365D,B365A,MaxH,MaxD,MaxA,"
        b"B365CH,B365CD,B365CA,MaxCH,MaxCD,MaxCA,1XBH,1XBD,1XBA\r\n"
        b"E0,11/08/2023,20:00,Burnley,Man City,0,3,A,8.0,5.5,1.33,8.5,5.75,1.36,"
        b"9.0,5.75,1.3,9.5,6.0,1.33,8.2,5.6,1.35\r\n"
        b"E0,30/12/2023,15:00,Burnley,Liverpool,0,2,A,,,,,,,,,,,,,,,\r\n"
    )
    batch = parse_football_data(content)
    assert batch.matches[0].kickoff == dt.datetime(2023, 8, 11, 19, 0, tzinfo=dt.UTC)
    assert batch.matches[1].kickoff == dt.datetime(2023, 12, 30, 15, 0, tzinfo=dt.UTC)
    assert all(m.kickoff_time_known for m in batch.matches)
    assert {(q.bookmaker, q.phase) for q in batch.quotes} == {
        ("B365", "pre"),
        ("B365", "closing"),
        ("1XB", "pre"),
    }


def test_vc_bet_is_a_bookmaker_not_a_closing_column() -> None:
    columns = find_price_columns(
        ["VCH", "VCD", "VCA", "VCCH", "VCCD", "VCCA", "PSCH", "PSCD", "PSCA"]
    )
    assert {(c.code, c.phase) for c in columns} == {
        ("VC", "pre"),
        ("VC", "closing"),
        ("PS", "closing"),
    }


def test_new_leagues_layout() -> None:
    content = (
        b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA,MaxH,MaxD,MaxA,"
        b"AvgH,AvgD,AvgA\n"
        b"Brazil,Serie A,2012,19/05/2012,22:30,Palmeiras,Portuguesa,1,1,D,1.75,3.86,5.25,"
        b"1.76,3.87,5.3,1.69,3.5,4.9\n"
    )
    batch = parse_football_data(content)
    (match,) = batch.matches
    assert (match.competition, match.season, match.home_team) == ("BRA", "2012", "Palmeiras")
    assert match.kickoff == dt.datetime(2012, 5, 19, 21, 30, tzinfo=dt.UTC)  # BST
    assert [(q.bookmaker, q.home) for q in batch.quotes] == [("PS", 1.75)]


def test_a_season_column_that_is_not_a_season_skips_its_row() -> None:
    content = (
        b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA\n"
        b"Norway,Eliteserien,2019,31/03/2019,17:00,Brann,Viking,1,0,H,2.1,3.4,3.5\n"
        b"Norway,Eliteserien,banana,07/04/2019,17:00,Viking,Brann,1,1,D,2.1,3.4,3.5\n"
        b"Norway,Eliteserien,2019/2021,14/04/2019,17:00,Molde,Brann,2,0,H,1.5,4.0,6.0\n"
    )
    batch = parse_football_data(content)
    assert [(m.home_team, m.season) for m in batch.matches] == [("Brann", "2019")]
    assert [(s.where, s.field) for s in batch.skipped] == [("row 3", "Season"), ("row 4", "Season")]
    assert "season 'banana' is not YYYY/YY" in batch.skipped[0].reason


def test_a_country_without_a_code_of_ours_is_the_competition_as_spelled() -> None:
    # Looser than a code sent as JSON: a season file's codes are kept as the file writes them.
    content = (
        b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA\n"
        b"Czech Republic,First League,2020,19/07/2020,16:00,Slavia,Sparta,2,1,H,1.8,3.6,4.5\n"
    )
    (match,) = parse_football_data(content).matches
    assert match.competition == "Czech Republic"


def test_season_spans_the_file_not_each_date() -> None:
    # 2019/20 ran into August 2020; every match of the file stays in 2019/20.
    content = (
        b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG\n"
        b"E0,09/08/2019,Liverpool,Norwich,4,1\n"
        b"E0,02/08/2020,Arsenal,Chelsea,2,1\n"
    )
    assert {m.season for m in parse_football_data(content).matches} == {"2019/20"}
    given = parse_football_data(content, season="2020/21")
    assert {m.season for m in given.matches} == {"2020/21"}
    with pytest.raises(ValueError, match="season '2019-20 extended' is not YYYY/YY"):
        parse_football_data(content, season="2019-20 extended")


EXTRA_HEADER = b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA\n"


def test_a_calendar_year_given_for_a_real_premier_league_file_relabels_nothing(
    season_file: SeasonFile,
) -> None:
    content = season_file("E0_1819").read_bytes()
    with pytest.raises(
        LeagueSeasonError,
        match=r"^season '2019' is a calendar year, but E0 plays over two years, as 2018/19 or "
        r"2019/20$",
    ):
        parse_football_data(content, season="2019")
    assert {m.season for m in parse_football_data(content, season="2019/20").matches} == {"2019/20"}


@pytest.mark.parametrize(
    ("row", "season", "refused"),
    [
        # A main league and an extra league of July to June: over two years.
        (b"E0,10/08/2018,Man United,Leicester,2,1", "2018", "E0 plays over two years"),
        (b"SP1,17/08/2018,Betis,Levante,0,3", "2019", "SP1 plays over two years"),
        (b"Austria,Bundesliga,,21/07/2019,16:00,Rapid,Salzburg,0,2,A,4,3.8,1.8", "2019", "AUT"),
        # An extra league of a calendar year: within one.
        (b"Brazil,Serie A,,19/05/2012,22:30,Palmeiras,Portuguesa,1,1,D,1.75,3.86,5.25",
         "2012/13", "BRA plays within a calendar year, as 2012 or 2013"),
        # Japan moved to July-June after its 2026 season.
        (b"Japan,J1,,02/03/2019,06:00,Urawa,Sendai,0,0,D,1.7,3.6,5", "2019/20",
         "JPN plays within a calendar year until 2026"),
        (b"Japan,J1,,14/08/2027,11:00,Urawa,Sendai,0,0,D,1.7,3.6,5", "2027",
         "JPN plays over two years from 2026/27, as 2026/27 or 2027/28"),
    ],
)  # fmt: skip
def test_a_season_given_in_the_form_its_league_does_not_play_is_refused(
    row: bytes, season: str, refused: str
) -> None:
    header = EXTRA_HEADER if row.count(b",") > 5 else b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG\n"
    with pytest.raises(LeagueSeasonError, match=refused):
        parse_football_data(header + row + b"\n", season=season)


@pytest.mark.parametrize(
    ("row", "season"),
    [
        (b"E0,10/08/2018,Man United,Leicester,2,1", "2018/19"),
        (b"Brazil,Serie A,,19/05/2012,22:30,Palmeiras,Portuguesa,1,1,D,1.75,3.86,5.25", "2012"),
        (b"Japan,J1,,02/03/2019,06:00,Urawa,Sendai,0,0,D,1.7,3.6,5", "2019"),
        (b"Japan,J1,,06/05/2026,11:00,Urawa,Sendai,0,0,D,1.7,3.6,5", "2026"),
        (b"Japan,J1,,14/08/2026,11:00,Urawa,Sendai,0,0,D,1.7,3.6,5", "2026/27"),
        # Nothing says how a country without a code of ours plays: either form.
        (b"Czech Republic,First League,,19/07/2020,16:00,Slavia,Sparta,2,1,H,1.8,3.6,4.5",
         "2020"),
        (b"Czech Republic,First League,,19/07/2020,16:00,Slavia,Sparta,2,1,H,1.8,3.6,4.5",
         "2020/21"),
    ],
)  # fmt: skip
def test_a_season_given_in_the_form_its_league_plays_names_its_matches(
    row: bytes, season: str
) -> None:
    header = EXTRA_HEADER if row.count(b",") > 5 else b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG\n"
    (match,) = parse_football_data(header + row + b"\n", season=season).matches
    assert match.season == season


def test_a_season_column_in_the_form_its_league_does_not_play_skips_its_row() -> None:
    content = EXTRA_HEADER + (
        b"Norway,Eliteserien,2019,31/03/2019,17:00,Brann,Viking,1,0,H,2.1,3.4,3.5\n"
        b"Norway,Eliteserien,2019/2020,07/04/2019,17:00,Viking,Brann,1,1,D,2.1,3.4,3.5\n"
        b"Austria,Bundesliga,2019,21/07/2019,16:00,Rapid,Salzburg,0,2,A,4,3.8,1.8\n"
        b"Austria,Bundesliga,2019/2020,28/07/2019,16:00,Salzburg,Rapid,3,1,H,1.3,5,9\n"
    )
    batch = parse_football_data(content)
    assert [(m.home_team, m.season) for m in batch.matches] == [
        ("Brann", "2019"),
        ("Salzburg", "2019/20"),
    ]
    assert [(s.where, s.field, s.reason) for s in batch.skipped] == [
        (
            "row 3",
            "Season",
            "season '2019/20' runs over two years, but NOR plays within a calendar year, "
            "as 2019 or 2020",
        ),
        (
            "row 4",
            "Season",
            "season '2019' is a calendar year, but AUT plays over two years, as 2018/19 or 2019/20",
        ),
    ]


def test_season_is_the_one_holding_most_matches() -> None:
    # A league kicking off in late July still plays its season from August on.
    content = (
        b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG\n"
        b"F1,29/07/2005,Paris SG,Metz,4,1\n"
        b"F1,06/08/2005,Lille,Rennes,1,0\n"
        b"F1,13/05/2006,Lyon,Nice,2,2\n"
    )
    assert {m.season for m in parse_football_data(content).matches} == {"2005/06"}


def test_july_kick_off_in_a_real_file(season_file: SeasonFile) -> None:
    batch = parse_football_data(season_file("F1_0506").read_bytes())
    assert min(m.kickoff_date for m in batch.matches) < dt.date(2005, 8, 1)
    assert {m.season for m in batch.matches} == {"2005/06"}


def test_row_level_problems_are_reported_and_other_rows_import() -> None:
    content = (
        b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG,B365H,B365D,B365A\n"
        b"E0,31/02/2019,A,B,1,0,2,3,4\n"
        b"E0,01/03/2019,,B,1,0,2,3,4\n"
        b"E0,01/03/2019,C,C,1,0,2,3,4\n"
        b"E0,01/03/2019,D,E,x,0,abc,3,4\n"
        b"E0,01/03/2019,F,G,1,0,2,3,1001\n"
        b"E0,01/03/2019,F,G,1,0,2,3,4\n"
    )
    batch = parse_football_data(content)
    reasons = {(s.where, s.field): s.reason for s in batch.skipped}
    assert "row 2" in {s.where for s in batch.skipped}
    assert "date" in reasons[("row 2", "Date")]
    assert reasons[("row 3", "HomeTeam")] == "team name is empty"
    assert ("row 4", "AwayTeam") in reasons
    assert "not a number" in reasons[("row 5", "B365H")]
    assert "result not set" in reasons[("row 5", "FTHG/FTAG")]
    assert "maximum" in reasons[("row 6", "B365A")]
    assert "same match as row 6" in reasons[("row 7", None)]
    assert [(m.home_team, m.home_goals) for m in batch.matches] == [("D", None), ("F", 1)]


def test_not_a_season_file() -> None:
    with pytest.raises(FileFormatError, match="lacks 'Date'"):
        parse_football_data(b"Div,HomeTeam,AwayTeam\nE0,A,B\n")
    with pytest.raises(FileFormatError, match="empty"):
        parse_football_data(b"")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10/08/18", dt.date(2018, 8, 10)),
        ("10/08/2018", dt.date(2018, 8, 10)),
        ("01/01/99", dt.date(1999, 1, 1)),
    ],
)
def test_parse_date(text: str, expected: dt.date) -> None:
    assert parse_date(text) == expected


@pytest.mark.parametrize("text", ["2018-08-10", "32/01/2018", "10/8", "10/08/018", ""])
def test_parse_date_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a valid"):
        parse_date(text)


def test_parse_kickoff_rejects_bad_times() -> None:
    with pytest.raises(ValueError, match="hh:mm"):
        parse_kickoff("10/08/2018", "25:00")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2012/2013", "2012/13"), ("2012-13", "2012/13"), ("1819", "2018/19"), ("2012", "2012")],
)
def test_normalise_season(text: str, expected: str) -> None:
    assert normalise_season(text) == expected


# --- the header variants football-data.co.uk has used -------------------------------------

# The first rows of the Greek G1 2000/01 file as the site published it (header and rows
# byte for byte): its team columns are HT and AT.
G1_0001_HEAD = (
    b"Div,Date,HT,AT,FTHG,FTAG,FTR,HTHG,HTAG,HTR,GBH,GBD,GBA,IWH,IWD,IWA\n"
    b"G1,16/09/00,Olympiakos,Eth Asteras,6,0,H,2,0,H,,,,,,\n"
    b"G1,03/02/01,Olympiakos,OFI,5,0,H,3,0,H,1.08,6.5,13.2,,,\n"
    b"G1,10/02/01,Aris,Panathinaikos,1,0,H,1,0,H,3.8,3.1,1.7,3.1,3,1.9\n"
)


def renamed(content: bytes, names: dict[str, str]) -> bytes:
    """A season file whose header names some columns as another layout does."""
    header, newline, rest = content.partition(b"\n")
    columns = [names.get(name, name) for name in header.decode("ascii").split(",")]
    return ",".join(columns).encode("ascii") + newline + rest


def test_greek_files_name_their_teams_ht_and_at() -> None:
    batch = parse_football_data(G1_0001_HEAD)
    assert [(m.competition, m.home_team, m.away_team) for m in batch.matches] == [
        ("G1", "Olympiakos", "Eth Asteras"),
        ("G1", "Olympiakos", "OFI"),
        ("G1", "Aris", "Panathinaikos"),
    ]
    assert [(m.home_goals, m.away_goals) for m in batch.matches] == [(6, 0), (5, 0), (1, 0)]
    assert {m.season for m in batch.matches} == {"2000/01"}
    assert [(q.match, q.bookmaker, q.home, q.draw, q.away) for q in batch.quotes] == [
        (1, "GB", 1.08, 6.5, 13.2),
        (2, "GB", 3.8, 3.1, 1.7),
        (2, "IW", 3.1, 3.0, 1.9),
    ]
    assert batch.skipped == []


def test_a_whole_season_with_ht_and_at_reads_as_with_hometeam_and_awayteam(
    season_file: SeasonFile,
) -> None:
    # E0 2000/01, the same era as the Greek files, with its team columns named as theirs.
    content = season_file("E0_0001").read_bytes()
    greek = parse_football_data(renamed(content, {"HomeTeam": "HT", "AwayTeam": "AT"}))
    assert len(greek.matches) == 380
    assert greek.matches[0].home_team == "Charlton"  # the file's first row
    assert greek.matches[0].away_team == "Man City"
    plain = parse_football_data(content)
    assert [(m.identity, m.home_goals, m.away_goals) for m in greek.matches] == [
        (m.identity, m.home_goals, m.away_goals) for m in plain.matches
    ]
    assert len(greek.quotes) == len(plain.quotes)


def test_goals_and_result_named_either_way_in_either_layout(season_file: SeasonFile) -> None:
    content = season_file("E0_1819").read_bytes()
    short = parse_football_data(renamed(content, {"FTHG": "HG", "FTAG": "AG", "FTR": "Res"}))
    first = short.matches[0]  # Man United 2-1 Leicester
    assert (first.home_goals, first.away_goals) == (2, 1)
    assert sum(m.is_settled for m in short.matches) == 380
    extra = (
        b"Country,League,Season,Date,Time,Home,Away,FTHG,FTAG,FTR,PH,PD,PA\n"
        b"Brazil,Serie A,2012,19/05/2012,22:30,Palmeiras,Portuguesa,1,1,D,1.75,3.86,5.25\n"
    )
    (match,) = parse_football_data(extra).matches
    assert (match.home_goals, match.away_goals) == (1, 1)


def test_a_result_letter_that_contradicts_the_goals_leaves_the_result_unset() -> None:
    content = (
        b"Country,League,Season,Date,Time,Home,Away,HG,AG,Res,PH,PD,PA\n"
        b"Brazil,Serie A,2012,19/05/2012,22:30,Palmeiras,Portuguesa,1,1,D,1.75,3.86,5.25\n"
        b"Brazil,Serie A,2012,20/05/2012,16:00,Santos,Vasco,1,0,A,1.9,3.4,4.2\n"
    )
    batch = parse_football_data(content)
    assert [(s.where, s.field) for s in batch.skipped] == [("row 3", "Res")]
    assert "'A'" in batch.skipped[0].reason
    assert "1-0" in batch.skipped[0].reason
    assert [m.result for m in batch.matches] == ["X", None]
    assert len(batch.quotes) == 2  # the match and its odds are still imported


def test_a_header_without_team_columns_names_every_spelling() -> None:
    with pytest.raises(FileFormatError, match="lacks 'HomeTeam' \\(or 'Home', 'HT'\\)"):
        parse_football_data(b"Div,Date,Team,AwayTeam\nE0,10/08/2018,A,B\n")


# --- upcoming matches: fixtures.csv and new_league_fixtures.csv -----------------------------


def test_fixtures_of_the_main_leagues_are_upcoming_matches_with_their_odds() -> None:
    batch = parse_football_data(MAIN_FIXTURES)
    assert [(m.competition, m.home_team, m.away_team) for m in batch.matches] == [
        ("E0", "Arsenal", "Chelsea"),
        ("SP1", "Barcelona", "Getafe"),
        ("SC0", "Celtic", "Rangers"),
    ]
    assert not any(m.is_settled for m in batch.matches)
    # 15:00 in London on 28 November is 15:00 UTC (winter time).
    assert batch.matches[0].kickoff == dt.datetime(2026, 11, 28, 15, 0, tzinfo=dt.UTC)
    assert {m.season for m in batch.matches} == {"2026/27"}
    assert [(q.match, q.bookmaker, q.home) for q in batch.quotes] == [
        (0, "B365", 2.1),
        (0, "PS", 2.15),
        (1, "B365", 1.2),
    ]
    assert batch.skipped == []


def test_fixtures_of_the_extra_leagues_take_each_league_s_season() -> None:
    batch = parse_football_data(EXTRA_FIXTURES)
    seasons = {m.competition: m.season for m in batch.matches}
    # Brazil and Norway play within a calendar year; Austria and Mexico from July to June,
    # as the Season column of their results files says ("2026", "2026/2027").
    assert seasons == {"BRA": "2026", "NOR": "2026", "AUT": "2026/27", "MEX": "2026/27"}
    assert not any(m.is_settled for m in batch.matches)
    assert [(q.match, q.bookmaker, q.home, q.draw, q.away) for q in batch.quotes] == [
        (0, "PS", 1.7, 3.6, 5.0)
    ]
    # 02:00 in London on 30 November is 02:00 UTC.
    assert batch.matches[3].kickoff == dt.datetime(2026, 11, 30, 2, 0, tzinfo=dt.UTC)


def test_a_july_fixture_of_a_league_starting_in_july_belongs_to_the_new_season() -> None:
    content = (
        b"Country,League,Date,Time,Home,Away,PSH,PSD,PSA\n"
        b"Switzerland,Super League,18/07/2026,18:00,Basel,Young Boys,2.6,3.5,2.6\n"
        b"Sweden,Allsvenskan,18/07/2026,15:00,Malmo FF,AIK,1.8,3.6,4.4\n"
    )
    seasons = {m.competition: m.season for m in parse_football_data(content).matches}
    assert seasons == {"SWZ": "2026/27", "SWE": "2026"}


def test_a_japanese_fixture_takes_the_season_form_of_its_date() -> None:
    # Japan plays the calendar year 2026 (its last), then from July: 2026/27. A fixture file
    # has no Season column, so its date must give the season Japan's own file would name,
    # one that the check of a given season takes.
    header = b"Country,League,Date,Time,Home,Away,PSH,PSD,PSA\n"
    for row, expected in (
        (b"Japan,J1 League,01/03/2026,06:00,Kashima,Urawa,2.1,3.3,3.4\n", "2026"),
        (b"Japan,J1 League,15/08/2026,11:00,Urawa,Kashima,2.2,3.3,3.2\n", "2026/27"),
        (b"Japan,J1 League,01/03/2025,06:00,Kashima,Urawa,2.1,3.3,3.4\n", "2025"),
    ):
        (match,) = parse_football_data(header + row).matches
        assert match.season == expected
        assert check_league_season("JPN", expected) == expected


def test_the_leagues_a_file_starts_with_are_read_from_its_first_bytes(
    season_file: SeasonFile,
) -> None:
    content = season_file("SP1_1819").read_bytes()
    cut = content[:5000]
    assert not cut.endswith(b"\n")  # a row is cut short, and left out
    assert leading_competitions(cut) == {"SP1"}
    assert leading_competitions(MAIN_FIXTURES) == {"E0", "SP1", "SC0"}
    assert leading_competitions(EXTRA_FIXTURES) == {"BRA", "NOR", "AUT", "MEX"}
    assert leading_competitions(content.split(b"\n", 1)[0]) == frozenset()  # the header alone
    with pytest.raises(FileFormatError, match="lacks 'Div'"):
        leading_competitions(b"name,age\nann,3\n")


@pytest.mark.parametrize(
    ("name", "row", "prefix", "shown"),
    [
        # Home 2.4, draw 1.02, away 3.0: 1/2.4 + 1/1.02 + 1/3 - 1 = +0.730.
        ("D1_1112", "row 304", "WH", "+0.730"),
        # Home 2.4, draw 1.2, away 2.7: 1/2.4 + 1/1.2 + 1/2.7 - 1 = +0.620.
        ("E1_0910", "row 56", "SB", "+0.620"),
    ],
)
def test_a_quote_whose_overround_no_book_has_is_skipped_with_its_columns(
    season_file: SeasonFile, name: str, row: str, prefix: str, shown: str
) -> None:
    path = season_file(name)
    batch = parse_football_data(path.read_bytes())
    assert [(s.where, s.field) for s in batch.skipped] == [(row, f"{prefix}H/{prefix}D/{prefix}A")]
    assert f"overround {shown}" in batch.skipped[0].reason
    assert (
        sum(q.bookmaker == prefix for q in batch.quotes) == count_complete_triples(path, prefix) - 1
    )
