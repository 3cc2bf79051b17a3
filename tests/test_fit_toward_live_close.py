"""A refit toward the close on a live deployment's data: only pre-match quotes, each seen
again (fetched once more unchanged) or not before kickoff, no season file's closing prices.
A match's target is its live close, the flag ledger's; where Pinnacle's price was last seen
hours before kickoff, its result."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import ModelVersion
from app.domain.fitting import fit_ensemble
from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.version_records import TargetCounts
from app.domain.vocabulary import FitTarget, Phase, RunStatus, RunTrigger
from app.main import create_app
from app.services.ingest import ingest_batch
from app.services.model_versions import load_tables
from app.services.refit import fit_options, run_refit
from app.settings import Settings
from tests.apps import refit_settings_for
from tests.databases import Databases

FIRST_KICKOFF = dt.datetime(2031, 1, 4, 15, 0, tzinfo=dt.UTC)
MATCHES = 80  # 40 to fit and 40 to validate, each part at least the 30 a refit needs
CAPTURED_BEFORE = dt.timedelta(hours=3)
SEEN_AGAIN_BEFORE = dt.timedelta(minutes=10)  # inside the default 30-minute window
FAIR_MATCH = 50  # Pinnacle's prices have no margin: its close is 1/price, (1/2, 1/4, 1/4)
STALE_MATCH = 60  # Pinnacle's price is not fetched again: last seen 3 hours before kickoff
GOALS = ((2, 0), (1, 1), (0, 1))  # a result 1, X, 2


def kickoff(number: int) -> dt.datetime:
    return FIRST_KICKOFF + dt.timedelta(days=number)


def result_of(number: int) -> int:
    return (number * 7) % 5 % 3  # 1, X and 2 in an uneven mix


def rotated(prices: tuple[float, float, float], number: int) -> tuple[float, float, float]:
    shift = number % 3
    home, draw, away = prices[shift:] + prices[:shift]
    return home, draw, away


def prices_of(number: int) -> dict[str, tuple[float, float, float]]:
    pinnacle = (2.0, 4.0, 4.0) if number == FAIR_MATCH else rotated((1.9, 3.6, 4.4), number)
    return {
        "B365": rotated((1.8, 3.8, 4.2), number),
        "WH": rotated((2.0, 3.5, 3.6), number),
        "PS": pinnacle,
    }


def match_of(number: int, *, settled: bool = False) -> MatchRecord:
    home_goals, away_goals = GOALS[result_of(number)] if settled else (None, None)
    return MatchRecord(
        "E0",
        f"Home {number}",
        f"Away {number}",
        kickoff(number),
        home_goals=home_goals,
        away_goals=away_goals,
    )


def ingest(engine: Engine, batch: IngestBatch, now: dt.datetime) -> None:
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        ingest_batch(session, batch, source="test", now=now)


def feed_and_settle(engine: Engine, number: int) -> None:
    """The match's prices fetched 3 hours before kickoff and, but for Pinnacle's of the stale
    match, fetched again unchanged 10 minutes before; then its result."""
    captured = kickoff(number) - CAPTURED_BEFORE
    quotes = [
        QuoteRecord(0, code, Phase.PRE, *prices, captured_at=captured)
        for code, prices in prices_of(number).items()
    ]
    ingest(engine, IngestBatch(matches=[match_of(number)], quotes=quotes), captured)
    again = [quote for quote in quotes if number != STALE_MATCH or quote.bookmaker != "PS"]
    ingest(
        engine,
        IngestBatch(matches=[match_of(number)], quotes=again),
        kickoff(number) - SEEN_AGAIN_BEFORE,
    )
    ingest(
        engine,
        IngestBatch(matches=[match_of(number, settled=True)]),
        kickoff(number) + dt.timedelta(hours=3),
    )


@pytest.fixture(scope="module")
def fed_template(databases: Databases, migrated_template: str) -> str:
    """Every match fed and settled, once for the module; each test refits a copy."""
    template = databases.copy(migrated_template)
    engine = make_engine(template)
    for number in range(MATCHES):
        feed_and_settle(engine, number)
    engine.dispose()
    databases.seal(template)
    return template


@pytest.fixture
def fed_url(databases: Databases, fed_template: str) -> Iterator[str]:
    database = databases.copy(fed_template)
    yield database
    databases.drop(database)


@pytest.fixture
def settings(fed_url: str) -> Settings:
    return refit_settings_for(fed_url).model_copy(
        update={
            "refit_fit_target": FitTarget.CLOSE,
            "refit_validation_fraction": 0.5,
            "refit_min_matches": 10,
            "refit_min_quotes": 1,
            "refit_rounds_grid": [1, 5, 20],
        }
    )


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings.database_url)
    yield engine
    engine.dispose()


UNTIL = kickoff(MATCHES)


def test_a_live_match_is_fitted_toward_its_live_close(engine: Engine, settings: Settings) -> None:
    with make_session_factory(engine)() as session:
        matches, quotes = load_tables(session, start=FIRST_KICKOFF, end=UNTIL)
    assert not (quotes.phase == Phase.CLOSING).any()
    options = fit_options(settings)
    assert options.closing_window_minutes == settings.closing_window_minutes == 30

    fit = fit_ensemble(matches, quotes, end=UNTIL.timestamp(), options=options)

    training = fit.training
    assert training.targets is not None
    assert training.target_is_close is not None
    row = {kickoff_seconds: row for row, kickoff_seconds in enumerate(training.kickoff)}
    fair = row[kickoff(FAIR_MATCH).timestamp()]
    # Pinnacle's fair prices 2, 4, 4: its live close is (1/2, 1/4, 1/4) by any method.
    assert training.targets[fair] == pytest.approx([0.5, 0.25, 0.25], abs=1e-9)
    stale = row[kickoff(STALE_MATCH).timestamp()]
    assert training.targets[stale].tolist() == np.eye(3)[result_of(STALE_MATCH)].tolist()
    assert training.target_is_close.sum() == MATCHES - 1
    assert not training.target_is_close[stale]


def test_a_version_fitted_toward_the_close_says_how_many_targets_were_closes(
    engine: Engine, settings: Settings
) -> None:
    outcome = run_refit(engine, settings, trigger=RunTrigger.CLI, until=UNTIL)

    assert outcome.status in (RunStatus.SUCCEEDED, RunStatus.REJECTED), outcome.message
    assert (
        f"Fitted toward the close on {MATCHES - 1} matches, toward the result on 1 without one"
        in outcome.message
    )
    with make_session_factory(engine)() as session:
        version = session.scalars(select(ModelVersion)).one()
        assert version.validation.fit_targets == TargetCounts(closes=MATCHES - 1, results=1)
        options = version.validation.options
        assert options is not None
        assert options.closing_window_minutes == 30
    with TestClient(create_app(settings)) as client:
        (listed,) = client.get("/models").json()["items"]
    assert listed["validation"]["fit_targets"] == {"closes": MATCHES - 1, "results": 1}
    assert listed["validation"]["options"]["closing_window_minutes"] == 30


def test_a_version_fitted_on_the_results_records_no_targets(
    engine: Engine, settings: Settings
) -> None:
    on_results = settings.model_copy(update={"refit_fit_target": FitTarget.RESULT})

    outcome = run_refit(engine, on_results, trigger=RunTrigger.CLI, until=UNTIL)

    assert "toward the close" not in outcome.message
    with TestClient(create_app(on_results)) as client:
        (listed,) = client.get("/models").json()["items"]
    assert "fit_targets" not in listed["validation"]
