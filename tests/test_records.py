"""The rules of a field every source shares: a season's forms, a name's characters.

Expected values are read off the rules as documented (README, "Importing a season"), not
taken from the code's output.
"""

from __future__ import annotations

import pytest

from app.domain.records import check_season, optional_season

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
