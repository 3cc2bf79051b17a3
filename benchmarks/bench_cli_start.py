"""Start-up time of ``oddsboost health``, the container's health check, against bare Python.

The health check runs every few seconds under a 5 s timeout, so it must not import the
database, numpy or the web framework. This starts a tiny local HTTP server that answers
200, compiles the project's modules as installing the package does, then times,
alternately and in the same run, ``python -c pass`` (the floor: the
interpreter alone), ``oddsboost health --url ...`` and ``oddsboost health`` as the
container runs it (the port read from the settings), and prints the median of each and how
far it is above the floor. The aim is under 0.3 s for the health check.

Run: ``python benchmarks/bench_cli_start.py [--runs 20]``
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Healthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, _format: str, *_args: object) -> None:
        return


def seconds(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    server = ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    oddsboost = str(Path(sys.executable).with_name("oddsboost"))
    # The image's `pip install .` compiles every module; a checkout where
    # PYTHONDONTWRITEBYTECODE is set would compile the project from source on every start.
    for package in ("app", "boosting"):
        compileall.compile_dir(ROOT / package, quiet=1)
    # As the container runs it: no --url, the port from the settings.
    environment = {**os.environ, "ODDSBOOST_PORT": str(port)}
    floor, with_url, as_in_container = [], [], []
    for _ in range(runs):
        floor.append(seconds([sys.executable, "-c", "pass"]))
        with_url.append(seconds([oddsboost, "health", "--url", f"http://127.0.0.1:{port}/health"]))
        as_in_container.append(seconds([oddsboost, "health"], environment))
    server.shutdown()
    bare = statistics.median(floor)
    print(f"python -c pass:            {bare * 1000:7.1f} ms (median of {runs})")
    for label, times in (("health --url", with_url), ("health (settings read)", as_in_container)):
        check = statistics.median(times)
        print(
            f"oddsboost {label + ':':<24}{check * 1000:7.1f} ms, "
            f"{(check - bare) * 1000:.1f} ms above the interpreter alone"
        )


if __name__ == "__main__":
    main()
