"""Training sets for boosting, ``H[match, bookmaker, outcome]`` (NaN: no quote), built from
column tables by one code path for the refit and the backtest."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.odds import consensus_of, demargin
from app.domain.records import OUTCOMES
from app.domain.tables import MatchTable, QuoteTable, positions_of
from app.domain.vocabulary import FitTarget, Method, Phase
from app.domain.wording import counted

DAY = 86_400.0


@dataclass(frozen=True)
class TrainingSet:
    """``H`` (m, B, 3) de-margined probabilities (NaN: no quote), ``y`` outcomes (m,);
    ``targets`` (m, 3), when set, what a fit toward the close learns instead of ``y``, and
    ``target_is_close`` (m,) where that is a closing line rather than the result."""

    H: NDArray[np.float64]
    y: NDArray[np.intp]
    bookmakers: tuple[str, ...]
    match_ids: NDArray[np.int64]
    kickoff: NDArray[np.float64]
    competition: NDArray[np.str_]
    season: NDArray[np.str_]
    method: Method
    phase: Phase
    dropped: dict[str, int] = field(default_factory=dict)
    # Bookmakers left out of the pool (of those asked for, or that quoted), and why.
    left_out: dict[str, str] = field(default_factory=dict)
    targets: NDArray[np.float64] | None = None
    target_is_close: NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        return len(self.y)

    @property
    def newest_kickoff(self) -> dt.datetime | None:
        if not len(self.kickoff):
            return None
        return dt.datetime.fromtimestamp(float(self.kickoff.max()), dt.UTC)

    def rows(self, mask: NDArray[np.bool_] | NDArray[np.intp]) -> TrainingSet:
        return replace(
            self,
            H=self.H[mask],
            y=self.y[mask],
            match_ids=self.match_ids[mask],
            kickoff=self.kickoff[mask],
            competition=self.competition[mask],
            season=self.season[mask],
            dropped=dict(self.dropped),
            left_out=dict(self.left_out),
            targets=None if self.targets is None else self.targets[mask],
            target_is_close=None if self.target_is_close is None else self.target_is_close[mask],
        )

    def consensus(self) -> NDArray[np.float64]:
        """Plain mean of the present bookmakers' probabilities, per match."""
        return consensus_of(self.H)


def latest_of_groups(
    group: NDArray[np.intp], captured_at: NDArray[np.float64], received_at: NDArray[np.float64]
) -> NDArray[np.intp]:
    """Position of the most recent quote of each group, by the one rule of recency: capture
    time (credible, NaN older than any), then arrival, then position."""
    dated = ~np.isnan(captured_at)
    order = np.lexsort((received_at, np.where(dated, captured_at, -np.inf), dated, group))
    ordered_group = group[order]
    last_of_group = np.r_[ordered_group[1:] != ordered_group[:-1], True]
    result: NDArray[np.intp] = order[last_of_group]
    return result


def select_latest_valid(
    matches: MatchTable, quotes: QuoteTable, phase: Phase | None
) -> NDArray[np.intp]:
    """Per (match, bookmaker) the latest quote of ``phase`` (None: any) valid before kickoff
    (an undated one is)."""
    captured = quotes.captured_at
    valid = np.isnan(captured) | (captured < matches.kickoff[quotes.match])
    if phase is not None:
        valid &= quotes.phase == phase
    candidates = np.flatnonzero(valid)
    if candidates.size == 0:
        return candidates
    _, bookmaker_codes = np.unique(quotes.bookmaker[candidates], return_inverse=True)
    group = quotes.match[candidates] * (bookmaker_codes.max() + 1) + bookmaker_codes
    latest = latest_of_groups(group, captured[candidates], quotes.received_at[candidates])
    return candidates[latest]


@dataclass(frozen=True, slots=True)
class PoolRule:
    """Who joins the pool, the one rule of the refit and the backtest.

    A bookmaker joins with at least ``min_quotes`` usable quotes in the window and, when
    ``recent_days`` is set, if it is still quoting: in at least one competition, it quoted
    at least ``recent_share`` of the matches of that competition's last ``recent_days``
    days (counted back from the competition's newest match of the window, so that a
    league's summer break looks back to its season's end; matches no bookmaker quoted do
    not count). With tables of one competition, it is judged on that competition alone.
    """

    min_quotes: int = 1
    recent_days: float | None = None
    recent_share: float = defaults.POOL_RECENT_SHARE


