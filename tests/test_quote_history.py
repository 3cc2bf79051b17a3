"""Thinning the price history: what a hand-built history keeps, written out by hand; what
every reader of old matches reads (the latest valid quotes, the flag ledger's close) the
same before and after; a dry run, a second run, a recent match and real season files that
lose nothing.

The history: Arsenal v Everton kicked off at 15:00 on 11 March 2024. PS (the closing
reference) quoted it before the match every three hours from 00:00 on 1 March to 18:00 on
11 March (87 quotes, 15:00 and 18:00 at and after kickoff), each received when captured; its
12:00 quote was seen again unchanged at 14:50, so it is a live close; and a season file gave
PS's closing prices, undated. B365 quoted at 03:00, 04:00 and 06:00 on 10 March, then twice
with a clock ahead (captured 22:01 and 22:02, both received at 22:00): both are believed
captured at 22:00, indistinguishable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Bookmaker, Match, OddsQuote
from app.domain.flags import CLOSING_WINDOW, CloseOrigin, ClosingLine
from app.domain.prediction import QuotedMatch
from app.domain.quote_history import ThinningRule, quotes_to_keep
from app.domain.records import IngestBatch, MatchRecord
from app.domain.tables import MatchTable, QuoteTable
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Phase
from app.services import flags
from app.services.ingest import ingest_batch
from app.services.ingest.latest import refresh_latest_quotes
from app.services.queries import latest_quotes
from app.services.quote_history import (
    BATCH_MATCHES,
    BATCH_QUOTES,
    HistoryThinned,
    ThinningTerms,
    UnknownCompetitionError,
    quote_history_job,
    thin_history,
)
from app.services.run_bounds import Stop
from app.services.serving import stored_matches
from app.settings import Settings
from tests.commands import Oddsboost

KICKOFF = dt.datetime(2024, 3, 11, 15, 0, tzinfo=dt.UTC)
# Seven weeks after the kickoff: it kicked off more than 30 days before.
NOW = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
RECENT_KICKOFF = dt.datetime(2024, 4, 20, 15, 0, tzinfo=dt.UTC)
TWELVE_HOURS = ThinningTerms(
    rule=ThinningRule(interval=dt.timedelta(hours=12)), older_than=dt.timedelta(days=30)
)
PRICES = (2.0, 3.5, 4.0)


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 3, day, hour, minute, tzinfo=dt.UTC)


# (bookmaker, phase, captured_at, received_at, seen_at)
Quote = tuple[str, Phase, dt.datetime | None, dt.datetime, dt.datetime]

EVERY_THREE_HOURS = [at(1, 0) + dt.timedelta(hours=3 * step) for step in range(87)]
PS_QUOTES: list[Quote] = [
    ("PS", Phase.PRE, moment, moment, at(11, 14, 50) if moment == at(11, 12) else moment)
    for moment in EVERY_THREE_HOURS
]
SEASON_FILE_CLOSE: Quote = ("PS", Phase.CLOSING, None, at(12, 9), at(12, 9))
B365_QUOTES: list[Quote] = [
    *(("B365", Phase.PRE, at(10, hour), at(10, hour), at(10, hour)) for hour in (3, 4, 6)),
    *(("B365", Phase.PRE, at(10, 22, minute), at(10, 22), at(10, 22)) for minute in (1, 2)),
]

# What the twelve-hour thinning keeps, (bookmaker, phase, captured_at as stored):
KEPT = {
    # PS before the match: the opening; the last of each half day (09:00 and 21:00) from
    # 1 to 10 March; on 11 March 09:00, the close at 12:00 and the latest, 18:00 (15:00 is
    # at kickoff: not the close, and not the last of its half day).
    ("PS", Phase.PRE, at(1, 0)),
    *(("PS", Phase.PRE, at(day, hour)) for day in range(1, 11) for hour in (9, 21)),
    ("PS", Phase.PRE, at(11, 9)),
    ("PS", Phase.PRE, at(11, 12)),
    ("PS", Phase.PRE, at(11, 18)),
    # The season file's close: undated.
    ("PS", Phase.CLOSING, None),
    # B365: the opening at 03:00, the last of the morning at 06:00 and both quotes believed
    # captured at 22:00 (the close, the latest and the last of the evening); 04:00 goes.
    ("B365", Phase.PRE, at(10, 3)),
    ("B365", Phase.PRE, at(10, 6)),
    ("B365", Phase.PRE, at(10, 22, 1)),
    ("B365", Phase.PRE, at(10, 22, 2)),
}
ALL_QUOTES = [*PS_QUOTES, SEASON_FILE_CLOSE, *B365_QUOTES]


def store_match(
    session: Session, kickoff: dt.datetime, quotes: Sequence[Quote], home: str = "Arsenal"
) -> int:
    """The match ``home`` v Everton at ``kickoff`` with ``quotes``; its id."""
    ingest_batch(
        session,
        IngestBatch(matches=[MatchRecord("E0", home, "Everton", kickoff)]),
        source="test",
        now=kickoff,
    )
    match_id = session.scalars(select(Match.id).where(Match.kickoff == kickoff)).one()
    for code in sorted({quote[0] for quote in quotes}):
        if session.scalar(select(Bookmaker.id).where(Bookmaker.code == code)) is None:
            session.add(Bookmaker(code=code, name=code))
    session.flush()
    # Not dict(result): a result has keys(), so dict() would read it as a mapping.
    rows = session.execute(select(Bookmaker.code, Bookmaker.id))
    ids = {code: id_ for code, id_ in rows}  # noqa: C416
    for code, phase, captured, received, seen in quotes:
        session.add(
            OddsQuote(
                match_id=match_id,
                bookmaker_id=ids[code],
                phase=phase,
                home=PRICES[0],
                draw=PRICES[1] + (captured or received).hour / 100,
                away=PRICES[2],
                captured_at=captured,
                received_at=received,
                seen_at=seen,
            )
        )
    # Written past the ingest: the table of latest quotes is brought up to date as it would.
    session.flush()
    refresh_latest_quotes(session, [match_id], kickoff)
    return match_id


def stored_history(session: Session, match_id: int) -> set[tuple[str, Phase, dt.datetime | None]]:
    rows = session.execute(
        select(Bookmaker.code, OddsQuote.phase, OddsQuote.captured_at)
        .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
        .where(OddsQuote.match_id == match_id)
    )
    return {(code, Phase(phase), captured) for code, phase, captured in rows}


@pytest.fixture
def history(factory: sessionmaker[Session]) -> int:
    """The hand-built history, committed; the match's id."""
    with session_scope(factory) as session:
        return store_match(session, KICKOFF, ALL_QUOTES)


