"""The latest quotes an answer reads (``LatestQuote``) against the independent reference:
``select_latest_valid`` over the whole price history, after every kind of write that can
change which quote is latest (a newer or older capture, both phases, a quote after kickoff,
an undated one, a reschedule either way, prices updated or met again, a deleted match, a
team merge), and over random histories."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.engine import make_engine
from app.db.migrate import downgrade_to, upgrade_to_head
from app.db.orm import Bookmaker, Competition, LatestQuote, Match, OddsQuote, Team
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.tables import tables_from_rows
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Phase
from app.services.ingest import ingest_batch
from app.services.ingest.results import MatchIdentity, ResultItem, settle_results
from app.services.matches import delete_match
from app.services.model_versions import QUOTE_COLUMNS
from app.services.queries import MatchFilter
from app.services.serving import stored_matches
from app.services.teams import add_alias
from app.services.upcoming import match_stamps, window_watermark

KICKOFF = dt.datetime(2031, 3, 15, 15, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
# Long after every capture and kickoff of this module: no quote is refused as from the future.
LATE = KICKOFF + dt.timedelta(days=30)

# (match id, bookmaker code, phase) -> the id of the quote served.
Choice = dict[tuple[int, str, Phase], int]


def reference_choice(session: Session) -> Choice:
    """What ``select_latest_valid`` chooses from every stored quote, per phase; quotes read
    in the order stored, the rule's last tie-break."""
    match_rows: Any = session.execute(
        select(Match.id, Match.kickoff, Match.result, Competition.code, Match.season).join(
            Competition, Match.competition_id == Competition.id
        )
    ).all()
    quote_rows: Any = session.execute(
        select(OddsQuote.id, *QUOTE_COLUMNS)
        .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
        .order_by(OddsQuote.id)
    ).all()
    matches, quotes = tables_from_rows(match_rows, [row[1:] for row in quote_rows])
    quote_ids = np.array([row[0] for row in quote_rows], dtype=np.int64)
    chosen: Choice = {}
    for phase in Phase:
        for index in select_latest_valid(matches, quotes, phase):
            match_id = int(matches.ids[quotes.match[index]])
            chosen[(match_id, str(quotes.bookmaker[index]), phase)] = int(quote_ids[index])
    return chosen


def table_choice(session: Session) -> Choice:
    rows = session.execute(
        select(LatestQuote.match_id, Bookmaker.code, LatestQuote.phase, LatestQuote.quote_id).join(
            Bookmaker, LatestQuote.bookmaker_id == Bookmaker.id
        )
    ).all()
    return {(row[0], row[1], Phase(row[2])): row[3] for row in rows}


def served_odds(session: Session, phase: Phase) -> dict[int, set[tuple[object, ...]]]:
    ids = list(session.scalars(select(Match.id)))
    return {
        match_id: {(q.bookmaker, q.home, q.draw, q.away, q.captured_at) for q in quoted.odds}
        for match_id, quoted in stored_matches(session, ids, phase=phase).items()
    }


def reference_odds(session: Session, phase: Phase) -> dict[int, set[tuple[object, ...]]]:
    """Per match, the quotes of ``phase`` the reference chooses; failing any, of any phase."""
    match_rows: Any = session.execute(
        select(Match.id, Match.kickoff, Match.result, Competition.code, Match.season).join(
            Competition, Match.competition_id == Competition.id
        )
    ).all()
    quote_rows: Any = session.execute(
        select(*QUOTE_COLUMNS)
        .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
        .order_by(OddsQuote.id)
    ).all()
    matches, quotes = tables_from_rows(match_rows, quote_rows)
    found: dict[int, set[tuple[object, ...]]] = {}
    for wanted in (phase, None):
        picked: dict[int, set[tuple[object, ...]]] = {}
        for index in select_latest_valid(matches, quotes, wanted):
            match_id = int(matches.ids[quotes.match[index]])
            captured = float(quotes.captured_at[index])
            moment = None if np.isnan(captured) else dt.datetime.fromtimestamp(captured, dt.UTC)
            home_price, draw, away_price = quotes.prices[index].tolist()
            picked.setdefault(match_id, set()).add(
                (str(quotes.bookmaker[index]), home_price, draw, away_price, moment)
            )
        for match_id, odds in picked.items():
            found.setdefault(match_id, odds)
    return found


