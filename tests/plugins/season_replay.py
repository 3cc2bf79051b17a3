"""A season of the shared files run twice: by the backtest, and through the live path as an
operator runs it. Live, the three seasons before it are imported as the Football-Data.co.uk
feed imports them, the refit fits the model up to the season's first kickoff (its window
the backtest fold's training seasons), and then, a matchday (a UTC day of kickoffs) at a
time in kickoff order, the day's pre-match quotes are sent to POST /admin/odds and the board
is read as a dashboard polls it (GET /upcoming, GET /value-bets, the dashboard's page)
before its kickoffs. Both runs take their value terms from the settings, their defaults
but for what an operator of ``OPERATORS`` changed, so they follow any change of those."""

from __future__ import annotations

import datetime as dt
import html
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.api.deps import board_moment, received_now
from app.db.engine import make_engine, make_session_factory, session_scope
from app.domain.backtest.config import BacktestConfig
from app.domain.backtest.folds import Fold, run_backtest
from app.domain.backtest.value_bets import ValueBetConfig, bets_of, priced_fold
from app.domain.ensemble import Ensemble
from app.domain.football_data import parse_football_data
from app.domain.records import OUTCOMES, IngestBatch, QuoteRecord
from app.domain.tables import MatchTable, QuoteTable, tables_from_batches
from app.domain.vocabulary import Phase, RunStatus, RunTrigger
from app.main import create_app
from app.services.ingest import import_football_data
from app.services.model_versions import active_version, ensemble_of
from app.services.refit import fit_options, run_refit
from app.settings import Settings
from tests.apps import ADMIN_KEY, refit_settings_for
from tests.databases import Databases

SeasonFile = Callable[[str], Path]

# The season replayed, and the seasons the backtest fold trains on before it.
REPLAYED = "E0_1819"
TRAINING = ("E0_1516", "E0_1617", "E0_1718")
# Closing lines measure CLV in the backtest; live, they do not exist before kickoff.
CLV_REFERENCE = "PS"
# The files of 2018/19 give a match's day, not its time: each kicks off at midnight UTC as
# read. A matchday's quotes are sent and its board read this long before that midnight, after
# every earlier day's kickoffs.
BEFORE_KICKOFF = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Flag:
    """A value bet: a match (by kickoff and teams), the outcome, the bookmaker whose price
    it takes, that price net of commission, and the expected value claimed."""

    kickoff: dt.datetime
    home_team: str
    away_team: str
    outcome: str
    bookmaker: str
    net_price: float
    expected_value: float

    @property
    def decision(self) -> tuple[dt.datetime, str, str, str, str, float]:
        """All but the expected value, which is compared within a tolerance."""
        return (
            self.kickoff,
            self.home_team,
            self.away_team,
            self.outcome,
            self.bookmaker,
            self.net_price,
        )


@dataclass(frozen=True)
class SeasonBacktest:
    """The backtest's fold of the replayed season and its value bets."""

    fold: Fold
    config: ValueBetConfig
    bets: list[Flag]
    first_kickoff: dt.datetime
    train_first_kickoff: dt.datetime


@dataclass(frozen=True)
class Matchday:
    """What the board showed before one matchday's kickoffs."""

    moment: dt.datetime
    matches: int  # the day's matches sent
    listed: int  # those GET /upcoming listed, each with a prediction of the model
    value_bets: list[Flag]  # GET /value-bets
    board_bets: list[Flag]  # the value bets of GET /upcoming
    dashboard_bets: list[tuple[str, str, str]]  # home team, away team, outcome


@dataclass(frozen=True)
class SeasonReplay:
    """The live run: the model the refit made active, and every matchday's board."""

    settings: Settings
    served: Ensemble
    trained_matches: int
    matchdays: list[Matchday]

    def flags(self) -> list[Flag]:
        return [flag for day in self.matchdays for flag in day.value_bets]


@dataclass(frozen=True)
class Operator:
    """Settings an operator changed from the defaults (beyond the suite's short grid of
    rounds); every other value term is the default."""

    name: str
    changes: dict[str, Any] = field(default_factory=dict)

    def settings(self, database_url: str) -> Settings:
        return refit_settings_for(database_url).model_copy(update=self.changes)


OPERATORS = (
    Operator("default terms"),
    # No exchange quotes 2018/19 in the files: Bet365, whose prices a third of the default
    # terms' bets take, stands in for one, so that the best price and the EV are taken net
    # of a commission too (and some of those bets go to other bookmakers, or none).
    Operator("B365 an exchange at 5 %", {"exchange_commission": {"B365": 0.05}}),
)


def season_batches(season_file: SeasonFile) -> list[IngestBatch]:
    return [parse_football_data(season_file(name).read_bytes()) for name in (*TRAINING, REPLAYED)]


def utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def backtest_bets(season_file: SeasonFile, settings: Settings) -> SeasonBacktest:
    """The backtest of the replayed season, fitted with the refit's options, and its value
    bets by the settings' terms over every bookmaker of the season (the live terms allow any)."""
    batches = season_batches(season_file)
    matches, quotes = tables_from_batches(batches)
    config = BacktestConfig(options=fit_options(settings), test_seasons=("2018/19",))
    (fold,) = run_backtest(matches, quotes, config)
    terms = settings.value_terms()
    value_config = ValueBetConfig(
        sources=(terms.source,),
        thresholds=(terms.min_ev,),
        reference=CLV_REFERENCE,
        bookmakers=pre_match_bookmakers(matches, quotes, fold),
        method=settings.demargin_method,
        kelly_fraction=terms.kelly_fraction,
        stake_cap=terms.stake_cap,
        commissions=terms.commissions,
    )
    bets = bets_of(priced_fold(fold, matches, quotes, value_config), terms.source, terms.min_ev)
    # Match ids of the tables are the matches' places in the files, in order.
    records = [record for batch in batches for record in batch.matches]
    assert len(records) == len(matches), "a match is in two files"
    flags = [
        Flag(
            records[match_id].kickoff,
            records[match_id].home_team,
            records[match_id].away_team,
            OUTCOMES[outcome],
            str(bookmaker),
            float(price),
            float(ev),
        )
        for match_id, outcome, bookmaker, price, ev in zip(
            bets.match_id.tolist(),
            bets.outcome.tolist(),
            bets.bookmaker.tolist(),
            bets.price.tolist(),
            bets.claimed_ev.tolist(),
            strict=True,
        )
    ]
    train_kickoffs = matches.kickoff[np.isin(matches.ids, fold.train_match_ids)]
    return SeasonBacktest(
        fold=fold,
        config=value_config,
        bets=flags,
        first_kickoff=utc(fold.test_first_kickoff),
        train_first_kickoff=utc(float(train_kickoffs.min())),
    )


def pre_match_bookmakers(matches: MatchTable, quotes: QuoteTable, fold: Fold) -> tuple[str, ...]:
    """Every bookmaker with a pre-match quote of the fold's test matches, by code: the order
    the live service reads a match's quotes in, so that equal best prices name one bookmaker
    in both runs."""
    tested = np.isin(matches.ids[quotes.match], fold.test_match_ids)
    codes = quotes.bookmaker[tested & (quotes.phase == Phase.PRE.value)]
    return tuple(sorted(set(codes.tolist())))


def refit_window_days(backtest: SeasonBacktest) -> int:
    """Whole days from the first training kickoff to the season's first: the refit's window
    then holds the fold's training seasons."""
    return math.ceil((backtest.first_kickoff - backtest.train_first_kickoff) / DAY)


def imported_and_fitted(
    database_url: str, season_file: SeasonFile, settings: Settings, until: dt.datetime
) -> tuple[Ensemble, int]:
    """The training seasons imported as the feed imports them, then the refit up to
    ``until``: the model it made active, and the matches it trained on."""
    engine = make_engine(database_url)
    try:
        factory = make_session_factory(engine, for_writes=True)
        for name in TRAINING:
            with session_scope(factory) as session:
                import_football_data(session, season_file(name).read_bytes())
        outcome = run_refit(engine, settings, trigger=RunTrigger.CLI, until=until)
        assert outcome.status == RunStatus.SUCCEEDED, outcome.message
        with session_scope(factory) as session:
            version = active_version(session)
            assert version is not None
            assert version.id == outcome.version_id
            return ensemble_of(version), version.n_matches
    finally:
        engine.dispose()


class ReplayClock:
    """The present of the replay: when the admin API receives quotes, and when the board
    is read."""

    def __init__(self) -> None:
        self.now = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)

    async def received(self) -> dt.datetime:
        return self.now

    async def board(self) -> dt.datetime | None:
        return self.now


def matchdays_of(batch: IngestBatch) -> dict[dt.date, list[QuoteRecord]]:
    """The season's pre-match quotes by the UTC day of their match's kickoff, in order."""
    days: dict[dt.date, list[QuoteRecord]] = defaultdict(list)
    for quote in batch.quotes:
        if quote.phase == Phase.PRE:
            days[batch.matches[quote.match].kickoff.date()].append(quote)
    return dict(sorted(days.items()))


def quote_item(batch: IngestBatch, quote: QuoteRecord, captured: dt.datetime) -> dict[str, Any]:
    match = batch.matches[quote.match]
    return {
        "match": {
            "competition": match.competition,
            "kickoff": match.kickoff.isoformat(),
            "home_team": match.home_team,
            "away_team": match.away_team,
            "season": match.season,
        },
        "bookmaker": quote.bookmaker,
        "home": quote.home,
        "draw": quote.draw,
        "away": quote.away,
        "phase": quote.phase.value,
        "captured_at": captured.isoformat(),
    }


