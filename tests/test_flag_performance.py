"""The flag ledger's settled flags in GET /performance and on the track-record page: per
value source, per competition and all together, from flags raised through the real ingest
path and settled by results, each figure worked out by hand (intervals by scipy's t).

The five flags (books without margin, see tests/flag_books.py):

| match | source | comp. | kickoff | raised at | PS's close | CLV | result | return |
|---|---|---|---|---|---|---|---|---|
| A Arsenal v Chelsea | ensemble | E0 | 10 Jan | 4.0 (2) | 1.6, 4, 8 | 4/8 − 1 = −0.5 | 1 | −1 |
| B Everton v Fulham | ensemble | E0 | 10 Jan | 4.0 (2) | 2.5, 5, 2.5 (*) | 8/5 − 1 = 0.6 | 2 | 3 |
| C Sevilla v Getafe | ensemble | SP1 | 10 Jan | 4.0 (2) | none | – | 2 | 3 |
| D Betis v Cadiz | PS | SP1 | 17 Jan | 2.2 (1) | 2, 4, 4 | 2.2/2 − 1 = 0.1 | 1 | 1.2 |
| E Leeds v Wolves | PS | E0 | 17 Jan | 2.2 (1) | 1.6, 4, 8 | 2.2 × 5/8 − 1 = 0.375 | X | −1 |

(*) from the season file, which arrives after B's result.

With PS as the value source, PS 2, 4, 4 (fair 1/2, 1/4, 1/4) and B365 2.2, 3.6, 3.6 flag the
home side at B365's 2.2 (EV 0.1; the draw and the away side at PS's 4.0 have EV 0); PS's
close 1.6, 4, 8 keeps it the match's bet (EV 0.375 against 0 and 0). A's close improves
its flag to 8.0; it is scored from the 4.0 it was raised at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import ValueFlag
from app.settings import Settings
from tests.admin_requests import post_csv, post_odds
from tests.apps import build_app, refit_settings_for
from tests.flag_books import at, book, raise_away_flag, season_file
from tests.helpers import received_at

FIRST_KICKOFF = dt.datetime(2026, 1, 10, 15, 0, tzinfo=dt.UTC)
SECOND_KICKOFF = dt.datetime(2026, 1, 17, 15, 0, tzinfo=dt.UTC)
RAISED_BEFORE = dt.timedelta(days=5)
CLOSE_BEFORE = dt.timedelta(minutes=10)
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


@pytest.fixture
def settings(database_url: str) -> Settings:
    """The flags of the default client valued by the served prediction (``ensemble``)."""
    return refit_settings_for(database_url)


@pytest.fixture
def ps_client(settings: Settings, session: Session) -> Iterator[TestClient]:
    """The app valuing by PS's de-margined line, on the test's session."""
    ps_settings = settings.model_copy(update={"value_probability_source": "PS"})
    with TestClient(build_app(ps_settings, session)) as client:
        yield client


def live_close(
    client: TestClient,
    headers: dict[str, str],
    kickoff: dt.datetime,
    prices: tuple[float, float, float],
    **match: str,
) -> None:
    """PS's quote captured ten minutes before ``kickoff``, received five minutes before."""
    with received_at(client, kickoff - CLOSE_BEFORE / 2):
        post_odds(client, headers, book(at(kickoff), "PS", prices, kickoff - CLOSE_BEFORE, **match))


def raise_home_flag_by_ps(
    client: TestClient, headers: dict[str, str], kickoff: dt.datetime, **match: str
) -> None:
    moment = kickoff - RAISED_BEFORE
    captured = moment - dt.timedelta(hours=1)
    with received_at(client, moment):
        post_odds(
            client,
            headers,
            book(at(kickoff), "PS", (2.0, 4.0, 4.0), captured, **match),
            book(at(kickoff), "B365", (2.2, 3.6, 3.6), captured, **match),
        )


def settle(client: TestClient, headers: dict[str, str], *results: tuple[int, int, int]) -> None:
    body = {"results": [{"match_id": m, "home_goals": h, "away_goals": a} for m, h, a in results]}
    response = client.post("/admin/results", json=body, headers=headers)
    assert response.status_code == 200, response.text


def flagged_matches(session: Session) -> list[int]:
    return list(session.scalars(select(ValueFlag.match_id).order_by(ValueFlag.id)))


@pytest.fixture
def five_flags(
    client: TestClient, ps_client: TestClient, session: Session, admin_headers: dict[str, str]
) -> None:
    """The five flags of the table above, settled; B's close not in yet."""
    everton = {"home_team": "Everton", "away_team": "Fulham"}
    sevilla = {"home_team": "Sevilla", "away_team": "Getafe", "competition": "SP1"}
    betis = {"home_team": "Betis", "away_team": "Cadiz", "competition": "SP1"}
    leeds = {"home_team": "Leeds", "away_team": "Wolves"}
    raised = FIRST_KICKOFF - RAISED_BEFORE
    for match in ({}, everton, sevilla):
        raise_away_flag(client, admin_headers, at(FIRST_KICKOFF), raised, **match)
    live_close(client, admin_headers, FIRST_KICKOFF, (1.6, 4.0, 8.0))
    for match in (betis, leeds):
        raise_home_flag_by_ps(ps_client, admin_headers, SECOND_KICKOFF, **match)
    live_close(ps_client, admin_headers, SECOND_KICKOFF, (2.0, 4.0, 4.0), **betis)
    live_close(ps_client, admin_headers, SECOND_KICKOFF, (1.6, 4.0, 8.0), **leeds)
    a, b, c, d, e = flagged_matches(session)
    settle(client, admin_headers, (a, 2, 1), (b, 0, 2), (c, 0, 1), (d, 1, 0), (e, 1, 1))


