"""Walk-forward evaluation by season: fit on the seasons before, score the season itself.

For every test season, each competition trains on its own ``train_seasons`` latest seasons
before it (a competition with fewer is not tested), and only on matches that kicked off
before the test season's first match. Everything the model decides is decided on those
matches alone: the pool of bookmakers, the number of rounds (and method, calibration...),
and which single bookmaker counts as "the best". The test season is then scored on one set
of rows shared by every forecast:

* the M2 ensemble (:func:`app.domain.fitting.fit_ensemble`, the refit's own code path);
* the consensus, the plain mean of the de-margined quotes of every pool bookmaker present;
* every pool bookmaker that quoted almost every test match ("compared"), one by one;
* the best single bookmaker: the pool bookmakers that quoted almost all of the last
  training season, ranked by training log loss; each test match gets the best-ranked one
  that quoted it (usually the first, "the best"; another only where the first is missing);
* base rates, the training seasons' frequencies of 1, X and 2;
* and, on the subset where the files have them, Pinnacle's closing odds (PSCH/PSCD/PSCA):
  a strong reference that saw later information, not a fair competitor for pre-match odds.

The shared rows are the settled test matches that every compared bookmaker and at least
one candidate for best quoted before kickoff; every other match of the season is counted
under the reason it was left out. The references always use the first de-margining method
of the options, so that variants of the ensemble are measured against the same forecasts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.ensemble import Ensemble
from app.domain.fitting import (
    OTHER_ALGORITHMS,
    AlgorithmFit,
    Fit,
    FitError,
    FitOptions,
    fit_algorithm,
    fit_ensemble,
    methods_to_try,
)
from app.domain.records import OUTCOMES
from app.domain.tables import MatchTable, QuoteTable, restrict
from app.domain.training import TrainingSet, build_training_set
from app.domain.vocabulary import Method, Phase
from boosting import log_loss

ENSEMBLE = "M2 ensemble"
CONSENSUS = "consensus"
BEST = "best bookmaker"
BASE_RATES = "base rates"
PINNACLE_CLOSING = "Pinnacle closing"
CLOSING_CODE = "PS"


@dataclass(frozen=True)
class BacktestConfig:
    options: FitOptions = field(default_factory=FitOptions)
    train_seasons: int = defaults.TRAIN_SEASONS
    test_seasons: tuple[str, ...] | None = None  # None: every season with enough history
    per_competition: bool = False
    # A pool bookmaker is scored on its own only if it quoted this share of the test matches.
    compare_share: float = 0.9
    # Boosting algorithms other than M2 fitted on the same pools and compared (see
    # app.domain.fitting.OTHER_ALGORITHMS).
    algorithms: tuple[str, ...] = ()


def backtest_config(
    *,
    method: Method,
    choose_method: bool,
    phase: Phase,
    rounds_grid: tuple[int, ...],
    bookmakers: tuple[str, ...] | None,
    min_quotes: int,
    half_life_days: float | None,
    calibrate: bool,
    train_seasons: int,
    test_seasons: tuple[str, ...] | None,
    per_competition: bool,
    compare_algorithms: bool,
) -> BacktestConfig:
    """The walk-forward as ``oddsboost backtest`` states it: one method (or every method,
    that one first), and every other boosting algorithm compared or none."""
    if not rounds_grid or min(rounds_grid) < 1:
        raise ValueError("the rounds grid needs numbers of at least 1")
    return BacktestConfig(
        options=FitOptions(
            rounds_grid=rounds_grid,
            phase=phase,
            methods=methods_to_try(method, choose=choose_method),
            bookmakers=bookmakers,
            min_quotes=min_quotes,
            half_life_days=half_life_days,
            calibrate=calibrate,
        ),
        train_seasons=train_seasons,
        test_seasons=test_seasons,
        per_competition=per_competition,
        algorithms=tuple(OTHER_ALGORITHMS) if compare_algorithms else (),
    )


@dataclass(frozen=True)
class Variant:
    """An option beyond plain M2, compared with the baseline on the same rows."""

    name: str
    half_life_days: float | None = None
    per_competition: bool = False
    choose_method: bool = False  # every method tried, the baseline's first
    calibrate: bool = False

    def applied_to(self, config: BacktestConfig) -> BacktestConfig:
        options = config.options
        if self.half_life_days is not None:
            options = replace(options, half_life_days=self.half_life_days)
        if self.choose_method:
            options = replace(options, methods=methods_to_try(options.methods[0], choose=True))
        if self.calibrate:
            options = replace(options, calibrate=True)
        per_competition = self.per_competition or config.per_competition
        return replace(config, options=options, per_competition=per_competition)

    def changes(self, config: BacktestConfig) -> dict[str, float | bool | list[str]]:
        """What the variant changes in ``config``, as the report lists it."""
        changed: dict[str, float | bool | list[str]] = {}
        if self.half_life_days is not None:
            changed["half_life_days"] = self.half_life_days
        if self.per_competition:
            changed["per_competition"] = True
        if self.choose_method:
            methods = methods_to_try(config.options.methods[0], choose=True)
            changed["methods"] = [str(method) for method in methods]
        if self.calibrate:
            changed["calibrate"] = True
        return changed


# The options beyond plain M2 that ``--compare-variants`` measures, each against the baseline.
VARIANTS = (
    Variant("time decay, half-life 365 days", half_life_days=365.0),
    Variant("time decay, half-life 180 days", half_life_days=180.0),
    Variant("per-competition pools", per_competition=True),
    Variant("method chosen by validation", choose_method=True),
    Variant("calibrated (power on the mix)", calibrate=True),
)


@dataclass
class Fold:
    """One test season: what was fitted, on what, and the forecasts on the shared rows."""

    season: str
    train_seasons: dict[str, tuple[str, ...]]  # by competition
    train_match_ids: NDArray[np.int64]
    test_match_ids: NDArray[np.int64]  # the shared rows, in order
    train_last_kickoff: float
    test_first_kickoff: float
    y: NDArray[np.intp]
    forecasts: dict[str, NDArray[np.float64]]
    compared: tuple[str, ...]
    best_bookmaker: str  # the first of the training ranking
    best_used: dict[str, int]  # rows forecast by each candidate (stand-ins when it is absent)
    ensembles: dict[str, Ensemble]  # by competition ("" when one pool for all)
    rounds: dict[str, int]
    training_margins: NDArray[np.float64]
    dropped: dict[str, int]
    closing_rows: NDArray[np.bool_]  # within the shared rows: Pinnacle closing available
    closing: NDArray[np.float64]  # (closing_rows.sum(), 3)
    base_rates: tuple[float, float, float]
    notes: list[str] = field(default_factory=list)
    algorithm_rounds: dict[str, dict[str, int]] = field(default_factory=dict)


def seasons_of(matches: MatchTable) -> list[str]:
    return sorted({str(season) for season in matches.season if season})


def training_plan(
    matches: MatchTable, season: str, count: int
) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """Per competition playing ``season``: its own ``count`` latest seasons before it.

    Competitions with fewer earlier seasons are not tested; a competition missing a season
    of the data trains across the gap. Both are said in the notes."""
    every_season = seasons_of(matches)
    plan: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for competition in sorted(set(matches.competition[matches.season == season].tolist())):
        own = sorted(
            {
                str(s)
                for s in matches.season[matches.competition == competition].tolist()
                if s and s < season
            }
        )
        if len(own) < count:
            notes.append(
                f"{competition} is not tested: {len(own)} earlier season(s) in the data, "
                f"{count} needed"
            )
            continue
        chosen = tuple(own[-count:])
        gaps = [s for s in every_season if chosen[0] < s < season and s not in chosen]
        if gaps:
            notes.append(
                f"{competition} has no {', '.join(gaps)} in the data: "
                f"trained on {', '.join(chosen)}"
            )
        plan[competition] = chosen
    return plan, notes


def run_backtest(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    *,
    progress: Callable[[str], None] = lambda _season: None,
) -> list[Fold]:
    """Every fold, in season order. Deterministic: the same tables give the same folds."""
    seasons = seasons_of(matches)
    if not seasons:
        raise ValueError("there are no matches to evaluate")
    count = config.train_seasons
    plans = {season: training_plan(matches, season, count) for season in seasons}
    if config.test_seasons is None:
        wanted = tuple(season for season in seasons if plans[season][0])
        if not wanted:
            raise ValueError(
                f"no season can be tested: none has a competition with {count} earlier "
                f"season(s) in the data ({len(seasons)} season(s) given)"
            )
    else:
        wanted = config.test_seasons
    folds: list[Fold] = []
    for season in wanted:
        if season not in seasons:
            raise ValueError(f"no matches of season {season!r} in the data")
        plan, notes = plans[season]
        if not plan:
            raise ValueError(
                f"season {season} cannot be tested: its competitions have fewer earlier "
                f"seasons than the {count} needed to train"
            )
        progress(season)
        folds.append(_fold(matches, quotes, config, season, plan, notes))
    return folds


@dataclass(frozen=True)
class _Split:
    """A fold's training and test tables, and when its test season began."""

    train_matches: MatchTable
    train_quotes: QuoteTable
    test_matches: MatchTable
    test_quotes: QuoteTable
    test_start: float
    untested: int  # matches of the season whose competition has too few earlier seasons