def assert_as_reference(session: Session) -> None:
    session.flush()
    assert table_choice(session) == reference_choice(session)
    for phase in Phase:
        served = served_odds(session, phase)
        assert {k: v for k, v in served.items() if v} == reference_odds(session, phase)


@dataclass
class Feed:
    """Batches of one match (Arsenal - Chelsea unless told), written through the ingest."""

    session: Session
    kickoff: dt.datetime = KICKOFF
    home: str = "Arsenal"
    away: str = "Chelsea"
    sent: list[QuoteRecord] = field(default_factory=list)

    def send(
        self,
        *quotes: tuple[str, Phase, float, dt.datetime | None],
        now: dt.datetime = LATE,
        kickoff: dt.datetime | None = None,
    ) -> None:
        if kickoff is not None:
            self.kickoff = kickoff
        batch = IngestBatch(
            matches=[MatchRecord("E0", self.home, self.away, self.kickoff)],
            quotes=[
                QuoteRecord(0, code, phase, home, 3.4, 3.6, captured_at=captured)
                for code, phase, home, captured in quotes
            ],
        )
        ingest_batch(self.session, batch, source="a test", now=now)


def match_id_of(session: Session) -> int:
    return session.scalars(select(Match.id)).one()


def test_an_older_capture_received_later_leaves_the_newer_one_served(session: Session) -> None:
    feed = Feed(session)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 2 * HOUR), now=KICKOFF - 2 * HOUR)
    feed.send(("B365", Phase.PRE, 2.2, KICKOFF - 5 * HOUR), now=KICKOFF - HOUR)
    assert_as_reference(session)
    (odds,) = served_odds(session, Phase.PRE).values()
    assert {quote[1] for quote in odds} == {2.0}  # the capture two hours before kickoff


def test_both_phases_a_quote_after_kickoff_and_an_undated_one(session: Session) -> None:
    feed = Feed(session)
    feed.send(
        ("B365", Phase.PRE, 2.0, KICKOFF - 3 * HOUR),
        ("B365", Phase.PRE, 2.1, KICKOFF + HOUR),  # after kickoff: never served
        ("B365", Phase.CLOSING, 2.3, KICKOFF - dt.timedelta(minutes=1)),
        ("PS", Phase.CLOSING, 2.4, None),  # undated: valid, older than any dated one
        ("PS", Phase.PRE, 2.5, None),
        ("PS", Phase.PRE, 2.6, KICKOFF - 4 * HOUR),
    )
    assert_as_reference(session)
    served = table_choice(session)
    prices = dict(session.execute(select(OddsQuote.id, OddsQuote.home)).all())
    assert {key[1:]: prices[quote] for key, quote in served.items()} == {
        ("B365", Phase.PRE): 2.0,
        ("B365", Phase.CLOSING): 2.3,
        ("PS", Phase.CLOSING): 2.4,
        ("PS", Phase.PRE): 2.6,
    }


def test_a_match_with_only_the_other_phase_is_served_it(session: Session) -> None:
    feed = Feed(session)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 3 * HOUR))
    assert_as_reference(session)
    (quoted,) = stored_matches(session, [match_id_of(session)], phase=Phase.CLOSING).values()
    assert quoted.stored is not None
    assert quoted.stored.fallback
    assert [q.home for q in quoted.odds] == [2.0]


