"""The track record: each match's served prediction logged once at kickoff (by the
scheduler's job, or back-filled), and how those predictions fared (``GET /performance``).

An entry is made from the quotes captured before kickoff and the version active then, so
one written late says what one written on time would have said; it is never updated.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Engine, and_, or_, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_session_factory, session_scope
from app.db.orm import (
    Clock,
    Match,
    ModelActivation,
    ModelVersion,
    OddsQuote,
    PredictionLogEntry,
    RollingScore,
    utcnow,
)
from app.domain.flag_performance import FlagScores
from app.domain.prediction import QuotedMatch
from app.domain.track_record import served_predictions
from app.domain.track_record_aggregates import (
    RELIABILITY_BINS,
    TallyTerms,
    performance_of_sums,
    served_against_consensus,
)
from app.domain.track_record_scores import (
    BEST_COVERAGE,
    CLOSING_METHOD,
    CLOSING_REFERENCE,
    Performance,
    SettledEntry,
)
from app.domain.wording import counted
from app.services import track_record_aggregates as aggregates
from app.services.bulk import chunks, insert_new
from app.services.flag_performance import flag_performance
from app.services.locks import serialise_track_record_writes
from app.services.model_versions import ensemble_of
from app.services.serving import stored_matches
from app.services.track_record_aggregates import PerformanceQuery as PerformanceQuery
from app.settings import Settings

log = logging.getLogger(__name__)

# The rolling figure of the metrics: the served prediction against the consensus over
# the settled logged matches of this many days.
ROLLING_DAYS = 30
# Entries inserted per statement: well under SQLite's limit of bound values.
INSERT_CHUNK = 500
# Matches logged per transaction by a rebuild: SQLite's write lock is held well under a
# second for each (the other writers wait that long at most).
REBUILD_CHUNK = 1_000


@dataclass(frozen=True, slots=True)
class LogCount:
    """What a logging pass did: entries written, matches already logged, and matches not
    logged for want of a quote before kickoff."""

    written: int = 0
    already_logged: int = 0
    without_quotes: int = 0

    def __str__(self) -> str:
        return (
            f"{counted(self.written, 'entry', 'entries')} written, "
            f"{counted(self.already_logged, 'match', 'matches')} already logged, "
            f"{counted(self.without_quotes, 'match', 'matches')} with no quote before kickoff"
        )

    def __add__(self, other: LogCount) -> LogCount:
        return LogCount(
            self.written + other.written,
            self.already_logged + other.already_logged,
            self.without_quotes + other.without_quotes,
        )


def log_kickoffs(session: Session, settings: Settings, *, now: dt.datetime) -> LogCount:
    """Log the matches that kicked off in the look-back window before ``now``."""
    since = now - dt.timedelta(hours=settings.track_record_lookback_hours)
    return _log_window(session, settings, since, now, inclusive_end=True, live=True)


def rebuild(
    session: Session,
    settings: Settings,
    *,
    kickoff_from: dt.datetime,
    kickoff_to: dt.datetime | None,
    now: dt.datetime,
) -> LogCount:
    """Log the matches that kicked off in [from, to) (to: now), in the caller's
    transaction."""
    end = _window_end(kickoff_to, now)
    return _log_window(session, settings, kickoff_from, end, inclusive_end=kickoff_to is None)


def _window_end(kickoff_to: dt.datetime | None, now: dt.datetime) -> dt.datetime:
    # Nothing after now has kicked off.
    return now if kickoff_to is None or kickoff_to > now else kickoff_to


def rebuild_in_chunks(
    sessions: sessionmaker[Session],
    settings: Settings,
    *,
    kickoff_from: dt.datetime,
    kickoff_to: dt.datetime | None,
    now: dt.datetime,
    between_chunks: Callable[[], None] = aggregates.let_writers_in,
) -> LogCount:
    """:func:`rebuild` in write transactions of ``REBUILD_CHUNK`` matches (entries and
    aggregates together), after filling and catching up the aggregates; ``between_chunks``
    runs after each commit. Stopped half-way, a second run goes on where it stopped."""
    aggregates.catch_up(sessions, tally_terms(settings), now=now, between_chunks=between_chunks)
    end = _window_end(kickoff_to, now)
    with session_scope(sessions) as session:
        found, missing = _unlogged(
            session, kickoff_from, end, inclusive_end=kickoff_to is None, live=False
        )
    done = LogCount(already_logged=found - len(missing))
    for part in chunks(missing, REBUILD_CHUNK):
        with session_scope(sessions) as session:
            done += log_matches(session, settings, part)
        between_chunks()
    return done


def _log_window(
    session: Session,
    settings: Settings,
    start: dt.datetime,
    end: dt.datetime,
    *,
    inclusive_end: bool,
    live: bool = False,
) -> LogCount:
    """``live``: only matches with a quote held at kickoff (captured, or if undated
    stored, before it); one whose quotes all came later had nothing served then."""
    found, missing = _unlogged(session, start, end, inclusive_end=inclusive_end, live=live)
    return LogCount(already_logged=found - len(missing)) + log_matches(session, settings, missing)


def _unlogged(
    session: Session,
    start: dt.datetime,
    end: dt.datetime,
    *,
    inclusive_end: bool,
    live: bool,
) -> tuple[int, list[tuple[int, dt.datetime]]]:
    """How many matches of the window there are, and those without an entry (id,
    kickoff), in kickoff order."""
    upper = Match.kickoff <= end if inclusive_end else Match.kickoff < end
    statement = (
        select(Match.id, Match.kickoff, PredictionLogEntry.id)
        .outerjoin(PredictionLogEntry, PredictionLogEntry.match_id == Match.id)
        .where(Match.kickoff >= start, upper)
        .order_by(Match.kickoff, Match.id)
    )
    if live:
        held = select(OddsQuote.id).where(
            OddsQuote.match_id == Match.id,
            or_(
                OddsQuote.credible_captured_at < Match.kickoff,
                and_(OddsQuote.captured_at.is_(None), OddsQuote.received_at <= Match.kickoff),
            ),
        )
        statement = statement.where(held.exists())
    rows = session.execute(statement).all()
    return len(rows), [(match_id, kickoff) for match_id, kickoff, entry in rows if entry is None]


def log_matches(
    session: Session, settings: Settings, matches: Sequence[tuple[int, dt.datetime]]
) -> LogCount:
    """Log the given matches (id, kickoff) as they would have been served at kickoff."""
    # Writers of the log take turns from before they insert: the aggregates follow the
    # entries by id, so an entry committed after a later one would be passed over.
    serialise_track_record_writes(session)
    by_version: dict[int | None, list[int]] = defaultdict(list)
    for (match_id, _), version_id in zip(
        matches, versions_at(session, [kickoff for _, kickoff in matches]), strict=True
    ):
        by_version[version_id].append(match_id)
    done = LogCount()
    for version_id, match_ids in by_version.items():
        version = None if version_id is None else session.get(ModelVersion, version_id)
        quoted = _quoted(session, settings, version, match_ids)
        inserted = _insert(session, settings, version, quoted)
        done += LogCount(inserted, len(quoted) - inserted, len(match_ids) - len(quoted))
    # The aggregates take the new entries (and any match changed since) in the same
    # transaction: an answer never sees an entry they lack.
    aggregates.refresh(session, tally_terms(settings), now=utcnow())
    return done


def tally_terms(settings: Settings) -> TallyTerms:
    """The terms the aggregates are made with: the default value terms'."""
    terms = settings.value_terms()
    return TallyTerms(terms.kelly_fraction, terms.stake_cap, RELIABILITY_BINS)