def _split(
    matches: MatchTable, quotes: QuoteTable, season: str, plan: dict[str, tuple[str, ...]]
) -> _Split:
    of_season = matches.season == season
    in_test = of_season & np.isin(matches.competition, list(plan))
    test_start = float(matches.kickoff[in_test].min())
    in_train = np.zeros(len(matches), dtype=bool)
    for competition, seasons in plan.items():
        in_train |= (matches.competition == competition) & np.isin(matches.season, seasons)
    # The no-look-ahead rule: training matches kicked off before the test season began.
    in_train &= matches.kickoff < test_start
    train_matches, train_quotes = restrict(matches, quotes, in_train)
    test_matches, test_quotes = restrict(matches, quotes, in_test)
    return _Split(
        train_matches,
        train_quotes,
        test_matches,
        test_quotes,
        test_start,
        untested=int((of_season & ~in_test).sum()),
    )


def _fit_groups(split: _Split, config: BacktestConfig) -> dict[str, Fit]:
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


class _Layouts:
    """The training and test tables laid out over the whole pool, once per method.

    min_quotes=0 keeps every pool column, even for a bookmaker absent from a season.
    """

    def __init__(self, split: _Split, pool: tuple[str, ...], phase: Phase) -> None:
        self.split, self.pool, self.phase = split, pool, phase
        self._laid_out: dict[Method, tuple[TrainingSet, TrainingSet]] = {}

    def __call__(self, method: Method) -> tuple[TrainingSet, TrainingSet]:
        if method not in self._laid_out:
            split = self.split
            self._laid_out[method] = (
                self._lay_out(split.train_matches, split.train_quotes, method),
                self._lay_out(split.test_matches, split.test_quotes, method),
            )
        return self._laid_out[method]

    def _lay_out(self, matches: MatchTable, quotes: QuoteTable, method: Method) -> TrainingSet:
        return build_training_set(
            matches, quotes, phase=self.phase, method=method, bookmakers=self.pool, min_quotes=0
        )


