"""A fetch's memory, whatever the upstream site sends: ``oddsboost fetch`` run as a real
process, with its default settings, against a local site that answers 500 MB (with and
without Content-Length) or a small gzip body that inflates to 500 MB. The process's peak
resident memory is what the kernel reports for it as it exits."""

from __future__ import annotations

import http.server
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.helpers import DEADLINE_SECONDS
from tests.processes import child_environment
from tests.upstreams import gzip_bomb, http_server, send_gzip_bomb, send_huge

FIXTURES = Path(__file__).parent / "fixtures"
PEAK_MIB_MAX = 200
SPORTS_LIST = b'[{"key": "soccer_epl", "group": "Soccer", "title": "EPL", "active": true}]'
QUOTA = {"x-requests-remaining": "500", "x-requests-used": "0"}


class Upstream:
    """What the local site sends in place of a season file or The Odds API's events."""

    def __init__(self, huge: str, head: bytes, filler: bytes) -> None:
        self.huge = huge
        self.head = head
        self.filler = filler
        self.bomb = gzip_bomb(head, filler) if huge == "gzip" else b""

    def send(self, handler: http.server.BaseHTTPRequestHandler, headers: dict[str, str]) -> None:
        if self.huge == "gzip":
            send_gzip_bomb(handler, self.bomb, headers)
        else:
            declared = self.huge == "declared"
            send_huge(
                handler, head=self.head, filler=self.filler, declared=declared, headers=headers
            )


def handler_for(upstream: Upstream) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0].endswith(("/E0.csv", "/odds")):
                upstream.send(self, QUOTA)
            elif self.path.startswith("/v4/sports"):
                self.send_response(200)
                for name, value in QUOTA.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(SPORTS_LIST)))
                self.end_headers()
                self.wfile.write(SPORTS_LIST)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, *_args: Any) -> None:
            return

    return Handler


@pytest.fixture(scope="module")
def season_rows(data_dir: Path) -> tuple[bytes, bytes]:
    head, _, rows = (data_dir / "football-data" / "E0_1819.csv").read_bytes().partition(b"\n")
    return head + b"\n", rows


# ``oddsboost ARGS`` in a Python process that writes, as it exits, the peak resident memory
# of its own image (VmHWM: reset by exec, unlike the kernel's rusage, which would carry over
# the test process's own peak to a child it started).
MEASURED = (
    "import atexit, sys\n"
    "from pathlib import Path\n"
    "def peak():\n"
    "    status = Path('/proc/self/status').read_text().splitlines()\n"
    "    sys.stderr.write(next(line for line in status if line.startswith('VmHWM:')) + '\\n')\n"
    "atexit.register(peak)\n"
    "from app.cli import main\n"
    "sys.argv[0] = 'oddsboost'\n"
    "main()\n"
)


def peak_of(args: list[str], environment: dict[str, str]) -> tuple[int, float, str]:
    """Run ``oddsboost ARGS``: its exit status, peak resident memory (MiB) and output."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *args],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )
    reported = re.search(r"^VmHWM:\s+(\d+) kB$", done.stderr, re.MULTILINE)
    assert reported is not None, done.stdout + done.stderr
    return done.returncode, int(reported.group(1)) / 1024, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("huge", ["declared", "undeclared", "gzip"])
@pytest.mark.parametrize("feed", ["football-data", "the-odds-api"])
def test_a_fetch_peaks_under_200_mib_whatever_the_site_sends(
    feed: str, huge: str, migrated_url: str, season_rows: tuple[bytes, bytes]
) -> None:
    if feed == "football-data":
        upstream = Upstream(huge, *season_rows)
        args = ["fetch", "football-data", "--leagues", "E0", "--season", "2018/19"]
        setting = "ODDSBOOST_FOOTBALL_DATA_MAX_BYTES"
    else:
        events = (FIXTURES / "the_odds_api_epl.json").read_bytes().strip(b"[]\n") + b","
        upstream = Upstream(huge, b"[", events)
        args = ["fetch", "the-odds-api", "--sports", "soccer_epl", "--json"]
        setting = "ODDSBOOST_ODDS_API_MAX_BYTES"
    with http_server(handler_for(upstream)) as base:
        environment = child_environment(
            Settings(database_url=migrated_url),
            ODDSBOOST_FOOTBALL_DATA_URL=base,
            ODDSBOOST_ODDS_API_URL=base,
            ODDSBOOST_ODDS_API_KEY="a-key-of-the-odds-api",
        )
        status, peak_mib, output = peak_of(args, environment)
    assert status == 1, output
    flat = " ".join(output.split())
    assert f"({setting}); not read further" in flat, output
    assert peak_mib < PEAK_MIB_MAX, f"{feed} {huge}: peak {peak_mib:.0f} MiB"
    print(f"{feed}, {huge}: peak {peak_mib:.0f} MiB")
