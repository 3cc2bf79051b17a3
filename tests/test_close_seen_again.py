"""A close known to hold: a price that did not move for hours, fetched again by the
closing-line job minutes before kickoff, is the live close its flag is scored against.

The Odds API gives each bookmaker's price with the moment it last changed, so a price
unchanged since 11:58 comes back with that same moment at 14:49 and adds no quote; the
quote records instead that it was seen again. A local server answers as The Odds API does;
the books are without margin, so every fair line is 1/price (power's exponent is 1) and,
with no model, the served probability is the mean of the bookmakers' fair lines.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, session_scope
from app.db.migrate import downgrade_to, upgrade_to_head
from app.db.orm import Bookmaker, OddsQuote, ValueFlag
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.vocabulary import FetchStatus, Phase, RunTrigger
from app.services import flags
from app.services.closing_line import fetch_closing_lines
from app.services.ingest import ingest_batch
from app.services.odds_api_feed import fetch_the_odds_api
from app.settings import Settings
from tests.odds_api_site import EPL, KEY, FakeOddsApi, events_answer, quota

DAY = dt.date(2031, 3, 8)
KICKOFF = dt.datetime.combine(DAY, dt.time(15, 0), tzinfo=dt.UTC)
# Both books last changed at 11:58 and hold until kickoff.
UPDATED = KICKOFF.replace(hour=11, minute=58)
# PS fair 1/2, 1/4, 1/4; B365 fair 2/5, 1/5, 2/5: served 0.45, 0.225, 0.325, so the away
# side at PS's 4.0 is the match's bet (EV 0.325 × 4 − 1 = 0.3, the others 0.125).
PRICES = {"pinnacle": (2.0, 4.0, 4.0), "bet365": (2.5, 5.0, 2.5)}
TITLES = {"pinnacle": "Pinnacle", "bet365": "Bet365"}


def at(hour: int, minute: int) -> dt.datetime:
    return dt.datetime.combine(DAY, dt.time(hour, minute), tzinfo=dt.UTC)


def iso(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def arsenal_everton() -> dict[str, Any]:
    """Arsenal v Everton at 15:00 as The Odds API lists it, both prices as at 11:58."""
    bookmakers = []
    for key, (home, draw, away) in PRICES.items():
        outcomes = [
            {"name": "Arsenal", "price": home},
            {"name": "Everton", "price": away},
            {"name": "Draw", "price": draw},
        ]
        bookmakers.append(
            {
                "key": key,
                "title": TITLES[key],
                "last_update": iso(UPDATED),
                "markets": [{"key": "h2h", "last_update": iso(UPDATED), "outcomes": outcomes}],
            }
        )
    return {
        "id": "epl-arsenal-everton",
        "sport_key": "soccer_epl",
        "commence_time": iso(KICKOFF),
        "home_team": "Arsenal",
        "away_team": "Everton",
        "bookmakers": bookmakers,
    }


def no_wait(_seconds: float) -> None:
    """Waits between attempts are not spent."""


@pytest.fixture
def fetched_at_noon(odds_api: tuple[FakeOddsApi, str], factory: sessionmaker[Session]) -> Settings:
    """The feed's noon run stored the match and its prices, and raised the away flag; the
    server answers the same at every later request."""
    api, base = odds_api
    settings = Settings(
        odds_api_key=KEY,
        odds_api_url=base,
        odds_api_sports=["soccer_epl"],
        odds_api_regions=["uk", "eu"],
        odds_api_backoff_seconds=0.5,
        odds_api_timeout_seconds=5.0,
        closing_line_cron="*/5 * * * *",
        # Value judged by the served prediction, the mean of the fair lines with no model.
        value_probability_source="ensemble",
    )
    api.script(EPL, events_answer([arsenal_everton()], quota(498, 2, 2)))
    feed = fetch_the_odds_api(
        factory, settings, trigger=RunTrigger.SCHEDULER, sleep=no_wait, clock=lambda: at(12, 0)
    )
    assert feed.status is FetchStatus.SUCCEEDED, feed.error
    return settings


def closing_run(factory: sessionmaker[Session], settings: Settings, now: dt.datetime) -> None:
    outcome = fetch_closing_lines(
        factory, settings, trigger=RunTrigger.SCHEDULER, clock=lambda: now, sleep=no_wait
    )
    assert outcome is not None
    assert outcome.status is FetchStatus.SUCCEEDED, outcome.error


def settle(factory: sessionmaker[Session], home_goals: int, away_goals: int) -> None:
    """The result, as a season file's row would bring it (no closing prices)."""
    match = MatchRecord(
        "E0", "Arsenal", "Everton", KICKOFF, home_goals=home_goals, away_goals=away_goals
    )
    with session_scope(factory) as session:
        ingest_batch(session, IngestBatch(matches=[match]), source="test", now=at(17, 0))


