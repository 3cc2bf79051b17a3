"""Thinning the price history of matches that kicked off long ago.

A match's history is thinned once it kicked off more than the chosen age ago: its prices no
longer move, nothing is ingested for it any more, and what remains is what the readers of
old matches need (the close, the latest quote, the opening, one per interval for the chart;
:mod:`app.domain.quote_history`). Matches are taken in batches by id, each batch one short
transaction, so a match is thinned whole or not at all and a running service (or SQLite's
one writer) waits at most one batch. Every quote is deleted through :func:`delete_quotes`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Engine, delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_session_factory, on_commit, session_scope
from app.db.orm import Bookmaker, Clock, Competition, Match, OddsQuote, utcnow
from app.domain.quote_history import ThinningRule, quotes_to_keep
from app.domain.tables import MatchRow, tables_from_rows
from app.domain.wording import counted
from app.services.bulk import chunks
from app.services.ingest.latest import refresh_latest_quotes
from app.services.ingest.revisions import bump_quotes_revisions
from app.services.locks import serialise_match_rewrites
from app.services.model_versions import QUOTE_COLUMNS
from app.services.run_bounds import Stop
from app.settings import Settings

log = logging.getLogger(__name__)

# A transaction takes up to BATCH_MATCHES matches, fewer when their quotes pass
# BATCH_QUOTES (one match at least): read, chosen and deleted in a fraction of a second, so a
# concurrent ingest (or SQLite's single writer) never waits long.
BATCH_MATCHES = 200
BATCH_QUOTES = 20_000


class UnknownCompetitionError(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class ThinningTerms:
    """Thin by ``rule`` the histories of the matches (of ``competition``, else all) that
    kicked off more than ``older_than`` ago; ``dry_run``: count, delete nothing."""

    rule: ThinningRule
    older_than: dt.timedelta
    competition: str | None = None
    dry_run: bool = False
    batch_matches: int = BATCH_MATCHES
    batch_quotes: int = BATCH_QUOTES

    @classmethod
    def from_settings(cls, settings: Settings) -> ThinningTerms:
        """The terms of the scheduled job."""
        return cls(
            rule=ThinningRule(
                interval=dt.timedelta(hours=settings.quote_history_interval_hours),
                closing_window=dt.timedelta(minutes=settings.closing_window_minutes),
            ),
            older_than=dt.timedelta(days=settings.quote_history_older_than_days),
        )


@dataclass(frozen=True, slots=True)
class BatchThinned:
    """One batch: its matches (the last one's id), those that lost quotes, quotes kept and
    removed."""

    last_match_id: int
    matches: int
    matches_thinned: int
    quotes_kept: int
    quotes_removed: int


@dataclass(frozen=True, slots=True)
class HistoryThinned:
    """A whole thinning: the matches that kicked off before ``kicked_off_before`` read,
    those that lost quotes, the quotes kept and removed (``dry_run``: that would be)."""

    kicked_off_before: dt.datetime
    dry_run: bool
    batches: int = 0
    matches: int = 0
    matches_thinned: int = 0
    quotes_kept: int = 0
    quotes_removed: int = 0

    def plus(self, batch: BatchThinned) -> HistoryThinned:
        return HistoryThinned(
            self.kicked_off_before,
            self.dry_run,
            self.batches + 1,
            self.matches + batch.matches,
            self.matches_thinned + batch.matches_thinned,
            self.quotes_kept + batch.quotes_kept,
            self.quotes_removed + batch.quotes_removed,
        )


def thin_history(
    factory: sessionmaker[Session],
    terms: ThinningTerms,
    *,
    now: dt.datetime,
    stop: Stop | None = None,
) -> HistoryThinned:
    """Thin the histories ``terms`` name, a batch of matches per transaction of ``factory``
    (``stop``: ends after the batch under way)."""
    before = now - terms.older_than
    if terms.competition is not None:
        with factory() as session:
            _check_competition(session, terms.competition)
    thinned = HistoryThinned(before, terms.dry_run)
    after = 0
    while stop is None or not stop.is_set():
        with session_scope(factory) as session:
            batch = thin_batch(session, terms, kicked_off_before=before, after=after)
        if batch is None:
            break
        thinned = thinned.plus(batch)
        after = batch.last_match_id
    return thinned


def thin_batch(
    session: Session, terms: ThinningTerms, *, kicked_off_before: dt.datetime, after: int
) -> BatchThinned | None:
    """Thin, in the caller's transaction, the histories of the next matches (by id, above
    ``after``) that kicked off before ``kicked_off_before``: ``terms.batch_matches`` of them,
    fewer if their quotes pass ``terms.batch_quotes`` (None: there are none)."""
    if not terms.dry_run:
        # A team merge moving these quotes, or a match being deleted, waits (PostgreSQL).
        serialise_match_rewrites(session)
    match_rows = _next_matches(session, terms, kicked_off_before, after)
    if not match_rows:
        return None
    quote_rows = session.execute(
        select(OddsQuote.id, *QUOTE_COLUMNS)
        .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
        .where(OddsQuote.match_id.in_([row[0] for row in match_rows]))
    ).all()
    matches, quotes = tables_from_rows(match_rows, [row[1:] for row in quote_rows])
    keep = quotes_to_keep(matches, quotes, terms.rule)
    ids = np.array([row[0] for row in quote_rows], dtype=np.int64)
    removed = ids[~keep].tolist()
    if not terms.dry_run:
        thinned_matches = matches.ids[np.unique(quotes.match[~keep])].tolist()
        delete_quotes(session, removed, thinned_matches)
    batch = BatchThinned(
        last_match_id=int(match_rows[-1][0]),
        matches=len(match_rows),
        matches_thinned=len(np.unique(quotes.match[~keep])),
        quotes_kept=int(keep.sum()),
        quotes_removed=len(removed),
    )
    if not terms.dry_run and removed:
        on_commit(session, lambda: _log_batch(batch))
    return batch


def _next_matches(
    session: Session, terms: ThinningTerms, kicked_off_before: dt.datetime, after: int
) -> list[MatchRow]:
    """The rows of the matches of the next batch, in id order."""
    quotes = select(func.count()).where(OddsQuote.match_id == Match.id).scalar_subquery()
    statement = (
        select(Match.id, Match.kickoff, Match.result, Competition.code, Match.season, quotes)
        .join(Competition, Match.competition_id == Competition.id)
        .where(Match.kickoff < kicked_off_before, Match.id > after)
        .order_by(Match.id)
        .limit(terms.batch_matches)
    )
    if terms.competition is not None:
        statement = statement.where(Competition.code == terms.competition)
    rows = session.execute(statement).all()
    within = np.cumsum([row[5] for row in rows]) <= terms.batch_quotes
    taken = max(int(within.sum()), 1) if rows else 0
    return [(row[0], row[1], row[2], row[3], row[4]) for row in rows[:taken]]


def delete_quotes(session: Session, quote_ids: Sequence[int], match_ids: Sequence[int]) -> None:
    """Delete the quotes ``quote_ids`` of ``match_ids``, in the caller's transaction: the one
    way thinning removes a quote. The latest quotes are kept by the rule, but their table is
    brought up to date all the same, so a served quote can never vanish with its row."""
    for part in chunks(sorted(quote_ids)):
        session.execute(delete(OddsQuote).where(OddsQuote.id.in_(part)))
    refresh_latest_quotes(session, match_ids, utcnow())
    bump_quotes_revisions(session, match_ids)


def quote_history_job(
    engine: Engine, settings: Settings, *, clock: Clock = utcnow, stop: Stop | None = None
) -> None:
    """The scheduler's job: thin by the settings' interval and age."""
    thinned = thin_history(
        make_session_factory(engine, for_writes=True),
        ThinningTerms.from_settings(settings),
        now=clock(),
        stop=stop,
    )
    log.info(
        "price history thinned: %s of %s (kicked off before %s) lost %s, %s kept",
        counted(thinned.matches_thinned, "match"),
        counted(thinned.matches, "match"),
        thinned.kicked_off_before.isoformat(),
        counted(thinned.quotes_removed, "quote"),
        counted(thinned.quotes_kept, "quote"),
    )


def _check_competition(session: Session, code: str) -> None:
    if session.scalar(select(Competition.id).where(Competition.code == code)) is None:
        raise UnknownCompetitionError(f"no competition {code!r} is stored")


def _log_batch(batch: BatchThinned) -> None:
    log.info(
        "thinned %s up to match %d: %s removed, %s kept",
        counted(batch.matches_thinned, "match"),
        batch.last_match_id,
        counted(batch.quotes_removed, "quote"),
        counted(batch.quotes_kept, "quote"),
    )