def choose_pool(
    matches: MatchTable,
    quotes: QuoteTable,
    chosen: NDArray[np.intp],
    rule: PoolRule,
    bookmakers: Sequence[str] | None = None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The pool among ``bookmakers`` (None: every bookmaker of ``chosen``, in code order),
    from ``chosen``, one usable quote per (settled match, bookmaker); and the bookmakers the
    rule left out, with why."""
    codes, column_of_quote, counts = np.unique(
        quotes.bookmaker[chosen], return_inverse=True, return_counts=True
    )
    code_list: list[str] = codes.tolist()
    candidates = code_list if bookmakers is None else list(bookmakers)
    available = dict(zip(code_list, counts.tolist(), strict=True))
    left_out = {
        code: f"{counted(available.get(code, 0), 'usable quote')} in the window, fewer than "
        f"{rule.min_quotes}"
        for code in candidates
        if available.get(code, 0) < rule.min_quotes
    }
    if rule.recent_days is not None and code_list:
        stopped = _stopped_quoting(
            matches, quotes.match[chosen], column_of_quote, rule.recent_days, rule.recent_share
        )
        for code, reason in zip(code_list, stopped, strict=True):
            if reason and code in candidates:
                left_out.setdefault(code, reason)
    pool = tuple(code for code in candidates if code not in left_out)
    return pool, {code: left_out[code] for code in candidates if code in left_out}


def _stopped_quoting(
    matches: MatchTable,
    quote_match: NDArray[np.intp],
    quote_column: NDArray[np.intp],
    days: float,
    least_share: float,
) -> list[str]:
    """Per bookmaker column of the quotes, why it no longer quotes ("" when it does): in no
    competition did it quote ``least_share`` of the matches of its last ``days`` days."""
    competitions, competition_of_match = np.unique(matches.competition, return_inverse=True)
    quoted = np.zeros(len(matches), dtype=bool)
    quoted[quote_match] = True
    newest = np.full(len(competitions), -np.inf)
    np.maximum.at(newest, competition_of_match[quoted], matches.kickoff[quoted])
    recent = quoted & (matches.kickoff >= (newest - days * DAY)[competition_of_match])
    recent_matches = np.bincount(competition_of_match[recent], minlength=len(competitions))
    in_recent = recent[quote_match]
    recent_quotes = np.zeros((int(quote_column.max()) + 1, len(competitions)), dtype=np.intp)
    np.add.at(
        recent_quotes, (quote_column[in_recent], competition_of_match[quote_match[in_recent]]), 1
    )
    share = recent_quotes / np.maximum(recent_matches, 1)
    best = _best_competition(
        share, quote_column, competition_of_match[quote_match], matches.kickoff[quote_match]
    )
    return [
        ""
        if share[column, competition] >= least_share
        else f"no longer quoting: {recent_quotes[column, competition]} of the "
        f"{counted(int(recent_matches[competition]), 'match')} of the last {days:g} days of "
        f"{competitions[competition]}, its best competition; at least {least_share:.0%} needed"
        for column, competition in enumerate(best.tolist())
    ]


def _best_competition(
    share: NDArray[np.float64],
    quote_column: NDArray[np.intp],
    quote_competition: NDArray[np.intp],
    quote_kickoff: NDArray[np.float64],
) -> NDArray[np.intp]:
    """Per bookmaker column, the competition of highest recent ``share`` among those it
    quoted in the window (ties, e.g. 0 everywhere: the one of its latest quote), so that
    a reason never names a competition the bookmaker did not quote."""
    latest = np.full(share.shape, -np.inf)
    np.maximum.at(latest, (quote_column, quote_competition), quote_kickoff)
    quoted_share = np.where(latest > -np.inf, share, -1.0)
    top = quoted_share == quoted_share.max(axis=1, keepdims=True)
    best: NDArray[np.intp] = np.where(top, latest, -np.inf).argmax(axis=1)
    return best


def build_training_set(
    matches: MatchTable,
    quotes: QuoteTable,
    *,
    phase: Phase = defaults.PHASE,
    method: Method | str = defaults.METHOD,
    bookmakers: Sequence[str] | None = None,
    min_quotes: int = 1,
    recent_days: float | None = None,
    recent_share: float = defaults.POOL_RECENT_SHARE,
) -> TrainingSet:
    """Lay out the chosen quotes of ``matches``. The pool is ``bookmakers`` (else every one
    that quoted) passing the :class:`PoolRule`; the bookmakers it leaves out are listed in
    ``left_out`` and the matches left out are counted in ``dropped``."""
    method = Method(method)
    dropped: Counter[str] = Counter()
    keep_match = matches.settled
    dropped["not settled"] = int((~keep_match).sum())
    chosen = select_latest_valid(matches, quotes, phase)
    chosen = chosen[keep_match[quotes.match[chosen]]]

    rule = PoolRule(min_quotes, recent_days, recent_share)
    pool, left_out = choose_pool(matches, quotes, chosen, rule, bookmakers)
    column = {code: index for index, code in enumerate(pool)}
    in_pool = np.array([code in column for code in quotes.bookmaker[chosen]], dtype=bool)
    chosen = chosen[in_pool]

    converted = demargin(quotes.prices[chosen], method)
    if not converted.converged.all():
        dropped["quotes whose de-margining did not converge"] = int((~converted.converged).sum())
        chosen = chosen[converted.converged]
        probabilities = converted.probabilities[converted.converged]
    else:
        probabilities = converted.probabilities

    has_quote = np.zeros(len(matches), dtype=bool)
    has_quote[quotes.match[chosen]] = True
    no_quote = keep_match & ~has_quote
    dropped[f"no {phase} quote from the pool before kickoff"] = int(no_quote.sum())
    rows = np.flatnonzero(keep_match & has_quote)
    row_of_match = np.full(len(matches), -1, dtype=np.intp)
    row_of_match[rows] = np.arange(len(rows))

    H = np.full((len(rows), len(pool), len(OUTCOMES)), np.nan)
    bookmaker_column = np.array([column[code] for code in quotes.bookmaker[chosen]], dtype=np.intp)
    H[row_of_match[quotes.match[chosen]], bookmaker_column] = probabilities
    return TrainingSet(
        H=H,
        y=matches.result[rows],
        bookmakers=pool,
        match_ids=matches.ids[rows],
        kickoff=matches.kickoff[rows],
        competition=matches.competition[rows],
        season=matches.season[rows],
        method=method,
        phase=phase,
        dropped={reason: count for reason, count in dropped.items() if count},
        left_out=left_out,
    )


def with_fit_targets(
    training: TrainingSet,
    matches: MatchTable,
    quotes: QuoteTable,
    target: FitTarget,
    close_quote: NDArray[np.intp],
) -> TrainingSet:
    """``training`` with the targets a fit toward ``target`` learns, or as it is for results.

    Toward the close, a match's target is its closing line, the quote ``close_quote`` gives
    per match of the tables (-1: none; :func:`app.domain.flags.closing_quotes`, the ledger's
    rule), de-margined with ``defaults.CLOSING_METHOD``; and its result, one-hot, where it
    has no close (or its de-margining does not converge). ``target_is_close`` says which.
    """
    if target == FitTarget.RESULT:
        return training
    targets = np.zeros((len(training), len(OUTCOMES)))
    targets[np.arange(len(training)), training.y] = 1.0
    quote = close_quote[positions_of(matches.ids, training.match_ids)]
    rows = np.flatnonzero(quote >= 0)
    converted = demargin(quotes.prices[quote[rows]], defaults.CLOSING_METHOD)
    rows = rows[converted.converged]
    targets[rows] = converted.probabilities[converted.converged]
    target_is_close = np.zeros(len(training), dtype=bool)
    target_is_close[rows] = True
    return replace(training, targets=targets, target_is_close=target_is_close)
