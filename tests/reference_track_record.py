"""The track record's figures computed entry by entry: the reference the daily aggregates
(:mod:`app.domain.track_record_aggregates`, read by ``GET /performance``) must equal, as
``GET /performance`` computed them before the aggregates.

The best single bookmaker is chosen among those that quoted at least ``BEST_COVERAGE`` of
the window's matches, by the lowest log loss on the matches it quoted; the served
prediction is compared with it on those same matches.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.domain.backtest.value_bets import Bets, bankroll_curve
from app.domain.bookmakers import bookmaker_key
from app.domain.evaluation import ROUNDING, mean_interval, paired_difference
from app.domain.odds import Triple, demargin
from app.domain.records import OUTCOME_INDEX, OUTCOMES
from app.domain.reliability import ReliabilityCurve, reliability
from app.domain.scoring import scores
from app.domain.track_record_scores import (
    BEST_COVERAGE,
    CLOSING_METHOD,
    CLOSING_REFERENCE,
    BankrollPoint,
    BestBookmaker,
    DayBucket,
    Difference,
    ForecastScores,
    Performance,
    SettledEntry,
    ValueBetRecord,
)
from boosting import log_loss_rows


def performance_of(
    entries: Sequence[SettledEntry], *, kelly_fraction: float, stake_cap: float
) -> Performance:
    """How the served predictions of ``entries`` fared (zeros and nulls without any)."""
    forecasts = _Forecasts.of(entries)
    served_rows = _log_loss_rows(forecasts.y, forecasts.served)
    consensus_rows = _log_loss_rows(forecasts.y, forecasts.consensus)
    best_bookmaker, best_rows = _best_bookmaker(entries, forecasts.y, forecasts.served)
    return Performance(
        matches=len(entries),
        served=_scores(forecasts.y, forecasts.served),
        consensus=_scores(forecasts.y, forecasts.consensus),
        served_minus_consensus=_difference(served_rows, consensus_rows),
        best_bookmaker=best_bookmaker,
        value_bets=_value_bets(entries, kelly_fraction, stake_cap),
        days=_days(entries, forecasts.y, served_rows, consensus_rows, best_rows),
    )


def served_reliability(entries: Sequence[SettledEntry], bins: int) -> tuple[ReliabilityCurve, ...]:
    """How often each outcome (home, draw, away) happened against the probability served
    for it, in ``bins`` equal-width bins; none without entries."""
    if not entries:
        return ()
    forecasts = _Forecasts.of(entries)
    return tuple(reliability(forecasts.y, forecasts.served, bins))


@dataclass(frozen=True, slots=True)
class _Forecasts:
    """The entries' results (outcome indices) and the two forecasts logged for them."""

    y: NDArray[np.intp]
    served: NDArray[np.float64]
    consensus: NDArray[np.float64]

    @classmethod
    def of(cls, entries: Sequence[SettledEntry]) -> _Forecasts:
        return cls(
            y=_outcomes(entry.result for entry in entries),
            served=_probabilities([entry.served.probabilities for entry in entries]),
            consensus=_probabilities([entry.served.consensus for entry in entries]),
        )


def _outcomes(results: Iterable[str]) -> NDArray[np.intp]:
    return np.array([OUTCOME_INDEX[result] for result in results], dtype=np.intp)


def _probabilities(rows: Sequence[Triple]) -> NDArray[np.float64]:
    return np.array(rows, dtype=np.float64).reshape(-1, len(OUTCOMES))


def _log_loss_rows(y: NDArray[np.intp], proba: NDArray[np.float64]) -> NDArray[np.float64]:
    return log_loss_rows(y, proba) if len(y) else np.empty(0)


def _scores(y: NDArray[np.intp], proba: NDArray[np.float64]) -> ForecastScores:
    if not len(y):
        return ForecastScores(0, None, None, None, None)
    found = scores(y, proba)
    return ForecastScores(len(y), found.log_loss, found.brier, found.rps, found.accuracy)


def _difference(a: NDArray[np.float64], b: NDArray[np.float64]) -> Difference:
    differences = a - b
    # Two forecasts equal up to rounding (the consensus served as such) do not differ.
    differences[np.abs(differences) <= ROUNDING] = 0.0
    interval = mean_interval(differences)
    p_value = paired_difference(a, b).p_value if len(a) >= 2 else None
    return Difference(len(a), interval.mean, interval.low, interval.high, p_value)