def listed_flag(item: dict[str, Any]) -> Flag:
    """A value bet as GET /value-bets and GET /upcoming write it."""
    match = item["match"]
    return Flag(
        dt.datetime.fromisoformat(match["kickoff"]),
        match["home_team"],
        match["away_team"],
        item["outcome"],
        item["bookmaker"],
        item["net_price"],
        item["expected_value"],
    )


# A row of the dashboard's board: the teams' link, then the three outcome cells.
_ROW = re.compile(r'<td class="teams"><a [^>]*>(.*?) – (.*?)</a></td>(.*?)</tr>', re.S)
_VALUE_CELL = re.compile(r'<td class="p-(home|draw|away) value"')
_OUTCOME_OF_CELL = {"home": "1", "draw": "X", "away": "2"}


def dashboard_bets(page: str) -> list[tuple[str, str, str]]:
    """The outcomes the dashboard's board marks as value bets: home team, away team, outcome."""
    return [
        (html.unescape(home), html.unescape(away), _OUTCOME_OF_CELL[kind])
        for home, away, cells in _ROW.findall(page)
        for kind in _VALUE_CELL.findall(cells)
    ]


def read_board(client: TestClient, moment: dt.datetime, matches: int, limit: int) -> Matchday:
    """The board as a dashboard polls it, with the operator's terms (no parameters)."""
    upcoming = client.get("/upcoming", params={"limit": limit})
    assert upcoming.status_code == 200, upcoming.text
    items = upcoming.json()["items"]
    assert upcoming.json()["total"] == len(items)
    value_bets = client.get("/value-bets", params={"limit": limit})
    assert value_bets.status_code == 200, value_bets.text
    assert value_bets.json()["total"] == len(value_bets.json()["items"])
    dashboard = client.get("/dashboard")
    assert dashboard.status_code == 200, dashboard.text
    return Matchday(
        moment,
        matches,
        listed=sum(1 for item in items if item["prediction"]["basis"] == "model"),
        value_bets=[listed_flag(item) for item in value_bets.json()["items"]],
        board_bets=[listed_flag(bet) for item in items for bet in item["value_bets"]],
        dashboard_bets=dashboard_bets(dashboard.text),
    )


def replayed_matchdays(
    client: TestClient, batch: IngestBatch, clock: ReplayClock, limit: int
) -> list[Matchday]:
    """Each matchday's quotes sent, then its board read, before its kickoffs."""
    done: list[Matchday] = []
    for date, quotes in matchdays_of(batch).items():
        clock.now = dt.datetime.combine(date, dt.time(), dt.UTC) - BEFORE_KICKOFF
        items = [quote_item(batch, quote, clock.now) for quote in quotes]
        sent = client.post("/admin/odds", json={"quotes": items}, headers={"X-API-Key": ADMIN_KEY})
        assert sent.status_code == 200, sent.text
        matches = len({quote.match for quote in quotes})
        done.append(read_board(client, clock.now, matches, limit))
    return done


def live_replay(settings: Settings, season_file: SeasonFile, until: dt.datetime) -> SeasonReplay:
    """The live run on the empty database of ``settings`` (see the module)."""
    served, trained = imported_and_fitted(settings.database_url, season_file, settings, until)
    clock = ReplayClock()
    app = create_app(settings)
    app.dependency_overrides[received_now] = clock.received
    app.dependency_overrides[board_moment] = clock.board
    with TestClient(app) as client:
        batch = parse_football_data(season_file(REPLAYED).read_bytes())
        days = replayed_matchdays(client, batch, clock, settings.page_size_max)
    return SeasonReplay(settings, served, trained, days)


@pytest.fixture(scope="module", params=OPERATORS, ids=[operator.name for operator in OPERATORS])
def replay_operator(request: pytest.FixtureRequest) -> Operator:
    return cast(Operator, request.param)


@pytest.fixture(scope="module")
def season_backtest(season_file: SeasonFile, replay_operator: Operator) -> SeasonBacktest:
    # The backtest reads no database: any URL gives the operator's other settings.
    return backtest_bets(season_file, replay_operator.settings("sqlite://"))


@pytest.fixture(scope="module")
def season_replay(
    databases: Databases,
    migrated_template: str,
    season_file: SeasonFile,
    replay_operator: Operator,
    season_backtest: SeasonBacktest,
) -> Iterator[SeasonReplay]:
    database = databases.copy(migrated_template)
    try:
        settings = replay_operator.settings(database).model_copy(
            update={"refit_window_days": refit_window_days(season_backtest)}
        )
        yield live_replay(settings, season_file, season_backtest.first_kickoff)
    finally:
        databases.drop(database)


def by_decision(flags: Sequence[Flag]) -> list[Flag]:
    return sorted(flags, key=lambda flag: flag.decision)
