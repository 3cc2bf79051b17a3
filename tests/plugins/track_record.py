"""Three matches whose quotes and results are chosen by hand, the model version that serves
them, and the track record logged for them (the fixture ``logged``).

The model trusts Bet&Win alone and de-margines multiplicatively; every book is quoted
without margin, so each line is 1/price and the served probability is Bet&Win's line. The
consensus is the plain mean of the lines. Pinnacle (PS), the closing reference, quotes
without margin too, so its power line is 1/price as well.

M1, 2 March 15:00, home win.  BW 2/4/4 (.5 .25 .25), PS 5/3 5 5 (.6 .2 .2),
    B365 2.5 2.5 5 (.4 .4 .2). Consensus .5, .85/3, .65/3. Value (EV > .02): home at
    B365's 2.5 (EV .25, CLV .6 × 2.5 − 1 = .5, won +1.5, stake .25 × .25/1.5 capped at .02),
    draw at PS's 5 (EV .25, CLV 0, lost, stake .25 × .25/4 = .015625), away at B365's 5
    (listed first of the equal best prices; EV .25, CLV 0, lost, stake .015625).
M2, 2 March 18:00, draw.  BW and PS 2.5/5/2.5 (.4 .2 .4): no value; consensus = served.
M3, 3 March 15:00, away win.  BW and PS 1.25/10/10 (.8 .1 .1), B365 2/4/4 (.5 .25 .25).
    Consensus .7 .15 .15. Value: home at B365's 2 (EV .6, CLV .6, lost, stake capped .02).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.orm import (
    Bookmaker,
    Clock,
    Competition,
    Match,
    OddsQuote,
    PredictionLogEntry,
    Team,
    utcnow,
)
from app.domain.vocabulary import ActivatedBy, Method, Phase
from app.services import track_record
from app.services.ingest.latest import refresh_latest_quotes
from app.services.model_versions import activate
from app.settings import Settings
from tests.apps import ADMIN_KEY, build_app
from tests.helpers import hand_made_version

UTC = dt.UTC
M1_KICKOFF = dt.datetime(2026, 3, 2, 15, tzinfo=UTC)
M2_KICKOFF = dt.datetime(2026, 3, 2, 18, tzinfo=UTC)
M3_KICKOFF = dt.datetime(2026, 3, 3, 15, tzinfo=UTC)
BEFORE = dt.timedelta(hours=2)
Prices = tuple[float, float, float]


@dataclass(frozen=True)
class Fixture:
    home: str
    away: str
    kickoff: dt.datetime
    goals: tuple[int, int]
    quotes: dict[str, Prices]


M1 = Fixture(
    "Arsenal",
    "Chelsea",
    M1_KICKOFF,
    (2, 1),
    {"BW": (2.0, 4.0, 4.0), "PS": (5 / 3, 5.0, 5.0), "B365": (2.5, 2.5, 5.0)},
)


M2 = Fixture(
    "Everton", "Fulham", M2_KICKOFF, (1, 1), {"BW": (2.5, 5.0, 2.5), "PS": (2.5, 5.0, 2.5)}
)


M3 = Fixture(
    "Leeds",
    "Wolves",
    M3_KICKOFF,
    (0, 2),
    {"BW": (1.25, 10.0, 10.0), "PS": (1.25, 10.0, 10.0), "B365": (2.0, 4.0, 4.0)},
)


FIXTURES = (M1, M2, M3)


def at(moment: dt.datetime) -> Clock:
    """A clock stopped at ``moment``."""
    return lambda: moment


def settings_for(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        admin_api_key=ADMIN_KEY,
        demargin_method=Method.MULTIPLICATIVE,
        model_refresh_seconds=0.5,
        # The operator's value source is left at its default (Pinnacle's line first): the
        # entries' bets are judged by the served prediction whatever it is.
    )


def _row(session: Session, model: Any, **key: Any) -> Any:
    found = session.scalar(select(model).filter_by(**key))
    if found is None:
        found = model(**key)
        session.add(found)
        session.flush()
    return found


def store_match(session: Session, fixture: Fixture, *, captured: dt.datetime | None = None) -> int:
    competition = _row(session, Competition, code="E0")
    match = Match(
        competition_id=competition.id,
        season="2526",
        kickoff=fixture.kickoff,
        kickoff_date=fixture.kickoff.date(),
        kickoff_time_known=True,
        home_team_id=_row(session, Team, name=fixture.home).id,
        away_team_id=_row(session, Team, name=fixture.away).id,
    )
    session.add(match)
    session.flush()
    add_quotes(session, match.id, fixture.quotes, captured or fixture.kickoff - BEFORE)
    return match.id


def add_quotes(
    session: Session, match_id: int, quotes: dict[str, Prices], captured: dt.datetime
) -> None:
    for code, (home, draw, away) in quotes.items():
        bookmaker = _row(session, Bookmaker, code=code, name=code)
        session.add(
            OddsQuote(
                match_id=match_id,
                bookmaker_id=bookmaker.id,
                phase=Phase.PRE,
                home=home,
                draw=draw,
                away=away,
                captured_at=captured,
            )
        )
    session.flush()
    refresh_latest_quotes(session, [match_id], utcnow())


def settle(session: Session, match_id: int, goals: tuple[int, int]) -> None:
    match = session.get(Match, match_id)
    assert match is not None
    home, away = goals
    match.home_goals, match.away_goals = home, away
    match.result = "1" if home > away else "X" if home == away else "2"
    session.flush()


def activate_at(session: Session, weights: dict[str, float], moment: dt.datetime) -> int:
    version = hand_made_version(method=Method.MULTIPLICATIVE, weights=weights)
    session.add(version)
    session.flush()
    activation = activate(session, version, by=ActivatedBy.CLI)
    activation.activated_at = moment
    session.flush()
    return version.id


def seed(session: Session) -> dict[str, int]:
    """The three matches settled, and the version trusting BW active since January."""
    activate_at(session, {"BW": 1.0}, dt.datetime(2026, 1, 1, tzinfo=UTC))
    ids = {}
    for name, fixture in zip(("M1", "M2", "M3"), FIXTURES, strict=True):
        ids[name] = store_match(session, fixture)
        settle(session, ids[name], fixture.goals)
    return ids


def entry_of(session: Session, match_id: int) -> PredictionLogEntry:
    entry = session.scalar(
        select(PredictionLogEntry).where(PredictionLogEntry.match_id == match_id)
    )
    assert entry is not None
    return entry


@pytest.fixture
def logged(session: Session, settings: Settings) -> dict[str, int]:
    ids = seed(session)
    done = track_record.rebuild(
        session,
        settings_for(settings.database_url),
        kickoff_from=dt.datetime(2026, 3, 1, tzinfo=UTC),
        kickoff_to=None,
        now=dt.datetime(2026, 3, 10, tzinfo=UTC),
    )
    assert done == track_record.LogCount(written=3), str(done)
    return ids


@pytest.fixture
def track_client(settings: Settings, session: Session) -> Iterator[TestClient]:
    with TestClient(build_app(settings_for(settings.database_url), session)) as client:
        yield client
