"""Value bets on a fold's test matches: per source chain (links of the ensemble, the
consensus, or a bookmaker's pre-match line de-margined; the first with a line prices a
match) and threshold, each match's one bet (the outcome of highest EV above the threshold,
at the best price the bettor can take) and what became of it. The chain's fallback
(``first_lines``), the consensus (``consensus_of``), the rule (``choose_outcomes``), the
best price and every formula (EV, CLV, Kelly) are the live service's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.backtest.folds import ENSEMBLE, Fold
from app.domain.backtest.prices import fair_line, quoted_prices
from app.domain.bookmakers import bookmaker_key, commission_code
from app.domain.odds import consensus_of
from app.domain.tables import MatchTable, QuoteTable, positions_of
from app.domain.value import (
    BestPrices,
    best_prices,
    choose_outcomes,
    closing_line_value,
    first_lines,
    kelly_stake,
)
from app.domain.value_sources import CONSENSUS, MODEL_LINKS, chain_links
from app.domain.value_sources import ENSEMBLE as ENSEMBLE_LINK
from app.domain.vocabulary import Method, Phase


@dataclass(frozen=True)
class ValueBetConfig:
    """Which value-bet rules a backtest measures: ``sources`` are chains (normalised, as
    :func:`app.domain.value_sources.normalised_chain` writes them); ``bookmakers`` are those
    whose pre-match prices may be taken; ``reference``'s closing line, de-margined by
    ``method`` (power, as the live CLV's), measures CLV. A bookmaker link's and the
    consensus's lines are de-margined as live: by the method of the model that forecast the
    match (:func:`fitted_methods`)."""

    sources: tuple[str, ...]
    thresholds: tuple[float, ...]  # in increasing order
    reference: str
    bookmakers: tuple[str, ...]
    method: Method = Method.POWER
    kelly_fraction: float = defaults.KELLY_FRACTION
    stake_cap: float = defaults.STAKE_CAP
    # Each exchange's commission on net winnings, by bookmaker key: its prices taken net.
    commissions: tuple[tuple[str, float], ...] = defaults.EXCHANGE_COMMISSION

    def __post_init__(self) -> None:
        for label, names in (
            ("source", self.sources),
            ("threshold", self.thresholds),
            ("bookmaker", self.bookmakers),
        ):
            if not names:
                raise ValueError(f"give at least one value {label}")
            if len(set(names)) != len(names):
                raise ValueError(f"a value {label} is given twice: {', '.join(map(str, names))}")
        if not all(-1.0 < threshold < 1.0 for threshold in self.thresholds):
            raise ValueError("a value threshold is an expected value between -1 and 1, e.g. 0.02")

    def links(self) -> tuple[str, ...]:
        """Every link of the chains, each once, in order of first appearance."""
        return tuple(dict.fromkeys(link for s in self.sources for link in chain_links(s)))

    def bookmaker_sources(self) -> tuple[str, ...]:
        """The bookmakers that are a link of some chain."""
        return tuple(link for link in self.links() if link not in MODEL_LINKS)

    def commission_of_bookmakers(self) -> NDArray[np.float64]:
        """The commission of each price-taking bookmaker, in ``bookmakers``' order."""
        # Keyed as the settings key them, however the config's caller spelled them.
        rate = {
            bookmaker_key(commission_code(code)): commission
            for code, commission in self.commissions
        }
        return np.array([rate.get(bookmaker_key(code), 0.0) for code in self.bookmakers])


@dataclass(frozen=True)
class PricedFold:
    """A fold's test matches (its shared rows, in order) with their prices."""

    season: str
    match_ids: NDArray[np.int64]
    kickoff: NDArray[np.float64]
    y: NDArray[np.intp]
    best: BestPrices  # over the price-taking bookmakers, net of commission
    bookmakers: tuple[str, ...]  # the columns of ``best.bookmaker``
    closing: NDArray[np.float64]  # (m, 3) the reference's closing line; NaN rows: none
    probabilities: dict[str, NDArray[np.float64]] = field(default_factory=dict)  # by source


def priced_fold(
    fold: Fold, matches: MatchTable, quotes: QuoteTable, config: ValueBetConfig
) -> PricedFold:
    ids = fold.test_match_ids
    takers = quoted_prices(matches, quotes, ids, config.bookmakers, Phase.PRE)
    closing = quoted_prices(matches, quotes, ids, (config.reference,), Phase.CLOSING)[:, 0]
    lines = _link_lines(fold, matches, quotes, config)
    probabilities = {
        source: first_lines([lines[link] for link in chain_links(source)]).probabilities
        for source in config.sources
    }
    return PricedFold(
        season=fold.season,
        match_ids=ids,
        kickoff=matches.kickoff[positions_of(matches.ids, ids)],
        y=fold.y,
        best=best_prices(takers, config.commission_of_bookmakers()),
        bookmakers=config.bookmakers,
        closing=fair_line(closing, config.method),
        probabilities=probabilities,
    )


def _link_lines(
    fold: Fold, matches: MatchTable, quotes: QuoteTable, config: ValueBetConfig
) -> dict[str, NDArray[np.float64]]:
    """Each link's line on the fold's test matches, as live: the served forecast, the
    consensus of every bookmaker's pre-match line, or one bookmaker's (NaN rows: none)."""
    ids, links = fold.test_match_ids, config.links()
    every_bookmaker = tuple(np.unique(quotes.bookmaker).tolist()) if CONSENSUS in links else ()
    wanted = tuple(dict.fromkeys((*config.bookmaker_sources(), *every_bookmaker)))
    prices = quoted_prices(matches, quotes, ids, wanted, Phase.PRE)
    fair = np.full((len(ids), len(wanted), 3), np.nan)
    for method, rows in fitted_methods(fold, matches).items():
        for column in range(len(wanted)):
            fair[rows, column] = fair_line(prices[rows, column], method)
    lines = {code: fair[:, column] for column, code in enumerate(wanted)}
    lines[ENSEMBLE_LINK] = fold.forecasts[ENSEMBLE]
    if CONSENSUS in links:
        lines[CONSENSUS] = consensus_of(fair[:, [wanted.index(c) for c in every_bookmaker]])
    return {link: lines[link] for link in links}


def fitted_methods(fold: Fold, matches: MatchTable) -> dict[Method, NDArray[np.bool_]]:
    """The test rows of ``fold`` each de-margining method reads: the method the model that
    forecast the row's match was fitted with (its competition's, with per-competition
    pools), as live the active model's method de-margines a link's line. Rows no model
    forecast (a fold without one) are read by the default method, as live without a model."""
    ids = fold.test_match_ids
    competition = matches.competition[positions_of(matches.ids, ids)]
    rows = {defaults.METHOD: np.ones(len(ids), dtype=np.bool_)}
    for code, ensemble in fold.ensembles.items():
        served = np.ones(len(ids), dtype=np.bool_) if code == "" else competition == code
        rows = {method: taken & ~served for method, taken in rows.items()}
        rows[ensemble.method] = rows.get(ensemble.method, np.zeros(len(ids), np.bool_)) | served
    return {method: taken for method, taken in rows.items() if taken.any()}


@dataclass(frozen=True)
class Bets:
    """Bets in kickoff order, one per match at most; ``clv`` NaN without a closing line."""

    match_id: NDArray[np.int64]
    kickoff: NDArray[np.float64]
    outcome: NDArray[np.intp]
    price: NDArray[np.float64]  # net of an exchange's commission: what the bet pays
    bookmaker: NDArray[np.str_]
    claimed_ev: NDArray[np.float64]
    clv: NDArray[np.float64]
    won: NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.price)

    @property
    def returns(self) -> NDArray[np.float64]:
        result: NDArray[np.float64] = np.where(self.won, self.price - 1.0, -1.0)
        return result

    @property
    def has_closing(self) -> NDArray[np.bool_]:
        result: NDArray[np.bool_] = ~np.isnan(self.clv)
        return result


