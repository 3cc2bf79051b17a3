"""Boosting decision stumps: this library against scikit-learn, same data, same rounds.

For each data set, fits our estimator with decision stumps and scikit-learn's
``AdaBoostClassifier`` with depth-1 trees (its default) for the same number of rounds,
best of a few runs each, and prints both times and their ratio (scikit-learn / ours; the
aim is at least 3). Two classes use our binary AdaBoost; digits (ten classes) uses SAMME,
which is what scikit-learn runs. Tic-tac-toe is one-hot encoded for both, so both read the
same numeric table. Also prints each side's training accuracy, as a check that both did
the same work.

Needs scikit-learn (a test dependency). Data: ``ODDSBOOST_DATA_DIR`` (default
``../shared/data``) for the UCI files.

Run: ``python benchmarks/bench_stumps.py [--rounds 100 --large-rounds 50]``
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits, make_classification
from sklearn.ensemble import AdaBoostClassifier
from sklearn.preprocessing import OneHotEncoder

from boosting import SAMME, AdaBoost

ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    configured = Path(os.environ.get("ODDSBOOST_DATA_DIR", "../shared/data"))
    return configured if configured.is_absolute() else (ROOT / configured).resolve()


def tic_tac_toe() -> tuple[np.ndarray, np.ndarray]:
    text = (data_dir() / "uci" / "tic-tac-toe.data").read_text()
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    squares = np.array([row[:9] for row in rows])
    return OneHotEncoder().fit_transform(squares).toarray(), np.array([r[9] for r in rows])


def banknote() -> tuple[np.ndarray, np.ndarray]:
    path = data_dir() / "uci" / "data_banknote_authentication.txt"
    table = np.loadtxt(path, delimiter=",")
    return table[:, :4], table[:, 4].astype(int)


def digits() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return X, y


def large() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n_samples=100_000, n_features=50, n_informative=10, random_state=0)
    return X, y


def best_time(
    repeats: int, make: Callable[[], Any], X: np.ndarray, y: np.ndarray
) -> tuple[float, Any]:
    times, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = make().fit(X, y)
        times.append(time.perf_counter() - start)
    return min(times), model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--large-rounds", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()

    cases: list[tuple[str, Callable[[], tuple[np.ndarray, np.ndarray]], int]] = [
        ("tic-tac-toe (958 x 27 one-hot)", tic_tac_toe, arguments.rounds),
        ("banknote (1,372 x 4)", banknote, arguments.rounds),
        ("digits (1,797 x 64, 10 classes)", digits, arguments.rounds),
        ("make_classification (100,000 x 50)", large, arguments.large_rounds),
    ]
    print(f"{'data':<38} {'rounds':>6} {'ours s':>9} {'sklearn s':>10} {'ratio':>7}  accuracy")
    ratios = []
    for name, load, rounds in cases:
        X, y = load()
        estimator = SAMME if len(np.unique(y)) > 2 else AdaBoost
        repeats = 1 if len(y) > 10_000 else arguments.repeats
        ours_seconds, ours = best_time(repeats, partial(estimator, rounds), X, y)
        theirs_seconds, theirs = best_time(
            repeats, partial(AdaBoostClassifier, n_estimators=rounds), X, y
        )
        ratio = theirs_seconds / ours_seconds
        ratios.append(ratio)
        print(
            f"{name:<38} {rounds:>6} {ours_seconds:>9.3f} {theirs_seconds:>10.3f} "
            f"{ratio:>6.1f}x  ours {np.mean(ours.predict(X) == y):.4f} "
            f"({ours.n_rounds_} rounds), sklearn {theirs.score(X, y):.4f} "
            f"({len(theirs.estimators_)} rounds)"
        )
    print(f"smallest ratio {min(ratios):.1f}x (aim: at least 3x)")


if __name__ == "__main__":
    main()
