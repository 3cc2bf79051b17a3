"""How long a feed run may last, and whether its process was asked to stop: checked between
steps and before waits, so that a run always ends, and soon after a SIGTERM."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class RunEndedEarlyError(Exception):
    """The run must end now, before it finished; the message says why."""


class RunStoppedError(RunEndedEarlyError):
    """The process was asked to stop (a shutdown)."""


class RunDeadlineError(RunEndedEarlyError):
    """The run's deadline passed, or would pass during a wait it was asked for."""


STOPPED = "stopped by a shutdown before it finished"
# A run still marked running, found by the next run of its kind holding the lock of that
# kind (``app/services/locks.py``): its process died without closing it.
ABANDONED = "abandoned: the process running it stopped before it finished"


class Stop:
    """A process's request to stop, set once (by a signal handler, say)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._guard = threading.RLock()  # re-entrant: a signal may arrive inside it
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._guard:
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)

    @contextmanager
    def calling(self, callback: Callable[[], None]) -> Iterator[None]:
        """Call ``callback`` when the stop is set while the block runs (or already is)."""
        with self._guard:
            self._callbacks.append(callback)
            already = self._event.is_set()
        if already:
            callback()
        try:
            yield
        finally:
            with self._guard:
                self._callbacks.remove(callback)


class RunBounds:
    """A run's deadline, ``seconds`` from now (``setting`` names its source), and its stop."""

    def __init__(self, seconds: float, setting: str, stop: Stop | None = None) -> None:
        self.seconds = seconds
        self.setting = setting
        self.stop = stop or Stop()
        self._ends_at = time.monotonic() + seconds

    @classmethod
    def unbounded(cls, stop: Stop | None = None) -> RunBounds:
        """No deadline: what is done once, by hand (``oddsboost import`` of a URL)."""
        return cls(math.inf, "", stop)

    def remaining(self) -> float:
        return self._ends_at - time.monotonic()

    def deadline_passed(self) -> str:
        return f"the run's deadline of {self.seconds:g} s ({self.setting}) passed"

    def check(self) -> None:
        if self.stop.is_set():
            raise RunStoppedError(STOPPED)
        if self.remaining() <= 0:
            raise RunDeadlineError(self.deadline_passed())

    def check_wait(self, seconds: float) -> None:
        """:meth:`check`, and whether a wait of ``seconds`` would pass the deadline."""
        self.check()
        if seconds > self.remaining():
            raise RunDeadlineError(
                f"asked to wait {seconds:.0f} s, past the run's deadline of {self.seconds:g} s "
                f"({self.setting})"
            )

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, checked first and cut short by a stop."""
        self.check_wait(seconds)
        if self.stop.wait(seconds):
            raise RunStoppedError(STOPPED)

    def checked(self, sleep: Callable[[float], None]) -> Callable[[float], None]:
        """``sleep`` (a test's, say), each wait checked first."""

        def wait(seconds: float) -> None:
            self.check_wait(seconds)
            sleep(seconds)

        return wait