def bets_of(priced: PricedFold, source: str, threshold: float) -> Bets:
    decision = choose_outcomes(priced.probabilities[source], priced.best.price, threshold)
    rows = np.flatnonzero(decision.placed)
    chosen = decision.outcome[rows]
    price = priced.best.price[rows, chosen]
    column = priced.best.bookmaker[rows, chosen]
    return Bets(
        match_id=priced.match_ids[rows],
        kickoff=priced.kickoff[rows],
        outcome=chosen,
        price=price,
        bookmaker=np.array(priced.bookmakers, dtype=str)[column].reshape(-1),
        claimed_ev=decision.expected_value[rows, chosen],
        clv=closing_line_value(price, priced.closing[rows, chosen]),
        won=priced.y[rows] == chosen,
    )


def joined(bets: Sequence[Bets]) -> Bets:
    """Several folds' bets as one run, in kickoff order."""
    order = np.argsort(np.concatenate([b.kickoff for b in bets]), kind="stable")
    return Bets(
        **{f.name: np.concatenate([getattr(b, f.name) for b in bets])[order] for f in fields(Bets)}
    )


def bankroll_curve(bets: Bets, fraction: float, cap: float) -> NDArray[np.float64]:
    """The bankroll (from 1) after each kickoff time of ``bets``, each staked a Kelly share.
    Bets sharing a kickoff time are staked from the same bankroll, as placed together."""
    if not len(bets):
        return np.empty(0)
    stake = kelly_stake(bets.claimed_ev, bets.price, fraction, cap)
    order = np.argsort(bets.kickoff, kind="stable")
    kickoff = bets.kickoff[order]
    starts = np.flatnonzero(np.r_[True, kickoff[1:] != kickoff[:-1]])
    change = np.add.reduceat((stake * bets.returns)[order], starts)
    return np.asarray(np.cumprod(1.0 + change), dtype=np.float64)


def max_drawdown(curve: NDArray[np.float64]) -> float:
    """The largest fall from a peak (the start, 1, included) to a later trough, as a share."""
    path = np.r_[1.0, curve]
    return float((1.0 - path / np.maximum.accumulate(path)).max())


def every_outcome_returns(priced: PricedFold) -> NDArray[np.float64]:
    """Per match priced on all three outcomes, the mean net return of a stake on each at the
    best price: the market's margin, paid by a bettor without a view."""
    price = priced.best.price
    priced_rows = ~np.isnan(price).any(axis=1)
    won = priced.y[priced_rows, None] == np.arange(price.shape[1])
    returns: NDArray[np.float64] = np.where(won, price[priced_rows] - 1.0, -1.0).mean(axis=1)
    return returns
