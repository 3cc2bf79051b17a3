"""AdaBoost.M2 over six bookmakers on real seasons: fit 2015/16-2017/18, test 2018/19.

Leagues E0, SP1, I1, D1, F1; bookmakers B365, BW, IW, PS, WH, VC; pre-match odds,
de-margined with the power method. Every forecast is scored on the same test rows: the
matches all six bookmakers quoted. Run with ``pytest -s`` to see the table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from app.domain.football_data import parse_football_data
from app.domain.tables import tables_from_batches
from app.domain.training import TrainingSet, build_training_set
from app.domain.vocabulary import Phase
from boosting import AdaBoostM2, accuracy, brier_score, log_loss, ranked_probability_score
from tests.reference_m2 import reference_m2

SeasonFile = Callable[[str], Path]
LEAGUES = ("E0", "SP1", "I1", "D1", "F1")
TRAIN_SEASONS = ("1516", "1617", "1718")
TEST_SEASON = "1819"
BOOKMAKERS = ("B365", "BW", "IW", "PS", "WH", "VC")


def load(season_file: SeasonFile, seasons: tuple[str, ...]) -> TrainingSet:
    batches = [
        parse_football_data(season_file(f"{league}_{season}").read_bytes())
        for league in LEAGUES
        for season in seasons
    ]
    matches, quotes = tables_from_batches(batches)
    return build_training_set(
        matches, quotes, phase=Phase.PRE, method="power", bookmakers=BOOKMAKERS
    )


@pytest.fixture(scope="module")
def evaluation(season_file: SeasonFile) -> dict[str, object]:
    train = load(season_file, TRAIN_SEASONS)
    test = load(season_file, (TEST_SEASON,))
    model = AdaBoostM2(n_rounds=100).fit(train.H, train.y)
    complete = np.asarray(~np.isnan(test.H).any(axis=(1, 2)), dtype=bool)
    rows = test.rows(complete)
    forecasts = {"M2 ensemble": model.predict_proba(rows.H), "consensus": rows.consensus()}
    for index, code in enumerate(rows.bookmakers):
        forecasts[code] = rows.H[:, index, :]
    scores = {
        name: {
            "log_loss": log_loss(rows.y, proba),
            "brier": brier_score(rows.y, proba),
            "rps": ranked_probability_score(rows.y, proba),
            "accuracy": accuracy(rows.y, proba),
        }
        for name, proba in forecasts.items()
    }
    return {
        "model": model,
        "reference": reference_m2(train.H, train.y, 100),
        "train": train,
        "test": test,
        "rows": rows,
        "forecasts": forecasts,
        "scores": scores,
    }


def test_report(evaluation: dict[str, object]) -> None:
    model = evaluation["model"]
    rows = evaluation["rows"]
    test = evaluation["test"]
    scores = evaluation["scores"]
    assert isinstance(model, AdaBoostM2)
    assert isinstance(rows, TrainingSet)
    assert isinstance(test, TrainingSet)
    assert isinstance(scores, dict)
    print(f"\ntrain matches: {len(evaluation['train'])}  test rows: {len(rows)} of {len(test)}")  # type: ignore[arg-type]
    print(
        f"rounds {model.n_rounds_} ({model.stop_reason_}); first pseudo-loss "
        f"{model.pseudo_losses_[0]:.4f}; weights "
        + ", ".join(
            f"{c} {w:.2f}" for c, w in zip(rows.bookmakers, model.hypothesis_weights_, strict=True)
        )
    )
    print(f"{'forecast':<12} {'log loss':>9} {'Brier':>7} {'RPS':>7} {'accuracy':>9}")
    for name, row in scores.items():
        print(
            f"{name:<12} {row['log_loss']:>9.4f} {row['brier']:>7.4f} {row['rps']:>7.4f} "
            f"{row['accuracy']:>9.4f}"
        )
    assert len(rows) > 0.95 * len(test)


def test_ensemble_is_a_valid_forecast_no_worse_than_the_worst_bookmaker(
    evaluation: dict[str, object],
) -> None:
    forecasts = evaluation["forecasts"]
    scores = evaluation["scores"]
    assert isinstance(forecasts, dict)
    assert isinstance(scores, dict)
    ensemble = forecasts["M2 ensemble"]
    assert np.isfinite(ensemble).all()
    assert ((ensemble >= 0) & (ensemble <= 1)).all()
    assert ensemble.sum(axis=1) == pytest.approx(np.ones(len(ensemble)))
    worst = max(scores[code]["log_loss"] for code in BOOKMAKERS)
    assert scores["M2 ensemble"]["log_loss"] <= worst
    worst_rps = max(scores[code]["rps"] for code in BOOKMAKERS)
    assert scores["M2 ensemble"]["rps"] <= worst_rps


def test_the_fit_on_real_data_equals_the_float64_reference(evaluation: dict[str, object]) -> None:
    # 100 rounds on 5,478 real matches, where several bookmakers come within 1e-9 of each
    # other in later rounds: the fast path must choose exactly what the definition chooses.
    model, reference = evaluation["model"], evaluation["reference"]
    assert isinstance(model, AdaBoostM2)
    assert model.chosen_.tolist() == reference.chosen  # type: ignore[attr-defined]
    assert model.hypothesis_weights_ == pytest.approx(reference.weights, rel=1e-7)  # type: ignore[attr-defined]