def test_a_kickoff_moved_earlier_or_later_changes_what_is_served(session: Session) -> None:
    feed = Feed(session)
    feed.send(
        ("B365", Phase.PRE, 2.0, KICKOFF - 3 * HOUR),
        ("B365", Phase.PRE, 2.2, KICKOFF - HOUR),
        ("B365", Phase.PRE, 2.4, KICKOFF + HOUR),
    )
    assert_as_reference(session)
    # Earlier, the same day: the capture an hour before the old kickoff is now after it.
    feed.send(kickoff=KICKOFF - 2 * HOUR)
    assert_as_reference(session)
    assert {q[1] for q in served_odds(session, Phase.PRE)[match_id_of(session)]} == {2.0}
    # Later: the capture an hour after the old kickoff is now before it.
    feed.send(kickoff=KICKOFF + 2 * HOUR)
    assert_as_reference(session)
    assert {q[1] for q in served_odds(session, Phase.PRE)[match_id_of(session)]} == {2.4}


def test_a_result_that_moves_the_kickoff_changes_what_is_served(session: Session) -> None:
    feed = Feed(session)
    feed.send(
        ("B365", Phase.PRE, 2.0, KICKOFF - 30 * HOUR), ("B365", Phase.PRE, 2.2, KICKOFF - HOUR)
    )
    assert_as_reference(session)
    # The result names the match's teams a day earlier: the match moves there.
    moved = MatchIdentity("E0", "Arsenal", "Chelsea", KICKOFF - 24 * HOUR)
    report = settle_results(session, [ResultItem(1, 0, match=moved)], source="a test", now=LATE)
    assert report.matches_rescheduled == 1
    assert_as_reference(session)
    assert {q[1] for q in served_odds(session, Phase.PRE)[match_id_of(session)]} == {2.0}


def test_prices_updated_in_place_or_met_again(session: Session) -> None:
    feed = Feed(session)
    captured = KICKOFF - 3 * HOUR
    feed.send(("B365", Phase.PRE, 2.0, captured), now=KICKOFF - 3 * HOUR)
    stamp = row_stamp(session)
    # The same prices met again: their sighting moves, what is served does not.
    feed.send(("B365", Phase.PRE, 2.0, captured), now=KICKOFF - 2 * HOUR)
    assert_as_reference(session)
    assert row_stamp(session) == stamp
    # The same capture with another price: served, and the row says it changed.
    feed.send(("B365", Phase.PRE, 2.1, captured), now=KICKOFF - HOUR)
    assert_as_reference(session)
    assert row_stamp(session) == (1, KICKOFF - HOUR)


def row_stamp(session: Session) -> tuple[int, dt.datetime | None]:
    """The board's stamp of the one match (count, latest change), read before kickoff."""
    moment = KICKOFF - 4 * HOUR
    (match,), watermark = match_stamps(session, MatchFilter(), moment)
    revisions, also = window_watermark(session, MatchFilter(), moment)
    assert (revisions, also) == (((match[0], match[5]),), watermark)
    assert watermark[0] == match[4]  # the one match holds the newest change
    return match[3], match[4]


def test_the_stamp_moves_with_a_new_latest_quote_only(session: Session) -> None:
    feed = Feed(session)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 5 * HOUR), now=KICKOFF - 5 * HOUR)
    assert row_stamp(session) == (1, KICKOFF - 5 * HOUR)
    # An older capture received later: the board shows the same quotes, the stamp holds.
    feed.send(("B365", Phase.PRE, 2.2, KICKOFF - 6 * HOUR), now=KICKOFF - 4.5 * HOUR)
    assert row_stamp(session) == (1, KICKOFF - 5 * HOUR)
    feed.send(("PS", Phase.PRE, 2.1, KICKOFF - 4.2 * HOUR), now=KICKOFF - 4.1 * HOUR)
    assert row_stamp(session) == (2, KICKOFF - 4.1 * HOUR)


