"""Column tables of matches and quotes: the one shape in which every source reaches training."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.domain.records import (
    OUTCOME_INDEX,
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    credible_capture,
)

UNSETTLED = -1

# (id, kickoff, result or None, competition code, season)
MatchRow = tuple[int, dt.datetime, str | None, str, str]
# (match id, bookmaker code, phase, captured_at or None, received_at or None, home, draw,
# away, seen_at or None); a quote without a time of arrival counts as older than any that
# has one.
QuoteRow = tuple[
    int, str, str, dt.datetime | None, dt.datetime | None, float, float, float, dt.datetime | None
]


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

    @property
    def settled(self) -> NDArray[np.bool_]:
        mask: NDArray[np.bool_] = self.result != UNSETTLED
        return mask

    @classmethod
    def from_columns(
        cls,
        *,
        ids: Sequence[int],
        kickoff: Sequence[dt.datetime],
        result: Sequence[str | None],
        competition: Sequence[str],
        season: Sequence[str],
    ) -> MatchTable:
        return cls(
            ids=np.array(ids, dtype=np.int64),
            kickoff=np.array([moment.timestamp() for moment in kickoff], dtype=np.float64),
            result=np.array(
                [UNSETTLED if outcome is None else OUTCOME_INDEX[outcome] for outcome in result],
                dtype=np.intp,
            ),
            competition=np.array(competition, dtype=str).reshape(-1),
            season=np.array(season, dtype=str).reshape(-1),
        )


@dataclass(frozen=True)
class QuoteTable:
    """One row per quote; ``match`` indexes rows of the :class:`MatchTable`."""

    match: NDArray[np.intp]
    bookmaker: NDArray[np.str_]
    phase: NDArray[np.str_]
    # POSIX seconds, never later than the receipt (credible_capture); NaN: the source gave none
    captured_at: NDArray[np.float64]
    received_at: NDArray[np.float64]  # POSIX seconds; 0 when the source gave no time
    prices: NDArray[np.float64]  # (n, 3) decimal odds for 1, X, 2
    # POSIX seconds, the latest moment a feed met the same prices again; NaN: only when
    # captured (a season file's quotes)
    seen_at: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.match)

    def rows(self, mask: NDArray[np.bool_] | NDArray[np.intp]) -> QuoteTable:
        """The quotes where ``mask`` holds, rows of the same match table."""
        return QuoteTable(
            **{column.name: getattr(self, column.name)[mask] for column in fields(self)}
        )

    @classmethod
    def from_columns(
        cls,
        matches: MatchTable,
        *,
        match_ids: Sequence[int],
        bookmaker: Sequence[str],
        phase: Sequence[str],
        captured_at: Sequence[dt.datetime | None],
        received_at: Sequence[dt.datetime | None],
        prices: Sequence[Sequence[float]],
        seen_at: Sequence[dt.datetime | None] | None = None,
    ) -> QuoteTable:
        """Quotes naming their match by id; capture times made credible (``credible_capture``);
        ``seen_at`` None: none was ever seen again."""
        order = np.argsort(matches.ids)
        at = np.searchsorted(matches.ids, np.array(match_ids, dtype=np.int64), sorter=order)
        credible = (
            credible_capture(captured, received)
            for captured, received in zip(captured_at, received_at, strict=True)
        )
        return cls(
            match=order[at].astype(np.intp),
            bookmaker=np.array(bookmaker, dtype=str).reshape(-1),
            phase=np.array(phase, dtype=str).reshape(-1),
            captured_at=_seconds(credible),
            received_at=np.array(
                [0.0 if moment is None else moment.timestamp() for moment in received_at],
                dtype=np.float64,
            ),
            prices=np.array(prices, dtype=np.float64).reshape(-1, 3),
            seen_at=_seconds(seen_at or [None] * len(match_ids)),
        )


def _seconds(moments: Iterable[dt.datetime | None]) -> NDArray[np.float64]:
    """POSIX seconds, NaN where there is no moment."""
    return np.array(
        [np.nan if moment is None else moment.timestamp() for moment in moments], dtype=np.float64
    )


def positions_of(ids: NDArray[np.int64], wanted: NDArray[np.int64]) -> NDArray[np.intp]:
    """The position of each wanted id in ``ids``, -1 where it is absent."""
    if len(ids) == 0:
        return np.full(len(wanted), -1, dtype=np.intp)
    order = np.argsort(ids, kind="stable")
    slot = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    found = ids[order][slot] == wanted
    return np.where(found, order[slot], -1).astype(np.intp)


def tables_from_rows(
    match_rows: Sequence[MatchRow], quote_rows: Sequence[QuoteRow]
) -> tuple[MatchTable, QuoteTable]:
    """Column tables from rows of a query; each quote row names its match by id."""
    ids, kickoff, result, competition, season = _columns(match_rows, 5)
    matches = MatchTable.from_columns(
        ids=ids, kickoff=kickoff, result=result, competition=competition, season=season
    )
    match_ids, bookmaker, phase, captured_at, received_at, home, draw, away, seen_at = _columns(
        quote_rows, 9
    )
    quotes = QuoteTable.from_columns(
        matches,
        match_ids=match_ids,
        bookmaker=bookmaker,
        phase=phase,
        captured_at=captured_at,
        received_at=received_at,
        prices=list(zip(home, draw, away, strict=True)),
        seen_at=seen_at,
    )
    return matches, quotes


def _columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[tuple[Any, ...]]:
    return list(zip(*rows, strict=True)) or [()] * width


def tables_from_batches(batches: Iterable[IngestBatch]) -> tuple[MatchTable, QuoteTable]:
    """Column tables from parsed season files; a later file's copy of a match (same
    competition, teams and day) adds its quotes to the first."""
    number_of: dict[tuple[str, str, str, dt.date], int] = {}
    records: list[MatchRecord] = []
    quote_match: list[int] = []
    quotes: list[QuoteRecord] = []
    for batch in batches:
        numbers: list[int] = []  # of the batch's matches, in batch order
        for record in batch.matches:
            number = number_of.get(record.identity)
            if number is None:
                number = number_of[record.identity] = len(records)
                records.append(record)
            numbers.append(number)
        quote_match.extend(numbers[quote.match] for quote in batch.quotes)
        quotes.extend(batch.quotes)
    matches = MatchTable.from_columns(
        ids=range(len(records)),
        kickoff=[record.kickoff for record in records],
        result=[record.result for record in records],
        competition=[record.competition for record in records],
        season=[record.season or "" for record in records],
    )
    return matches, QuoteTable.from_columns(
        matches,
        match_ids=quote_match,
        bookmaker=[quote.bookmaker for quote in quotes],
        phase=[quote.phase for quote in quotes],
        captured_at=[quote.captured_at for quote in quotes],
        received_at=[None] * len(quotes),
        prices=[(quote.home, quote.draw, quote.away) for quote in quotes],
    )


def restrict(
    matches: MatchTable, quotes: QuoteTable, keep: NDArray[np.bool_]
) -> tuple[MatchTable, QuoteTable]:
    new_index = np.full(len(matches), -1, dtype=np.intp)
    new_index[keep] = np.arange(int(keep.sum()))
    kept_quotes = keep[quotes.match]
    kept = MatchTable(*(getattr(matches, column.name)[keep] for column in fields(MatchTable)))
    columns = [getattr(quotes, column.name)[kept_quotes] for column in fields(QuoteTable)]
    return kept, QuoteTable(new_index[columns[0]], *columns[1:])
