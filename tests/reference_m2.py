"""A plain float64 AdaBoost.M2 written straight from the definition, to check the fast one.

No margin array, no float32, no blocking, no candidate window: every round computes every
hypothesis's pseudo-loss from H and D with one einsum, exactly as written in DESIGN.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class ReferenceFit:
    chosen: list[int]
    errors: list[float]
    betas: list[float]
    weights: np.ndarray
    stop_reason: str


def reference_m2(
    H: np.ndarray, y: np.ndarray, rounds: int, sample_weight: np.ndarray | None = None
) -> ReferenceFit:
    m, b, k = H.shape
    filled = np.where(np.isnan(H), 1.0 / k, H).astype(np.float64)
    true = filled[np.arange(m), :, y]  # (m, B)
    weight = np.ones(m) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    D = np.repeat(weight[:, None], k, axis=1)
    D[np.arange(m), y] = 0.0
    D /= D.sum()
    chosen: list[int] = []
    errors: list[float] = []
    betas: list[float] = []
    weights = np.zeros(b)
    stop = "max_rounds"
    for _ in range(rounds):
        # eps_b = 1/2 Σ_(i,y≠y_i) D(i,y) (1 − h(x_i,y_i) + h(x_i,y))
        losses = 0.5 * np.einsum("iy,iby->b", D, 1.0 - true[:, :, None] + filled)
        best = int(np.argmin(losses))
        eps = float(losses[best])
        if eps >= 0.5:
            stop = "no_better_than_chance"
            break
        floored = max(eps, 1e-10)
        beta = floored / (1 - floored)
        chosen.append(best)
        errors.append(eps)
        betas.append(beta)
        weights[best] += math.log(1 / beta)
        if eps <= 1e-10:
            stop = "perfect"
            break
        D = D * beta ** (0.5 * (1.0 + true[:, best, None] - filled[:, best, :]))
        D[np.arange(m), y] = 0.0
        D /= D.sum()
    return ReferenceFit(chosen, errors, betas, weights, stop)