def test_a_deleted_match_takes_its_rows(session: Session) -> None:
    feed = Feed(session)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 3 * HOUR))
    Feed(session, home="Everton", away="Fulham").send(("B365", Phase.PRE, 2.0, KICKOFF - HOUR))
    arsenal = session.scalars(
        select(Match.id).join(Team, Match.home_team_id == Team.id).where(Team.name == "Arsenal")
    ).one()
    delete_match(session, arsenal, force=True)
    assert_as_reference(session)
    assert {key[0] for key in table_choice(session)} == {match_id_of(session)}


def test_a_team_merge_serves_the_twins_quotes_with_the_folded_ones(session: Session) -> None:
    Feed(session).send(
        ("B365", Phase.PRE, 2.0, KICKOFF - 3 * HOUR), ("PS", Phase.PRE, 2.1, KICKOFF - 3 * HOUR)
    )
    Feed(session, home="Arsenal FC").send(
        ("B365", Phase.PRE, 2.2, KICKOFF - 2 * HOUR),  # newer than the twin's: served
        ("WH", Phase.PRE, 2.3, KICKOFF - 4 * HOUR),
    )
    add_alias(session, alias="Arsenal FC", team="Arsenal", confirm=True)
    assert_as_reference(session)
    assert len(table_choice(session)) == 3


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_are_served_as_the_reference_chooses(session: Session, seed: int) -> None:
    """Random batches over three matches: captures before and after kickoff, undated ones,
    both phases, out of order, prices met again or changed, and kickoffs moved."""
    chance = random.Random(seed)
    feeds = [Feed(session, home=home) for home in ("Arsenal", "Everton", "Leeds")]
    captures = [KICKOFF + step * HOUR for step in range(-6, 3)]
    for _ in range(12):
        feed = chance.choice(feeds)
        # Received in any order, some before the capture they carry (which is then not
        # believed) or after kickoff; a capture beyond the receipt's skew is skipped.
        received = KICKOFF + dt.timedelta(minutes=chance.randint(-600, 240))
        quotes = [
            (
                chance.choice(("B365", "PS", "WH")),
                chance.choice(list(Phase)),
                chance.choice((2.0, 2.1, 2.2)),
                chance.choice([*captures, None]),
            )
            for _ in range(chance.randint(0, 4))
        ]
        quotes = list({quote[:2] + quote[3:]: quote for quote in quotes}.values())
        shift = chance.choice((0, 0, -2, 2))
        moved = feed.kickoff + shift * HOUR if shift else None
        feed.send(*quotes, now=received, kickoff=moved)
        assert_as_reference(session)


def test_season_files_and_the_migration_fill_the_table_as_the_reference(seeded_url: str) -> None:
    """Three seasons of E0 and SP1 written by the bulk import (COPY on PostgreSQL), then
    the table dropped and filled again by its migration from the history alone."""
    engine = make_engine(seeded_url)
    try:
        with Session(engine) as session:
            imported = table_choice(session)
            assert imported == reference_choice(session)
            # Both phases of every match (the files' opening and closing prices).
            assert {key[2] for key in imported} == set(Phase)
        downgrade_to(seeded_url, "0016")
        upgrade_to_head(seeded_url)
        with Session(engine) as session:
            assert table_choice(session) == imported
    finally:
        engine.dispose()


def served_prices(session: Session) -> dict[tuple[str, Phase], float]:
    """Per (bookmaker, phase) of the one match, the home price its row serves."""
    prices = dict(session.execute(select(OddsQuote.id, OddsQuote.home)).all())
    return {key[1:]: prices[quote] for key, quote in table_choice(session).items()}


