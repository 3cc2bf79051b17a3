"""How the flag ledger's settled flags fared, scored from when each was raised: per value
source, per competition and all together, made from sums (counts, sums and sums of squares
of the flags' CLV and flat returns) so a database can add them up.

CLV from flag time is the figure to watch: it is measured on every flag with a close and is
far less noisy than the flat return (see :mod:`app.domain.value`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from app.domain.evaluation import MeanInterval, interval_of_sums


@dataclass(frozen=True, slots=True)
class FlagSums:
    """The sums of a group of settled flags: how many, how many with a close, and the sums
    and sums of squares of their CLV (over those with a close) and flat returns."""

    flags: int = 0
    flags_with_close: int = 0
    clv_sum: float = 0.0
    clv_squares: float = 0.0
    return_sum: float = 0.0
    return_squares: float = 0.0

    def __add__(self, other: FlagSums) -> FlagSums:
        return FlagSums(
            self.flags + other.flags,
            self.flags_with_close + other.flags_with_close,
            self.clv_sum + other.clv_sum,
            self.clv_squares + other.clv_squares,
            self.return_sum + other.return_sum,
            self.return_squares + other.return_squares,
        )


@dataclass(frozen=True, slots=True)
class GroupSums:
    """The sums of the settled flags of one value source in one competition."""

    value_source: str
    competition: str
    sums: FlagSums


@dataclass(frozen=True, slots=True)
class FlagGroup:
    """How a group of settled flags fared: ``clv`` over the flags with a close, ``roi`` (a
    stake of 1 at the net price each was raised at) over all, ``profit`` their sum."""

    name: str | None  # the source or competition; None for all flags together
    flags: int
    flags_with_close: int
    clv: MeanInterval
    roi: MeanInterval
    profit: float


@dataclass(frozen=True, slots=True)
class FlagScores:
    """The settled flags of a window all together, by value source and by competition
    (each list in the order of its names)."""

    all: FlagGroup
    by_source: tuple[FlagGroup, ...]
    by_competition: tuple[FlagGroup, ...]


def flag_group(name: str | None, sums: FlagSums) -> FlagGroup:
    """A group's figures from its sums, with the track record's t intervals."""
    return FlagGroup(
        name=name,
        flags=sums.flags,
        flags_with_close=sums.flags_with_close,
        clv=interval_of_sums(sums.flags_with_close, sums.clv_sum, sums.clv_squares),
        roi=interval_of_sums(sums.flags, sums.return_sum, sums.return_squares),
        profit=sums.return_sum,
    )


def flag_scores(groups: Sequence[GroupSums]) -> FlagScores:
    """The window's figures from the sums of each (source, competition) pair."""
    return FlagScores(
        all=flag_group(None, _total(group.sums for group in groups)),
        by_source=_by(groups, lambda group: group.value_source),
        by_competition=_by(groups, lambda group: group.competition),
    )


def _by(groups: Sequence[GroupSums], key: Callable[[GroupSums], str]) -> tuple[FlagGroup, ...]:
    totals: dict[str, FlagSums] = {}
    for group in groups:
        totals[key(group)] = totals.get(key(group), FlagSums()) + group.sums
    return tuple(flag_group(name, totals[name]) for name in sorted(totals))


def _total(sums: Iterable[FlagSums]) -> FlagSums:
    total = FlagSums()
    for part in sums:
        total += part
    return total
