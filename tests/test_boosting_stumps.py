"""Decision stumps: the one-pass search finds what trying every stump one by one finds."""

from __future__ import annotations

import itertools
import pickle
from typing import Literal

import numpy as np
import pytest

from boosting import AdaBoost, DecisionStumps, FixedPool, Outputs, stumps
from boosting.stumps import StumpBank

Criterion = Literal["error", "gini"]


def stump_bank(model: AdaBoost) -> StumpBank:
    """The fitted stumps, with their thresholds, features and descriptions."""
    bank = model.hypotheses_
    assert isinstance(bank, StumpBank)
    return bank


def table(rng: np.random.Generator, m: int) -> np.ndarray:
    """Two numeric columns full of repeated values, one continuous, one of strings, and a
    constant one (no split at all)."""
    X = np.empty((m, 5), dtype=object)
    X[:, 0] = rng.integers(0, 6, m).astype(float)
    X[:, 1] = rng.integers(0, 3, m).astype(float)
    X[:, 2] = rng.normal(size=m)
    X[:, 3] = rng.choice(["x", "o", "b"], m)
    X[:, 4] = 2.5
    return X


def every_split(X: np.ndarray) -> list[np.ndarray]:
    """Left-side masks of every stump, enumerated directly: the constant stump, every
    midpoint between distinct sorted values, every category against the rest."""
    sides = [np.ones(len(X), dtype=bool)]
    for column in X.T:
        if isinstance(column[0], str):
            sides.extend(column == value for value in sorted(set(column)))
        else:
            values = sorted(set(column.astype(float)))
            sides.extend(
                column.astype(float) <= (low + high) / 2 for low, high in itertools.pairwise(values)
            )
    return sides


def direct_score(G: np.ndarray, side: np.ndarray, kind: Outputs, criterion: str) -> float:
    """Best score of one split, from the definition: try every allowed pair of outputs."""
    C = G.shape[1]
    if kind is Outputs.LABELS and criterion == "gini":
        total = G.sum()
        impurity = 0.0
        for part in (G[side], G[~side]):
            weight = part.sum()
            if weight > 0:
                p = part.sum(axis=0) / weight
                impurity += weight * (1 - (p**2).sum())
        return float(total - impurity)  # higher is better, as the search ranks it
    if kind is Outputs.LABELS:
        return max(
            float(G[side, a].sum() + G[~side, b].sum())
            for a, b in itertools.product(range(C), repeat=2)
        )
    best = -np.inf
    for vote in itertools.product((-1.0, 1.0), repeat=C):
        v = np.array(vote)
        outputs = np.where(side[:, None], v, -v)
        best = max(best, float((G * outputs).sum()))
    return best


@pytest.mark.parametrize(
    ("kind", "criterion", "columns"),
    [
        (Outputs.SIGNED, "gini", 1),
        (Outputs.VOTES, "gini", 3),
        (Outputs.LABELS, "error", 3),
        (Outputs.LABELS, "gini", 3),
    ],
)
def test_the_search_finds_the_best_of_all_stumps(
    kind: Outputs, criterion: Criterion, columns: int
) -> None:
    rng = np.random.default_rng(7)
    X = table(rng, 60)
    search = DecisionStumps(criterion=criterion).prepare(X, kind, columns)  # sorted once
    sides = every_split(X)
    for _ in range(25):  # many rounds, many weightings, one preparation
        if kind is Outputs.LABELS:
            G = np.zeros((60, columns))
            G[np.arange(60), rng.integers(0, columns, 60)] = rng.exponential(size=60)
        else:
            G = rng.normal(size=(60, columns)) * rng.exponential(size=(60, 1))
        expected = max(direct_score(G, side, kind, criterion) for side in sides)
        choice = search.best(G)
        assert choice.score == pytest.approx(expected, rel=1e-9, abs=1e-12)
        if criterion == "error" or kind is not Outputs.LABELS:
            # The outputs returned on the training samples achieve that score.
            assert float((G * choice.outputs).sum()) == pytest.approx(expected, rel=1e-9)


def test_thresholds_lie_halfway_and_predictions_follow_them() -> None:
    X = np.array([[1.0], [2.0], [4.0], [8.0]])
    y = np.array([0, 0, 1, 1])
    model = AdaBoost(1).fit(X, y)
    assert stump_bank(model).threshold == [3.0]
    assert model.predict(np.array([[2.999], [3.0], [3.001], [-5.0], [100.0]])).tolist() == [
        0,
        0,
        1,
        0,
        1,
    ]


def test_neighbouring_floats_are_split_between_them() -> None:
    low = 1.0
    high = float(np.nextafter(low, 2.0))  # the midpoint rounds to one of the two
    X = np.array([[low], [low], [high], [high]])
    model = AdaBoost(1).fit(X, [0, 0, 1, 1])
    threshold = stump_bank(model).threshold[0]
    assert low <= threshold < high
    assert model.predict(X).tolist() == [0, 0, 1, 1]


def test_categories_unseen_in_training_go_right() -> None:
    X = np.array([["red"], ["red"], ["blue"], ["green"]], dtype=object)
    model = AdaBoost(1).fit(X, [1, 1, 0, 0])
    assert stump_bank(model).describe(0) == "x[0] == 'red'"
    assert model.predict(np.array([["red"], ["purple"]], dtype=object)).tolist() == [1, 0]


