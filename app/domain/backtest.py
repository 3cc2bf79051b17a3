"""Walk-forward evaluation by season: fit on the seasons before, score the season itself.

For every test season, the training set is the ``train_seasons`` seasons before it, and
only matches that kicked off before the test season's first match. Everything the model
decides is decided on those matches alone: the pool of bookmakers, the number of rounds
(and method, calibration...), and which single bookmaker counts as "the best". The test
season is then scored on one set of rows shared by every forecast:

* the M2 ensemble (:func:`app.domain.fitting.fit_ensemble`, the refit's own code path);
* the consensus, the plain mean of the de-margined quotes of the pool;
* every single bookmaker of the pool that quoted almost every test match ("compared");
* the best single bookmaker, as chosen on the training seasons;
* base rates, the training seasons' frequencies of 1, X and 2;
* and, on the subset where the files have them, Pinnacle's closing odds (PSCH/PSCD/PSCA):
  a strong reference that saw later information, not a fair competitor for pre-match odds.

The shared rows are the settled test matches that every compared bookmaker quoted before
kickoff; every other test match is counted under the reason it was left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.domain.ensemble import Ensemble
from app.domain.fitting import Fit, FitOptions, fit_ensemble
from app.domain.training import OUTCOMES, MatchTable, QuoteTable, build_training_set
from boosting import log_loss, log_loss_rows, paired_difference

ENSEMBLE = "M2 ensemble"
CONSENSUS = "consensus"
BEST = "best bookmaker"
BASE_RATES = "base rates"
PINNACLE_CLOSING = "Pinnacle closing"
CLOSING_CODE = "PS"


@dataclass(frozen=True)
class BacktestConfig:
    options: FitOptions = field(default_factory=FitOptions)
    train_seasons: int = 3
    test_seasons: tuple[str, ...] | None = None  # None: every season with enough history
    per_competition: bool = False
    # A pool bookmaker is scored on its own only if it quoted this share of the test matches.
    compare_share: float = 0.9


@dataclass
class Fold:
    """One test season: what was fitted, on what, and the forecasts on the shared rows."""

    season: str
    train_seasons: tuple[str, ...]
    train_match_ids: NDArray[np.int64]
    test_match_ids: NDArray[np.int64]  # the shared rows, in order
    train_last_kickoff: float
    test_first_kickoff: float
    y: NDArray[np.intp]
    forecasts: dict[str, NDArray[np.float64]]
    compared: tuple[str, ...]
    best_bookmaker: str
    ensembles: dict[str, Ensemble]  # by competition ("" when one pool for all)
    rounds: dict[str, int]
    training_margins: NDArray[np.float64]
    dropped: dict[str, int]
    closing_rows: NDArray[np.bool_]  # within the shared rows: Pinnacle closing available
    closing: NDArray[np.float64]  # (closing_rows.sum(), 3)
    base_rates: tuple[float, float, float]
    notes: list[str] = field(default_factory=list)


def seasons_of(matches: MatchTable) -> list[str]:
    return sorted({str(season) for season in matches.season if season})


def restrict(
    matches: MatchTable, quotes: QuoteTable, keep: NDArray[np.bool_]
) -> tuple[MatchTable, QuoteTable]:
    """The tables restricted to some matches (and their quotes)."""
    new_index = np.full(len(matches), -1, dtype=np.intp)
    new_index[keep] = np.arange(int(keep.sum()))
    kept_quotes = keep[quotes.match]
    return (
        MatchTable(
            ids=matches.ids[keep],
            kickoff=matches.kickoff[keep],
            result=matches.result[keep],
            competition=matches.competition[keep],
            season=matches.season[keep],
        ),
        QuoteTable(
            match=new_index[quotes.match[kept_quotes]],
            bookmaker=quotes.bookmaker[kept_quotes],
            phase=quotes.phase[kept_quotes],
            captured_at=quotes.captured_at[kept_quotes],
            received_at=quotes.received_at[kept_quotes],
            prices=quotes.prices[kept_quotes],
        ),
    )


def run_backtest(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    *,
    progress: Callable[[str], None] = lambda _season: None,
) -> list[Fold]:
    """Every fold, in season order. Deterministic: the same tables give the same folds."""
    seasons = seasons_of(matches)
    wanted = config.test_seasons or tuple(seasons[config.train_seasons :])
    folds: list[Fold] = []
    for season in wanted:
        if season not in seasons:
            raise ValueError(f"no matches of season {season!r} in the data")
        position = seasons.index(season)
        if position < config.train_seasons:
            raise ValueError(
                f"season {season} has only {position} earlier season(s); "
                f"{config.train_seasons} are needed to train"
            )
        progress(season)
        folds.append(
            _fold(
                matches,
                quotes,
                config,
                season,
                tuple(seasons[position - config.train_seasons : position]),
            )
        )
    return folds


def _fold(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    season: str,
    train_seasons: tuple[str, ...],
) -> Fold:
    in_test = matches.season == season
    test_start = float(matches.kickoff[in_test].min())
    # The no-look-ahead rule: training matches kicked off before the test season began.
    in_train = np.isin(matches.season, train_seasons) & (matches.kickoff < test_start)
    train_matches, train_quotes = restrict(matches, quotes, in_train)
    test_matches, test_quotes = restrict(matches, quotes, in_test)
    options = config.options

    competitions = (
        sorted(set(train_matches.competition.tolist())) if config.per_competition else [""]
    )
    fits: dict[str, Fit] = {}
    for competition in competitions:
        keep = (
            train_matches.competition == competition
            if competition
            else np.ones(len(train_matches), bool)
        )
        part_matches, part_quotes = restrict(train_matches, train_quotes, keep)
        fits[competition] = fit_ensemble(part_matches, part_quotes, end=test_start, options=options)
    pool = sorted({code for fit in fits.values() for code in fit.ensemble.bookmakers})
    method = next(iter(fits.values())).ensemble.method

    # The test season laid out over the pool, with the method the fit chose.
    # min_quotes=0 keeps every pool column, even for a bookmaker absent from this season.
    test = build_training_set(
        test_matches,
        test_quotes,
        phase=options.phase,
        method=method,
        bookmakers=tuple(pool),
        min_quotes=0,
    )
    dropped: Counter[str] = Counter(test.dropped)
    quoted_share = (~np.isnan(test.H[:, :, 0])).mean(axis=0) if len(test) else np.zeros(len(pool))
    compared = tuple(
        code
        for code, share in zip(test.bookmakers, quoted_share, strict=True)
        if share >= config.compare_share
    )
    notes = [
        (
            f"{code} quoted none of the test matches"
            if share == 0
            else f"{code} quoted only {share:.0%} of the test matches: used by the ensemble, "
            "not scored on its own"
        )
        for code, share in zip(test.bookmakers, quoted_share, strict=True)
        if share < config.compare_share
    ]
    columns = [test.bookmakers.index(code) for code in compared]
    complete = np.asarray(~np.isnan(test.H[:, columns, 0]).any(axis=1), dtype=bool)
    dropped["a compared bookmaker did not quote it"] = int((~complete).sum())
    rows = test.rows(complete)

    # Forecasts on the shared rows.
    forecasts: dict[str, NDArray[np.float64]] = {}
    ensemble_proba = np.empty((len(rows), len(OUTCOMES)))
    for competition, fit in fits.items():
        mask = rows.competition == competition if competition else np.ones(len(rows), bool)
        if not mask.any():
            continue
        index = [rows.bookmakers.index(code) for code in fit.ensemble.bookmakers]
        H = rows.H[mask][:, index, :]
        present = ~np.isnan(H[:, :, 0]).all(axis=1)
        proba = np.empty((int(mask.sum()), len(OUTCOMES)))
        proba[present] = fit.ensemble.predict_proba(H[present])
        # A match none of this competition's pool quoted: the consensus of the others.
        proba[~present] = np.nanmean(rows.H[mask][~present], axis=1)
        ensemble_proba[mask] = proba
    forecasts[ENSEMBLE] = ensemble_proba
    forecasts[CONSENSUS] = (
        np.nanmean(rows.H[:, columns, :], axis=1) if columns else rows.consensus()
    )
    for code, column in zip(compared, columns, strict=True):
        forecasts[code] = rows.H[:, column, :]

    # The best single bookmaker, judged on the training seasons only.
    training = (
        next(iter(fits.values())).training
        if not config.per_competition
        else build_training_set(
            train_matches, train_quotes, phase=options.phase, method=method, bookmakers=tuple(pool)
        )
    )
    best = _best_on_training(training.H, training.y, training.bookmakers, compared)
    forecasts[BEST] = forecasts[best]
    counts = np.bincount(training.y, minlength=len(OUTCOMES)).astype(np.float64)
    base_rates = counts / counts.sum()
    forecasts[BASE_RATES] = np.tile(base_rates, (len(rows), 1))

    closing_set = build_training_set(
        test_matches, test_quotes, phase="closing", method=method, bookmakers=(CLOSING_CODE,)
    )
    closing_of = {int(m): closing_set.H[i, 0] for i, m in enumerate(closing_set.match_ids)}
    closing_rows = np.array([int(m) in closing_of for m in rows.match_ids], dtype=bool)
    closing = np.array([closing_of[int(m)] for m in rows.match_ids[closing_rows]]).reshape(-1, 3)

    margins = np.concatenate(
        [fit.model.margins(fit.training.H, fit.training.y) for fit in fits.values()]
    )
    return Fold(
        season=season,
        train_seasons=train_seasons,
        train_match_ids=train_matches.ids,
        test_match_ids=rows.match_ids,
        train_last_kickoff=float(train_matches.kickoff.max()),
        test_first_kickoff=test_start,
        y=rows.y,
        forecasts=forecasts,
        compared=compared,
        best_bookmaker=best,
        ensembles={competition: fit.ensemble for competition, fit in fits.items()},
        rounds={competition: fit.ensemble.rounds for competition, fit in fits.items()},
        training_margins=margins,
        dropped={reason: count for reason, count in dropped.items() if count},
        closing_rows=closing_rows,
        closing=closing,
        base_rates=(float(base_rates[0]), float(base_rates[1]), float(base_rates[2])),
        notes=notes,
    )


def _best_on_training(
    H: NDArray[np.float64], y: NDArray[np.intp], pool: Sequence[str], candidates: Sequence[str]
) -> str:
    """The candidate with the lowest log loss on the training matches it quoted."""
    scored = []
    for code in candidates:
        column = list(pool).index(code)
        quoted = ~np.isnan(H[:, column, 0])
        scored.append((log_loss(y[quoted], H[quoted, column, :]), code))
    if not scored:
        raise ValueError("no bookmaker is compared in this season")
    return min(scored)[1]


# --- scores ---------------------------------------------------------------------------------


def score_table(
    y: NDArray[np.intp], forecasts: dict[str, NDArray[np.float64]]
) -> dict[str, dict[str, float]]:
    from app.domain.ensemble import scores

    return {name: {**scores(y, proba), "rows": float(len(y))} for name, proba in forecasts.items()}


def paired(y: NDArray[np.intp], a: NDArray[np.float64], b: NDArray[np.float64]) -> dict[str, float]:
    """Log loss of a minus b on the same rows: mean, standard error, two-sided p-value."""
    difference = paired_difference(log_loss_rows(y, a), log_loss_rows(y, b))
    return {
        "mean": difference.mean,
        "standard_error": difference.standard_error,
        "p_value": difference.p_value,
        "rows": float(difference.n),
    }


def overall(folds: Sequence[Fold]) -> tuple[NDArray[np.intp], dict[str, NDArray[np.float64]]]:
    """All folds' shared rows together, for the forecasts every fold has."""
    names = [name for name in folds[0].forecasts if all(name in fold.forecasts for fold in folds)]
    y = np.concatenate([fold.y for fold in folds])
    return y, {name: np.concatenate([fold.forecasts[name] for fold in folds]) for name in names}


