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
from app.domain.tables import MatchTable, QuoteTable
from app.domain.vocabulary import Method, Phase


@dataclass(frozen=True)
class TrainingSet:
    """``H`` (m, B, 3) de-margined probabilities (NaN: no quote), ``y`` outcomes (m,)."""

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


def build_training_set(
    matches: MatchTable,
    quotes: QuoteTable,
    *,
    phase: Phase = defaults.PHASE,
    method: Method | str = defaults.METHOD,
    bookmakers: Sequence[str] | None = None,
    min_quotes: int = 1,
) -> TrainingSet:
    """Lay out the chosen quotes of ``matches``. The pool is ``bookmakers``, else those
    with ``min_quotes`` usable quotes; matches left out are counted in ``dropped``."""
    method = Method(method)
    dropped: Counter[str] = Counter()
    keep_match = matches.settled
    dropped["not settled"] = int((~keep_match).sum())
    chosen = select_latest_valid(matches, quotes, phase)
    chosen = chosen[keep_match[quotes.match[chosen]]]

    codes, counts = np.unique(quotes.bookmaker[chosen], return_counts=True)
    if bookmakers is None:
        pool = tuple(str(c) for c, n in zip(codes, counts, strict=True) if n >= min_quotes)
    else:
        available = dict(zip(codes.tolist(), counts.tolist(), strict=True))
        pool = tuple(b for b in bookmakers if available.get(b, 0) >= min_quotes)
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
    )
