"""The stamps answers are kept by (the board's per match, the match page's, the track
record's) move with every change of what they show, also when a writer's moment is older than
a change already committed: a writer takes its moment, waits for the match's lock held by a
writer with a later one, and commits after it."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Match, OddsQuote, Team, ValueFlag
from app.domain.flags import FlagStatus
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.value import ValueTerms
from app.domain.vocabulary import Method, Phase
from app.services import track_record_aggregates
from app.services.dashboard import match_stamp
from app.services.ingest import ingest_batch
from app.services.ingest.results import MatchIdentity, ResultItem, settle_results
from app.services.matches import delete_match
from app.services.pagination import PageWindow
from app.services.queries import MatchFilter
from app.services.quote_history import delete_quotes
from app.services.serving import ModelCache, stored_matches
from app.services.teams import add_alias
from app.services.upcoming import UpcomingBoards, UpcomingQuery, match_stamps, window_watermark
from tests.helpers import wait_until

KICKOFF = dt.datetime(2031, 3, 15, 15, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
# The moments of three writers: the second commits after the third.
T0, T1, T2 = KICKOFF - 10 * HOUR, KICKOFF - 6 * HOUR, KICKOFF - 5 * HOUR
# (bookmaker, phase, home price, capture time)
Quote = tuple[str, Phase, float, dt.datetime | None]


def send(
    session: Session,
    *quotes: Quote,
    now: dt.datetime,
    home: str = "Arsenal",
    kickoff: dt.datetime = KICKOFF,
) -> None:
    """One batch of quotes of one match (``home`` against Chelsea), written at ``now``."""
    batch = IngestBatch(
        matches=[MatchRecord("E0", home, "Chelsea", kickoff)],
        quotes=[
            QuoteRecord(0, code, phase, price, 3.4, 3.6, captured_at=captured)
            for code, phase, price, captured in quotes
        ],
    )
    ingest_batch(session, batch, source="a test", now=now)


def match_id_of(session: Session, home: str = "Arsenal") -> int:
    return session.scalars(
        select(Match.id).join(Team, Match.home_team_id == Team.id).where(Team.name == home)
    ).one()


def served_home_prices(session: Session, match_id: int) -> set[float]:
    quoted = stored_matches(session, [match_id], phase=Phase.PRE)[match_id]
    return {quote.home for quote in quoted.odds}


def test_a_later_commit_under_an_older_moment_moves_the_board_s_stamps(session: Session) -> None:
    send(session, ("B365", Phase.PRE, 2.0, T0), ("PS", Phase.PRE, 2.0, T0), now=T0)
    send(session, ("B365", Phase.PRE, 2.1, T2), now=T2)
    stamps, watermark = match_stamps(session, MatchFilter(), T2)
    revisions, _ = window_watermark(session, MatchFilter(), T2)
    send(session, ("PS", Phase.PRE, 3.0, T1), now=T1)
    # PS's capture at T1 is its newest: served now, stamped with T1, older than B365's T2.
    assert served_home_prices(session, match_id_of(session)) == {2.1, 3.0}
    stamps_after, watermark_after = match_stamps(session, MatchFilter(), T2)
    assert stamps_after != stamps
    # The newest change of the window's quotes is still B365's: what a poll's cheap check
    # compares moves by the revisions.
    assert watermark_after == watermark
    assert window_watermark(session, MatchFilter(), T2) != (revisions, watermark)


def test_a_writer_that_waited_for_another_moves_the_stamp_the_other_committed(
    migrated_url: str,
) -> None:
    """Two writers in their own transactions: the one with the older moment waits for the
    other's lock (PostgreSQL: the match's row; SQLite: the database's write lock), then
    commits its change."""
    engine = make_engine(migrated_url)
    writes = make_session_factory(engine, for_writes=True)
    with session_scope(writes) as session:
        send(session, ("B365", Phase.PRE, 2.0, T0), ("PS", Phase.PRE, 2.0, T0), now=T0)
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with session_scope(writes) as session:
                send(session, ("PS", Phase.PRE, 3.0, T1), now=T1)
        except BaseException as error:  # asserted below
            errors.append(error)

    waiter = threading.Thread(target=second)
    with session_scope(writes) as first:
        send(first, ("B365", Phase.PRE, 2.1, T2), now=T2)
        committed = match_stamps(first, MatchFilter(), T2)  # as the first commits it
        waiter.start()
        if engine.dialect.name == "postgresql":
            with engine.connect() as watcher:

                def second_waits() -> bool:
                    waiting = watcher.scalar(
                        text(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
                            "'Lock' AND datname = current_database()"
                        )
                    )
                    watcher.commit()  # each look at a fresh snapshot of the activity
                    return bool(waiting) or not waiter.is_alive()

                wait_until(second_waits, "the second writer waits for the first")
            assert waiter.is_alive(), "the second writer did not wait"
    waiter.join()
    assert errors == []
    with session_scope(make_session_factory(engine)) as session:
        assert served_home_prices(session, match_id_of(session)) == {2.1, 3.0}
        stamps, watermark = match_stamps(session, MatchFilter(), T2)
    engine.dispose()
    assert watermark == committed[1]  # the first's change is still the newest
    assert stamps != committed[0]


def test_a_re_price_in_place_under_an_older_moment_moves_the_match_page_s_stamp(
    session: Session,
) -> None:
    send(session, ("B365", Phase.PRE, 2.0, T0), ("PS", Phase.PRE, 2.0, T0), now=T0)
    send(session, ("B365", Phase.PRE, 2.1, T2), now=T2)
    match_id = match_id_of(session)
    before = match_stamp(session, match_id, now=T2)
    send(session, ("PS", Phase.PRE, 3.0, T0), now=T1)  # PS's quote of T0, re-priced at T1
    after = match_stamp(session, match_id, now=T2)
    assert before is not None
    assert after is not None
    # The same number of quotes, and B365's receipt at T2 is still the newest.
    assert (after.quotes, after.newest_receipt) == (before.quotes, before.newest_receipt)
    assert served_home_prices(session, match_id) == {2.1, 3.0}
    assert after.shown != before.shown


def quotes_revision(session: Session, match_id: int) -> int:
    return session.execute(select(Match.quotes_revision).where(Match.id == match_id)).scalar_one()


def test_each_write_of_a_match_s_quotes_raises_its_revision_by_one(session: Session) -> None:
    send(session, ("B365", Phase.PRE, 2.0, T0), now=T0)
    match_id = match_id_of(session)
    seen = [quotes_revision(session, match_id)]

    def moved() -> bool:
        seen.append(quotes_revision(session, match_id))
        return seen[-1] == seen[-2] + 1

    send(session, ("PS", Phase.PRE, 2.0, T0), now=T1)  # a quote inserted
    assert moved()
    send(session, ("PS", Phase.PRE, 2.2, T0), now=T1)  # re-priced in place
    assert moved()
    send(session, ("PS", Phase.PRE, 2.2, T0), now=T2)  # met again: nothing changes
    assert not moved()
    # The result names the match a day earlier: its kickoff moves there.
    earlier = MatchIdentity("E0", "Arsenal", "Chelsea", KICKOFF - 24 * HOUR)
    report = settle_results(
        session, [ResultItem(1, 0, match=earlier)], source="a test", now=KICKOFF + 48 * HOUR
    )
    assert report.matches_rescheduled == 1
    assert moved()
    oldest = session.scalars(select(OddsQuote.id).order_by(OddsQuote.id).limit(1)).one()
    delete_quotes(session, [oldest], [match_id])  # thinned
    assert moved()
    assert len(set(seen)) == 5


def test_a_team_merge_raises_the_revision_of_the_twin_that_takes_the_quotes(
    session: Session,
) -> None:
    send(session, ("B365", Phase.PRE, 2.0, T0), now=T0)
    send(session, ("PS", Phase.PRE, 2.4, T1), now=T1, home="Arsenal FC")
    twin = match_id_of(session)
    before = match_stamps(session, MatchFilter(), T2)[0]
    add_alias(session, alias="Arsenal FC", team="Arsenal", confirm=True)
    after = match_stamps(session, MatchFilter(), T2)[0]
    assert [stamp[0] for stamp in after] == [twin]
    (was,) = [stamp for stamp in before if stamp[0] == twin]
    assert after[0][5] == was[5] + 1
    assert served_home_prices(session, twin) == {2.0, 2.4}


def flag_scored(session: Session, match_id: int, settled_at: dt.datetime) -> None:
    """A flag on the home win of ``match_id``, scored at ``settled_at``."""
    session.add(
        ValueFlag(
            match_id=match_id,
            outcome="1",
            bookmaker="B365",
            price=2.0,
            net_price=2.0,
            expected_value=0.1,
            probability=0.55,
            value_source="model",
            raised_at=settled_at - HOUR,
            status=FlagStatus.SETTLED,
            best_net_price=2.0,
            result="1",
            flat_return=1.0,
            settled_at=settled_at,
        )
    )
    session.flush()


def test_the_track_record_stamp_moves_when_scored_flags_go_with_their_match(
    session: Session,
) -> None:
    send(session, ("B365", Phase.PRE, 2.0, T0), now=T0)
    send(session, ("B365", Phase.PRE, 2.0, T0), now=T0, home="Everton")
    # The match deleted holds the older score: the newest one stays as it is.
    flag_scored(session, match_id_of(session), T1)
    flag_scored(session, match_id_of(session, "Everton"), T2)
    before = track_record_aggregates.stamp(session)
    delete_match(session, match_id_of(session), force=True)
    after = track_record_aggregates.stamp(session)
    assert after.newest_flag_score == before.newest_flag_score
    assert (before.scored_flags, after.scored_flags) == (2, 1)
    assert after != before


# Board revisions of processes with different defaults and no model.


@pytest.fixture
def two_phases_engine(migrated_url: str) -> Iterator[Engine]:
    """A match whose pre-match and closing quotes differ, committed."""
    engine = make_engine(migrated_url)
    with session_scope(make_session_factory(engine)) as session:
        send(
            session,
            ("B365", Phase.PRE, 2.0, T0),
            ("B365", Phase.CLOSING, 3.0, T1),
            now=T2,
        )
    yield engine
    engine.dispose()


def board_page(engine: Engine, phase: Phase, method: Method) -> tuple[str, float | None]:
    """The revision of the board of a process with these defaults and no model, and the
    home win's fair probability it shows."""
    sessions = make_session_factory(engine)
    boards = UpcomingBoards(
        sessions=sessions,
        models=ModelCache(sessions, default_phase=phase, default_method=method),
    )
    query = UpcomingQuery(terms=ValueTerms(), daily_exposure_cap=0.1)
    page = asyncio.run(boards.page(query, PageWindow(limit=10, offset=0), now=T2))
    (item,) = page.items
    assert item.prediction is not None
    return page.revision, item.prediction.probabilities[0]


@pytest.mark.parametrize(
    "other",
    [(Phase.CLOSING, Method.MULTIPLICATIVE), (Phase.PRE, Method.ADDITIVE)],
    ids=["phase", "method"],
)
def test_boards_made_with_other_defaults_have_other_revisions(
    two_phases_engine: Engine, other: tuple[Phase, Method]
) -> None:
    revision, home = board_page(two_phases_engine, Phase.PRE, Method.MULTIPLICATIVE)
    other_revision, other_home = board_page(two_phases_engine, *other)
    # Priced 2.0 before and 3.0 at the close; a margin taken off in proportion or evenly:
    # another board, so another tag.
    assert other_home != home
    assert other_revision != revision
    assert board_page(two_phases_engine, Phase.PRE, Method.MULTIPLICATIVE)[0] == revision
