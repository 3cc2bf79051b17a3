"""The folds of a walk-forward backtest: each test season's fits and forecasts, and the
single bookmakers chosen on its training seasons alone (those scored on their own, the
"compared", and the ranking of candidates for "the best")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.backtest.algorithms import AlgorithmFit, fit_algorithm
from app.domain.backtest.config import BacktestConfig
from app.domain.backtest.seasons import Split, TrainingPlan, seasons_to_test, split_season
from app.domain.ensemble import Ensemble
from app.domain.fitting import Fit, FitError, fit_ensemble
from app.domain.records import OUTCOMES
from app.domain.tables import MatchTable, QuoteTable, positions_of, restrict
from app.domain.training import TrainingSet, build_training_set
from app.domain.vocabulary import Method, Phase
from boosting import log_loss

# The forecasts of a fold, by name; each compared bookmaker is one too, under its code.
ENSEMBLE = "M2 ensemble"
CONSENSUS = "consensus"
BEST = "best bookmaker"
BASE_RATES = "base rates"
PINNACLE_CLOSING = "Pinnacle closing"
# The bookmaker whose closing odds are the Pinnacle closing reference.
CLOSING_CODE = defaults.CLOSING_BOOKMAKER


@dataclass
class Fold:
    """One test season: what was fitted, on what, and the forecasts on the shared rows."""

    season: str
    train_seasons: TrainingPlan
    train_match_ids: NDArray[np.int64]
    test_match_ids: NDArray[np.int64]  # the shared rows, in order
    test_first_kickoff: float
    y: NDArray[np.intp]
    forecasts: dict[str, NDArray[np.float64]]
    compared: tuple[str, ...]
    best_bookmaker: str  # the first of the training ranking
    best_used: dict[str, int]  # rows forecast by each candidate (stand-ins when it is absent)
    ensembles: dict[str, Ensemble]  # by competition ("" when one pool for all)
    training_margins: NDArray[np.float64]
    dropped: dict[str, int]
    closing_rows: NDArray[np.bool_]  # within the shared rows: Pinnacle closing available
    closing: NDArray[np.float64]  # (closing_rows.sum(), 3)
    base_rates: tuple[float, float, float]
    notes: list[str] = field(default_factory=list)
    algorithm_rounds: dict[str, dict[str, int]] = field(default_factory=dict)


def run_backtest(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    *,
    progress: Callable[[str], None] = lambda _season: None,
) -> list[Fold]:
    """Every fold, in season order. Deterministic: the same tables give the same folds."""
    folds: list[Fold] = []
    for season, plan, notes in seasons_to_test(matches, config.train_seasons, config.test_seasons):
        progress(season)
        folds.append(_fold(matches, quotes, config, season, plan, notes))
    return folds


def _fit_groups(split: Split, config: BacktestConfig) -> dict[str, Fit]:
    """One fit per competition, or one for all under ``""``."""
    matches, quotes = split.train_matches, split.train_quotes
    if not config.per_competition:
        return {"": fit_ensemble(matches, quotes, end=split.test_start, options=config.options)}
    fits: dict[str, Fit] = {}
    for competition in sorted(set(matches.competition.tolist())):
        part_matches, part_quotes = restrict(matches, quotes, matches.competition == competition)
        fits[competition] = fit_ensemble(
            part_matches, part_quotes, end=split.test_start, options=config.options
        )
    return fits


Layouts = Callable[[Method], tuple[TrainingSet, TrainingSet]]


def _layouts(split: Split, pool: tuple[str, ...], phase: Phase) -> Layouts:
    """The training and test tables laid out over the whole pool, once per method.

    min_quotes=0 keeps every pool column, even for a bookmaker absent from a season.
    """

    def lay_out(matches: MatchTable, quotes: QuoteTable, method: Method) -> TrainingSet:
        return build_training_set(
            matches, quotes, phase=phase, method=method, bookmakers=pool, min_quotes=0
        )

    @cache
    def laid_out(method: Method) -> tuple[TrainingSet, TrainingSet]:
        return (
            lay_out(split.train_matches, split.train_quotes, method),
            lay_out(split.test_matches, split.test_quotes, method),
        )

    return laid_out


def _fold(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    season: str,
    plan: TrainingPlan,
    notes: list[str],
) -> Fold:
    split = split_season(matches, quotes, season, plan)
    fits = _fit_groups(split, config)
    pool = tuple(sorted({code for fit in fits.values() for code in fit.ensemble.bookmakers}))
    layouts = _layouts(split, pool, config.options.phase)
    # The single bookmakers, the consensus and the base rates always use the first method,
    # whatever the fits chose, so that variants are compared with the same references.
    reference_method = config.options.methods[0]
    training, test = layouts(reference_method)
    recent = last_training_season(training, plan)
    ranking = rank_on_training(training, recent, config.compare_share)
    compared, compare_notes = compared_bookmakers(test, pool, ranking[0], config.compare_share)
    dropped: Counter[str] = Counter()
    dropped["its competition has too few earlier seasons"] = split.untested
    dropped.update(test.dropped)
    rows = _shared_rows(test, pool, compared, ranking, dropped)
    forecasts, algorithm_rounds, algorithm_notes = _forecasts(
        rows, fits, pool, layouts, config, split.test_start
    )
    forecasts.update({code: rows.H[:, pool.index(code), :] for code in compared})
    forecasts[BEST], best_used = best_forecast(rows, pool, ranking)
    counts = np.bincount(training.y, minlength=len(OUTCOMES)).astype(np.float64)
    base_rates = counts / counts.sum()
    forecasts[BASE_RATES] = np.tile(base_rates, (len(rows), 1))
    closing_rows, closing = _closing(split, rows, reference_method)
    margins = np.concatenate(
        [fit.model.margins(fit.training.H, fit.training.y) for fit in fits.values()]
    )
    return Fold(
        season=season,
        train_seasons=plan,
        train_match_ids=split.train_matches.ids,
        test_match_ids=rows.match_ids,
        test_first_kickoff=split.test_start,
        y=rows.y,
        forecasts=forecasts,
        compared=compared,
        best_bookmaker=ranking[0],
        best_used={code: best_used[code] for code in ranking if best_used[code]},
        ensembles={competition: fit.ensemble for competition, fit in fits.items()},
        training_margins=margins,
        dropped={reason: count for reason, count in dropped.items() if count},
        closing_rows=closing_rows,
        closing=closing,
        base_rates=(float(base_rates[0]), float(base_rates[1]), float(base_rates[2])),
        notes=[*notes, *compare_notes, *algorithm_notes],
        algorithm_rounds=algorithm_rounds,
    )


def _shared_rows(
    test: TrainingSet,
    pool: tuple[str, ...],
    compared: tuple[str, ...],
    ranking: tuple[str, ...],
    dropped: Counter[str],
) -> TrainingSet:
    """The test matches every compared bookmaker and at least one candidate for best
    quoted; the others are counted in ``dropped``."""
    quoted = ~np.isnan(test.H[:, :, 0])
    complete = quoted[:, [pool.index(code) for code in compared]].all(axis=1)
    dropped["a compared bookmaker did not quote it"] = int((~complete).sum())
    stand_in = quoted[:, [pool.index(code) for code in ranking]].any(axis=1)
    dropped["no candidate for best bookmaker quoted it"] = int((complete & ~stand_in).sum())
    return test.rows(np.asarray(complete & stand_in, dtype=bool))


def _forecasts(
    rows: TrainingSet,
    fits: dict[str, Fit],
    pool: tuple[str, ...],
    layouts: Layouts,
    config: BacktestConfig,
    test_start: float,
) -> tuple[dict[str, NDArray[np.float64]], dict[str, dict[str, int]], list[str]]:
    """The ensemble, the consensus and the other algorithms on the shared rows, with the
    algorithms' rounds by competition and a note for each one that could not be fitted."""
    consensus = rows.consensus()
    ensembles = {competition: fit.ensemble for competition, fit in fits.items()}
    forecasts = {
        ENSEMBLE: _by_group(rows, fits, pool, layouts, consensus, ensembles),
        CONSENSUS: consensus,
    }
    algorithm_rounds: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    for name in config.algorithms:
        try:
            others = {
                competition: fit_algorithm(name, fit, end=test_start, options=config.options)
                for competition, fit in fits.items()
            }
        except FitError as error:
            notes.append(f"{name} is not compared this season: {error}")
            continue
        forecasts[name] = _by_group(rows, fits, pool, layouts, consensus, others)
        algorithm_rounds[name] = {c: other.model.n_rounds_ for c, other in others.items()}
    return forecasts, algorithm_rounds, notes


