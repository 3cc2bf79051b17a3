"""How many requests of each expensive kind a worker serves at once.

Each kind holds at most as many database connections at once as its limit times what one of
its requests holds, so a worker's pool (sized for the sum, see ``Settings``) never runs dry
because one kind of page is popular: a request over the limit waits briefly for a place, then
is told to come back (503 with Retry-After), and the cheap endpoints keep their connections.
The places are asyncio semaphores of the worker's event loop: a waiting request holds no
thread and no connection. A request keeps its place until its answer is made, even once its
client has gone (the server lets it finish), so a computation shared by several requests
(``SingleFlight``) always holds at least one of their places, but at shutdown.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum

from app.domain.wording import counted
from app.metrics import count_admission_refusal
from app.services.unavailable import UnavailableError


class Endpoints(StrEnum):
    """The kinds of expensive endpoints, each limited on its own."""

    BOARD = "board"  # GET /upcoming, GET /value-bets, the dashboard's board
    PAGES = "pages"  # the dashboard's match and model pages
    TRACK_RECORD = "track_record"  # GET /performance, the dashboard's track record
    BATCH = "batch"  # POST /predict/batch


# Connections one request of each kind may hold at once: the model page holds its own
# session and, while it waits for the board, the board's.
CONNECTIONS_PER_REQUEST: Mapping[Endpoints, int] = {
    Endpoints.BOARD: 1,
    Endpoints.PAGES: 2,
    Endpoints.TRACK_RECORD: 1,
    Endpoints.BATCH: 1,
}


# What the requests of each kind ask for, as a refusal names it.
ASKED_FOR: Mapping[Endpoints, str] = {
    Endpoints.BOARD: "the board",
    Endpoints.PAGES: "the dashboard's pages",
    Endpoints.TRACK_RECORD: "the track record",
    Endpoints.BATCH: "batches of predictions",
}


# Connections of a worker's pool the limited endpoints may never take, kept for those no
# limit holds (a prediction by match id, /matches, /ready): with the pool's every connection
# promised to the limits, a burst of board requests would make each of them wait for one.
RESERVED_CONNECTIONS = 2


def connections_needed(limits: Mapping[Endpoints, int]) -> int:
    """The most connections the limited endpoints hold at once under ``limits``."""
    return sum(limit * CONNECTIONS_PER_REQUEST[kind] for kind, limit in limits.items())


class AdmissionRefusedError(UnavailableError):
    """Every place of a kind of endpoint stayed taken for as long as a request may wait."""

    def __init__(self, kind: Endpoints, limit: int, retry_after_seconds: int) -> None:
        super().__init__(
            f"this worker serves at most {counted(limit, 'request')} for {ASKED_FOR[kind]} "
            "at once, and none finished in time; send the same request again in "
            f"{retry_after_seconds} s"
        )
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """Requests of each kind served at once, and how long one over the limit waits."""

    limits: Mapping[Endpoints, int]
    wait_seconds: float


class Admission:
    """The places of one worker (one event loop)."""

    def __init__(self, limits: AdmissionLimits) -> None:
        self._limits = limits
        self._places = {kind: asyncio.Semaphore(limit) for kind, limit in limits.limits.items()}
        self._held = dict.fromkeys(limits.limits, 0)
        # A client told to come back should find the places turned over at least once.
        self._retry_after = max(1, math.ceil(limits.wait_seconds))

    @asynccontextmanager
    async def admitted(self, kind: Endpoints) -> AsyncIterator[None]:
        """A place for one request of ``kind`` while the block runs, or
        :class:`AdmissionRefusedError` once the wait is over."""
        places = self._places[kind]
        try:
            async with asyncio.timeout(self._limits.wait_seconds):
                await places.acquire()
        except TimeoutError:
            count_admission_refusal(kind.value)
            raise AdmissionRefusedError(
                kind, self._limits.limits[kind], self._retry_after
            ) from None
        self._held[kind] += 1
        try:
            yield
        finally:
            self._held[kind] -= 1
            places.release()

    def free_places(self, kind: Endpoints) -> int:
        """The places of ``kind`` no request holds now."""
        return self._limits.limits[kind] - self._held[kind]
