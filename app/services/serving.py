"""The active ensemble of one process, kept in memory, and what the metrics say about refits."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.orm import ModelVersion, RefitRun
from app.domain.ensemble import Ensemble
from app.domain.vocabulary import RunStatus
from app.services.model_versions import active_version_id, ensemble_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefitStats:
    """What the metrics say about refits, read with the model."""

    runs_by_status: dict[str, int] = field(default_factory=dict)
    last_success_at: float | None = None  # POSIX seconds
    last_duration_seconds: float | None = None
    last_status: str | None = None


def refit_stats(session: Session) -> RefitStats:
    counts = dict(
        session.execute(select(RefitRun.status, func.count()).group_by(RefitRun.status)).all()
    )
    last_success = session.scalar(
        select(func.max(RefitRun.finished_at)).where(RefitRun.status == RunStatus.SUCCEEDED)
    )
    last = session.execute(
        select(RefitRun.status, RefitRun.started_at, RefitRun.finished_at)
        .where(RefitRun.finished_at.is_not(None))
        .order_by(RefitRun.finished_at.desc())
        .limit(1)
    ).first()
    # max() over a UTC column comes back without the type's conversion on SQLite.
    if last_success is not None and last_success.tzinfo is None:
        last_success = last_success.replace(tzinfo=dt.UTC)
    return RefitStats(
        runs_by_status={str(status): int(count) for status, count in counts.items()},
        last_success_at=None if last_success is None else last_success.timestamp(),
        last_duration_seconds=None
        if last is None
        else (last.finished_at - last.started_at).total_seconds(),
        last_status=None if last is None else str(last.status),
    )


class ModelCache:
    """The active ensemble of one process, swapped in whole when a new version is activated.

    Requests read :attr:`ensemble` and never touch the database for the model. ``refresh``
    runs off the request path (a background task calls it every few seconds); it costs a few
    small queries, and loads a version only when the active one changed.
    """

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self._factory = factory
        self._current: tuple[int | None, Ensemble | None] = (None, None)
        self.loaded = False
        self.refits = RefitStats()

    @property
    def ensemble(self) -> Ensemble | None:
        return self._current[1]

    def refresh(self) -> bool:
        """Load the active version if it changed; returns whether it did."""
        with self._factory() as session:
            self.refits = refit_stats(session)
            active_id = active_version_id(session)
            if self.loaded and active_id == self._current[0]:
                return False
            version = session.get(ModelVersion, active_id) if active_id is not None else None
            ensemble = ensemble_of(version) if version is not None else None
        self._current = (active_id, ensemble)  # one assignment: readers see old or new
        self.loaded = True
        log.info("serving model version %s", active_id if active_id is not None else "none")
        return True