# The latest quote of each bookmaker and phase as the match's page lists it.
Listed = tuple[str, Phase, dt.datetime | None, float, float, float]
ReadersView = tuple[tuple[dict[int, QuotedMatch], ...], dict[int, ClosingLine], list[Listed]]


def readers_view(factory: sessionmaker[Session], match_id: int) -> ReadersView:
    """What the board and predictions read of the match (each phase), its close as the
    flag ledger reads it, and its latest quotes as `GET /matches/{id}` lists them."""
    with factory() as session:
        served = tuple(stored_matches(session, [match_id], phase=phase) for phase in Phase)
        close = flags.closing_lines(session, {match_id: ("1", KICKOFF)}, CLOSING_WINDOW)
        listed = [
            (q.bookmaker.code, q.phase, q.credible_captured_at, q.home, q.draw, q.away)
            for q in latest_quotes(session, match_id)
        ]
    return served, close, listed


def test_the_hand_built_history_keeps_what_was_written_out(
    factory: sessionmaker[Session], history: int
) -> None:
    thinned = thin_history(factory, TWELVE_HOURS, now=NOW)

    with factory() as session:
        assert stored_history(session, history) == KEPT
    assert (thinned.matches, thinned.matches_thinned) == (1, 1)
    assert (thinned.quotes_kept, thinned.quotes_removed) == (29, 93 - 29)
    assert thinned.kicked_off_before == NOW - dt.timedelta(days=30)


def test_what_the_readers_read_is_the_same_after_thinning(
    factory: sessionmaker[Session], history: int
) -> None:
    before = readers_view(factory, history)

    thin_history(factory, TWELVE_HOURS, now=NOW)

    assert readers_view(factory, history) == before
    served, close, listed = before
    # PS's 12:00 quote, seen to hold at 14:50, is the live close; B365's latest is one of
    # the two believed captured at 22:00.
    assert close[history].origin == CloseOrigin.LIVE
    assert close[history].captured_at == at(11, 12)
    latest = {odds.bookmaker: odds.captured_at for odds in served[0][history].odds}
    assert latest == {"B365": at(10, 22), "PS": at(11, 12)}
    assert [(code, phase, captured) for code, phase, captured, *_ in listed] == [
        ("B365", Phase.PRE, at(10, 22)),
        ("PS", Phase.PRE, at(11, 18)),
        ("PS", Phase.CLOSING, None),
    ]