def versions_at(session: Session, moments: Sequence[dt.datetime]) -> list[int | None]:
    """The version active at each moment: that of the latest activation at or before it."""
    activations = session.execute(
        select(ModelActivation.activated_at, ModelActivation.version_id).order_by(
            ModelActivation.activated_at, ModelActivation.id
        )
    ).all()
    if not activations:
        return [None] * len(moments)
    times = np.array([activated_at.timestamp() for activated_at, _ in activations])
    wanted = np.array([moment.timestamp() for moment in moments], dtype=np.float64)
    positions = np.searchsorted(times, wanted, side="right") - 1
    return [None if p < 0 else int(activations[p].version_id) for p in positions.tolist()]


def _quoted(
    session: Session, settings: Settings, version: ModelVersion | None, match_ids: list[int]
) -> list[QuotedMatch]:
    phase = settings.refit_phase if version is None else version.phase
    found = stored_matches(session, match_ids, phase=phase)
    return [found[i] for i in match_ids if i in found and found[i].odds]


def _insert(
    session: Session, settings: Settings, version: ModelVersion | None, quoted: list[QuotedMatch]
) -> int:
    ensemble = None if version is None else ensemble_of(version)
    entries = served_predictions(
        quoted, ensemble, default_method=settings.demargin_method, terms=settings.value_terms()
    )
    moment = utcnow()
    values = [
        {
            "match_id": info.id,
            "kickoff": info.kickoff,
            "logged_at": moment,
            "model_version": served.model_version,
            "served": served,
        }
        for info, served in entries
    ]
    # RETURNING gives the rows inserted, not those left alone: a count every driver gives.
    statement = insert_new(session, PredictionLogEntry).returning(PredictionLogEntry.id)
    return sum(
        len(session.execute(statement.values(part)).all()) for part in chunks(values, INSERT_CHUNK)
    )


