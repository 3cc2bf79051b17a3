"""A training or prediction table, validated and encoded for the decision stumps.

Numeric columns become floats, which must be finite; categorical ones become codes, each
value's position among the column's sorted categories (found in training, kept for
prediction, where a value not seen in training gets -1). Which columns are categorical is
declared, or under "auto" found: those of a non-numeric table that do not convert to
numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass
class Columns:
    """A table, encoded: numeric columns as floats, categorical ones as codes."""

    values: NDArray[np.float64]  # (m, d); categorical columns hold their codes
    categorical: NDArray[np.bool_]  # (d,)
    categories: dict[int, NDArray[Any]]  # feature → its sorted categories (code = position)


def encode_training(X: ArrayLike, categorical: Sequence[int] | Literal["auto"] | None) -> Columns:
    """Validate the training table and encode it, finding each categorical column's values."""
    array = _table(X)
    is_categorical = _categorical_mask(array, categorical)
    values, categories = _encode_columns(array, is_categorical, None)
    return Columns(values, is_categorical, categories)


def encode_new(X: ArrayLike, categories: dict[int, NDArray[Any]], n_features: int) -> Columns:
    """Validate a table to predict on and encode it with the training categories.

    A value not seen in training gets the code -1.
    """
    array = _table(X, n_features)
    is_categorical = np.zeros(array.shape[1], dtype=bool)
    is_categorical[list(categories)] = True
    values, _ = _encode_columns(array, is_categorical, categories)
    return Columns(values, is_categorical, categories)


def _table(X: ArrayLike, n_features: int | None = None) -> NDArray[Any]:
    """X as a non-empty 2-D array, of ``n_features`` columns when that is given."""
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(f"X must have shape (n_samples, n_features), got {array.shape}")
    n_samples, d = array.shape
    if n_samples == 0 or d == 0:
        raise ValueError(f"X is empty: shape {array.shape}")
    if n_features is not None and d != n_features:
        raise ValueError(f"X has {d} features; the model was fitted on {n_features}")
    return array


def _categorical_mask(
    array: NDArray[Any], categorical: Sequence[int] | Literal["auto"] | None
) -> NDArray[np.bool_]:
    """(d,) True for the listed columns and, under "auto", for those not convertible to numbers."""
    d = array.shape[1]
    listed = _listed_features(categorical, d)
    numeric_dtype = array.dtype.kind in "fiub"
    is_categorical = np.zeros(d, dtype=bool)
    for feature in range(d):
        if feature in listed:
            is_categorical[feature] = True
        elif not numeric_dtype and not _converts_to_numbers(array[:, feature]):
            if categorical is None:
                raise ValueError(f"X column {feature} is not numeric; list it in categorical")
            is_categorical[feature] = True
    return is_categorical


def _listed_features(categorical: Sequence[int] | Literal["auto"] | None, d: int) -> set[int]:
    """Return the columns declared categorical, each checked to be a column of X."""
    if categorical is None or isinstance(categorical, str):
        return set()
    listed = {int(c) for c in categorical}
    for feature in listed:
        if not 0 <= feature < d:
            raise ValueError(f"categorical feature {feature} is not a column of X (0..{d - 1})")
    return listed


def _converts_to_numbers(column: NDArray[Any]) -> bool:
    try:
        column.astype(np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _encode_columns(
    array: NDArray[Any],
    is_categorical: NDArray[np.bool_],
    categories: dict[int, NDArray[Any]] | None,
) -> tuple[NDArray[np.float64], dict[int, NDArray[Any]]]:
    """Encode numeric columns as floats and categorical ones as codes.

    Also returns each categorical column's categories (see `_category_codes`).
    """
    values = np.empty(array.shape)
    found: dict[int, NDArray[Any]] = {}
    for feature in range(array.shape[1]):
        column = array[:, feature]
        if is_categorical[feature]:
            known = None if categories is None else categories[feature]
            found[feature], values[:, feature] = _category_codes(column, feature, known)
        else:
            values[:, feature] = column.astype(np.float64)
    _check_finite(values, is_categorical)
    return values, found


def _category_codes(
    column: NDArray[Any], feature: int, known: NDArray[Any] | None
) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """Return a categorical column's sorted categories and each value's position among them.

    With ``known`` (prediction) the categories are those, and a value not among them gets -1.
    """
    missing = _missing(column)
    if missing.any():
        row = int(np.argmax(missing))
        raise ValueError(
            f"X[{row}, {feature}] is missing; a categorical column needs a value in every row"
        )
    try:
        if known is None:
            known, codes = np.unique(column, return_inverse=True)
        else:
            position = np.minimum(np.searchsorted(known, column), len(known) - 1)
            codes = np.where(known[position] == column, position, -1)
    except TypeError:  # values that do not compare: numbers next to strings
        kinds = sorted({type(value).__name__ for value in column.tolist()})
        raise ValueError(
            f"X column {feature} mixes {', '.join(kinds)} values; a categorical "
            "column needs values of one type"
        ) from None
    return known, codes


def _check_finite(values: NDArray[np.float64], is_categorical: NDArray[np.bool_]) -> None:
    numeric = values[:, ~is_categorical]
    if not np.all(np.isfinite(numeric)):
        row, position = np.argwhere(~np.isfinite(numeric))[0]
        feature = int(np.flatnonzero(~is_categorical)[position])
        raise ValueError(f"X[{row}, {feature}] is {numeric[row, position]}; values must be finite")


def _missing(column: NDArray[Any]) -> NDArray[np.bool_]:
    """None or NaN, in a numeric or an object column."""
    if column.dtype.kind == "f":
        return np.asarray(np.isnan(column), dtype=bool)
    if column.dtype.kind != "O":
        return np.zeros(column.shape, dtype=bool)
    # NaN is the one value not equal to itself
    return np.asarray(
        np.frompyfunc(lambda value: value is None or value != value, 1, 1)(column), dtype=bool
    )