def _by_group(
    rows: TrainingSet,
    fits: dict[str, Fit],
    pool: tuple[str, ...],
    layouts: Layouts,
    consensus: NDArray[np.float64],
    models: Mapping[str, Ensemble] | Mapping[str, AlgorithmFit],
) -> NDArray[np.float64]:
    """Each group's model (by competition, as ``fits``) reads the test season laid out with
    the method it was fitted on; a match none of its pool quoted gets the consensus."""
    proba = consensus.copy()
    for competition, fit in fits.items():
        group = (
            np.flatnonzero(rows.competition == competition) if competition else np.arange(len(rows))
        )
        layout = layouts(fit.ensemble.method)[1]
        at = positions_of(layout.match_ids, rows.match_ids[group])
        index = [pool.index(code) for code in fit.training.bookmakers]
        H = layout.H[np.maximum(at, 0)][:, index, :]
        present = (at >= 0) & ~np.isnan(H[:, :, 0]).all(axis=1)
        if present.any():
            proba[group[present]] = models[competition].predict_proba(H[present])
    return proba


def _closing(
    split: Split, rows: TrainingSet, method: Method
) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Which shared rows have Pinnacle's closing odds, and those odds de-margined."""
    closing_set = build_training_set(
        split.test_matches,
        split.test_quotes,
        phase=Phase.CLOSING,
        method=method,
        bookmakers=(CLOSING_CODE,),
    )
    if not closing_set.bookmakers:  # files before 2012/13 have no closing odds
        return np.zeros(len(rows), dtype=bool), np.empty((0, len(OUTCOMES)))
    at = positions_of(closing_set.match_ids, rows.match_ids)
    closing_rows = at >= 0
    return closing_rows, closing_set.H[at[closing_rows], 0]


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
