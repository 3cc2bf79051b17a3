"""Training sets for boosting: matches × bookmakers × outcomes plausibility arrays.

One code path for every consumer (the refit service reading the database, the backtest
reading season files, the evaluation scripts): sources are first turned into column tables
(:class:`MatchTable`, :class:`QuoteTable`), then :func:`build_training_set` picks, for each
(match, bookmaker), the latest quote of the wanted phase that was valid before kickoff,
de-margins it, and lays the probabilities out as ``H[match, bookmaker, outcome]`` with NaN
where the bookmaker did not quote.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from app.domain.odds import demargin
from app.domain.records import IngestBatch
from app.domain.vocabulary import Method, Phase

OUTCOMES = ("1", "X", "2")
OUTCOME_INDEX = {outcome: index for index, outcome in enumerate(OUTCOMES)}
UNSETTLED = -1


def to_seconds(moment: dt.datetime) -> float:
    return moment.timestamp()


@dataclass(frozen=True)
class MatchTable:
    """One row per match. ``result`` is 0/1/2 for 1/X/2, or -1 when not settled."""

    ids: NDArray[np.int64]
    kickoff: NDArray[np.float64]  # POSIX seconds, UTC
    result: NDArray[np.intp]
    competition: NDArray[np.str_]
    season: NDArray[np.str_]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class QuoteTable:
    """One row per quote; ``match`` indexes rows of the :class:`MatchTable`."""

    match: NDArray[np.intp]
    bookmaker: NDArray[np.str_]
    phase: NDArray[np.str_]
    captured_at: NDArray[np.float64]  # POSIX seconds; NaN when the source gave no time
    received_at: NDArray[np.float64]
    prices: NDArray[np.float64]  # (n, 3) decimal odds for 1, X, 2

    def __len__(self) -> int:
        return len(self.match)


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

    def rows(self, mask: NDArray[np.bool_] | NDArray[np.intp]) -> TrainingSet:
        """The same set restricted to some matches (a boolean mask or indices)."""
        return TrainingSet(
            H=self.H[mask],
            y=self.y[mask],
            bookmakers=self.bookmakers,
            match_ids=self.match_ids[mask],
            kickoff=self.kickoff[mask],
            competition=self.competition[mask],
            season=self.season[mask],
            method=self.method,
            phase=self.phase,
            dropped=dict(self.dropped),
        )

    def consensus(self) -> NDArray[np.float64]:
        """Plain mean of the present bookmakers' probabilities, per match."""
        result: NDArray[np.float64] = np.nanmean(self.H, axis=1)
        return result


def select_latest_valid(matches: MatchTable, quotes: QuoteTable, phase: Phase) -> NDArray[np.intp]:
    """Indices of the quotes to use: per (match, bookmaker) the latest of ``phase`` that was
    valid before kickoff. An undated quote is valid and older than any dated one; equal
    capture times are ordered by arrival."""
    captured = quotes.captured_at
    dated = ~np.isnan(captured)
    valid = (quotes.phase == phase) & (~dated | (captured < matches.kickoff[quotes.match]))
    candidates = np.flatnonzero(valid)
    if candidates.size == 0:
        return candidates
    _, bookmaker_codes = np.unique(quotes.bookmaker[candidates], return_inverse=True)
    match = quotes.match[candidates]
    order = np.lexsort(
        (
            quotes.received_at[candidates],
            np.where(dated[candidates], captured[candidates], -np.inf),
            dated[candidates],
            bookmaker_codes,
            match,
        )
    )
    ordered = candidates[order]
    group = match[order] * (bookmaker_codes.max() + 1) + bookmaker_codes[order]
    last_of_group = np.r_[group[1:] != group[:-1], True]
    return ordered[last_of_group]


def build_training_set(
    matches: MatchTable,
    quotes: QuoteTable,
    *,
    phase: Phase = Phase.PRE,
    method: Method | str = Method.POWER,
    bookmakers: Sequence[str] | None = None,
    min_quotes: int = 1,
    settled_only: bool = True,
) -> TrainingSet:
    """Lay out the chosen quotes of ``matches`` as a plausibility array.

    ``bookmakers`` fixes the pool (in that order); otherwise it is every bookmaker with at
    least ``min_quotes`` usable quotes among these matches, by code. Matches without any
    quote from the pool, and (with ``settled_only``) unsettled matches, are dropped and
    counted in ``dropped``.
    """
    method = Method(method)
    dropped: Counter[str] = Counter()
    keep_match = np.ones(len(matches), dtype=bool)
    if settled_only:
        keep_match &= matches.result != UNSETTLED
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


def tables_from_batches(batches: Iterable[IngestBatch]) -> tuple[MatchTable, QuoteTable]:
    """Column tables from parsed season files (no database). Matches are identified by
    (competition, home team, away team, kickoff date); a later file's copy of a match adds
    its quotes to the first one."""
    match_row: dict[tuple[str, str, str, dt.date], int] = {}
    ids: list[int] = []
    kickoff: list[float] = []
    result: list[int] = []
    competition: list[str] = []
    season: list[str] = []
    quote_match: list[int] = []
    quote_bookmaker: list[str] = []
    quote_phase: list[str] = []
    quote_captured: list[float] = []
    prices: list[tuple[float, float, float]] = []
    for batch in batches:
        rows_of_batch: list[int] = []
        for record in batch.matches:
            row = match_row.get(record.identity)
            if row is None:
                row = len(ids)
                match_row[record.identity] = row
                ids.append(row)
                kickoff.append(to_seconds(record.kickoff))
                outcome = record.result
                result.append(UNSETTLED if outcome is None else OUTCOME_INDEX[outcome])
                competition.append(record.competition)
                season.append(record.season or "")
            rows_of_batch.append(row)
        for quote in batch.quotes:
            quote_match.append(rows_of_batch[quote.match])
            quote_bookmaker.append(quote.bookmaker)
            quote_phase.append(quote.phase)
            quote_captured.append(
                np.nan if quote.captured_at is None else to_seconds(quote.captured_at)
            )
            prices.append((quote.home, quote.draw, quote.away))
    matches = MatchTable(
        ids=np.asarray(ids, dtype=np.int64),
        kickoff=np.asarray(kickoff, dtype=np.float64),
        result=np.asarray(result, dtype=np.intp),
        competition=np.asarray(competition, dtype=str),
        season=np.asarray(season, dtype=str),
    )
    quotes = QuoteTable(
        match=np.asarray(quote_match, dtype=np.intp),
        bookmaker=np.asarray(quote_bookmaker, dtype=str),
        phase=np.asarray(quote_phase, dtype=str),
        captured_at=np.asarray(quote_captured, dtype=np.float64),
        received_at=np.zeros(len(quote_match)),
        prices=np.asarray(prices, dtype=np.float64).reshape(-1, 3),
    )
    return matches, quotes
