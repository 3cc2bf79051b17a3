"""Input validation shared by the estimators and metrics, with messages that say what is wrong."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

# Values a hair outside [0, 1] are floating-point noise from a normalisation, not errors.
RANGE_TOLERANCE = 1e-9


# Samples per block when a large H is checked or transformed: blocks stay in cache and no
# second full-size temporary is ever allocated.
BLOCK_SAMPLES = 4_096


def as_plausibility_array(values: ArrayLike, *, name: str = "H") -> NDArray[np.floating]:
    """Dtype and shape checks only: a float array (n_samples, n_hypotheses, n_classes)."""
    array = np.asarray(values)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be numeric, got dtype {array.dtype}")
    if array.dtype.kind != "f":
        array = array.astype(np.float64)
    if array.ndim != 3:
        raise ValueError(
            f"{name} must have shape (n_samples, n_hypotheses, n_classes), got {array.shape}"
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {array.shape}")
    if array.shape[2] < 2:
        raise ValueError(f"{name} needs at least 2 classes, got {array.shape[2]}")
    return array


def checked_block(
    block: NDArray[np.floating], first_sample: int, *, name: str = "H"
) -> tuple[NDArray[np.floating], NDArray[np.bool_]]:
    """Validate samples ``first_sample ...`` of H; return them with abstentions filled by 1/K.

    Also returns the (n, n_hypotheses) abstention mask. A hypothesis abstains on a sample
    when all its class values there are NaN; a partly NaN vector, an infinite value or a
    value outside [0, 1] is an error naming the sample.
    """
    n_classes = block.shape[2]
    missing = np.isnan(block)
    abstaining = missing.all(axis=2)
    partial = missing.any(axis=2) & ~abstaining
    if partial.any():
        sample, hypothesis = np.argwhere(partial)[0]
        raise ValueError(
            f"{name}[{first_sample + sample}, {hypothesis}] is partly NaN; an abstaining "
            "hypothesis must be NaN for every class"
        )
    filled = np.where(missing, block.dtype.type(1.0 / n_classes), block)
    low, high = filled.min(), filled.max()
    if low < -RANGE_TOLERANCE or high > 1 + RANGE_TOLERANCE:  # also catches ±inf
        bad = np.argwhere((filled < -RANGE_TOLERANCE) | (filled > 1 + RANGE_TOLERANCE))[0]
        raise ValueError(
            f"{name} values must lie in [0, 1] (NaN to abstain); "
            f"{name}[{first_sample + bad[0]}, {bad[1]}, {bad[2]}] = {block[tuple(bad)]:g}"
        )
    return filled, abstaining


def check_plausibilities(
    values: ArrayLike, *, name: str = "H"
) -> tuple[NDArray[np.floating], NDArray[np.bool_]]:
    """Validate H; return it and its (n_samples, n_hypotheses) abstention mask.

    See ``checked_block`` for what is checked.
    """
    array = as_plausibility_array(values, name=name)
    abstaining = np.empty(array.shape[:2], dtype=bool)
    for start in range(0, array.shape[0], BLOCK_SAMPLES):
        _, abstaining[start : start + BLOCK_SAMPLES] = checked_block(
            array[start : start + BLOCK_SAMPLES], start, name=name
        )
    return array, abstaining


def check_labels(y: ArrayLike, n_samples: int, n_classes: int) -> NDArray[np.intp]:
    """Return y as ``n_samples`` integer labels in [0, n_classes); refuse anything else."""
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != n_samples:
        raise ValueError(f"y must have shape ({n_samples},), got {labels.shape}")
    if labels.dtype.kind == "f":
        if not np.all(np.isfinite(labels)) or not np.all(labels == np.round(labels)):
            raise ValueError("y must hold integer class labels")
    elif labels.dtype.kind not in "iub":
        raise TypeError(f"y must hold integer class labels, got dtype {labels.dtype}")
    labels = labels.astype(np.intp)
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(
            f"labels must lie in [0, {n_classes}); found {labels.min()} to {labels.max()}"
        )
    return labels


def check_sample_weight(sample_weight: ArrayLike | None, n_samples: int) -> NDArray[np.float64]:
    """Return the sample weights normalised to sum to 1; uniform when none are given."""
    if sample_weight is None:
        return np.full(n_samples, 1.0 / n_samples)
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {weights.shape}")
    if not np.all(np.isfinite(weights)) or (weights < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    largest = float(weights.max())
    if largest <= 0:
        raise ValueError("sample_weight must have a positive sum")
    scaled = weights / largest  # first, so that huge weights cannot overflow the sum
    normalised: NDArray[np.float64] = scaled / scaled.sum()
    return normalised


def _n_samples(X: ArrayLike) -> int:
    shape = np.shape(X)
    if len(shape) < 2:
        raise ValueError(f"X must have one row per sample, got shape {shape}")
    return int(shape[0])


def check_same_length(X: ArrayLike, y: NDArray[Any]) -> None:
    """Refuse an X whose number of rows is not the number of labels in y."""
    if _n_samples(X) != y.shape[0]:
        raise ValueError(f"X has {_n_samples(X)} samples but y has {y.shape[0]}")


def class_labels(y: ArrayLike, minimum: int) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """Return the sorted classes of labels y (at least ``minimum``) and each label's index."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y must have shape (n_samples,), got {labels.shape}")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError("y contains NaN or infinite labels")
    classes, index = np.unique(labels, return_inverse=True)
    if len(classes) < minimum:
        raise ValueError(f"y needs at least {minimum} classes, got {len(classes)}")
    return classes, index.astype(np.intp)


# How far a row of probabilities may be from summing to 1 (float32 models, rounding).
SUM_TOLERANCE = 1e-6


def check_probabilities(
    proba: ArrayLike, n_classes: int | None = None, *, name: str = "proba"
) -> NDArray[np.float64]:
    """(n, K) probabilities: finite, in [0, 1], each row summing to 1."""
    array = np.asarray(proba, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, n_classes), got {array.shape}")
    if n_classes is not None and array.shape[1] != n_classes:
        raise ValueError(f"{name} must have {n_classes} columns, got {array.shape[1]}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if array.size and (array.min() < -RANGE_TOLERANCE or array.max() > 1 + RANGE_TOLERANCE):
        raise ValueError(f"{name} values must lie in [0, 1]")
    off = np.abs(array.sum(axis=1) - 1.0) > SUM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise ValueError(f"{name} rows must sum to 1; row {row} sums to {array[row].sum():.6g}")
    clipped: NDArray[np.float64] = np.clip(array, 0.0, 1.0)
    return clipped
