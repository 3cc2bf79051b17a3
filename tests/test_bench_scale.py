"""The scale benchmark's bookkeeping: nearest-rank percentiles, every request of a closed
loop recorded once with its status, and its block on the performance page the rendering
of its JSON figures. No benchmark runs here."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks import pages
from benchmarks.load_client import (
    TIMED_OUT,
    Call,
    Samples,
    closed_loop,
    percentile,
    summarize,
)
from benchmarks.pages import PERFORMANCE_PAGE
from benchmarks.scale_figures import (
    FIGURES_FILE,
    NAME,
    Comparison,
    Memory,
    load_figures,
    render_block,
)


def test_the_performance_page_shows_the_rendering_of_the_scale_figures() -> None:
    block = pages.read_block(PERFORMANCE_PAGE.read_text(), NAME)

    assert FIGURES_FILE.is_file(), f"{FIGURES_FILE} is missing"
    assert block is not None, f"{PERFORMANCE_PAGE} has no block {NAME}"
    assert block == render_block(load_figures()), (
        f"the block {NAME} of {PERFORMANCE_PAGE.name} is not the rendering of "
        f"{FIGURES_FILE.name}: run benchmarks/bench_scale.py instead of editing it"
    )


def test_each_scale_run_states_when_where_and_how_it_was_measured() -> None:
    figures = load_figures()

    assert figures.runs
    block = render_block(figures)
    for run in figures.runs:
        for told in (run.measured.measured_on, run.measured.commit, run.measured.options):
            assert told in block


# The worked example of the nearest-rank method: the smallest value with at least the
# share at or below it, at rank ceil(share / 100 * 5).
@pytest.mark.parametrize(
    ("share", "expected"), [(5, 15.0), (30, 20.0), (40, 20.0), (50, 35.0), (100, 50.0)]
)
def test_a_percentile_is_the_nearest_rank(share: float, expected: float) -> None:
    assert percentile([35.0, 20.0, 15.0, 50.0, 40.0], share) == expected


@pytest.mark.parametrize("share", [0, -1, 100.5])
def test_a_percentile_outside_its_range_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="percentile is in"):
        percentile([1.0], share)


def test_a_run_is_summed_up_from_every_request() -> None:
    samples = Samples(seconds=4.0)
    # 1 to 100 ms: rank 50 is 50 ms, rank 99 is 99 ms.
    for millisecond in range(1, 101):
        samples.add(millisecond / 1000, 200)
    samples.kept[0] = samples.kept[0].__class__(0.001, 500)
    samples.kept[1] = samples.kept[1].__class__(0.002, 503)
    samples.kept[2] = samples.kept[2].__class__(0.003, 404)
    samples.kept[3] = samples.kept[3].__class__(0.004, TIMED_OUT)

    summary = summarize(samples)

    assert summary.requests == 100
    assert summary.per_second == 25.0
    assert summary.p50_ms == pytest.approx(50.0)
    assert summary.p99_ms == pytest.approx(99.0)
    assert summary.max_ms == pytest.approx(100.0)
    assert summary.server_errors == 2
    assert summary.unavailable == 1
    assert summary.other_errors == 2


class CountingServer(ThreadingHTTPServer):
    """Answers ``/ok`` 200 and ``/fail`` 500; ``/hang`` waits until the server is closed.
    Counts the requests it received and the most it held at once."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CountingHandler)
        self.lock = threading.Lock()
        self.received = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.closing = threading.Event()

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that gave up on /hang is gone when its answer is written: expected here.
        pass


class CountingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: CountingServer

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.received += 1
            self.server.in_flight += 1
            self.server.most_in_flight = max(self.server.most_in_flight, self.server.in_flight)
        try:
            if self.path == "/hang":
                self.server.closing.wait()
            self.send_response(500 if self.path == "/fail" else 200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
        finally:
            with self.server.lock:
                self.server.in_flight -= 1

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def counting_server() -> Iterator[CountingServer]:
    server = CountingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.closing.set()
    server.shutdown()
    server.server_close()


def base_of(server: CountingServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"


def test_a_closed_loop_records_every_request_once_with_its_status(
    counting_server: CountingServer,
) -> None:
    paths = iter(["/ok", "/fail"] * 100_000)

    samples = asyncio.run(
        closed_loop(
            base_of(counting_server),
            lambda: Call("GET", next(paths)),
            clients=3,
            seconds=0.3,
            timeout=5,
        )
    )

    statuses = [sample.status for sample in samples.kept]
    assert len(statuses) == counting_server.received > 0
    assert set(statuses) <= {200, 500}
    assert summarize(samples).server_errors == statuses.count(500)
    # Each client waits for its answer before sending again.
    assert counting_server.most_in_flight <= 3


def test_an_unanswered_request_counts_as_a_timeout_at_the_timeout(
    counting_server: CountingServer,
) -> None:
    samples = asyncio.run(
        closed_loop(
            base_of(counting_server),
            lambda: Call("GET", "/hang"),
            clients=2,
            seconds=0.01,
            timeout=0.2,
        )
    )

    # Each client's first request is sent whatever the time; it outlasts the run.
    assert [sample.status for sample in samples.kept] == [TIMED_OUT, TIMED_OUT]
    assert all(sample.seconds <= 0.2 for sample in samples.kept)
    assert summarize(samples).other_errors == 2


def test_the_aims_are_judged_on_the_ratio_and_the_allowance() -> None:
    slower = Comparison(
        what="board",
        reference_label="1",
        reference=200.0,
        measured_label="20",
        measured=320.0,
        unit="ms",
        aim_at_most=1.5,
    )
    # 320 / 200 = 1.6 > 1.5; 2 × 100 MiB idle + 50 MiB of caches = 250 MiB allowed.
    assert slower.ratio == pytest.approx(1.6)
    assert slower.met is False
    assert Memory(idle_mib=100, after_load_mib=250, configured_caches_mib=50).met
    assert not Memory(idle_mib=100, after_load_mib=251, configured_caches_mib=50).met