@dataclass(frozen=True, slots=True)
class PerformanceReport:
    """A window's track record, with the rules that chose its comparisons."""

    kickoff_from: dt.datetime | None
    kickoff_to: dt.datetime | None
    competition: str | None
    best_coverage: float
    closing_reference: str
    closing_method: str
    kelly_fraction: float
    stake_cap: float
    days_max: int  # the latest days of the window listed day by day
    performance: Performance
    flags: FlagScores  # the flag ledger's settled flags of the window


def performance(session: Session, query: PerformanceQuery, settings: Settings) -> PerformanceReport:
    """The track record of ``query``'s window, read from the aggregates (the bankroll
    staked by the terms they were made with), and the flag ledger's settled flags."""
    terms = answer_terms(session, settings)
    return PerformanceReport(
        kickoff_from=query.kickoff_from,
        kickoff_to=query.kickoff_to,
        competition=query.competition,
        best_coverage=BEST_COVERAGE,
        closing_reference=CLOSING_REFERENCE,
        closing_method=CLOSING_METHOD,
        kelly_fraction=terms.kelly_fraction,
        stake_cap=terms.stake_cap,
        days_max=settings.performance_days_max,
        performance=performance_of_sums(
            aggregates.window_sums(session, query, terms, days_max=settings.performance_days_max)
        ),
        flags=flag_performance(session, query),
    )


def answer_terms(session: Session, settings: Settings) -> TallyTerms:
    """The terms answers are made with: the aggregates', else those of the settings."""
    return aggregates.terms_of(aggregates.coverage(session)) or tally_terms(settings)


def settled_entries(session: Session, query: PerformanceQuery) -> list[SettledEntry]:
    """Every scored entry of ``query``'s window, read one by one."""
    return [entry for entry, _ in aggregates.scored_entries(session, query)]


def record_rolling_score(session: Session, *, now: dt.datetime) -> RollingScore:
    since = now - dt.timedelta(days=ROLLING_DAYS)
    entries = settled_entries(session, PerformanceQuery(kickoff_from=since, kickoff_to=now))
    difference = served_against_consensus(entries)
    score = RollingScore(
        computed_at=now,
        days=ROLLING_DAYS,
        matches=difference.matches,
        served_minus_consensus_log_loss=difference.mean,
    )
    session.add(score)
    session.flush()
    return score


def track_record_job(engine: Engine, settings: Settings, *, clock: Clock = utcnow) -> None:
    """The scheduler's job: log the matches that kicked off by ``clock``'s present, then
    the rolling figure. A failure is logged and left to the next run."""
    moment = clock()
    sessions = make_session_factory(engine, for_writes=True)
    try:
        aggregates.catch_up(sessions, tally_terms(settings), now=utcnow())
        with session_scope(sessions) as session:
            done = log_kickoffs(session, settings, now=moment)
            score = record_rolling_score(session, now=moment)
    except Exception:
        log.exception("the track record could not be written; the next run tries again")
        return
    log.info(
        "track record: %s; served minus consensus log loss over %s: %s on %s",
        done,
        counted(ROLLING_DAYS, "day"),
        "none"
        if score.served_minus_consensus_log_loss is None
        else f"{score.served_minus_consensus_log_loss:+.4f}",
        counted(score.matches, "match", "matches"),
    )