def test_numeric_codes_can_be_declared_categorical() -> None:
    # Category 2 against the rest separates these; no threshold on 0 < 1 < 2 < 3 can.
    X = np.array([[0], [2], [1], [3], [2], [0]])
    y = np.array([0, 1, 0, 0, 1, 0])
    as_numbers = AdaBoost(1).fit(X, y)
    as_categories = AdaBoost(1, learner=DecisionStumps(categorical=[0])).fit(X, y)
    assert as_categories.errors_[0] == 0.0
    assert as_numbers.errors_[0] > 0.0


def test_a_constant_table_gives_the_constant_stump() -> None:
    X = np.ones((5, 2))
    model = AdaBoost(3).fit(X, [1, 1, 1, 0, 1])
    assert stump_bank(model).feature == [-1]
    assert model.predict(np.zeros((2, 2))).tolist() == [1, 1]


def test_bad_tables_are_refused_with_the_cell_named() -> None:
    with pytest.raises(ValueError, match=r"X\[1, 0\] is nan"):
        AdaBoost(1).fit(np.array([[0.0], [np.nan], [1.0]]), [0, 1, 1])
    with pytest.raises(ValueError, match="column 1 is not numeric; list it in categorical"):
        DecisionStumps(categorical=None).prepare(
            np.array([[1, "a"], [2, "b"]], dtype=object), Outputs.SIGNED, 1
        )
    with pytest.raises(ValueError, match="categorical feature 4 is not a column"):
        DecisionStumps(categorical=[4]).prepare(np.zeros((3, 2)), Outputs.SIGNED, 1)
    with pytest.raises(ValueError, match="criterion must be"):
        DecisionStumps(criterion="entropy").prepare(np.zeros((3, 2)), Outputs.LABELS, 2)  # type: ignore[arg-type]
    model = AdaBoost(2).fit(np.arange(6.0).reshape(3, 2), [0, 1, 1])
    with pytest.raises(ValueError, match="X has 3 features; the model was fitted on 2"):
        model.predict(np.zeros((2, 3)))


def test_pools_are_checked() -> None:
    with pytest.raises(ValueError, match=r"must lie in \[-1, 1\]"):
        FixedPool().prepare(np.array([[0.5, 1.5]]), Outputs.SIGNED, 1)
    with pytest.raises(ValueError, match=r"class indices in \[0, 3\), or -1"):
        FixedPool().prepare(np.array([[0, 3]]), Outputs.LABELS, 3)
    with pytest.raises(ValueError, match=r"shape \(n_samples, n_hypotheses, 3\)"):
        FixedPool().prepare(np.zeros((4, 2)), Outputs.VOTES, 3)


def test_stump_models_pickle() -> None:
    rng = np.random.default_rng(3)
    X = table(rng, 80)
    y = (X[:, 0].astype(float) + (X[:, 3] == "x") > 3).astype(int)
    model = AdaBoost(20).fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.decision_function(X), model.decision_function(X))


@pytest.mark.parametrize(
    ("kind", "criterion", "columns"),
    [(Outputs.SIGNED, "gini", 1), (Outputs.VOTES, "gini", 3), (Outputs.LABELS, "gini", 3)],
)
def test_small_blocks_find_the_same_stump(
    monkeypatch: pytest.MonkeyPatch, kind: Outputs, criterion: Criterion, columns: int
) -> None:
    # Wide or long tables are searched a block of features at a time; with blocks of a
    # feature or two the answer must not change.
    rng = np.random.default_rng(17)
    X = table(rng, 60)
    G = rng.normal(size=(60, columns)) if kind is not Outputs.LABELS else np.zeros((60, columns))
    if kind is Outputs.LABELS:
        G[np.arange(60), rng.integers(0, columns, 60)] = rng.exponential(size=60)
    whole = DecisionStumps(criterion=criterion).prepare(X, kind, columns).best(G)
    monkeypatch.setattr(stumps, "STUMP_BLOCK", 50)
    blocked = DecisionStumps(criterion=criterion).prepare(X, kind, columns).best(G)
    assert blocked.score == pytest.approx(whole.score, rel=1e-12)
    assert np.array_equal(blocked.outputs, whole.outputs)


def test_many_stumps_are_evaluated_in_bounded_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(18)
    X = rng.normal(size=(500, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    model = AdaBoost(60).fit(X, y)
    whole = model.decision_function(X)
    monkeypatch.setattr(stumps, "EVALUATION_BLOCK", 7)
    assert model.decision_function(X) == pytest.approx(whole)


def test_thresholds_between_huge_values_do_not_overflow() -> None:
    X = np.array([[-1e308], [1e308]])
    model = AdaBoost(1).fit(X, [0, 1])
    assert stump_bank(model).threshold == [0.0]
    assert model.predict(np.array([[-1.0], [1.0]])).tolist() == [0, 1]


def test_missing_or_mixed_categories_are_refused() -> None:
    with pytest.raises(ValueError, match=r"X\[1, 0\] is missing"):
        AdaBoost(1, learner=DecisionStumps(categorical=[0])).fit(
            np.array([[1.0], [np.nan], [2.0]]), [0, 1, 1]
        )
    with pytest.raises(ValueError, match=r"X\[2, 0\] is missing"):
        AdaBoost(1).fit(np.array([["a"], ["b"], [None]], dtype=object), [0, 1, 1])
    with pytest.raises(ValueError, match="column 0 mixes int, str values"):
        # An array, as callers pass it, where the signature names a sequence.
        AdaBoost(1, learner=DecisionStumps(categorical=np.array([0]))).fit(  # type: ignore[arg-type]
            np.array([[1], ["b"], ["c"]], dtype=object), [0, 1, 1]
        )
