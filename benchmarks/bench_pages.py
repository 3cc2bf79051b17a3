"""The dashboard's pages against the JSON they show, in one process.

Builds the week of ``bench_upcoming`` (200 upcoming matches, each quoted by 6 to 40
bookmakers; a hand-made model trusting six of them) in a SQLite database of its own, runs
the app in this process (``TestClient``) and times each request (median of ``--requests``):

* ``/upcoming?limit=200`` written (its one-second body cache emptied before each request)
  and kept (the body of the last second);
* ``/dashboard`` (the same board) rendered (the kept pages emptied before each request),
  kept (rendered once for its ETag) and 304 (the ETag sent back);
* a match page and the model page, rendered and kept.

It prints each figure and the ratio of each page to the JSON of the same board; with
``--profile`` it also prints where a render of the board's page spends its time (cProfile).

Run: ``python benchmarks/bench_pages.py [--requests 30] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.api.routers import dashboard as dashboard_router
from app.main import create_app
from app.state import app_state
from benchmarks.bench_upcoming import MATCHES, week
from benchmarks.bench_value_bets import POOL
from benchmarks.common import ADMIN_KEY, prepare

BOARD_JSON = "/upcoming?limit=200"


def median_ms(request: Callable[[], object], before: Callable[[], None], count: int) -> float:
    times = []
    for _ in range(count):
        before()
        started = time.perf_counter()
        request()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def nothing() -> None:
    return None


def get(client: TestClient, path: str, **headers: str) -> Callable[[], object]:
    def request() -> object:
        response = client.get(path, headers=headers)
        assert response.status_code in (200, 304), (path, response.status_code)
        return response

    return request


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        settings = prepare(Path(directory), POOL)
        with TestClient(create_app(settings)) as client:
            state = app_state(client.app_state)
            forget_pages, forget_bodies = state.pages.forget, state.upcoming_bodies.forget
            quotes = week(random.Random(7), dt.datetime.now(dt.UTC))
            stored = client.post(
                "/admin/odds", json={"quotes": quotes}, headers={"X-API-Key": ADMIN_KEY}
            )
            assert stored.status_code == 200, stored.text
            board = client.get(BOARD_JSON).json()
            assert len(board["items"]) == MATCHES, len(board["items"])
            match_page = f"/dashboard/matches/{board['items'][0]['match']['id']}"
            etag = client.get("/dashboard").headers["etag"]
            count = args.requests
            figures = {
                "upcoming JSON, written": median_ms(get(client, BOARD_JSON), forget_bodies, count),
                "upcoming JSON, kept": median_ms(get(client, BOARD_JSON), nothing, count),
                "board page, rendered": median_ms(get(client, "/dashboard"), forget_pages, count),
                "board page, kept": median_ms(get(client, "/dashboard"), nothing, count),
                "board page, 304": median_ms(
                    get(client, "/dashboard", **{"If-None-Match": etag}), nothing, count
                ),
                "match page, rendered": median_ms(get(client, match_page), forget_pages, count),
                "match page, kept": median_ms(get(client, match_page), nothing, count),
                "model page, rendered": median_ms(
                    get(client, "/dashboard/model"), forget_pages, count
                ),
                "model page, kept": median_ms(get(client, "/dashboard/model"), nothing, count),
            }
            if args.profile:
                profile(client)
    print(f"{MATCHES} upcoming matches, {len(quotes):,} quotes; median of {count} requests")
    written = figures["upcoming JSON, written"]
    for name, value in figures.items():
        print(f"  {name:24} {value:8.2f} ms  {value / written:5.2f}x the JSON written")


def profile(client: TestClient) -> None:
    """Where a render of the board's page spends its time (the rendering of the template,
    on the worker thread that renders it)."""
    app_state(client.app_state).pages.forget()
    profiler = cProfile.Profile()
    render = dashboard_router.ShownPage.body

    def profiled(page: dashboard_router.ShownPage, name: str, context: dict[str, Any]) -> bytes:
        return profiler.runcall(render, page, name, context)

    setattr(dashboard_router.ShownPage, "body", profiled)  # noqa: B010
    try:
        client.get("/dashboard")
    finally:
        setattr(dashboard_router.ShownPage, "body", render)  # noqa: B010
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
