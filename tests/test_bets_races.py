"""Two writers of a bet's book at once, each in its own transaction (PostgreSQL: SQLite's
write sessions take turns from their BEGIN). The first holds its uncommitted write; the
second starts, is seen waiting for a lock, then the first commits: whichever commits second
sees the other's write.

The match is tests/alert_books.py's Arsenal v Chelsea (E0, 12 January 2030); its result 2-1
makes outcome 1 win. A bet of 10 on it at 2.5 returns 10 × 2.5 = 25 (profit 15); corrected
to 20, it returns 20 × 2.5 = 50 (profit 30)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Bet
from app.domain.bets import BetChangeKind, BetChannel, BetDraft
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.vocabulary import Phase
from app.services.bet_book import import_bets
from app.services.bets import (
    BetCorrection,
    correct_bet,
    delete_bet,
    record_bets,
    trail_of,
)
from app.services.ingest import batches, ingest_batch
from app.services.ingest.results import ResultItem, settle_results
from tests.alert_books import away_flag_batch
from tests.helpers import DEADLINE_SECONDS, wait_until

RAISED = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
AFTER = dt.datetime(2030, 1, 13, tzinfo=dt.UTC)  # the day after kickoff


@dataclass(frozen=True)
class Book:
    """A PostgreSQL database with the match stored, and its write sessions."""

    engine: Engine
    writes: sessionmaker[Session]
    match_id: int

    def draft(self, stake: float = 10.0) -> BetDraft:
        return BetDraft(self.match_id, "1", "B365", "2.5", stake, RAISED)

    def record(self, session: Session) -> None:
        record_bets(session, [self.draft()], BetChannel.API, AFTER)

    def store_result(self, session: Session) -> None:
        settle_results(
            session, [ResultItem(2, 1, match_id=self.match_id)], source="test", now=AFTER
        )

    def bet_id(self) -> int:
        with session_scope(self.writes) as session:
            (bet,) = record_bets(session, [self.draft()], BetChannel.API, RAISED)
            return bet.id

    def settlements(self) -> list[tuple[float, str, float | None, float | None]]:
        with session_scope(make_session_factory(self.engine)) as session:
            bets = session.scalars(select(Bet).order_by(Bet.id))
            return [(b.stake, str(b.status), b.returned, b.profit) for b in bets]


@pytest.fixture
def book(migrated_url: str) -> Iterator[Book]:
    if not migrated_url.startswith("postgresql"):
        pytest.skip("SQLite's write sessions take turns: two writers cannot race")
    engine = make_engine(migrated_url)
    writes = make_session_factory(engine, for_writes=True)
    with session_scope(writes) as session:
        ingest_batch(session, away_flag_batch(RAISED), source="test", now=RAISED)
    with session_scope(writes) as session:
        match_id = session.execute(text("SELECT id FROM matches")).scalar_one()
    try:
        yield Book(engine, writes, match_id)
    finally:
        engine.dispose()


def race(book: Book, first: Callable[[Session], None], second: Callable[[Session], None]) -> None:
    """``first`` writes in a transaction left open; ``second`` runs in its own transaction
    in a thread until it is seen waiting for a lock; then the first commits."""
    errors: list[BaseException] = []

    def run_second() -> None:
        try:
            with session_scope(book.writes) as session:
                second(session)
        except BaseException as error:  # asserted below
            errors.append(error)

    thread = threading.Thread(target=run_second)
    opened = book.writes()
    try:
        first(opened)
        thread.start()
        with book.engine.connect() as watcher:

            def second_waits() -> bool:
                waiting = watcher.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    )
                )
                watcher.commit()  # each look at a fresh snapshot of the activity
                return bool(waiting) or not thread.is_alive()

            wait_until(second_waits, "the second writer waits for the first")
        assert thread.is_alive(), errors or "the second writer did not wait"
        opened.commit()
    finally:
        opened.close()
        thread.join()
    assert errors == []


def test_a_bet_recorded_while_its_result_is_stored_is_settled(book: Book) -> None:
    # The result's transaction settles the match's bets (none yet); the bet waits for the
    # match's row, then reads the result and is settled at once.
    race(book, book.store_result, book.record)
    assert book.settlements() == [(10.0, "won", 25.0, 15.0)]


def test_a_result_stored_while_a_bet_is_recorded_settles_it(book: Book) -> None:
    # The bet's transaction holds the match's row shared; the result waits, then finds it.
    race(book, book.record, book.store_result)
    assert book.settlements() == [(10.0, "won", 25.0, 15.0)]


def correct_stake(bet_id: int) -> Callable[[Session], None]:
    def correct(session: Session) -> None:
        change = BetCorrection(stake=20.0, given=frozenset({"stake"}))
        correct_bet(session, bet_id, change, BetChannel.API, AFTER)

    return correct


def test_a_correction_while_the_result_is_stored_settles_the_corrected_stake(
    book: Book,
) -> None:
    bet_id = book.bet_id()
    race(book, book.store_result, correct_stake(bet_id))
    assert book.settlements() == [(20.0, "won", 50.0, 30.0)]
    # The correction started from what the settlement committed.
    with session_scope(book.writes) as session:
        corrected = trail_of(session, bet_id)[-1]
    assert corrected.change == BetChangeKind.CORRECTED
    assert corrected.before is not None
    assert corrected.after is not None
    assert (corrected.before["stake"], corrected.before["status"]) == (10.0, "won")
    assert (corrected.after["stake"], corrected.after["status"]) == (20.0, "won")


def test_a_result_stored_while_a_bet_is_corrected_settles_the_corrected_stake(
    book: Book,
) -> None:
    bet_id = book.bet_id()
    race(book, correct_stake(bet_id), book.store_result)
    assert book.settlements() == [(20.0, "won", 50.0, 30.0)]


def test_a_deletion_while_the_result_is_stored_keeps_the_settled_bet_in_its_trail(
    book: Book,
) -> None:
    bet_id = book.bet_id()

    def delete(session: Session) -> None:
        delete_bet(session, bet_id, BetChannel.API, AFTER)

    race(book, book.store_result, delete)
    assert book.settlements() == []
    with session_scope(book.writes) as session:
        deleted = trail_of(session, bet_id)[-1]
    assert deleted.change == BetChangeKind.DELETED
    assert deleted.before is not None
    assert deleted.before["status"] == "won"


def test_the_same_file_imported_twice_at_once_is_recorded_once(book: Book) -> None:
    csv = (
        "placed_at,match_id,outcome,bookmaker,price,stake\n"
        f"2029-12-31T12:00:00Z,{book.match_id},1,B365,2.5,10\n"
    )
    reports = []

    def upload(session: Session) -> None:
        reports.append(import_bets(session, csv, RAISED))

    # A retried upload: the second waits for the first, then finds its bet in the book.
    race(book, upload, upload)
    assert [(r.imported, r.already_recorded) for r in reports] == [(1, []), (0, [2])]
    assert book.settlements() == [(10.0, "open", None, None)]


SECOND_KICKOFF = dt.datetime(2030, 1, 13, 15, tzinfo=dt.UTC)


def two_matches(captured: dt.datetime, second_kickoff: dt.datetime) -> IngestBatch:
    """Arsenal v Chelsea (as stored) and Everton v Fulham at ``second_kickoff``, quoted."""
    (first,) = away_flag_batch(captured).matches
    second = MatchRecord("E0", "Everton", "Fulham", second_kickoff)
    return IngestBatch(
        matches=[first, second],
        quotes=[
            QuoteRecord(0, "B365", Phase.PRE, 2.5, 3.4, 2.9, captured),
            QuoteRecord(1, "B365", Phase.PRE, 2.1, 3.4, 3.5, captured),
        ],
    )


def test_a_feed_moving_one_kickoff_and_a_bet_import_on_both_matches_take_turns(
    book: Book, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The feed updates the second match's row (its kickoff an hour later) and then writes
    # both matches' latest quotes; the import locks both matches shared. Paused between
    # the two, a feed that locked only the row it updated would hold Everton v Fulham and
    # wait for Arsenal v Chelsea, which the import holds while it waits for the other: a
    # deadlock. The feed locks both first, in id order, so the import waits for it.
    with session_scope(book.writes) as session:
        ingest_batch(session, two_matches(RAISED, SECOND_KICKOFF), source="test", now=RAISED)
    with session_scope(book.writes) as session:
        first_id, second_id = session.scalars(text("SELECT id FROM matches ORDER BY id")).all()
    paused, go_on = threading.Event(), threading.Event()
    keep = batches.keep_latest_quotes  # type: ignore[attr-defined]  # as the feed calls it

    def pausing(*args: Any, **kwargs: Any) -> None:
        paused.set()
        assert go_on.wait(DEADLINE_SECONDS)
        keep(*args, **kwargs)

    monkeypatch.setattr(batches, "keep_latest_quotes", pausing)
    csv = (
        "placed_at,match_id,outcome,bookmaker,price,stake\n"
        f"2029-12-31T12:00:00Z,{first_id},1,B365,2.5,10\n"
        f"2029-12-31T12:00:00Z,{second_id},1,B365,2.1,10\n"
    )
    later = RAISED + dt.timedelta(hours=1)
    moved = two_matches(later, SECOND_KICKOFF + dt.timedelta(hours=1))
    errors: list[BaseException] = []

    def run(work: Callable[[Session], object]) -> threading.Thread:
        def target() -> None:
            try:
                with session_scope(book.writes) as session:
                    work(session)
            except BaseException as error:  # asserted below
                errors.append(error)

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    feed = run(lambda session: ingest_batch(session, moved, source="test", now=later))
    assert paused.wait(DEADLINE_SECONDS)
    upload = run(lambda session: import_bets(session, csv, later))
    with book.engine.connect() as watcher:

        def import_waits() -> bool:
            waiting = watcher.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()"
                )
            )
            watcher.commit()
            return bool(waiting) or not upload.is_alive()

        wait_until(import_waits, "the import waits for the feed")
    go_on.set()
    feed.join()
    upload.join()
    assert errors == []
    assert [stake for stake, *_ in book.settlements()] == [10.0, 10.0]
