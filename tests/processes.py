"""Real ``oddsboost`` processes, for the tests where the process itself is the point.

Every process started here writes its output to a file (a pipe nobody reads could fill up
and stall it), runs in its own session so that it and its workers can be ended together,
and is stopped when the ``with`` block ends, whatever happened inside it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from app.settings import Settings, settings_environment
from tests.helpers import DEADLINE_SECONDS, free_port, wait_until

ODDSBOOST = Path(sys.executable).with_name("oddsboost")
FIT_GATE_MODULE_DIR = Path(__file__).parent / "fit_gate"


def oddsboost_command(*args: str) -> list[str]:
    """The installed console script, as a container or a shell runs it."""
    assert ODDSBOOST.is_file(), f"console script not installed at {ODDSBOOST}"
    return [str(ODDSBOOST), *args]


def child_environment(settings: Settings | None = None, **variables: str) -> dict[str, str]:
    """This process's environment with ``settings`` (admin key included) and ``variables``."""
    environment = dict(os.environ)
    # Each server decides where its workers share their metrics.
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if settings is not None:
        environment.update(settings_environment(settings))
        if settings.admin_api_key is not None:
            environment["ODDSBOOST_ADMIN_API_KEY"] = settings.admin_api_key.get_secret_value()
    environment.update(variables)
    return environment


class Process:
    """A started ``oddsboost`` process and the file its output goes to."""

    def __init__(self, popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.popen = popen
        self.log_path = log_path

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def send_signal(self, number: signal.Signals) -> None:
        self.popen.send_signal(number)

    def wait(self, seconds: float = DEADLINE_SECONDS) -> int:
        return self.popen.wait(timeout=seconds)

    def stop(self) -> int:
        """SIGTERM and wait; if that does not end it, kill it and its workers."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout=DEADLINE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        return self.popen.wait()


@contextmanager
def running(args: list[str], environment: Mapping[str, str], log_path: Path) -> Iterator[Process]:
    """``oddsboost ARGS`` in a new process, stopped when the block ends."""
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            oddsboost_command(*args),
            env=dict(environment),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    process = Process(popen, log_path)
    try:
        yield process
    finally:
        process.stop()


class Server(Process):
    def __init__(self, popen: subprocess.Popen[bytes], log_path: Path, port: int) -> None:
        super().__init__(popen, log_path)
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"

    def answers_health(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False


@contextmanager
def running_server(environment: Mapping[str, str], log_path: Path, *args: str) -> Iterator[Server]:
    """``oddsboost serve ARGS`` on a free port, once it answers ``/health``; stopped at the
    end of the block (SIGTERM, then SIGKILL to it and its workers if that is not enough)."""
    port = free_port()
    with running(["serve", "--port", str(port), *args], environment, log_path) as process:
        server = Server(process.popen, log_path, port)
        try:
            wait_until(server.answers_health, "the server answered /health", alive=server.popen)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{server.output()}") from None
        yield server


class FitGate:
    """Holds every refit of the processes given :meth:`environment` at the start of its fit,
    until :meth:`release`: a test can act while a refit is certainly in progress.

    The child processes import ``sitecustomize`` from ``tests/fit_gate``, which wraps
    ``fit_ensemble``: it marks that it was reached, then waits for the release file.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def environment(self) -> dict[str, str]:
        python_path = [str(FIT_GATE_MODULE_DIR), os.environ.get("PYTHONPATH", "")]
        return {
            "PYTHONPATH": os.pathsep.join(filter(None, python_path)),
            "ODDSBOOST_TEST_FIT_GATE": str(self.directory),
        }

    def reached(self) -> bool:
        return (self.directory / "reached").exists()

    def wait_until_reached(self, process: Process | None = None) -> None:
        wait_until(
            self.reached, "a refit reached its fit", alive=process.popen if process else None
        )

    def release(self) -> None:
        (self.directory / "released").touch()