def test_a_dry_run_counts_the_same_and_removes_nothing(
    factory: sessionmaker[Session], history: int
) -> None:
    dry = thin_history(
        factory, ThinningTerms(TWELVE_HOURS.rule, TWELVE_HOURS.older_than, dry_run=True), now=NOW
    )

    with factory() as session:
        assert len(stored_history(session, history)) == len(ALL_QUOTES)
    real = thin_history(factory, TWELVE_HOURS, now=NOW)
    assert (dry.quotes_kept, dry.quotes_removed, dry.dry_run) == (29, 64, True)
    assert (real.quotes_kept, real.quotes_removed, real.dry_run) == (29, 64, False)


def test_a_second_run_removes_nothing(factory: sessionmaker[Session], history: int) -> None:
    thin_history(factory, TWELVE_HOURS, now=NOW)

    again = thin_history(factory, TWELVE_HOURS, now=NOW)

    assert (again.matches, again.matches_thinned, again.quotes_removed) == (1, 0, 0)
    with factory() as session:
        assert stored_history(session, history) == KEPT


def test_a_match_that_kicked_off_recently_keeps_its_whole_history(
    factory: sessionmaker[Session],
) -> None:
    recent = [
        ("PS", Phase.PRE, moment, moment, moment)
        for moment in (RECENT_KICKOFF - dt.timedelta(hours=hours) for hours in range(1, 30))
    ]
    with session_scope(factory) as session:
        match_id = store_match(session, RECENT_KICKOFF, recent, "Chelsea")

    thinned = thin_history(factory, TWELVE_HOURS, now=NOW)

    assert thinned == HistoryThinned(NOW - dt.timedelta(days=30), dry_run=False)
    with factory() as session:
        assert len(stored_history(session, match_id)) == len(recent)


@pytest.mark.parametrize(("matches", "quotes"), [(1, BATCH_QUOTES), (BATCH_MATCHES, 50)])
def test_batches_of_one_match_thin_the_same(
    factory: sessionmaker[Session], history: int, matches: int, quotes: int
) -> None:
    with session_scope(factory) as session:
        other = store_match(session, KICKOFF - dt.timedelta(days=1), PS_QUOTES[:40], "Chelsea")
    # 93 quotes and 40: one match at a time either way.
    one_at_a_time = ThinningTerms(
        TWELVE_HOURS.rule, TWELVE_HOURS.older_than, batch_matches=matches, batch_quotes=quotes
    )

    thinned = thin_history(factory, one_at_a_time, now=NOW)

    assert (thinned.batches, thinned.matches, thinned.matches_thinned) == (2, 2, 2)
    with factory() as session:
        assert stored_history(session, history) == KEPT
        # Its kickoff is 15:00 on 10 March, after its last quote (21:00 on 5 March): the
        # opening and the last of each half day, the last of which is its close and latest.
        kept = {captured for _, _, captured in stored_history(session, other)}
    assert kept == {at(1, 0), *(at(day, hour) for day in range(1, 6) for hour in (9, 21))}


def test_only_the_competition_asked_for(factory: sessionmaker[Session], history: int) -> None:
    elsewhere = ThinningTerms(TWELVE_HOURS.rule, TWELVE_HOURS.older_than, competition="SP1")
    with session_scope(factory) as session:
        ingest_batch(
            session,
            IngestBatch(matches=[MatchRecord("SP1", "Sevilla", "Betis", KICKOFF)]),
            source="test",
        )

    thinned = thin_history(factory, elsewhere, now=NOW)

    assert (thinned.matches, thinned.quotes_removed) == (1, 0)
    with factory() as session:
        assert len(stored_history(session, history)) == len(ALL_QUOTES)
    with pytest.raises(UnknownCompetitionError, match="no competition 'I1' is stored"):
        thin_history(
            factory, ThinningTerms(TWELVE_HOURS.rule, TWELVE_HOURS.older_than, "I1"), now=NOW
        )


