"""AdaBoost.M2 fit speed against the memory-speed floor, measured in the same run.

Fits m = 100,000 samples, B = 40 hypotheses, K = 3 classes, T = 200 rounds on random
Dirichlet plausibilities (each hypothesis weakly informative, so all rounds run), and times
T plain reductions (``ndarray.sum``) over a float32 array of the same (m, B, K) size: the
time it takes just to read that much memory T times. Prints both, their ratio, and the peak
extra memory of the fit. The aim is a ratio of at most 1.5.

Run: ``python benchmarks/bench_m2_fit.py [--samples N --hypotheses B --rounds T]``
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from boosting import AdaBoostM2


def make_pool(
    n_samples: int, n_hypotheses: int, n_classes: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n_samples)
    # Concentration with a small, hypothesis-specific tilt towards the true class.
    tilt = rng.uniform(0.05, 0.4, n_hypotheses)
    alpha = np.ones((n_samples, n_hypotheses, n_classes))
    alpha[np.arange(n_samples), :, labels] += tilt
    plausibilities = rng.standard_gamma(alpha)
    plausibilities /= plausibilities.sum(axis=2, keepdims=True)
    return plausibilities, labels


def naive_round_seconds(H: np.ndarray, y: np.ndarray, rounds: int = 5) -> float:
    """Seconds per round of the textbook implementation: an einsum over H every round."""
    n_samples, _, n_classes = H.shape
    filled = np.nan_to_num(H, nan=1.0 / n_classes)
    true = filled[np.arange(n_samples), :, y]
    distribution = np.full((n_samples, n_classes), 1.0)
    distribution[np.arange(n_samples), y] = 0.0
    distribution /= distribution.sum()
    start = time.perf_counter()
    for _ in range(rounds):
        losses = 0.5 * np.einsum("iy,iby->b", distribution, 1.0 - true[:, :, None] + filled)
        best = int(np.argmin(losses))
        beta = losses[best] / (1.0 - losses[best])
        distribution *= beta ** (0.5 * (1.0 + true[:, best, None] - filled[:, best, :]))
        distribution[np.arange(n_samples), y] = 0.0
        distribution /= distribution.sum()
    return (time.perf_counter() - start) / rounds


def best_of(repeats: int, work: object) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--hypotheses", type=int, default=40)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    H, y = make_pool(args.samples, args.hypotheses, args.classes)
    floor_array = H.astype(np.float32)
    rounds = args.rounds

    def reductions() -> None:
        for _ in range(rounds):
            floor_array.sum()

    model = AdaBoostM2(n_rounds=rounds)

    def fit() -> None:
        model.fit(H, y)

    fit()  # warm-up (page faults, BLAS threads)
    assert model.n_rounds_ == rounds, f"only {model.n_rounds_} rounds ran ({model.stop_reason_})"
    floor_seconds = best_of(args.repeats, reductions)
    fit_seconds = best_of(args.repeats, fit)

    naive = naive_round_seconds(H, y)

    tracemalloc.start()
    model.fit(H, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"m={args.samples} B={args.hypotheses} K={args.classes} T={rounds}")
    print(f"input H: {H.nbytes / 2**20:.0f} MiB ({H.dtype})")
    per_round = 1e3 / rounds
    print(
        f"fit:                       {fit_seconds:8.3f} s  ({fit_seconds * per_round:.2f} ms/round)"
    )
    print(
        f"T reductions (float32 H):  {floor_seconds:8.3f} s  "
        f"({floor_seconds * per_round:.2f} ms/round)"
    )
    print(f"ratio fit / floor:         {fit_seconds / floor_seconds:8.2f}   (aim <= 1.5)")
    print(
        f"naive einsum-per-round:    {naive * 1e3:8.2f} ms/round  "
        f"(ratio {naive * rounds / floor_seconds:.1f}, from 5 rounds)"
    )
    print(
        f"peak extra memory of fit:  {peak / 2**20:8.0f} MiB  (= {peak / H.nbytes:.2f} x input H)"
    )


if __name__ == "__main__":
    main()
