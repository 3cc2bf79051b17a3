"""The rules of a field every source shares: a season's forms, a name's characters.

Expected values are read off the rules as documented (README, "Importing a season"), not
taken from the code's output.
"""

from __future__ import annotations

import re

import pytest

from app.domain.records import (
    check_bookmaker_name,
    check_season,
    check_team_name,
    optional_season,
)

# --- seasons -------------------------------------------------------------------------------


@pytest.mark.parametrize("season", ["2018/19", "1999/00", "2000/01", "1900/01", "2019", "1995"])
def test_a_season_of_two_consecutive_years_or_one_calendar_year(season: str) -> None:
    assert check_season(season) == season


def test_a_season_is_trimmed() -> None:
    assert check_season(" 2018/19 ") == "2018/19"


@pytest.mark.parametrize(
    "season",
    [
        "banana",
        "x; DROP",
        "2018/20",  # not consecutive
        "2018/18",
        "1999/01",
        "2018-19",  # another separator
        "2018/2019",  # the second year in full
        "18/19",
        "201819",
        "2018/1",
        "2018/19 extra",
        "Serie A 02-03",
        "１９９９",  # full-width digits
        "0999",  # before 1900
        "2100",  # after 2099
        "2099/00",  # ends in 2100
    ],
)
def test_any_other_season_is_refused_naming_the_expected_form(season: str) -> None:
    with pytest.raises(ValueError, match=r"YYYY/YY .*2018/19.* YYYY") as refused:
        check_season(season)
    assert repr(season.strip()) in str(refused.value)


def test_a_too_long_season_says_so_first() -> None:
    with pytest.raises(ValueError, match="season is longer than 16 characters"):
        check_season("x" * 17)


@pytest.mark.parametrize("blank", [None, "", "   "])
def test_a_blank_season_is_not_given(blank: str | None) -> None:
    assert optional_season(blank) is None


def test_a_given_season_is_checked() -> None:
    assert optional_season("2019") == "2019"
    with pytest.raises(ValueError, match="YYYY/YY"):
        optional_season("banana")


# --- names ---------------------------------------------------------------------------------

# "München" with the ü as one character (NFC) and as u + combining diaeresis (NFD).
BAYERN_NFC = "Bayern M\u00fcnchen"
BAYERN_NFD = "Bayern Mu\u0308nchen"


def test_a_name_is_stored_in_its_composed_form() -> None:
    assert BAYERN_NFC != BAYERN_NFD
    assert check_team_name(BAYERN_NFD) == BAYERN_NFC
    assert check_team_name(BAYERN_NFC) == BAYERN_NFC
    assert check_bookmaker_name("Cafe\u0301 Bets") == "Caf\u00e9 Bets"


@pytest.mark.parametrize(
    ("character", "described"),
    [
        ("\u200b", "U+200B ZERO WIDTH SPACE"),
        ("\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u2028", "U+2028 LINE SEPARATOR"),
        ("\u2029", "U+2029 PARAGRAPH SEPARATOR"),
        ("\u00ad", "U+00AD SOFT HYPHEN"),
        ("\u200d", "U+200D ZERO WIDTH JOINER"),
    ],
)
def test_invisible_characters_in_a_name_are_refused(character: str, described: str) -> None:
    for check in (check_team_name, check_bookmaker_name):
        with pytest.raises(ValueError, match=re.escape(described)) as refused:
            check(f"Bayern{character}Munich")
        assert "invisible" in str(refused.value)
    # At either end too: it is not whitespace to be trimmed (U+2028 is, and goes).
    if character != "\u2028" and character != "\u2029":
        with pytest.raises(ValueError, match=re.escape(described)):
            check_team_name(f"{character}Arsenal")


@pytest.mark.parametrize("control", ["\x00", "\x1f", "\x7f", "\x85", "\x9f"])
def test_control_characters_in_a_name_are_refused(control: str) -> None:
    with pytest.raises(ValueError, match="team name contains control characters"):
        check_team_name(f"Man{control}United")


def test_visible_characters_of_every_script_are_kept() -> None:
    for name in ("Atlético Madrid", "Beşiktaş", "Црвена звезда", "浦和レッズ", "O'Higgins"):
        assert check_team_name(name) == name
