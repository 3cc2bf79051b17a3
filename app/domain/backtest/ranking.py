"""The single bookmakers of a fold, chosen on the training seasons alone: which are scored
on their own ("compared"), and the ranking of candidates for "the best"."""

from __future__ import annotations

from collections import Counter

import numpy as np
from numpy.typing import NDArray

from app.domain.backtest.seasons import TrainingPlan
from app.domain.training import TrainingSet
from boosting import log_loss


def last_training_season(training: TrainingSet, plan: TrainingPlan) -> NDArray[np.bool_]:
    """The training matches of each competition's last training season."""
    recent = np.zeros(len(training), dtype=bool)
    for competition, seasons in plan.items():
        recent |= (training.competition == competition) & (training.season == seasons[-1])
    return recent


def rank_on_training(
    training: TrainingSet, recent: NDArray[np.bool_], share: float
) -> tuple[str, ...]:
    """Candidates for best single bookmaker, best first: the pool bookmakers that quoted
    ``share`` of the last training season (likely to go on quoting), ranked by log loss on
    the training matches every one of them quoted."""
    quoted = ~np.isnan(training.H[:, :, 0])
    if not recent.any() or not quoted.any():
        raise ValueError("no training match was quoted by the pool")
    recent_share = quoted[recent].mean(axis=0)
    candidates = np.flatnonzero(recent_share >= min(share, float(recent_share.max())))
    common = quoted[:, candidates].all(axis=1)
    if not common.any():
        raise ValueError("no training match was quoted by every candidate for best bookmaker")
    losses = [log_loss(training.y[common], training.H[common, column, :]) for column in candidates]
    order = np.argsort(losses, kind="stable")
    return tuple(training.bookmakers[int(candidates[i])] for i in order)


def compared_bookmakers(
    test: TrainingSet, pool: tuple[str, ...], best: str, share: float
) -> tuple[tuple[str, ...], list[str]]:
    """The pool bookmakers that quoted ``share`` of the test matches, scored on their own,
    and a note for every other one."""
    quoted_share = (~np.isnan(test.H[:, :, 0])).mean(axis=0) if len(test) else np.zeros(len(pool))
    compared = tuple(
        code for code, quoted in zip(pool, quoted_share, strict=True) if quoted >= share
    )
    notes = [
        _not_compared_note(code, quoted, best)
        for code, quoted in zip(pool, quoted_share, strict=True)
        if quoted < share
    ]
    return compared, notes


def _not_compared_note(code: str, share: float, best: str) -> str:
    if code == best:
        return (
            f"{code}, the best bookmaker on the training seasons, quoted "
            f"{share:.0%} of the test matches: where it did not, the next best on the "
            "training seasons that did stands in"
        )
    if share == 0:
        return f"{code} quoted none of the test matches"
    return (
        f"{code} quoted only {share:.0%} of the test matches: in the ensemble and the "
        "consensus, not scored on its own"
    )


def best_forecast(
    rows: TrainingSet, pool: tuple[str, ...], ranking: tuple[str, ...]
) -> tuple[NDArray[np.float64], Counter[str]]:
    """Per match, the best-ranked candidate that quoted it (no look at the test outcomes),
    and how many matches each candidate forecast."""
    ranked = np.asarray([pool.index(code) for code in ranking])
    first_quoted = np.argmax(~np.isnan(rows.H[:, ranked, 0]), axis=1)
    best_columns = ranked[first_quoted]
    used = Counter(pool[column] for column in best_columns.tolist())
    return rows.H[np.arange(len(rows)), best_columns, :], used
