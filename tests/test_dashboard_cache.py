"""The dashboard's pages as a browser keeps them: each names what it shows with a weak ETag,
answers 304 to a request that holds it, is rendered once per ETag, and gets a new ETag
when a quote, a result or a model activation changes what it shows."""

from __future__ import annotations

import datetime as dt
from typing import cast

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.deps import board_moment
from app.api.routers import dashboard as dashboard_router
from app.db.orm import Competition, Match
from app.domain.vocabulary import Method
from app.state import app_state
from tests.apps import ADMIN_KEY
from tests.helpers import hand_made_version, store_versions
from tests.plugins.track_record import Fixture, settle, store_match
from tests.upcoming_matches import ARSENAL, CAPTURED, NOW, Seeded, quote_items, store

CSP_HEADER = "content-security-policy"


def paths_of(seeded: Seeded) -> list[str]:
    return [
        "/dashboard",
        "/dashboard?competition=E0",
        f"/dashboard/matches/{seeded.ids['Arsenal']}",
        "/dashboard/model",
        "/dashboard/track-record",
    ]


@pytest.fixture
def still(seeded: Seeded) -> Seeded:
    """The seeded app with its board read at one moment: the ages the pages show hold."""

    async def moment() -> dt.datetime:
        return NOW

    cast(FastAPI, seeded.client.app).dependency_overrides[board_moment] = moment
    return seeded


def etags(client: TestClient, paths: list[str]) -> dict[str, str]:
    found = {}
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, response.text
        found[path] = response.headers["etag"]
    return found


def test_each_page_answers_304_to_the_etag_it_sent(still: Seeded) -> None:
    for path in paths_of(still):
        first = still.client.get(path)
        etag = first.headers["etag"]
        assert etag.startswith('W/"'), path
        assert first.headers["cache-control"] == "no-cache"
        again = still.client.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304, path
        assert again.content == b""
        assert again.headers["etag"] == etag
        # The page's policy goes with the 304 too: the browser shows the page it kept.
        assert again.headers[CSP_HEADER] == first.headers[CSP_HEADER]
        other = still.client.get(path, headers={"If-None-Match": 'W/"other", ' + etag})
        assert other.status_code == 304, path
        assert still.client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_head_request_has_the_pages_headers_and_no_body(still: Seeded) -> None:
    for path in paths_of(still):
        got = still.client.get(path)
        head = still.client.head(path)
        assert head.status_code == 200, path
        assert head.content == b""
        assert head.headers["etag"] == got.headers["etag"]
        assert head.headers["content-type"] == "text/html; charset=utf-8"