@pytest.fixture
def seeded_factory(seeded_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(seeded_url)
    yield make_session_factory(engine, for_writes=True)
    engine.dispose()


def test_season_files_one_snapshot_each_lose_nothing(
    seeded_factory: sessionmaker[Session],
) -> None:
    three_hours = ThinningTerms(ThinningRule(dt.timedelta(hours=3)), dt.timedelta(days=30))

    thinned = thin_history(seeded_factory, three_hours, now=NOW)

    # Three seasons of E0 and SP1: 6 × 380 matches, each of its quotes the only one of its
    # bookmaker and phase.
    assert (thinned.matches, thinned.matches_thinned, thinned.quotes_removed) == (2280, 0, 0)
    with seeded_factory() as session:
        stored = session.scalar(select(func.count()).select_from(OddsQuote))
    assert thinned.quotes_kept == stored


def test_random_histories_keep_every_latest_valid_quote_and_thin_once() -> None:
    generator = np.random.default_rng(7)
    size = 2_000
    matches = MatchTable(
        ids=np.arange(5, dtype=np.int64),
        kickoff=np.full(5, 1_000_000.0),
        result=np.full(5, -1, dtype=np.intp),
        competition=np.full(5, "E0"),
        season=np.full(5, "2023/24"),
    )
    captured = (generator.integers(0, 1_100_000 // 3600, size) * 3600.0).astype(np.float64)
    captured[generator.random(size) < 0.02] = np.nan
    quotes = QuoteTable(
        match=generator.integers(0, 5, size).astype(np.intp),
        bookmaker=generator.choice(np.array(["PS", "B365", "WH"]), size),
        phase=generator.choice(np.array([Phase.PRE.value, Phase.CLOSING.value]), size),
        captured_at=captured,
        received_at=np.where(np.isnan(captured), 0.0, captured),
        prices=np.full((size, 3), 2.5),
        seen_at=captured,
    )
    rule = ThinningRule(interval=dt.timedelta(hours=6))

    keep = quotes_to_keep(matches, quotes, rule)
    kept = quotes.rows(keep)

    assert 0 < keep.sum() < size
    assert quotes_to_keep(matches, kept, rule).all()
    for phase in (Phase.PRE, Phase.CLOSING, None):
        chosen = select_latest_valid(matches, quotes, phase)
        assert keep[chosen].all()


def test_the_command_thins_and_says_what_it_kept(
    oddsboost: Oddsboost, migrated_url: str, factory: sessionmaker[Session], history: int
) -> None:
    environment = {"ODDSBOOST_DATABASE_URL": migrated_url}
    arguments = ("quotes", "thin", "--interval", "12h", "--older-than", "30d")

    dry = oddsboost.run(*arguments, "--dry-run", env=environment)
    real = oddsboost.run(*arguments, "--json", env=environment)

    assert dry.returncode == 0, dry.stderr
    assert "would remove 64 quotes of 1 match, would keep 29 quotes" in dry.stdout
    assert dry.stdout.rstrip().endswith("dry run: nothing was changed")
    assert real.returncode == 0, real.stderr
    assert '"quotes_removed": 64' in real.stdout
    with factory() as session:
        assert stored_history(session, history) == KEPT


@pytest.mark.parametrize(
    ("option", "value"), [("--interval", "0h"), ("--interval", "6"), ("--older-than", "a week")]
)
def test_a_duration_the_command_cannot_read_is_a_usage_error(
    oddsboost: Oddsboost, option: str, value: str
) -> None:
    result = oddsboost.run(
        "quotes", "thin", option, value, env={"ODDSBOOST_DATABASE_URL": "sqlite://"}
    )

    assert result.returncode == 2
    assert result.stderr.startswith(f"{option}: {value!r} is not a duration")


def test_the_scheduled_thinning_is_off_unless_given_a_cron() -> None:
    assert Settings().quote_history_cron is None
    terms = ThinningTerms.from_settings(
        Settings(quote_history_interval_hours=3, quote_history_older_than_days=60)
    )
    assert terms.rule.interval == dt.timedelta(hours=3)
    assert terms.older_than == dt.timedelta(days=60)


def test_the_scheduled_job_thins_by_the_settings(
    migrated_url: str, factory: sessionmaker[Session], history: int
) -> None:
    engine = make_engine(migrated_url)
    try:
        quote_history_job(
            engine,
            Settings(database_url=migrated_url, quote_history_interval_hours=12),
            clock=lambda: NOW,
        )
    finally:
        engine.dispose()

    with factory() as session:
        assert stored_history(session, history) == KEPT


def test_a_stop_ends_the_thinning_before_its_next_batch(
    factory: sessionmaker[Session], history: int
) -> None:
    stop = Stop()
    stop.set()

    thinned = thin_history(factory, TWELVE_HOURS, now=NOW, stop=stop)

    assert thinned.batches == 0
    with factory() as session:
        assert len(stored_history(session, history)) == len(ALL_QUOTES)


def test_the_command_names_a_competition_it_does_not_know(
    oddsboost: Oddsboost, migrated_url: str
) -> None:
    result = oddsboost.run(
        "quotes", "thin", "--competition", "XX9", env={"ODDSBOOST_DATABASE_URL": migrated_url}
    )

    assert (result.returncode, result.stderr.strip()) == (
        1,
        "--competition: no competition 'XX9' is stored",
    )