def _fold(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    season: str,
    plan: dict[str, tuple[str, ...]],
    notes: list[str],
) -> Fold:
    split = _split(matches, quotes, season, plan)
    fits = _fit_groups(split, config)
    pool = tuple(sorted({code for fit in fits.values() for code in fit.ensemble.bookmakers}))
    layouts = _Layouts(split, pool, config.options.phase)
    # The single bookmakers, the consensus and the base rates always use the first method,
    # whatever the fits chose, so that variants are compared with the same references.
    reference_method = config.options.methods[0]
    training, test = layouts(reference_method)
    recent = _last_training_season(training, plan)
    ranking = _rank_on_training(training, recent, config.compare_share)
    compared, compare_notes = _compared(test, pool, ranking[0], config.compare_share)
    dropped: Counter[str] = Counter()
    dropped["its competition has too few earlier seasons"] = split.untested
    dropped.update(test.dropped)
    rows = _shared_rows(test, pool, compared, ranking, dropped)
    forecasts, algorithm_rounds, algorithm_notes = _forecasts(
        rows, fits, layouts, config, split.test_start
    )
    forecasts.update({code: rows.H[:, pool.index(code), :] for code in compared})
    forecasts[BEST], best_used = _best_forecast(rows, pool, ranking)
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
        train_last_kickoff=float(split.train_matches.kickoff.max()),
        test_first_kickoff=split.test_start,
        y=rows.y,
        forecasts=forecasts,
        compared=compared,
        best_bookmaker=ranking[0],
        best_used={code: best_used[code] for code in ranking if best_used[code]},
        ensembles={competition: fit.ensemble for competition, fit in fits.items()},
        rounds={competition: fit.ensemble.rounds for competition, fit in fits.items()},
        training_margins=margins,
        dropped={reason: count for reason, count in dropped.items() if count},
        closing_rows=closing_rows,
        closing=closing,
        base_rates=(float(base_rates[0]), float(base_rates[1]), float(base_rates[2])),
        notes=[*notes, *compare_notes, *algorithm_notes],
        algorithm_rounds=algorithm_rounds,
    )