def test_a_capture_older_than_the_served_one_arriving_later_leaves_it(session: Session) -> None:
    feed = Feed(session)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 2 * HOUR), now=KICKOFF - 2 * HOUR)
    feed.send(("B365", Phase.PRE, 2.2, KICKOFF - 5 * HOUR), now=KICKOFF - HOUR)
    # Undated, after dated ones: older than any dated quote.
    feed.send(("B365", Phase.PRE, 2.4, None), now=KICKOFF - 0.5 * HOUR)
    assert_as_reference(session)
    assert served_prices(session) == {("B365", Phase.PRE): 2.0}
    # A newer capture arriving after an undated one replaces it.
    feed.send(("PS", Phase.PRE, 2.5, None), now=KICKOFF - 3 * HOUR)
    feed.send(("PS", Phase.PRE, 2.6, KICKOFF - 4 * HOUR), now=KICKOFF - 2.5 * HOUR)
    assert_as_reference(session)
    assert served_prices(session) == {("B365", Phase.PRE): 2.0, ("PS", Phase.PRE): 2.6}


def test_a_tie_on_capture_and_receipt_goes_to_the_quote_stored_last(session: Session) -> None:
    feed = Feed(session)
    received = KICKOFF - 2 * HOUR
    feed.send(("B365", Phase.PRE, 2.0, received), now=received)
    # Captured two minutes after its receipt: believed captured at the receipt, the same
    # moment as the served quote, received at the same moment; stored after it, it wins.
    feed.send(("B365", Phase.PRE, 2.2, received + dt.timedelta(minutes=2)), now=received)
    assert_as_reference(session)
    assert served_prices(session) == {("B365", Phase.PRE): 2.2}


def test_a_quote_after_kickoff_arriving_is_never_served(session: Session) -> None:
    feed = Feed(session)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 2 * HOUR), now=KICKOFF - 2 * HOUR)
    feed.send(("B365", Phase.PRE, 2.2, KICKOFF + HOUR), now=KICKOFF + 2 * HOUR)
    feed.send(("PS", Phase.PRE, 2.4, KICKOFF + HOUR), now=KICKOFF + 2 * HOUR)
    assert_as_reference(session)
    assert served_prices(session) == {("B365", Phase.PRE): 2.0}


def test_the_served_quote_updated_past_kickoff_falls_back_to_the_one_before(
    session: Session,
) -> None:
    feed = Feed(session)
    minute = dt.timedelta(minutes=1)
    feed.send(("B365", Phase.PRE, 2.0, KICKOFF - 2 * HOUR), now=KICKOFF - 2 * HOUR)
    # Captured a minute after kickoff by a clock two minutes ahead: believed captured at its
    # receipt, a minute before kickoff, so served.
    feed.send(("B365", Phase.PRE, 2.2, KICKOFF + minute), now=KICKOFF - minute)
    assert served_prices(session) == {("B365", Phase.PRE): 2.2}
    # The same capture with a new price received after kickoff: its capture is believed now,
    # after kickoff, and the quote before it is served again.
    feed.send(("B365", Phase.PRE, 2.3, KICKOFF + minute), now=KICKOFF + 10 * minute)
    assert_as_reference(session)
    assert served_prices(session) == {("B365", Phase.PRE): 2.0}


def test_quotes_of_a_new_match_and_of_a_known_one_in_one_batch(session: Session) -> None:
    Feed(session).send(("B365", Phase.PRE, 2.0, KICKOFF - 3 * HOUR), now=KICKOFF - 3 * HOUR)
    batch = IngestBatch(
        matches=[
            MatchRecord("E0", "Arsenal", "Chelsea", KICKOFF),
            MatchRecord("E0", "Everton", "Fulham", KICKOFF),
        ],
        quotes=[
            QuoteRecord(match, code, Phase.PRE, home, 3.4, 3.6, captured_at=captured)
            for match in (0, 1)
            for code, home, captured in (
                ("B365", 2.1, KICKOFF - 4 * HOUR),
                ("B365", 2.2, KICKOFF - HOUR),
                ("PS", 2.3, None),
            )
        ],
    )
    ingest_batch(session, batch, source="a test", now=KICKOFF - HOUR)
    assert_as_reference(session)
    assert len(table_choice(session)) == 4
