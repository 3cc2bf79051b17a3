"""Decision stumps on numeric and categorical features, found in one sorted pass.

A decision stump splits the samples into a left part (``x_f ≤ θ`` for a numeric feature,
``x_f = c`` for a categorical one, everything for the constant stump) and a right part, and
outputs one vector on each side. For ``SIGNED`` and ``VOTES`` outputs (see
`Outputs`) the vectors are v and −v with v ∈ {−1, 1}^C, best at
v = sign(2 L − T) where L and T are the left and total sums of G, scoring Σ_c |2 L_c − T_c|.
For ``LABELS`` each side predicts its heaviest class, scoring max_c L_c + max_c (T_c − L_c).
Sorting every numeric feature once before boosting makes L a cumulative sum along the
sorted order, so one round costs O(d · m · C) (Vîntur 2019: O(t d m) with O(d m log m)
preprocessing instead of O(d m²) per round), and numpy does it for all features of a block
at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from boosting._columns import Columns, encode_new, encode_training
from boosting.learners import Choice, Outputs

# Elements of G gathered per block of features: large enough for numpy to stream, small
# enough to stay in cache and to bound memory on wide tables.
STUMP_BLOCK = 1 << 20


def _sign(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """±1, with +1 at zero: a stump always says something."""
    return np.where(values >= 0, 1.0, -1.0)


def _scores(
    L: NDArray[np.float64], T: NDArray[np.float64], kind: Outputs, criterion: str = "error"
) -> NDArray[Any]:
    """Score of every split from its left sums L (..., C) and the totals T (C,)."""
    if kind is Outputs.LABELS:
        R = T - L
        if criterion == "gini":
            # Weighted Gini impurity of the two sides, up to a constant and the sign:
            # Σ_c L_c² / Σ L + Σ_c R_c² / Σ R (an empty side adds nothing).
            left_total, right_total = L.sum(axis=-1), R.sum(axis=-1)
            with np.errstate(invalid="ignore", divide="ignore"):
                left = np.where(left_total > 0, (L * L).sum(axis=-1) / left_total, 0.0)
                right = np.where(right_total > 0, (R * R).sum(axis=-1) / right_total, 0.0)
            gini: NDArray[Any] = left + right
            return gini
        result: NDArray[Any] = L.max(axis=-1) + R.max(axis=-1)
        return result
    signed: NDArray[Any] = np.abs(2.0 * L - T).sum(axis=-1)
    return signed


def _side_outputs(
    L: NDArray[np.float64], T: NDArray[np.float64], kind: Outputs
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return the best (left, right) output vectors of a split with left sums L (C,)."""
    if kind is Outputs.LABELS:
        left, right = np.zeros_like(T), np.zeros_like(T)
        left[int(np.argmax(L))] = 1.0
        right[int(np.argmax(T - L))] = 1.0
        return left, right
    vote = _sign(2.0 * L - T)
    return vote, -vote