def test_a_page_is_rendered_once_for_its_etag(
    still: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[str] = []
    body_of = dashboard_router.ShownPage.body

    def counted(page: dashboard_router.ShownPage, name: str, context: dict[str, object]) -> bytes:
        rendered.append(name)
        return body_of(page, name, context)

    monkeypatch.setattr(dashboard_router.ShownPage, "body", counted)
    paths = paths_of(still)
    for path in paths:
        first, second = still.client.get(path), still.client.get(path)
        assert first.headers["etag"] == second.headers["etag"]
        assert first.content == second.content
    assert len(rendered) == len(paths)


def test_a_kept_page_is_the_page_rendered_afresh(still: Seeded) -> None:
    kept = {path: still.client.get(path) for path in paths_of(still)}
    # A process that kept nothing renders each page again.
    app_state(still.client.app_state).pages.forget()
    for path, first in kept.items():
        fresh = still.client.get(path)
        assert fresh.headers["etag"] == first.headers["etag"], path
        assert fresh.content == first.content, path


def test_a_new_quote_changes_the_pages_that_show_it(still: Seeded) -> None:
    arsenal = f"/dashboard/matches/{still.ids['Arsenal']}"
    before = etags(still.client, [*paths_of(still), arsenal])
    # Bet&Win, the model's one bookmaker, moves Arsenal's prices ten minutes later (a book
    # without margin again: 1/2.5 + 1/5 + 1/2.5 = 1).
    moved = next(item for item in quote_items(ARSENAL) if item["bookmaker"] == "BW")
    captured = (CAPTURED + dt.timedelta(minutes=10)).isoformat()
    store(still.client, [moved | {"home": 2.5, "draw": 5.0, "away": 2.5, "captured_at": captured}])
    after = etags(still.client, [*paths_of(still), arsenal])
    # The board, its filtered page of E0 (Arsenal's), the match and the model page's share
    # of weight on the board all read the new quote; the track record does not.
    for path in ("/dashboard", "/dashboard?competition=E0", arsenal, "/dashboard/model"):
        assert after[path] != before[path], path
    assert after["/dashboard/track-record"] == before["/dashboard/track-record"]
    stale = still.client.get(arsenal, headers={"If-None-Match": before[arsenal]})
    assert stale.status_code == 200
    assert "40.0 %" in stale.text  # 1 / 2.5: the new price, served by Bet&Win alone
    assert "20.0 %" in stale.text


def test_an_activation_changes_every_page_that_shows_the_model(still: Seeded) -> None:
    before = etags(still.client, paths_of(still))
    weights = {"B365": 1.0}
    (version,) = store_versions(
        still.database_url, hand_made_version(weights=weights, method=Method.MULTIPLICATIVE)
    )
    admin = {"X-API-Key": ADMIN_KEY}
    # Stored active already; activated again by the API, as a roll-back would be.
    response = still.client.post(f"/admin/models/{version}/activate", headers=admin)
    assert response.status_code == 200, response.text
    app_state(still.client.app_state).models.refresh()
    after = etags(still.client, paths_of(still))
    for path in paths_of(still):
        assert after[path] != before[path], path


def test_a_result_changes_the_track_record_pages(
    track_client: TestClient, logged: dict[str, int], session: Session
) -> None:
    paths = ["/dashboard/track-record", "/dashboard/model", f"/dashboard/matches/{logged['M1']}"]
    before = etags(track_client, paths)
    assert (
        track_client.get(paths[0], headers={"If-None-Match": before[paths[0]]}).status_code == 304
    )
    # M1 was a home win; corrected to a draw.
    settle(session, logged["M1"], (1, 1))
    after = etags(track_client, paths)
    for path in paths:
        assert after[path] != before[path], path
    response = track_client.get(paths[0], headers={"If-None-Match": before[paths[0]]})
    assert response.status_code == 200


@pytest.mark.usefixtures("logged")
def test_a_match_outside_the_log_leaves_the_track_record_as_it_was(
    track_client: TestClient, session: Session
) -> None:
    page = "/dashboard/track-record"
    before = track_client.get(page).headers["etag"]
    # A fixture to come, and a change to it, score nothing: the kept track record holds.
    coming = Fixture("Leeds", "Wolves", dt.datetime(2026, 5, 1, 15, tzinfo=dt.UTC), (0, 0), {})
    match_id = store_match(session, coming)
    assert track_client.get(page).headers["etag"] == before
    moved = session.get(Match, match_id)
    assert moved is not None
    moved.kickoff += dt.timedelta(hours=2)
    session.flush()
    assert track_client.get(page).headers["etag"] == before
    # A new competition is one more choice of the page's filter.
    session.add(Competition(code="SP1"))
    session.flush()
    after = track_client.get(page)
    assert after.headers["etag"] != before
    assert '<option value="SP1"' in after.text


def test_the_upcoming_etag_follows_the_times_it_shows(seeded: Seeded) -> None:
    app = cast(FastAPI, seeded.client.app)
    moments = iter([NOW, NOW, NOW + dt.timedelta(minutes=5)])

    async def moment() -> dt.datetime:
        return next(moments)

    app.dependency_overrides[board_moment] = moment
    first, second, later = (seeded.client.get("/dashboard") for _ in range(3))
    assert second.headers["etag"] == first.headers["etag"]
    # Five minutes on, the window shown starts five minutes later (its ends are shown to
    # the minute): another page.
    assert later.headers["etag"] != first.headers["etag"]
    assert later.content != first.content


# Each option a page can be asked for, alone; the zone too, as before.
OPTION_VARIANTS: list[dict[str, str | list[str]]] = [
    {},
    {"refresh": "60"},
    {"refresh": "300"},
    {"bookmakers": ["B365"]},
    {"bookmakers": ["B365", "PS"]},
    {"bankroll": "1000"},
    {"min_ev": "0.05"},
    {"sort": "ev"},
    {"value_only": "true"},
    {"tz": "Asia/Tokyo"},
]


def test_each_option_is_a_page_of_its_own(still: Seeded) -> None:
    for path in paths_of(still):
        found: dict[str, dict[str, str | list[str]]] = {}
        for options in OPTION_VARIANTS:
            response = still.client.get(path, params=options)
            assert response.status_code == 200, (path, options)
            etag = response.headers["etag"]
            # Another option (its links keep it, the page shows it): another ETag.
            assert etag not in found, (path, options, found.get(etag))
            found[etag] = options
            again = still.client.get(path, params=options, headers={"If-None-Match": etag})
            assert again.status_code == 304, (path, options)
        # Options that ask for the defaults, or blank, are the plain page.
        plain = next(etag for etag, options in found.items() if not options)
        for same in ({"sort": "kickoff"}, {"refresh": "", "bankroll": "", "min_ev": ""}):
            response = still.client.get(path, params=same)
            assert response.headers["etag"] == plain, (path, same)


def test_a_page_kept_for_one_option_is_not_served_for_another(still: Seeded) -> None:
    for path in paths_of(still):
        reloading = still.client.get(path, params={"refresh": "60"})
        plain = still.client.get(path)
        assert '<meta http-equiv="refresh" content="60">' in reloading.text, path
        assert 'http-equiv="refresh"' not in plain.text, path
        # Kept, each is served again as it was rendered.
        assert still.client.get(path, params={"refresh": "60"}).content == reloading.content
        assert still.client.get(path).content == plain.content
