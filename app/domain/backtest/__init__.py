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

The parts: :mod:`~app.domain.backtest.config` (what a run does, and its variants),
:mod:`~app.domain.backtest.seasons` (which seasons are tested and what each trains on),
:mod:`~app.domain.backtest.folds` (a season's fits and forecasts),
:mod:`~app.domain.backtest.ranking` (the single bookmakers compared, and the best one),
:mod:`~app.domain.backtest.algorithms` (the other boosting algorithms compared with M2),
:mod:`~app.domain.backtest.prices` (the test matches' prices, read from the quote table) and
:mod:`~app.domain.backtest.value_bets` (the value bets each probability source would make).
"""

from app.domain.backtest.algorithms import OTHER_ALGORITHMS
from app.domain.backtest.config import VARIANTS, BacktestConfig, Variant
from app.domain.backtest.folds import (
    BASE_RATES,
    BEST,
    CLOSING_CODE,
    CONSENSUS,
    ENSEMBLE,
    PINNACLE_CLOSING,
    Fold,
    run_backtest,
)

__all__ = [
    "BASE_RATES",
    "BEST",
    "CLOSING_CODE",
    "CONSENSUS",
    "ENSEMBLE",
    "OTHER_ALGORITHMS",
    "PINNACLE_CLOSING",
    "VARIANTS",
    "BacktestConfig",
    "Fold",
    "Variant",
    "run_backtest",
]
