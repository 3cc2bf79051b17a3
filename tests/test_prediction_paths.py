"""A match's handful of quotes is predicted with plain floats, many with numpy: both give the
same numbers, to 1e-12, on real odds."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from app.domain.ensemble import Ensemble
from app.domain.football_data import parse_football_data
from app.domain.odds import consensus_of
from app.domain.prediction import FEW_QUOTES, MatchPrediction, QuotedOdds, predict_matches
from app.domain.vocabulary import Method, Phase

SeasonFile = Callable[[str], Path]


@pytest.fixture(scope="module")
def season_matches(data_dir: Path) -> list[list[QuotedOdds]]:
    """Every match of two real seasons with its pre-match quotes (all bookmakers)."""
    matches: list[list[QuotedOdds]] = []
    for name in ("E0_1718", "SP1_1516"):
        content = (data_dir / "football-data" / f"{name}.csv").read_bytes()
        batch = parse_football_data(content)
        odds: dict[int, list[QuotedOdds]] = defaultdict(list)
        for quote in batch.quotes:
            if quote.phase == Phase.PRE:
                odds[quote.match].append(
                    QuotedOdds(quote.bookmaker, quote.home, quote.draw, quote.away)
                )
        matches.extend(odds[index] for index in sorted(odds))
    assert len(matches) == 760
    assert all(0 < len(odds) <= FEW_QUOTES for odds in matches)
    return matches


def ensemble_for(method: Method, calibration: float) -> Ensemble:
    # Weights as a fit gives them: some bookmakers several rounds, some none at all.
    return Ensemble(
        bookmakers=("B365", "BW", "IW", "PS", "WH", "VC", "LB"),
        weights=np.array([1.87, 0.0, 0.41, 2.35, 0.0, 1.03, 0.12]),
        method=method,
        phase=Phase.PRE,
        rounds=50,
        version=3,
        calibration=calibration,
    )


def assert_same(one: MatchPrediction, other: MatchPrediction) -> None:
    assert one.basis == other.basis
    assert one.outcome == other.outcome
    assert one.probabilities == pytest.approx(other.probabilities, abs=1e-12, rel=0)
    assert one.consensus == pytest.approx(other.consensus, abs=1e-12, rel=0)
    assert [(u.code, u.weight) for u in one.used] == [(u.code, u.weight) for u in other.used]
    for used, other_used in zip(one.used, other.used, strict=True):
        assert used.probabilities == pytest.approx(other_used.probabilities, abs=1e-12, rel=0)
    assert one.ignored == other.ignored
    assert one.model_weight_present == other.model_weight_present


@pytest.mark.parametrize("method", [Method.POWER, Method.MULTIPLICATIVE, Method.SHIN])
@pytest.mark.parametrize("calibration", [1.0, 1.3])
def test_one_match_alone_is_predicted_as_in_a_large_batch(
    season_matches: list[list[QuotedOdds]], method: Method, calibration: float
) -> None:
    ensemble = ensemble_for(method, calibration)
    weighted = {code for code, w in zip(ensemble.bookmakers, ensemble.weights, strict=True) if w}
    # The same matches seen only by bookmakers without weight: answered with the consensus.
    unweighted = [[q for q in odds if q.bookmaker not in weighted] for odds in season_matches]
    matches = season_matches + [odds for odds in unweighted if odds]
    for model in (ensemble, None):
        together = predict_matches(matches, model, method)  # numpy: many quotes
        for odds, in_batch in zip(matches, together, strict=True):
            (alone,) = predict_matches([odds], model, method)  # plain floats: a few
            assert_same(alone, in_batch)
    bases = {p.basis for p in predict_matches(matches, ensemble, method)}
    assert bases == {"model", "consensus"}  # both kinds of answer were compared


def test_a_book_without_margin_and_an_unknown_bookmaker_give_the_same_answer_alone() -> None:
    # Implied probabilities summing to less than 1 (a sure bet) take numpy's bracketed
    # solver; a bookmaker outside the pool is ignored either way.
    odds = [
        QuotedOdds("PS", 2.2, 3.6, 3.9),
        QuotedOdds("B365", 2.1, 3.4, 3.6),
        QuotedOdds("NEWBOOK", 2.0, 3.3, 3.9),
    ]
    ensemble = ensemble_for(Method.POWER, 1.0)
    (alone,) = predict_matches([odds], ensemble, Method.POWER)
    many = predict_matches([odds] * (FEW_QUOTES // len(odds) + 1), ensemble, Method.POWER)
    assert_same(alone, many[0])
    assert [i.code for i in alone.ignored] == ["NEWBOOK"]
    assert sum(alone.probabilities) == pytest.approx(1.0, abs=1e-15)


def test_the_served_consensus_is_the_one_definitions(
    season_matches: list[list[QuotedOdds]],
) -> None:
    # The mean of each match's de-margined lines (without a model, each bookmaker's is
    # listed as used), as consensus_of gives it for the training sets, the backtest and the
    # value: the same numbers, to the last bit.
    predictions = predict_matches(season_matches, None, Method.POWER)
    lines = np.full((len(season_matches), FEW_QUOTES, 3), np.nan)
    for row, prediction in enumerate(predictions):
        lines[row, : len(prediction.used)] = [used.probabilities for used in prediction.used]
    expected = consensus_of(lines).tolist()
    assert [p.consensus for p in predictions] == [tuple(line) for line in expected]
    assert [p.probabilities for p in predictions] == [p.consensus for p in predictions]