def close_of_b(client: TestClient, headers: dict[str, str]) -> None:
    """B's close arrives with the season file, after its result."""
    response = post_csv(client, headers, season_file("Everton", "Fulham", (0, 2), (2.5, 5.0, 2.5)))
    assert response.status_code == 200, response.text


def flags_section(client: TestClient, **params: str) -> dict[str, Any]:
    response = client.get("/performance", params=params)
    assert response.status_code == 200, response.text
    section: dict[str, Any] = response.json()["flags"]
    return section


def expected(name: str | None, returns: Sequence[float], clv: Sequence[float]) -> dict[str, Any]:
    """A group's figures, each interval by scipy's t (none from fewer than 2 values)."""
    return {
        "name": name,
        "flags": len(returns),
        "flags_with_close": len(clv),
        "clv": mean_interval(clv),
        "roi": mean_interval(returns),
        "profit": pytest.approx(sum(returns)),
    }


def mean_interval(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"mean": None, "low": None, "high": None}
    mean = sum(values) / len(values)
    if len(values) < 2:
        return {"mean": pytest.approx(mean), "low": None, "high": None}
    low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=stats.sem(values))
    return {"mean": pytest.approx(mean), "low": pytest.approx(low), "high": pytest.approx(high)}


@pytest.mark.usefixtures("five_flags")
def test_the_settled_flags_by_source_by_competition_and_together(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    close_of_b(client, admin_headers)
    section = flags_section(client)
    assert section["all"] == expected(None, [-1, 3, 3, 1.2, -1], [-0.5, 0.6, 0.1, 0.375])
    # Sorted by name: "PS" before "ensemble".
    assert section["by_source"] == [
        expected("PS", [1.2, -1], [0.1, 0.375]),
        expected("ensemble", [-1, 3, 3], [-0.5, 0.6]),
    ]
    assert section["by_competition"] == [
        expected("E0", [-1, 3, -1], [-0.5, 0.6, 0.375]),
        expected("SP1", [3, 1.2], [0.1]),
    ]
    # By hand: the mean CLV of the ensemble's two flags is 0.05, s = 1.1/√2, so the half
    # width is t(0.975, 1) × s/√2 = 12.7062 × 0.55.
    clv = section["by_source"][1]["clv"]
    assert (clv["low"], clv["high"]) == pytest.approx((0.05 - 6.98841, 0.05 + 6.98841), abs=1e-4)


@pytest.mark.usefixtures("five_flags")
def test_the_window_and_competition_are_those_of_the_track_record(client: TestClient) -> None:
    second_week = flags_section(client, **{"from": "2026-01-15T00:00:00Z"})
    assert second_week["all"] == expected(None, [1.2, -1], [0.1, 0.375])
    assert [group["name"] for group in second_week["by_source"]] == ["PS"]
    # Kickoffs before `to`: the second kickoff itself is left out.
    first_week = flags_section(client, to=at(SECOND_KICKOFF))
    assert first_week["all"] == expected(None, [-1, 3, 3], [-0.5])
    spain = flags_section(client, competition="SP1")
    assert spain["all"] == expected(None, [3, 1.2], [0.1])
    assert spain["by_competition"] == [expected("SP1", [3, 1.2], [0.1])]


@pytest.mark.usefixtures("five_flags")
def test_a_close_that_comes_after_the_result_is_answered_at_once(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    before = flags_section(client, competition="E0")
    assert before["all"] == expected(None, [-1, 3, -1], [-0.5, 0.375])
    close_of_b(client, admin_headers)
    after = flags_section(client, competition="E0")
    assert after["all"] == expected(None, [-1, 3, -1], [-0.5, 0.6, 0.375])


def test_an_empty_window_has_no_flag_and_no_figure(client: TestClient) -> None:
    body = client.get("/performance").json()
    assert body["flags"] == {
        "all": expected(None, [], []),
        "by_source": [],
        "by_competition": [],
    }
    assert body["performance"]["matches"] == 0


@pytest.mark.usefixtures("five_flags")
def test_the_track_record_page_shows_the_flags(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    close_of_b(client, admin_headers)
    response = client.get("/dashboard/track-record")
    assert response.status_code == 200, response.text
    assert response.headers["content-security-policy"] == CSP
    text = " ".join(response.text.split()).replace("> <", "><")
    assert "<script" not in text
    start = text.index('<table id="flags">')
    table = text[start : text.index("</table>", start)]
    # All together: CLV mean 0.575 / 4 = +14.4 %, ROI 5.2 / 5 = +104.0 %, profit +5.20;
    # SP1 has one flag with a close: a CLV without an interval.
    all_row = table[table.index("all flags") :]
    assert "<td>5</td><td>4</td>" in all_row
    assert "+14.4 % [" in all_row
    assert "+104.0 % [" in all_row
    assert "<td>+5.20</td>" in all_row
    # The competition by its name, its code in the title.
    sp1 = table[table.index('<span class="named" title="SP1">La Liga</span>') :]
    assert "<td>2</td><td>1</td><td>+10.0 %</td><td>+210.0 % [" in sp1
    assert "Flags, scored from when they were raised" in text


def test_the_track_record_page_says_when_no_flag_is_settled(client: TestClient) -> None:
    response = client.get("/dashboard/track-record")
    assert response.status_code == 200, response.text
    assert "No flag of the ledger is settled in this window." in response.text