@dataclass
class StumpBank:
    """The decision stumps a search handed out, each kept once.

    Stump j sends x left when ``x[feature[j]] ≤ threshold[j]`` (numeric),
    ``x[feature[j]] = categories[feature[j]][category[j]]`` (categorical) or always
    (``feature[j] = -1``, the constant stump), and outputs ``left[j]`` there, ``right[j]``
    elsewhere.

    Attributes
    ----------
    n_outputs : int
        Outputs per sample of every stump.
    n_features : int
        Columns of the training table.
    categories : dict of int to ndarray
        Each categorical column's sorted categories (a code is a position in it).
    feature : list of int
        Each stump's column, or -1 for the constant stump.
    threshold : list of float
        Each numeric stump's threshold, halfway between two training values; NaN otherwise.
    category : list of int
        Each categorical stump's category code; -1 otherwise.
    left, right : list of ndarray of shape (n_outputs,)
        Each stump's outputs on its two sides.
    """

    n_outputs: int
    n_features: int
    categories: dict[int, NDArray[Any]]
    feature: list[int] = field(default_factory=list)
    threshold: list[float] = field(default_factory=list)
    category: list[int] = field(default_factory=list)
    left: list[NDArray[np.float64]] = field(default_factory=list)
    right: list[NDArray[np.float64]] = field(default_factory=list)
    _index: dict[tuple[Any, ...], int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        """Return the number of distinct stumps."""
        return len(self.feature)

    def add(
        self,
        feature: int,
        threshold: float,
        category: int,
        left: NDArray[np.float64],
        right: NDArray[np.float64],
    ) -> int:
        """Add a stump unless it is already there (a stump may win many rounds).

        Parameters
        ----------
        feature : int
            Its column, or -1 for the constant stump.
        threshold : float
            Its threshold (NaN unless numeric).
        category : int
            Its category code (-1 unless categorical).
        left, right : ndarray of shape (n_outputs,)
            Its outputs on the two sides.

        Returns
        -------
        int
            The stump's index in the bank.
        """
        key = (feature, threshold, category, left.tobytes(), right.tobytes())
        if key not in self._index:
            self._index[key] = len(self.feature)
            self.feature.append(feature)
            self.threshold.append(threshold)
            self.category.append(category)
            self.left.append(left)
            self.right.append(right)
        return self._index[key]

    def describe(self, index: int) -> str:
        """Describe in words where a stump sends a sample left.

        Parameters
        ----------
        index : int
            The stump, in [0, len(bank)).

        Returns
        -------
        str
            For example ``x[2] <= 0.5``, ``x[0] == 'red'`` or ``always left``.
        """
        feature = self.feature[index]
        if feature < 0:
            return "always left"
        if feature in self.categories:
            return f"x[{feature}] == {self.categories[feature][self.category[index]]!r}"
        return f"x[{feature}] <= {self.threshold[index]:.6g}"

    def evaluate(self, X: ArrayLike) -> _EvaluatedStumps:
        """Validate and encode a table to evaluate the stumps on.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric values, finite; categorical columns as in training. A category not
            seen in training goes right.

        Returns
        -------
        Evaluated
            The stumps' outputs on X.

        Raises
        ------
        ValueError
            If X has another number of columns than in training, a missing categorical
            value or a numeric value that is not finite.
        """
        columns = encode_new(X, self.categories, self.n_features)
        return _EvaluatedStumps(self, columns.values)

    def sides(self, values: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Tell, for every stump, which samples it sends left.

        Parameters
        ----------
        values : ndarray of shape (n_samples, n_features)
            An encoded table.

        Returns
        -------
        ndarray of bool, shape (n_samples, len(bank))
            True where a sample goes left.
        """
        feature = np.asarray(self.feature, dtype=np.intp)
        if len(feature) == 0:
            return np.zeros((values.shape[0], 0), dtype=bool)
        chosen = values[:, np.maximum(feature, 0)]
        categorical = np.isin(feature, list(self.categories))
        threshold = np.asarray(self.threshold)
        category = np.asarray(self.category, dtype=np.float64)
        with np.errstate(invalid="ignore"):  # NaN thresholds of categorical stumps
            numeric_side = chosen <= threshold[None, :]
        result: NDArray[np.bool_] = np.where(
            categorical[None, :], chosen == category[None, :], numeric_side
        )
        result[:, feature < 0] = True
        return result

    def side(self, values: NDArray[np.float64], index: int) -> NDArray[np.bool_]:
        """Tell which samples one stump sends left.

        Parameters
        ----------
        values : ndarray of shape (n_samples, n_features)
            An encoded table.
        index : int
            The stump, in [0, len(bank)).

        Returns
        -------
        ndarray of bool, shape (n_samples,)
            True where a sample goes left.
        """
        feature = self.feature[index]
        if feature < 0:
            return np.ones(values.shape[0], dtype=bool)
        if feature in self.categories:
            return np.asarray(values[:, feature] == self.category[index])
        return np.asarray(values[:, feature] <= self.threshold[index])


# Cells (samples × stumps) per block when many stumps are evaluated at once: bounds the
# memory of prediction whatever the number of stumps.
EVALUATION_BLOCK = 1 << 21


@dataclass
class _EvaluatedStumps:
    bank: StumpBank
    values: NDArray[np.float64]

    def output(self, hypothesis: int) -> NDArray[np.float64]:
        return np.where(
            self.bank.side(self.values, hypothesis)[:, None],
            self.bank.left[hypothesis][None, :],
            self.bank.right[hypothesis][None, :],
        )

    def weighted_sum(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """Σ_j w_j h_j(x): w·right everywhere plus w·(left − right) where x goes left."""
        n_outputs = self.bank.n_outputs
        result = np.zeros((self.values.shape[0], n_outputs))
        if len(self.bank) == 0:
            return result
        left = np.asarray(self.bank.left).reshape(len(weights), n_outputs)
        right = np.asarray(self.bank.right).reshape(len(weights), n_outputs)
        difference = weights[:, None] * (left - right)
        result += weights @ right
        rows = max(1, EVALUATION_BLOCK // len(self.bank))
        for start in range(0, self.values.shape[0], rows):
            block = self.bank.sides(self.values[start : start + rows])
            result[start : start + rows] += block.astype(np.float64) @ difference
        return result


class _GroupedSums:
    """Per feature, sums of G's rows by group (a distinct value, or a category).

    Features are summed a block at a time so that memory stays bounded on wide and long
    tables. ``groups[f, i]`` is sample i's group within feature f. A block is summed by one
    bincount over the non-zero entries of G when there is about one per sample (M1 and
    SAMME: each sample's weight sits in its own class's column, the same pattern round
    after round, so the bincount's index is built once per block and kept), and by one
    bincount per column otherwise (MH).
    """

    def __init__(self, groups: NDArray[np.intp], n_groups: NDArray[np.intp]) -> None:
        self.n_groups = n_groups
        self.starts = np.concatenate([[0], np.cumsum(n_groups)]).astype(np.intp)
        self.ids = groups + self.starts[:-1, None]  # (d, m) ids over all features
        self._blocks: dict[int, list[tuple[int, int]]] = {}
        self._patterns: dict[
            tuple[int, int], tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]
        ] = {}

    def blocks(self, width: int) -> list[tuple[int, int]]:
        """[first, last) features per block: about STUMP_BLOCK samples and sums each."""
        if width not in self._blocks:
            n_features, n_samples = self.ids.shape
            blocks, first, size = [], 0, 0
            for feature in range(n_features):
                cost = max(n_samples, int(self.n_groups[feature]) * width)
                if feature > first and size + cost > STUMP_BLOCK:
                    blocks.append((first, feature))
                    first, size = feature, 0
                size += cost
            if n_features:
                blocks.append((first, n_features))
            self._blocks[width] = blocks
        return self._blocks[width]

    def __call__(self, G: NDArray[np.float64], first: int, last: int) -> NDArray[np.float64]:
        """Sum G by group over features first..last-1: (groups, C), by feature then group."""
        base, size = int(self.starts[first]), int(self.starts[last] - self.starts[first])
        ids = self.ids[first:last] - base
        width = G.shape[1]
        rows, columns = np.nonzero(G) if width > 1 else (None, None)
        if rows is None or columns is None or len(rows) > G.shape[0]:
            sums = np.empty((size, width))
            for column in range(width):
                sums[:, column] = np.bincount(
                    ids.ravel(), weights=np.tile(G[:, column], last - first), minlength=size
                )
            return sums
        cached = self._patterns.get((first, last))
        if (
            cached is not None
            and np.array_equal(cached[0], rows)
            and np.array_equal(cached[1], columns)
        ):
            index = cached[2]
        else:
            index = (ids[:, rows] * width + columns).ravel()
            self._patterns[(first, last)] = (rows, columns, index)
        flat = np.bincount(
            index, weights=np.tile(G[rows, columns], last - first), minlength=size * width
        )
        result: NDArray[np.float64] = np.asarray(flat, dtype=np.float64).reshape(size, width)
        return result


_Split = tuple[float, int, float, float, NDArray[np.float64]]  # score, feature, low, high, L


class _StumpSearch:
    def __init__(
        self, columns: Columns, kind: Outputs, n_outputs: int, criterion: str = "gini"
    ) -> None:
        self.kind = kind
        self.criterion = criterion
        self.values = columns.values
        n_features = columns.values.shape[1]
        self.numeric = np.flatnonzero(~columns.categorical)
        self.categorical = np.flatnonzero(columns.categorical)
        # Numeric features, sorted once: a split after sorted position j sends the first
        # j + 1 samples left; it exists only between two distinct values.
        numeric_values = columns.values[:, self.numeric].T  # (d_numeric, m)
        order = np.argsort(numeric_values, axis=1, kind="stable")
        sorted_values = np.take_along_axis(numeric_values, order, axis=1)
        splittable = sorted_values[:, 1:] > sorted_values[:, :-1]  # (d_numeric, m - 1)
        self.width = 1 if kind is not Outputs.LABELS and n_outputs == 1 else n_outputs
        if self.width == 1:
            # One column (two classes): the left sums are a cumulative sum of G gathered
            # in sorted order, every feature of a block at once.
            self.order, self.sorted, self.splittable = order, sorted_values, splittable
        else:
            # Several columns: sum G by distinct value first (one bincount over the
            # samples, not over samples × columns), then accumulate over the values.
            first = np.ones_like(sorted_values, dtype=bool)
            first[:, 1:] = splittable
            rank = np.cumsum(first, axis=1) - 1
            bins = np.empty_like(rank)
            np.put_along_axis(bins, order, rank, axis=1)
            n_bins = rank[:, -1] + 1
            self.bin_sums = _GroupedSums(bins.astype(np.intp), n_bins.astype(np.intp))
            self.bin_values = sorted_values[first]  # distinct values, feature after feature
            self.bin_feature = np.repeat(np.arange(len(self.numeric)), n_bins)
            self.bin_start = np.repeat(self.bin_sums.starts[:-1], n_bins)
            last = np.zeros(int(self.bin_sums.starts[-1]), dtype=bool)
            last[self.bin_sums.starts[1:] - 1] = True
            self.splits_after = ~last  # a split after any value but a feature's largest
        # Categorical features: each category against the rest.
        n_categories = np.array(
            [len(columns.categories[int(f)]) for f in self.categorical], dtype=np.intp
        )
        codes = columns.values[:, self.categorical].T.astype(np.intp)  # (d_categorical, m)
        self.category_sums = _GroupedSums(codes, n_categories)
        self._bank = StumpBank(n_outputs, n_features, columns.categories)

    def bank(self) -> StumpBank:
        return self._bank

    def best(self, G: NDArray[np.float64]) -> Choice:
        return self._best(G, self.criterion)

    def least_wrong(self, G: NDArray[np.float64]) -> Choice:
        return self._best(G, "error")

    def best_direction(self, G: NDArray[np.float64], weights: NDArray[np.float64]) -> Choice:
        # Every stump outputs ±1, so all have the same weighted norm √(Σ w): the best score
        # is the best direction, and only the score is rescaled.
        choice = self.best(G)
        norm = math.sqrt(float(np.dot(weights, (choice.outputs * choice.outputs).sum(axis=1))))
        score = choice.score / norm if norm > 0 else 0.0
        return Choice(choice.hypothesis, score, choice.outputs)

    def _best(self, G: NDArray[np.float64], criterion: str) -> Choice:
        T = G.sum(axis=0)
        best_score = -np.inf
        best: tuple[Any, ...] | None = None
        for score, candidate in (
            self._best_numeric(G, T, criterion),
            self._best_categorical(G, T, criterion),
        ):
            if candidate is not None and score > best_score:
                best_score, best = score, candidate
        constant = float(_scores(T, T, self.kind, criterion))
        if best is None or constant > best_score:
            best_score, best = constant, (-1, np.nan, -1, T)
        feature, threshold, category, left_sums = best
        left, right = _side_outputs(left_sums, T, self.kind)
        index = self._bank.add(feature, threshold, category, left, right)
        side = self._bank.side(self.values, index)
        outputs = np.where(side[:, None], left[None, :], right[None, :])
        return Choice(index, float(best_score), outputs)

    def _best_numeric(
        self, G: NDArray[np.float64], T: NDArray[np.float64], criterion: str
    ) -> tuple[float, tuple[Any, ...] | None]:
        found = self._sorted_split(G, T) if self.width == 1 else self._binned_split(G, T, criterion)
        if found is None:
            return -np.inf, None
        score, feature, low, high, left_sums = found
        threshold = low / 2.0 + high / 2.0  # halves first: no overflow near the float limits
        if not low <= threshold < high:  # neighbours one float apart: the midpoint rounds up
            threshold = low
        return score, (int(self.numeric[feature]), float(threshold), -1, left_sums)

    def _sorted_split(self, G: NDArray[np.float64], T: NDArray[np.float64]) -> _Split | None:
        n_numeric, n_samples = self.order.shape
        if n_numeric == 0 or n_samples < 2:
            return None
        block = max(1, STUMP_BLOCK // n_samples)
        column, total = G[:, 0], T[0]
        best: _Split | None = None
        for start in range(0, n_numeric, block):
            L = np.cumsum(column[self.order[start : start + block]][:, :-1], axis=1)
            scores = np.where(self.splittable[start : start + block], np.abs(2.0 * L - total), -1.0)
            row, position = divmod(int(np.argmax(scores)), n_samples - 1)
            feature = start + row
            if self.splittable[feature, position] and (
                best is None or scores[row, position] > best[0]
            ):
                best = (
                    float(scores[row, position]),
                    feature,
                    float(self.sorted[feature, position]),
                    float(self.sorted[feature, position + 1]),
                    np.array([L[row, position]]),
                )
        return best

    def _binned_split(
        self, G: NDArray[np.float64], T: NDArray[np.float64], criterion: str
    ) -> _Split | None:
        best: _Split | None = None
        starts = self.bin_sums.starts
        for first, last in self.bin_sums.blocks(G.shape[1]):
            low, high = int(starts[first]), int(starts[last])
            splits = np.flatnonzero(self.splits_after[low:high])
            if len(splits) == 0:
                continue
            cumulative = np.cumsum(self.bin_sums(G, first, last), axis=0)
            before = np.vstack([np.zeros((1, G.shape[1])), cumulative])[
                self.bin_start[low:high] - low
            ]
            L = (cumulative - before)[splits]  # left sums: every value up to this one
            scores = _scores(L, T, self.kind, criterion)
            at = int(np.argmax(scores))
            if best is None or scores[at] > best[0]:
                value = low + int(splits[at])
                best = (
                    float(scores[at]),
                    int(self.bin_feature[value]),
                    float(self.bin_values[value]),
                    float(self.bin_values[value + 1]),
                    L[at].copy(),
                )
        return best

    def _best_categorical(
        self, G: NDArray[np.float64], T: NDArray[np.float64], criterion: str
    ) -> tuple[float, tuple[Any, ...] | None]:
        best_score, best = -np.inf, None
        starts = self.category_sums.starts
        for first, last in self.category_sums.blocks(G.shape[1]):
            sums = self.category_sums(G, first, last)  # the left sums of "x_f = c"
            if len(sums) == 0:
                continue
            scores = _scores(sums, T, self.kind, criterion)
            flat = int(np.argmax(scores))
            if scores[flat] > best_score:
                group = int(starts[first]) + flat
                position = int(np.searchsorted(starts, group, side="right")) - 1
                category = group - int(starts[position])
                best_score = float(scores[flat])
                best = (int(self.categorical[position]), np.nan, category, sums[flat].copy())
        return best_score, best


@dataclass(frozen=True)
class DecisionStumps:
    """Weighted decision stumps on numeric and categorical features (Bonifaci; Vîntur 2019).

    Numeric features: a threshold halfway between two consecutive distinct values, either
    way round. Categorical features: one category against all others. Plus the constant
    stump. Each round returns the stump with the best score (ties: numeric features before
    categorical ones, then the lowest feature and threshold; the constant stump only when
    strictly better).

    For two classes (AdaBoost) and for AdaBoost.MH a stump is ranked by the edge it gives,
    which is what those algorithms maximise. For M1 and SAMME, whose stumps predict one
    class per side, ``criterion`` ranks the splits: "gini" (the default, as CART, Breiman,
    Friedman, Olshen & Stone 1984, and scikit-learn's trees) by the weighted Gini impurity
    Σ_side W_side (1 − Σ_c p_c²) of the two sides, "error" by the weighted error itself.
    The error of a multi-class stump is flat over most thresholds (a split that changes
    neither side's heaviest class gains nothing), so ranking by it picks among many ties
    and generalises worse in practice; either way each side predicts its heaviest class.

    Parameters
    ----------
    categorical : "auto", sequence of int, or None
        Columns to treat as categories. "auto": the columns of a non-numeric X (strings,
        objects) that do not convert to numbers. None: every column must be numeric. At
        prediction a category not seen in training goes right.
    criterion : "gini" or "error"
        How splits of M1 and SAMME stumps are ranked (see above).
    """

    categorical: Sequence[int] | Literal["auto"] | None = "auto"
    criterion: Literal["error", "gini"] = "gini"

    def prepare(self, X: ArrayLike, kind: Outputs, n_outputs: int) -> _StumpSearch:
        """Validate and encode the training table and sort every numeric feature once.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric columns, finite; categorical columns (see ``categorical``) of values of
            one type, none missing.
        kind : Outputs
            What the stumps must return on each side.
        n_outputs : int, >= 1
            Outputs per sample: 1 for ``SIGNED``, the number of classes or labels otherwise.

        Returns
        -------
        Search
            The stump search, asked once a round.

        Raises
        ------
        ValueError
            If ``criterion`` is unknown, X is not a non-empty 2-D table, a listed
            categorical feature is not a column, a column is not numeric while
            ``categorical`` is None, or a value is missing or not finite.
        """
        if self.criterion not in ("error", "gini"):
            raise ValueError(f"criterion must be 'error' or 'gini', got {self.criterion!r}")
        return _StumpSearch(
            encode_training(X, self.categorical), Outputs(kind), n_outputs, self.criterion
        )
