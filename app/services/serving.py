"""What the predict endpoints need: the active ensemble in memory, and stored quotes of matches."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, bindparam, func, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from app.db.orm import (
    Bookmaker,
    Competition,
    Match,
    ModelVersion,
    OddsQuote,
    RefitRun,
    Team,
)
from app.domain.ensemble import Ensemble
from app.domain.prediction import QuotedOdds
from app.domain.tables import tables_from_rows
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Phase, RunStatus
from app.services.model_versions import QUOTE_COLUMNS, active_version_id, ensemble_of

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


@dataclass
class StoredMatch:
    id: int
    competition: str
    home_team: str
    away_team: str
    kickoff: dt.datetime
    odds: list[QuotedOdds] = field(default_factory=list)


_HOME, _AWAY = aliased(Team), aliased(Team)
# Built once: on the predict path, constructing these statements cost more than running them.
_MATCHES_BY_ID = (
    select(
        Match.id,
        Match.kickoff,
        Match.result,
        Competition.code,
        Match.season,
        _HOME.name,
        _AWAY.name,
    )
    .join(Competition, Match.competition_id == Competition.id)
    .join(_HOME, Match.home_team_id == _HOME.id)
    .join(_AWAY, Match.away_team_id == _AWAY.id)
    .where(Match.id.in_(bindparam("ids", expanding=True)))
    .order_by(Match.id)
)
_QUOTES_OF_MATCHES = (
    select(*QUOTE_COLUMNS)
    .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
    .where(
        OddsQuote.match_id.in_(bindparam("ids", expanding=True)),
        OddsQuote.phase == bindparam("phase"),
    )
)


def stored_matches(
    connection: Connection | Session, match_ids: Sequence[int], *, phase: Phase
) -> dict[int, StoredMatch]:
    """The given matches with, per bookmaker, the latest quote of ``phase`` valid before kickoff."""
    wanted = sorted(set(match_ids))
    if not wanted:
        return {}
    rows = connection.execute(_MATCHES_BY_ID, {"ids": wanted}).all()
    found = {row[0]: StoredMatch(row[0], row[3], row[5], row[6], row[1]) for row in rows}
    if not found:
        return {}
    quote_rows = connection.execute(_QUOTES_OF_MATCHES, {"ids": list(found), "phase": phase}).all()
    matches, quotes = tables_from_rows([row[:5] for row in rows], quote_rows)
    for index in sorted(
        select_latest_valid(matches, quotes, phase), key=lambda i: str(quotes.bookmaker[i])
    ):
        match = found[int(matches.ids[quotes.match[index]])]
        home_price, draw_price, away_price = (float(v) for v in quotes.prices[index])
        match.odds.append(
            QuotedOdds(str(quotes.bookmaker[index]), home_price, draw_price, away_price)
        )
    return found


class AnswerCache:
    """Recent answers of one process, each kept for ``ttl`` seconds (least recently used
    entries go first when full). Used from the event loop only, so it needs no lock."""

    def __init__(self, ttl: float, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()

    def get(self, key: Hashable) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, value: Any) -> None:
        if self.ttl <= 0:
            return
        self._entries[key] = (time.monotonic() + self.ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