def _best_bookmaker(
    entries: Sequence[SettledEntry], y: NDArray[np.intp], served: NDArray[np.float64]
) -> tuple[BestBookmaker, NDArray[np.float64]]:
    """The best bookmaker, and its log loss on each entry (NaN where it did not quote)."""
    codes = sorted({bookmaker_key(q.bookmaker) for e in entries for q in e.served.quotes})
    column = {code: index for index, code in enumerate(codes)}
    lines = np.full((len(entries), len(codes), len(OUTCOMES)), np.nan)
    for row, entry in enumerate(entries):
        for quote in entry.served.quotes:
            lines[row, column[bookmaker_key(quote.bookmaker)]] = quote.probabilities
    quoted = ~np.isnan(lines[:, :, 0])
    coverage = quoted.mean(axis=0) if len(entries) else np.zeros(len(codes))
    chosen = np.clip(lines[np.arange(len(entries)), :, y], 1e-15, 1.0)
    losses = np.where(quoted, -np.log(np.where(quoted, chosen, 1.0)), 0.0)
    mean_loss = losses.sum(axis=0) / np.maximum(quoted.sum(axis=0), 1)
    eligible = np.flatnonzero(coverage >= BEST_COVERAGE)
    if not eligible.size:
        nothing = ForecastScores(0, None, None, None, None)
        none_best = BestBookmaker(
            None, None, nothing, nothing, _difference(np.empty(0), np.empty(0))
        )
        return none_best, np.full(len(entries), np.nan)
    # Lowest log loss; equal ones by code (np.argmin takes the first).
    best = int(eligible[np.argmin(mean_loss[eligible])])
    rows = np.flatnonzero(quoted[:, best])
    best_proba = lines[rows, best]
    best_rows = _log_loss_rows(y[rows], best_proba)
    per_entry = np.full(len(entries), np.nan)
    per_entry[rows] = best_rows
    found = BestBookmaker(
        codes[best],
        float(coverage[best]),
        _scores(y[rows], best_proba),
        _scores(y[rows], served[rows]),
        _difference(_log_loss_rows(y[rows], served[rows]), best_rows),
    )
    return found, per_entry


def _value_bets(
    entries: Sequence[SettledEntry], kelly_fraction: float, stake_cap: float
) -> ValueBetRecord:
    flat = [(entry, bet) for entry in entries for bet in entry.served.bets]
    closing = _closing_lines(entries)
    outcome = _outcomes(bet.outcome for _, bet in flat)
    price = np.array([bet.price for _, bet in flat], dtype=np.float64)
    closing_probability = np.array(
        [closing.get(entry.match_id, (np.nan,) * 3) for entry, _ in flat], dtype=np.float64
    ).reshape(-1, len(OUTCOMES))[np.arange(len(flat)), outcome]
    bets = Bets(
        match_id=np.array([entry.match_id for entry, _ in flat], dtype=np.int64),
        kickoff=np.array([entry.kickoff.timestamp() for entry, _ in flat], dtype=np.float64),
        outcome=outcome,
        price=price,
        bookmaker=np.array([bet.bookmaker for _, bet in flat], dtype=str),
        claimed_ev=np.array([bet.expected_value for _, bet in flat], dtype=np.float64),
        clv=closing_probability * price - 1.0,
        won=_outcomes(entry.result for entry, _ in flat) == outcome,
    )
    returns = bets.returns
    curve = bankroll_curve(bets, kelly_fraction, stake_cap)
    times = np.unique(bets.kickoff)
    return ValueBetRecord(
        bets=len(bets),
        bets_with_closing=int(bets.has_closing.sum()),
        clv=mean_interval(bets.clv[bets.has_closing]),
        roi=mean_interval(returns),
        profit=float(returns.sum()),
        bankroll=tuple(
            BankrollPoint(dt.datetime.fromtimestamp(float(time), dt.UTC), float(value))
            for time, value in zip(times, curve, strict=True)
        ),
    )


def _closing_lines(entries: Sequence[SettledEntry]) -> dict[int, Triple]:
    """Per match the reference bookmaker quoted, its line de-margined by power."""
    reference = bookmaker_key(CLOSING_REFERENCE)
    found = [
        (entry.match_id, (quote.home, quote.draw, quote.away))
        for entry in entries
        if entry.served.bets
        for quote in entry.served.quotes
        if bookmaker_key(quote.bookmaker) == reference
    ]
    if not found:
        return {}
    lines = demargin([prices for _, prices in found], CLOSING_METHOD).probabilities.tolist()
    return {
        match_id: (line[0], line[1], line[2])
        for (match_id, _), line in zip(found, lines, strict=True)
    }


def _days(
    entries: Sequence[SettledEntry],
    y: NDArray[np.intp],
    served_rows: NDArray[np.float64],
    consensus_rows: NDArray[np.float64],
    best_rows: NDArray[np.float64],
) -> tuple[DayBucket, ...]:
    if not entries:
        return ()
    ordinal = np.array([e.kickoff.astimezone(dt.UTC).date().toordinal() for e in entries])
    days, day_of = np.unique(ordinal, return_inverse=True)
    matches = np.bincount(day_of, minlength=len(days))
    bets_per_match = np.array([len(e.served.bets) for e in entries])
    profit_per_match = np.array(
        [
            sum(
                bet.price - 1.0 if OUTCOME_INDEX[bet.outcome] == result else -1.0
                for bet in e.served.bets
            )
            for e, result in zip(entries, y.tolist(), strict=True)
        ],
        dtype=np.float64,
    )
    served = np.bincount(day_of, served_rows, len(days)) / matches
    consensus = np.bincount(day_of, consensus_rows, len(days)) / matches
    best_quoted = ~np.isnan(best_rows)
    best_matches = np.bincount(day_of, best_quoted, len(days))
    best_sum = np.bincount(day_of, np.where(best_quoted, best_rows, 0.0), len(days))
    bets = np.bincount(day_of, bets_per_match, len(days))
    profit = np.bincount(day_of, profit_per_match, len(days))
    return tuple(
        DayBucket(
            dt.date.fromordinal(int(days[index])),
            int(matches[index]),
            float(served[index]),
            float(consensus[index]),
            int(best_matches[index]),
            float(best_sum[index] / best_matches[index]) if best_matches[index] else None,
            int(bets[index]),
            float(profit[index]),
        )
        for index in range(len(days))
    )
