"""The track record's figures as sums: what a day's scored entries add to each figure of
:class:`~app.domain.track_record_scores.Performance`, and the figures made back from the
sums of any set of days.

Every figure is a count, a mean, a mean's t interval or a paired t-test, so the sums of the
entries and of their squares are enough; the bankroll, whose bets of one kickoff share a
stake, is kept as the sum of stake × return per kickoff.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Self, TypeVar

import numpy as np
from numpy.typing import NDArray

from app.domain.bookmakers import bookmaker_key
from app.domain.evaluation import ROUNDING, interval_of_sums, paired_p_value_of_sums
from app.domain.odds import demargin
from app.domain.records import OUTCOME_INDEX, OUTCOMES
from app.domain.reliability import ReliabilityCurve, bin_of, curve_of_bins
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
from app.domain.value import closing_line_value, kelly_stake
from boosting import accuracy_rows, brier_score_rows, log_loss_rows, ranked_probability_score_rows

# The reliability diagram's bins of served probability, each a tenth wide.
RELIABILITY_BINS = 10


class Sums:
    """Sums that add field by field (every field a count or a sum)."""

    __slots__ = ()

    @classmethod
    def names(cls) -> list[str]:
        """The fields' names (the columns they are stored in)."""
        return [field.name for field in fields(cls)]  # type: ignore[arg-type]

    def plus(self, other: Self) -> Self:
        return type(self)(*(getattr(self, n) + getattr(other, n) for n in self.names()))

    def values(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.names()}


K = TypeVar("K")
S = TypeVar("S", bound=Sums)


def added_up(pairs: Iterable[tuple[K, S]]) -> dict[K, S]:
    """Sums added up by key."""
    found: dict[K, S] = {}
    for key, sums in pairs:
        before = found.get(key)
        found[key] = sums if before is None else before.plus(sums)
    return found


@dataclass(frozen=True, slots=True)
class DaySums(Sums):
    """The columns of ``track_record_days``: the served and consensus forecasts' summed
    scores (``hits``: matches whose likeliest outcome happened), the served − consensus
    log-loss differences, the value bets' CLV (where a closing line is) and flat return."""

    matches: int = 0
    served_log_loss: float = 0.0
    served_brier: float = 0.0
    served_rps: float = 0.0
    served_hits: float = 0.0
    consensus_log_loss: float = 0.0
    consensus_brier: float = 0.0
    consensus_rps: float = 0.0
    consensus_hits: float = 0.0
    difference_sum: float = 0.0
    difference_squares: float = 0.0
    bets: int = 0
    bets_with_closing: int = 0
    clv_sum: float = 0.0
    clv_squares: float = 0.0
    return_sum: float = 0.0
    return_squares: float = 0.0


@dataclass(frozen=True, slots=True)
class BookmakerSums(Sums):
    """The columns of ``track_record_bookmakers``: a bookmaker's summed scores on the entries
    it quoted, the served forecast's on them, and the served − bookmaker differences."""

    matches: int = 0
    log_loss: float = 0.0
    brier: float = 0.0
    rps: float = 0.0
    hits: float = 0.0
    served_log_loss: float = 0.0
    served_brier: float = 0.0
    served_rps: float = 0.0
    served_hits: float = 0.0
    difference_sum: float = 0.0
    difference_squares: float = 0.0


@dataclass(frozen=True, slots=True)
class BinSums(Sums):
    """One outcome's served probabilities in one bin: how many, their sum, and how many
    times it happened."""

    count: int = 0
    predicted: float = 0.0
    observed: float = 0.0


@dataclass(frozen=True, slots=True)
class GroupKey:
    """Where entries' sums are kept: the UTC day of their kickoff, their competition and
    the version that served them (None: the consensus)."""

    day: dt.date
    competition: int
    model_version: int | None


@dataclass(frozen=True, slots=True)
class Tally:
    """The sums of some scored entries: per group; per group and bookmaker; the bankroll's
    stake × return per kickoff and group (with the number of bets); per day, outcome and
    bin of served probability."""

    days: dict[GroupKey, DaySums]
    bookmakers: dict[tuple[GroupKey, str], BookmakerSums]
    bankroll: dict[tuple[dt.datetime, GroupKey], tuple[int, float]]
    reliability: dict[tuple[dt.date, int, int], BinSums]


@dataclass(frozen=True, slots=True)
class TallyTerms:
    """The bankroll's Kelly terms and the reliability diagram's bins."""

    kelly_fraction: float
    stake_cap: float
    reliability_bins: int = RELIABILITY_BINS


