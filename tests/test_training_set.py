"""Training sets: which quote is used, how H is laid out, what is dropped and why."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from app.db.orm import Bookmaker, OddsQuote
from app.domain.football_data import parse_football_data
from app.domain.odds import demargin
from app.domain.tables import MatchTable, QuoteTable, tables_from_batches, tables_from_rows
from app.domain.training import build_training_set, select_latest_valid
from app.domain.vocabulary import Phase
from app.services.queries import latest_by_bookmaker_and_phase
from tests.helpers import csv_rows

SeasonFile = Callable[[str], Path]
KICKOFF = dt.datetime(2018, 8, 10, 19, 0, tzinfo=dt.UTC).timestamp()
HOUR = 3600.0


def tables(
    quotes: list[tuple[str, str, float, float, tuple[float, float, float]]],
) -> tuple[MatchTable, QuoteTable]:
    """One settled match (home win) and the given (bookmaker, phase, captured, received, odds)."""
    matches = MatchTable(
        ids=np.array([7]),
        kickoff=np.array([KICKOFF]),
        result=np.array([0]),
        competition=np.array(["E0"]),
        season=np.array(["2018/19"]),
    )
    table = QuoteTable(
        match=np.zeros(len(quotes), dtype=np.intp),
        bookmaker=np.array([q[0] for q in quotes]),
        phase=np.array([q[1] for q in quotes]),
        captured_at=np.array([q[2] for q in quotes]),
        received_at=np.array([q[3] for q in quotes]),
        prices=np.array([q[4] for q in quotes]),
        seen_at=np.full(len(quotes), np.nan),
    )
    return matches, table


def test_latest_valid_quote_is_chosen() -> None:
    matches, quotes = tables(
        [
            ("B365", "pre", np.nan, 0.0, (1.5, 4.0, 7.0)),  # undated: older than any dated
            ("B365", "pre", KICKOFF - 5 * HOUR, 1.0, (1.6, 4.0, 6.5)),
            ("B365", "pre", KICKOFF - 1 * HOUR, 2.0, (1.7, 3.9, 6.0)),  # the one
            ("B365", "pre", KICKOFF + 1 * HOUR, 3.0, (1.1, 9.0, 30.0)),  # in play: invalid
            ("B365", "closing", KICKOFF - 0.5 * HOUR, 4.0, (1.8, 3.8, 5.5)),  # other phase
            ("PS", "pre", np.nan, 5.0, (1.55, 4.1, 7.2)),
            ("PS", "pre", np.nan, 6.0, (1.56, 4.1, 7.1)),  # undated tie: later arrival wins
        ]
    )
    assert sorted(select_latest_valid(matches, quotes, Phase.PRE).tolist()) == [2, 6]
    assert select_latest_valid(matches, quotes, Phase.CLOSING).tolist() == [4]


def test_a_match_shows_the_quotes_training_uses() -> None:
    # The match page (latest quote of each bookmaker and phase) and training (latest quote
    # of a phase valid before kickoff) read recency the same way: with every quote before
    # kickoff they pick the same quotes.
    kickoff = dt.datetime(2018, 8, 10, 19, 0, tzinfo=dt.UTC)
    arrival = kickoff  # every quote captured before it arrived
    b365, ps = Bookmaker(id=1, code="B365", name="Bet365"), Bookmaker(id=2, code="PS", name="PS")
    rows = [  # (id, bookmaker, phase, hours before kickoff or None, hours after arrival)
        (1, b365, Phase.PRE, None, 0),
        (2, b365, Phase.PRE, 5.0, 9),  # arrived last, captured earlier: not the latest
        (3, b365, Phase.PRE, 1.0, 3),
        (4, ps, Phase.PRE, None, 1),
        (5, b365, Phase.CLOSING, 0.1, 4),
        (6, ps, Phase.CLOSING, 2.0, 5),
        (7, ps, Phase.CLOSING, 0.5, 2),
    ]
    quotes = [
        OddsQuote(
            id=quote_id,
            match_id=7,
            bookmaker_id=bookmaker.id,
            bookmaker=bookmaker,
            phase=phase,
            captured_at=None if before is None else kickoff - dt.timedelta(hours=before),
            received_at=arrival + dt.timedelta(hours=after),
            home=2.0,
            draw=3.5,
            away=4.0,
        )
        for quote_id, bookmaker, phase, before, after in rows
    ]
    shown = latest_by_bookmaker_and_phase(quotes)
    assert [q.id for q in shown] == [3, 4, 5, 7]
    matches, table = tables_from_rows(
        [(7, kickoff, "1", "E0", "2018/19")],
        [
            (
                7,
                q.bookmaker.code,
                q.phase,
                q.captured_at,
                q.received_at,
                q.home,
                q.draw,
                q.away,
                q.seen_at,
            )
            for q in quotes
        ],
    )
    for phase in Phase:
        used = {quotes[int(i)].id for i in select_latest_valid(matches, table, phase)}
        assert used == {q.id for q in shown if q.phase == phase}


def test_layout_and_values(season_file: SeasonFile) -> None:
    matches, quotes = tables_from_batches(
        [parse_football_data(season_file("E0_1819").read_bytes())]
    )
    training = build_training_set(matches, quotes, phase=Phase.PRE, method="power")
    assert training.bookmakers == ("B365", "BW", "IW", "PS", "VC", "WH")
    assert training.H.shape == (380, 6, 3)
    present = ~np.isnan(training.H).any(axis=2)
    assert training.H[present].sum(axis=1) == pytest.approx(np.ones(present.sum()))
    # Outcomes agree with the file's FTR column, read independently.
    header, rows = csv_rows(season_file("E0_1819"))
    ftr = [row[header.index("FTR")] for row in rows]
    assert training.y.tolist() == [{"H": 0, "D": 1, "A": 2}[r] for r in ftr]
    # First match, Bet365 1.57/3.9/7.5, de-margined by the power method.
    expected = demargin([[1.57, 3.9, 7.5]], "power").probabilities[0]
    assert training.H[0, 0] == pytest.approx(expected)


def test_closing_phase_has_only_pinnacle(season_file: SeasonFile) -> None:
    matches, quotes = tables_from_batches(
        [parse_football_data(season_file("E0_1819").read_bytes())]
    )
    closing = build_training_set(matches, quotes, phase=Phase.CLOSING)
    assert closing.bookmakers == ("PS",)
    assert len(closing) == 380


def test_pool_order_minimum_and_dropped_rows(season_file: SeasonFile) -> None:
    batch = parse_football_data(season_file("E1_1213").read_bytes())
    matches, quotes = tables_from_batches([batch])
    fixed = build_training_set(matches, quotes, bookmakers=["PS", "B365", "NOPE"])
    assert fixed.bookmakers == ("PS", "B365")
    # E1_1213 row 532 has no valid Bet365 quote (price 0): that cell is NaN.
    row = int(np.flatnonzero(np.isnan(fixed.H[:, 1, 0]))[0])
    assert not np.isnan(fixed.H[row, 0]).any()
    strict = build_training_set(matches, quotes, min_quotes=552)
    assert "B365" not in strict.bookmakers  # 551 usable quotes
    assert "PS" in strict.bookmakers
    nobody = build_training_set(matches, quotes, bookmakers=["NOPE"])
    assert len(nobody) == 0
    assert nobody.dropped == {"no pre quote from the pool before kickoff": 552}


def test_unsettled_matches_are_dropped_and_counted() -> None:
    content = (
        b"Div,Date,HomeTeam,AwayTeam,FTHG,FTAG,B365H,B365D,B365A\n"
        b"E0,10/08/2018,A,B,1,0,2,3,4\n"
        b"E0,11/08/2018,C,D,,,2,3,4\n"
    )
    matches, quotes = tables_from_batches([parse_football_data(content)])
    training = build_training_set(matches, quotes)
    assert len(training) == 1
    assert training.dropped == {"not settled": 1}


def test_rows_selects_matches() -> None:
    matches, quotes = tables([("B365", "pre", np.nan, 0.0, (1.5, 4.0, 7.0))])
    training = build_training_set(matches, quotes)
    assert len(training.rows(np.array([True]))) == 1
    assert len(training.rows(np.array([False]))) == 0
    assert training.consensus() == pytest.approx(training.H[:, 0, :])