def pinnacle_quotes(factory: sessionmaker[Session]) -> list[tuple[dt.datetime | None, ...]]:
    """(captured, received, seen) of each of Pinnacle's stored quotes."""
    with factory() as session:
        rows = session.execute(
            select(OddsQuote.captured_at, OddsQuote.received_at, OddsQuote.seen_at)
            .join(Bookmaker, OddsQuote.bookmaker_id == Bookmaker.id)
            .where(Bookmaker.code == "PS")
            .order_by(OddsQuote.captured_at)
        ).all()
    return [tuple(row) for row in rows]


def the_flag(factory: sessionmaker[Session]) -> ValueFlag:
    with factory() as session:
        flag = session.scalars(select(ValueFlag)).one()
        session.expunge(flag)
    return flag


def test_an_unmoved_price_fetched_before_kickoff_is_the_live_close(
    fetched_at_noon: Settings, factory: sessionmaker[Session]
) -> None:
    flag = the_flag(factory)
    assert (flag.outcome, flag.bookmaker, flag.net_price) == ("2", "PS", 4.0)
    assert pinnacle_quotes(factory) == [(UPDATED, at(12, 0), at(12, 0))]

    # 14:49: the job fetches the EPL, 11 minutes before kickoff; Pinnacle has not moved.
    closing_run(factory, fetched_at_noon, at(14, 49))
    assert pinnacle_quotes(factory) == [(UPDATED, at(12, 0), at(14, 49))]
    settle(factory, 0, 2)

    flag = the_flag(factory)
    assert (flag.status, flag.result, flag.flat_return) == ("settled", "2", 3.0)
    assert (flag.close_home, flag.close_draw, flag.close_away) == PRICES["pinnacle"]
    # Captured at 11:58, seen to hold at 14:49: inside the 30 minutes before kickoff.
    assert (flag.close_origin, flag.close_captured_at, flag.close_seen_at) == (
        "live",
        UPDATED,
        at(14, 49),
    )
    assert flag.closing_probability == pytest.approx(0.25)
    assert flag.clv == pytest.approx(0.0)  # 4.0 × 1/4 − 1


@pytest.mark.usefixtures("fetched_at_noon")
def test_a_price_last_seen_before_the_window_is_no_live_close(
    factory: sessionmaker[Session],
) -> None:
    settle(factory, 1, 1)
    flag = the_flag(factory)
    # Seen at noon only: three hours before kickoff, and no season file's close.
    assert (flag.status, flag.result) == ("settled", "X")
    assert (flag.close_origin, flag.close_seen_at, flag.clv) == (None, None, None)


@pytest.mark.usefixtures("fetched_at_noon")
def test_seen_again_moves_forward_never_back_and_evaluates_no_flag(
    factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluated: list[set[int]] = []
    after_ingest = flags.after_ingest

    def spy(session: Session, match_ids: set[int], *args: Any) -> Any:
        evaluated.append(set(match_ids))
        return after_ingest(session, match_ids, *args)

    monkeypatch.setattr(flags, "after_ingest", spy)

    def pinnacle_again(received: dt.datetime, prices: tuple[float, float, float]) -> int:
        """Pinnacle's quote of 11:58 sent again; how many quotes were unchanged."""
        match = MatchRecord("E0", "Arsenal", "Everton", KICKOFF)
        quote = QuoteRecord(0, "PS", Phase.PRE, *prices, captured_at=UPDATED)
        batch = IngestBatch(matches=[match], quotes=[quote])
        with session_scope(factory) as session:
            return ingest_batch(session, batch, source="test", now=received).quotes_unchanged

    assert pinnacle_again(at(14, 0), PRICES["pinnacle"]) == 1
    assert pinnacle_quotes(factory) == [(UPDATED, at(12, 0), at(14, 0))]
    # A batch received earlier (and written later) leaves the later sighting as it is.
    assert pinnacle_again(at(13, 0), PRICES["pinnacle"]) == 1
    assert pinnacle_quotes(factory) == [(UPDATED, at(12, 0), at(14, 0))]
    # The same prices change no price: the ledger evaluates no match.
    assert evaluated == [set(), set()]

    # A changed price under the same capture time is written, received and seen now.
    assert pinnacle_again(at(14, 30), (2.1, 4.0, 3.6)) == 0
    assert pinnacle_quotes(factory) == [(UPDATED, at(14, 30), at(14, 30))]
    assert len(evaluated[-1]) == 1


@pytest.mark.usefixtures("fetched_at_noon")
def test_the_migration_takes_a_stored_quote_as_last_seen_when_received(migrated_url: str) -> None:
    downgrade_to(migrated_url, "0014")
    engine = make_engine(migrated_url)
    with engine.begin() as connection:
        # Before 0015 a quote knows only when it was received.
        columns = [c["name"] for c in sa_inspect(connection).get_columns("odds_quotes")]
        assert "seen_at" not in columns
    engine.dispose()
    upgrade_to_head(migrated_url)
    engine = make_engine(migrated_url)
    with Session(engine) as session:
        rows = session.execute(select(OddsQuote.received_at, OddsQuote.seen_at)).all()
    engine.dispose()
    assert len(rows) == 2  # Pinnacle's and Bet365's of noon
    assert all(seen == received == at(12, 0) for received, seen in rows)