def utc_day(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()


def tally(found: Sequence[tuple[SettledEntry, int]], terms: TallyTerms) -> Tally:
    """The sums of scored entries, each given with its competition's id."""
    if not found:
        return Tally({}, {}, {}, {})
    entries = [entry for entry, _ in found]
    keys = [
        GroupKey(utc_day(entry.kickoff), competition, entry.served.model_version)
        for entry, competition in found
    ]
    rows = _EntryRows.of(entries)
    return Tally(
        days=_day_sums(entries, keys, rows),
        bookmakers=_bookmaker_sums(entries, keys, rows),
        bankroll=_bankroll_sums(entries, keys, terms),
        reliability=_bin_sums(keys, rows, terms.reliability_bins),
    )


def served_against_consensus(entries: Sequence[SettledEntry]) -> Difference:
    """The served prediction's log loss minus the consensus's on ``entries``."""
    if not entries:
        return _differences(DaySums())
    keys = [GroupKey(dt.date.min, 0, None)] * len(entries)
    return _differences(_day_sums(entries, keys, _EntryRows.of(entries))[keys[0]])


def _scored(y: NDArray[np.intp], proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per entry (column), a forecast's log loss, Brier score, RPS and hit (rows, in the
    order of the sums' fields)."""
    scores = (log_loss_rows, brier_score_rows, ranked_probability_score_rows, accuracy_rows)
    return np.stack([score(y, proba) for score in scores])


@dataclass(frozen=True, slots=True)
class _EntryRows:
    y: NDArray[np.intp]
    served_proba: NDArray[np.float64]
    served: NDArray[np.float64]  # scored by _scored
    consensus: NDArray[np.float64]

    @classmethod
    def of(cls, entries: Sequence[SettledEntry]) -> _EntryRows:
        y = np.array([OUTCOME_INDEX[entry.result] for entry in entries], dtype=np.intp)
        served = _probabilities([entry.served.probabilities for entry in entries])
        consensus = _probabilities([entry.served.consensus for entry in entries])
        return cls(y, served, _scored(y, served), _scored(y, consensus))


def _probabilities(rows: Sequence[tuple[float, float, float]]) -> NDArray[np.float64]:
    return np.array(rows, dtype=np.float64).reshape(-1, len(OUTCOMES))


def _zeroed(differences: NDArray[np.float64]) -> NDArray[np.float64]:
    # Two forecasts equal up to rounding (the consensus served as such) do not differ.
    return np.where(np.abs(differences) <= ROUNDING, 0.0, differences)


def _grouped(
    keys: Sequence[Hashable], columns: Sequence[NDArray[np.float64]], make: type[S]
) -> dict[Any, S]:
    """``make`` per distinct key, each field the sum of its column over the rows of that
    key (the columns in the order of ``make``'s fields, counts rounded back to integers)."""
    index: dict[Hashable, int] = {}
    group = np.array([index.setdefault(key, len(index)) for key in keys], dtype=np.intp)
    sums = [np.bincount(group, weights=column, minlength=len(index)) for column in columns]
    kinds = [field.type for field in fields(make)]  # type: ignore[arg-type]
    found: dict[Any, S] = {}
    for key, at in index.items():
        values = [
            round(float(total[at])) if kind == "int" else float(total[at])
            for total, kind in zip(sums, kinds, strict=True)
        ]
        found[key] = make(*values)
    return found


def _day_sums(
    entries: Sequence[SettledEntry], keys: Sequence[GroupKey], rows: _EntryRows
) -> dict[GroupKey, DaySums]:
    difference = _zeroed(rows.served[0] - rows.consensus[0])
    columns = [
        np.ones(len(entries)),
        *rows.served,
        *rows.consensus,
        difference,
        difference**2,
        *_bet_columns(entries),
    ]
    return _grouped(keys, columns, DaySums)


def _bet_columns(entries: Sequence[SettledEntry]) -> NDArray[np.float64]:
    """Per entry (column): its bets, those with a closing line, their CLV's sum and sum of
    squares, and their flat returns' sum and sum of squares (rows)."""
    closing = _closing_lines(entries)
    found = []
    for index, entry in enumerate(entries):
        bets, line = entry.served.bets, closing.get(index)
        clv = (
            []
            if line is None
            else [closing_line_value(b.price, line[OUTCOME_INDEX[b.outcome]]) for b in bets]
        )
        returns = [_flat_return(bet.price, bet.outcome == entry.result) for bet in bets]
        found.append(
            (
                len(bets),
                len(clv),
                sum(clv),
                sum(v**2 for v in clv),
                sum(returns),
                sum(v**2 for v in returns),
            )
        )
    return np.array(found, dtype=np.float64).reshape(-1, 6).T


def _flat_return(price: float, won: bool) -> float:
    """What a stake of 1 returned, net."""
    return price - 1.0 if won else -1.0


def _closing_lines(entries: Sequence[SettledEntry]) -> dict[int, list[float]]:
    """Per entry with bets whose quotes include the reference bookmaker, that line
    de-margined by the closing method (the last such quote of the entry)."""
    reference = bookmaker_key(CLOSING_REFERENCE)
    found: dict[int, tuple[float, float, float]] = {}
    for index, entry in enumerate(entries):
        if not entry.served.bets:
            continue
        for quote in entry.served.quotes:
            if bookmaker_key(quote.bookmaker) == reference:
                found[index] = (quote.home, quote.draw, quote.away)
    if not found:
        return {}
    lines = demargin(list(found.values()), CLOSING_METHOD).probabilities.tolist()
    return dict(zip(found, lines, strict=True))


def _bookmaker_sums(
    entries: Sequence[SettledEntry], keys: Sequence[GroupKey], rows: _EntryRows
) -> dict[tuple[GroupKey, str], BookmakerSums]:
    # Each entry's line of each bookmaker (the last quote of one spelled two ways).
    quoted: list[tuple[int, str]] = []
    lines: list[tuple[float, float, float]] = []
    for index, entry in enumerate(entries):
        by_key = {bookmaker_key(q.bookmaker): q.probabilities for q in entry.served.quotes}
        quoted.extend((index, code) for code in by_key)
        lines.extend(by_key.values())
    if not quoted:
        return {}
    at = np.array([index for index, _ in quoted], dtype=np.intp)
    scored = _scored(rows.y[at], _probabilities(lines))
    served = rows.served[:, at]
    difference = _zeroed(served[0] - scored[0])
    columns = [np.ones(len(quoted)), *scored, *served, difference, difference**2]
    return _grouped([(keys[index], code) for index, code in quoted], columns, BookmakerSums)


def _bankroll_sums(
    entries: Sequence[SettledEntry], keys: Sequence[GroupKey], terms: TallyTerms
) -> dict[tuple[dt.datetime, GroupKey], tuple[int, float]]:
    found: dict[tuple[dt.datetime, GroupKey], tuple[int, float]] = {}
    for entry, key in zip(entries, keys, strict=True):
        for bet in entry.served.bets:
            stake = kelly_stake(
                bet.expected_value, bet.price, terms.kelly_fraction, terms.stake_cap
            )
            growth = stake * _flat_return(bet.price, bet.outcome == entry.result)
            bets, total = found.get((entry.kickoff, key), (0, 0.0))
            found[(entry.kickoff, key)] = (bets + 1, total + growth)
    return found


def _bin_sums(
    keys: Sequence[GroupKey], rows: _EntryRows, bins: int
) -> dict[tuple[dt.date, int, int], BinSums]:
    places: list[tuple[dt.date, int, int]] = []
    predicted: list[NDArray[np.float64]] = []
    happened: list[NDArray[np.float64]] = []
    for outcome in range(len(OUTCOMES)):
        probability = rows.served_proba[:, outcome]
        index = bin_of(probability, bins).tolist()
        places.extend((key.day, outcome, at) for key, at in zip(keys, index, strict=True))
        predicted.append(probability)
        happened.append((rows.y == outcome).astype(np.float64))
    columns = [np.ones(len(places)), np.concatenate(predicted), np.concatenate(happened)]
    return _grouped(places, columns, BinSums)


# The figures from the sums.


def best_bookmaker_of(totals: Mapping[str, BookmakerSums], matches: int) -> str | None:
    """The bookmaker that quoted at least ``BEST_COVERAGE`` of the window's ``matches``
    with the lowest mean log loss (equal ones: the first code), as
    :mod:`app.domain.track_record_scores` chooses it."""
    eligible = [
        (sums.log_loss / sums.matches, code)
        for code, sums in totals.items()
        if matches and sums.matches and sums.matches / matches >= BEST_COVERAGE
    ]
    return min(eligible)[1] if eligible else None


@dataclass(frozen=True, slots=True)
class WindowSums:
    """A window's sums: over the whole window; per day for its latest days (in day order);
    per bookmaker over the window, its best bookmaker (see :func:`best_bookmaker_of`) and
    that one's sums on those days; the bankroll's stake × return per kickoff over the whole
    window (in kickoff order)."""

    total: DaySums
    days: Sequence[tuple[dt.date, DaySums]]
    bookmakers: Mapping[str, BookmakerSums]
    best: str | None
    best_days: Mapping[dt.date, BookmakerSums]
    bankroll: Sequence[tuple[dt.datetime, float]]


def performance_of_sums(sums: WindowSums) -> Performance:
    """The figures of a window from its sums: the days and the bankroll's points are those
    of the days ``sums`` has (the bankroll still starts from 1 at the window's start)."""
    total = sums.total
    return Performance(
        matches=total.matches,
        served=_forecast(total, "served_"),
        consensus=_forecast(total, "consensus_"),
        served_minus_consensus=_differences(total),
        best_bookmaker=_best(sums.bookmakers, sums.best, total.matches),
        value_bets=_value_bets(total, sums.bankroll, sums.days[0][0] if sums.days else dt.date.max),
        days=tuple(_bucket(day, day_sums, sums.best_days.get(day)) for day, day_sums in sums.days),
    )


def _forecast(sums: DaySums | BookmakerSums, prefix: str) -> ForecastScores:
    """The mean scores of the forecast whose summed scores are the fields of ``sums`` named
    ``prefix`` followed by log_loss, brier, rps and hits."""
    if not sums.matches:
        return ForecastScores(0, None, None, None, None)
    scores = ("log_loss", "brier", "rps", "hits")
    return ForecastScores(sums.matches, *(getattr(sums, prefix + s) / sums.matches for s in scores))


def _differences(sums: DaySums | BookmakerSums) -> Difference:
    return _difference(sums.matches, sums.difference_sum, sums.difference_squares)


def _difference(n: int, total: float, squares: float) -> Difference:
    interval = interval_of_sums(n, total, squares)
    p_value = paired_p_value_of_sums(n, total, squares) if n >= 2 else None
    return Difference(n, interval.mean, interval.low, interval.high, p_value)


def _best(totals: Mapping[str, BookmakerSums], best: str | None, matches: int) -> BestBookmaker:
    sums = BookmakerSums() if best is None else totals[best]
    coverage = None if best is None else sums.matches / matches
    return BestBookmaker(
        best, coverage, _forecast(sums, ""), _forecast(sums, "served_"), _differences(sums)
    )


def _value_bets(
    total: DaySums, bankroll: Sequence[tuple[dt.datetime, float]], first_day: dt.date
) -> ValueBetRecord:
    curve = np.cumprod(1.0 + np.array([growth for _, growth in bankroll], dtype=np.float64))
    return ValueBetRecord(
        bets=total.bets,
        bets_with_closing=total.bets_with_closing,
        clv=interval_of_sums(total.bets_with_closing, total.clv_sum, total.clv_squares),
        roi=interval_of_sums(total.bets, total.return_sum, total.return_squares),
        profit=total.return_sum,
        bankroll=tuple(
            BankrollPoint(kickoff, float(value))
            for (kickoff, _), value in zip(bankroll, curve.tolist(), strict=True)
            if utc_day(kickoff) >= first_day
        ),
    )


def _bucket(day: dt.date, sums: DaySums, best: BookmakerSums | None) -> DayBucket:
    best_matches = 0 if best is None else best.matches
    return DayBucket(
        day,
        sums.matches,
        sums.served_log_loss / sums.matches,
        sums.consensus_log_loss / sums.matches,
        best_matches,
        None if best is None or not best_matches else best.log_loss / best_matches,
        sums.bets,
        sums.return_sum,
    )


def reliability_of_sums(
    bins: Mapping[tuple[int, int], BinSums], bin_count: int
) -> tuple[ReliabilityCurve, ...]:
    """Per outcome, each filled bin's mean served probability, the share that happened, and
    its count, as :func:`app.domain.reliability.reliability` draws them; none without any."""
    if not bins:
        return ()
    curves = []
    for outcome in range(len(OUTCOMES)):
        per_bin = [bins.get((outcome, b), BinSums()) for b in range(bin_count)]
        columns = np.array([[s.count, s.predicted, s.observed] for s in per_bin], dtype=np.float64)
        curves.append(curve_of_bins(*columns.T))
    return tuple(curves)