def _last_training_season(
    training: TrainingSet, plan: dict[str, tuple[str, ...]]
) -> NDArray[np.bool_]:
    """The training matches of each competition's last training season."""
    recent = np.zeros(len(training), dtype=bool)
    for competition, seasons in plan.items():
        recent |= (training.competition == competition) & (training.season == seasons[-1])
    return recent


def _compared(
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
    layouts: _Layouts,
    config: BacktestConfig,
    test_start: float,
) -> tuple[dict[str, NDArray[np.float64]], dict[str, dict[str, int]], list[str]]:
    """The ensemble, the consensus and the other algorithms on the shared rows, with the
    algorithms' rounds by competition and a note for each one that could not be fitted."""
    consensus = rows.consensus()
    forecasts = {
        ENSEMBLE: _by_group(rows, fits, layouts, consensus, _predict_ensemble),
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
        forecasts[name] = _by_group(rows, fits, layouts, consensus, partial(_predict_other, others))
        algorithm_rounds[name] = {c: other.model.n_rounds_ for c, other in others.items()}
    return forecasts, algorithm_rounds, notes


def _by_group(
    rows: TrainingSet,
    fits: dict[str, Fit],
    layouts: _Layouts,
    consensus: NDArray[np.float64],
    predict: Callable[[str, Fit, NDArray[np.float64]], NDArray[np.float64]],
) -> NDArray[np.float64]:
    """Each group's model reads the test season laid out with the method it was fitted on;
    a match none of its pool quoted gets the consensus."""
    proba = consensus.copy()
    pool = layouts.pool
    for competition, fit in fits.items():
        group = (
            np.flatnonzero(rows.competition == competition) if competition else np.arange(len(rows))
        )
        layout = layouts(fit.ensemble.method)[1]
        at = _rows_of(layout.match_ids, rows.match_ids[group])
        index = [pool.index(code) for code in fit.training.bookmakers]
        H = layout.H[np.maximum(at, 0)][:, index, :]
        present = (at >= 0) & ~np.isnan(H[:, :, 0]).all(axis=1)
        if present.any():
            proba[group[present]] = predict(competition, fit, H[present])
    return proba


def _predict_ensemble(_competition: str, fit: Fit, H: NDArray[np.float64]) -> NDArray[np.float64]:
    return fit.ensemble.predict_proba(H)


def _predict_other(
    others: dict[str, AlgorithmFit], competition: str, _fit: Fit, H: NDArray[np.float64]
) -> NDArray[np.float64]:
    return others[competition].predict_proba(H)


def _best_forecast(
    rows: TrainingSet, pool: tuple[str, ...], ranking: tuple[str, ...]
) -> tuple[NDArray[np.float64], Counter[str]]:
    """Per match, the best-ranked candidate that quoted it (no look at the test outcomes),
    and how many matches each candidate forecast."""
    ranked = np.asarray([pool.index(code) for code in ranking])
    first_quoted = np.argmax(~np.isnan(rows.H[:, ranked, 0]), axis=1)
    best_columns = ranked[first_quoted]
    used = Counter(pool[column] for column in best_columns.tolist())
    return rows.H[np.arange(len(rows)), best_columns, :], used


def _closing(
    split: _Split, rows: TrainingSet, method: Method
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
    at = _rows_of(closing_set.match_ids, rows.match_ids)
    closing_rows = at >= 0
    return closing_rows, closing_set.H[at[closing_rows], 0]


def _rows_of(ids: NDArray[np.int64], wanted: NDArray[np.int64]) -> NDArray[np.intp]:
    """The position of each wanted id in ``ids``, -1 where it is absent."""
    if len(ids) == 0:
        return np.full(len(wanted), -1, dtype=np.intp)
    order = np.argsort(ids, kind="stable")
    slot = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    found = ids[order][slot] == wanted
    return np.where(found, order[slot], -1).astype(np.intp)


def _rank_on_training(
    training: TrainingSet, recent: NDArray[np.bool_], share: float
) -> tuple[str, ...]:
    """Candidates for best single bookmaker, best first, chosen without the test season.

    Candidates are the pool bookmakers that quoted ``share`` of the last training season
    (those most likely to go on quoting); they are ranked by log loss on the training
    matches every candidate quoted."""
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
