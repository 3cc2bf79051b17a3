"""What serving predictions reads: the active ensemble kept in memory (with the refit
metrics), one snapshot per answer, and the latest valid quotes of matches."""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, Row, bindparam, func, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from app.db.orm import (
    Bookmaker,
    Competition,
    LatestQuote,
    Match,
    ModelVersion,
    OddsQuote,
    RefitRun,
    RollingScore,
    Team,
)
from app.domain import defaults
from app.domain.ensemble import Ensemble
from app.domain.prediction import MatchInfo, QuotedMatch, QuotedOdds, StoredQuotes
from app.domain.tables import MatchTable, QuoteTable, tables_from_rows
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Method, Phase, RunStatus
from app.services.model_versions import QUOTE_COLUMNS, active_version_id, ensemble_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefitStats:
    runs_by_status: dict[RunStatus, int] = field(default_factory=dict)
    last_success_at: float | None = None  # POSIX seconds
    last_duration_seconds: float | None = None
    last_status: RunStatus | None = None


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
        runs_by_status={status: int(count) for status, count in counts.items()},
        last_success_at=None if last_success is None else last_success.timestamp(),
        last_duration_seconds=None
        if last is None
        else (last.finished_at - last.started_at).total_seconds(),
        last_status=None if last is None else last.status,
    )


def rolling_log_loss_difference(session: Session) -> float | None:
    """The track record's newest rolling figure: served minus consensus log loss."""
    return session.scalar(
        select(RollingScore.served_minus_consensus_log_loss)
        .order_by(RollingScore.id.desc())
        .limit(1)
    )


@dataclass(frozen=True, slots=True)
class ServingSnapshot:
    """The model one answer works with throughout: the ensemble (None before the first fit),
    and the phase and method it reads quotes with (else the configured defaults)."""

    ensemble: Ensemble | None
    phase: Phase
    method: Method

    @property
    def version(self) -> int | None:
        return None if self.ensemble is None else self.ensemble.version


class ModelCache:
    """The active ensemble of one process, swapped in whole by ``refresh`` (a background
    task, off the request path) when another version is activated."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        *,
        default_method: Method = defaults.METHOD,
        default_phase: Phase = defaults.PHASE,
    ) -> None:
        self._factory = factory
        self._current: tuple[int | None, Ensemble | None] = (None, None)
        self._defaults = ServingSnapshot(None, default_phase, default_method)
        self.loaded = False
        self.refits = RefitStats()
        self.served_minus_consensus: float | None = None

    @property
    def ensemble(self) -> Ensemble | None:
        return self._current[1]

    def snapshot(self) -> ServingSnapshot:
        ensemble = self.ensemble
        if ensemble is None:
            return self._defaults
        return ServingSnapshot(ensemble, ensemble.phase, ensemble.method)

    def refresh(self) -> bool:
        """Load the active version if it changed; whether it did."""
        with self._factory() as session:
            self.refits = refit_stats(session)
            self.served_minus_consensus = rolling_log_loss_difference(session)
            active_id = active_version_id(session)
            if self.loaded and active_id == self._current[0]:
                return False
            version = session.get(ModelVersion, active_id) if active_id is not None else None
            ensemble = ensemble_of(version) if version is not None else None
        self._current = (active_id, ensemble)  # one assignment: readers see old or new
        self.loaded = True
        log.info("serving model version %s", active_id if active_id is not None else "none")
        return True


_HOME, _AWAY = aliased(Team), aliased(Team)
# A match as _MATCHES_BY_ID reads it: the five columns of a MatchRow, then the teams' names.
_MatchRow = Row[int, dt.datetime, str | None, str, str, str, str]
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
# The latest valid quote per bookmaker and phase (``LatestQuote``), not the price history:
# ``select_latest_valid`` over these rows chooses what it would over the history. In the
# order stored, which is the rule's last tie-break.
_QUOTES_OF_MATCHES = (
    select(*QUOTE_COLUMNS)
    .select_from(LatestQuote)
    .join(OddsQuote, LatestQuote.quote_id == OddsQuote.id)
    .join(Bookmaker, LatestQuote.bookmaker_id == Bookmaker.id)
    .where(LatestQuote.match_id.in_(bindparam("ids", expanding=True)))
    .order_by(OddsQuote.id)
)
_QUOTES_OF_MATCHES_IN_PHASE = _QUOTES_OF_MATCHES.where(LatestQuote.phase == bindparam("phase"))


def stored_matches(
    connection: Connection | Session, match_ids: Sequence[int], *, phase: Phase
) -> dict[int, QuotedMatch]:
    """The stored ones of the given matches with, per bookmaker by code, the latest quote
    of ``phase`` valid before kickoff; failing any, of any phase (``stored`` says so)."""
    wanted = sorted(set(match_ids))
    if not wanted:
        return {}
    rows = connection.execute(_MATCHES_BY_ID, {"ids": wanted}).all()
    if not rows:
        return {}
    quote_rows = connection.execute(
        _QUOTES_OF_MATCHES_IN_PHASE, {"ids": [row[0] for row in rows], "phase": phase}
    ).all()
    matches, quotes = tables_from_rows([row[:5] for row in rows], quote_rows)
    chosen = _latest_by_match(matches, quotes, phase)
    found = {
        row[0]: QuotedMatch(_info(row), _odds(quotes, chosen[row[0]]), StoredQuotes(phase))
        for row in rows
        if row[0] in chosen
    }
    lacking = [row for row in rows if row[0] not in chosen]
    if lacking:
        found.update(_of_any_phase(connection, lacking, phase))
    return found


def _of_any_phase(
    connection: Connection | Session, rows: Sequence[_MatchRow], phase: Phase
) -> dict[int, QuotedMatch]:
    quote_rows = connection.execute(_QUOTES_OF_MATCHES, {"ids": [row[0] for row in rows]}).all()
    matches, quotes = tables_from_rows([row[:5] for row in rows], quote_rows)
    chosen = _latest_by_match(matches, quotes, None)
    found: dict[int, QuotedMatch] = {}
    for row in rows:
        positions = chosen.get(row[0], [])
        stored = StoredQuotes(phase)  # with no quote at all, the prediction is refused
        if positions:
            # None of them is of ``phase``: with two phases, all are of the other one.
            stored = StoredQuotes(Phase(quotes.phase[positions[0]]), fallback=True)
        found[row[0]] = QuotedMatch(_info(row), _odds(quotes, positions), stored)
    return found


def _latest_by_match(
    matches: MatchTable, quotes: QuoteTable, phase: Phase | None
) -> dict[int, list[int]]:
    """Per match id, the positions of its quotes to use, by bookmaker code."""
    chosen: dict[int, list[int]] = {}
    for index in sorted(
        select_latest_valid(matches, quotes, phase), key=lambda i: str(quotes.bookmaker[i])
    ):
        chosen.setdefault(int(matches.ids[quotes.match[index]]), []).append(int(index))
    return chosen


def _odds(quotes: QuoteTable, positions: Sequence[int]) -> list[QuotedOdds]:
    odds: list[QuotedOdds] = []
    for index in positions:
        captured = float(quotes.captured_at[index])
        moment = None if math.isnan(captured) else dt.datetime.fromtimestamp(captured, dt.UTC)
        home, draw, away = quotes.prices[index].tolist()
        odds.append(QuotedOdds(str(quotes.bookmaker[index]), home, draw, away, moment))
    return odds


def _info(row: _MatchRow) -> MatchInfo:
    return MatchInfo(row[0], row[3], row[5], row[6], row[1], row[4])