def summarise(folds: Sequence[Fold]) -> dict[str, Any]:
    """Every figure of the evaluation as plain data (the JSON report)."""
    seasons = []
    for fold in folds:
        closing = {name: fold.forecasts[name][fold.closing_rows] for name in (ENSEMBLE, CONSENSUS)}
        closing[PINNACLE_CLOSING] = fold.closing
        seasons.append(
            {
                "season": fold.season,
                "train_seasons": list(fold.train_seasons),
                "train_matches": len(fold.train_match_ids),
                "rows": len(fold.y),
                "dropped": fold.dropped,
                "notes": fold.notes,
                "compared": list(fold.compared),
                "best_bookmaker": fold.best_bookmaker,
                "base_rates": list(fold.base_rates),
                "rounds": fold.rounds,
                "methods": {c: str(e.method) for c, e in fold.ensembles.items()},
                "calibration": {c: e.calibration for c, e in fold.ensembles.items()},
                "weights": {
                    competition: dict(zip(e.bookmakers, e.weights.tolist(), strict=True))
                    for competition, e in fold.ensembles.items()
                },
                "scores": score_table(fold.y, fold.forecasts),
                "ensemble_vs_consensus": paired(
                    fold.y, fold.forecasts[ENSEMBLE], fold.forecasts[CONSENSUS]
                ),
                "ensemble_vs_best": paired(fold.y, fold.forecasts[ENSEMBLE], fold.forecasts[BEST]),
                "closing": {
                    "rows": int(fold.closing_rows.sum()),
                    "scores": score_table(fold.y[fold.closing_rows], closing)
                    if fold.closing_rows.any()
                    else {},
                },
            }
        )
    y, forecasts = overall(folds)
    closing_y = np.concatenate([fold.y[fold.closing_rows] for fold in folds])
    closing_forecasts = {
        name: np.concatenate([fold.forecasts[name][fold.closing_rows] for fold in folds])
        for name in (ENSEMBLE, CONSENSUS)
    }
    closing_forecasts[PINNACLE_CLOSING] = np.concatenate([fold.closing for fold in folds])
    return {
        "seasons": seasons,
        "overall": {
            "rows": len(y),
            "scores": score_table(y, forecasts),
            "ensemble_vs_consensus": paired(y, forecasts[ENSEMBLE], forecasts[CONSENSUS]),
            "ensemble_vs_best": paired(y, forecasts[ENSEMBLE], forecasts[BEST]),
            "closing": {
                "rows": len(closing_y),
                "scores": score_table(closing_y, closing_forecasts) if len(closing_y) else {},
            },
        },
    }


def reliability(
    y: NDArray[np.intp], proba: NDArray[np.float64], bins: int = 10
) -> list[dict[str, list[float]]]:
    """Per outcome: mean predicted probability and observed frequency in equal-width bins."""
    curves = []
    for outcome in range(len(OUTCOMES)):
        predicted = proba[:, outcome]
        observed = (y == outcome).astype(np.float64)
        index = np.minimum((predicted * bins).astype(int), bins - 1)
        counts = np.bincount(index, minlength=bins)
        filled = counts > 0
        mean_predicted = (
            np.bincount(index, weights=predicted, minlength=bins)[filled] / counts[filled]
        )
        frequency = np.bincount(index, weights=observed, minlength=bins)[filled] / counts[filled]
        curves.append(
            {
                "predicted": mean_predicted.tolist(),
                "observed": frequency.tolist(),
                "count": counts[filled].astype(float).tolist(),
            }
        )
    return curves


def with_options(config: BacktestConfig, **changes: Any) -> BacktestConfig:
    """The same backtest with some fitting options changed (for comparing variants)."""
    per_competition = changes.pop("per_competition", config.per_competition)
    return replace(
        config, options=replace(config.options, **changes), per_competition=per_competition
    )
