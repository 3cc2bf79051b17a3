"""The flag ledger's rules: how a flag's life changes as the board is evaluated again, which
quote is a match's closing line, and how a flag is scored once its match is settled.

A flag is one outcome of one match that the decision rule (:func:`app.domain.value.
choose_outcomes`) picked, recorded when first raised and never rewritten: what follows
(a better price, a withdrawal, a raise again) is appended as events. At settlement it is
scored against the result and against the reference bookmaker's closing line, from the
price it was raised at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from app.domain import defaults
from app.domain.bookmakers import bookmaker_key
from app.domain.defaults import CLOSING_METHOD
from app.domain.odds import Triple, demargin
from app.domain.records import OUTCOME_INDEX
from app.domain.tables import MatchTable, QuoteTable
from app.domain.training import latest_of_groups, select_latest_valid
from app.domain.value import closing_line_value
from app.domain.vocabulary import Phase

# How long before kickoff the reference's last pre-match price must have been seen to hold
# for it to count as its close.
CLOSING_WINDOW = dt.timedelta(minutes=30)
# The column of the link that priced a flag (``ensemble``, ``consensus`` or a bookmaker's
# code); the chain in force has a column of its own.
VALUE_SOURCE_MAX_LENGTH = 64


class FlagStatus(StrEnum):
    """Where a flag stands: still flagged, no longer flagged, or its match settled."""

    OPEN = "open"
    WITHDRAWN = "withdrawn"
    SETTLED = "settled"


class FlagChange(StrEnum):
    """What happened to a flag after it was raised."""

    IMPROVED = "improved"  # a better net price for the flagged outcome
    WITHDRAWN = "withdrawn"  # no longer its match's bet (EV below the threshold, or another)
    RAISED_AGAIN = "raised_again"


class CloseOrigin(StrEnum):
    """Where a closing line came from: a quote of the reference captured just before
    kickoff, or the closing prices of a season file."""

    LIVE = "live"
    SEASON_FILE = "season_file"


@dataclass(frozen=True, slots=True)
class Standing:
    """The outcome the board flags for a match now, at its best net price."""

    outcome: str
    price: float
    net_price: float
    bookmaker: str
    expected_value: float
    probability: float


@dataclass(frozen=True, slots=True)
class FlagState:
    """A stored flag as the ledger's rules read it."""

    id: int
    match_id: int
    outcome: str
    status: FlagStatus
    best_net_price: float


@dataclass(frozen=True, slots=True)
class Raise:
    """A flag raised for the first time."""

    match_id: int
    standing: Standing


@dataclass(frozen=True, slots=True)
class Change:
    """An event for a stored flag; ``standing`` is the board's view of its outcome (None
    where the outcome is no longer priced)."""

    flag_id: int
    change: FlagChange
    standing: Standing | None


def flag_changes(
    flags: Sequence[FlagState],
    standing: Mapping[int, Standing | None],
    values: Mapping[tuple[int, str], Standing],
) -> tuple[list[Raise], list[Change]]:
    """The ledger's diff for the matches in ``standing`` (per match, its flagged outcome or
    None), given their stored ``flags`` (settled ones excluded) and each outcome's current
    value (``values``, by match and outcome, where priced)."""
    by_key = {(flag.match_id, flag.outcome): flag for flag in flags}
    raises: list[Raise] = []
    changes: list[Change] = []
    for match_id, now in standing.items():
        if now is not None:
            stored = by_key.get((match_id, now.outcome))
            if stored is None:
                raises.append(Raise(match_id, now))
            elif stored.status is FlagStatus.WITHDRAWN:
                changes.append(Change(stored.id, FlagChange.RAISED_AGAIN, now))
            elif now.net_price > stored.best_net_price:
                changes.append(Change(stored.id, FlagChange.IMPROVED, now))
    for flag in flags:
        now = standing.get(flag.match_id)
        still = now is not None and now.outcome == flag.outcome
        if flag.status is FlagStatus.OPEN and flag.match_id in standing and not still:
            current = values.get((flag.match_id, flag.outcome))
            changes.append(Change(flag.id, FlagChange.WITHDRAWN, current))
    return raises, changes


@dataclass(frozen=True, slots=True)
class ReferenceQuote:
    """A quote of the closing reference for one match: its phase, prices, the moment it can
    be believed captured at (None: unknown) and the latest moment a feed met the same
    prices again (None: only when captured)."""

    phase: Phase
    prices: Triple
    captured_at: dt.datetime | None
    seen_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class ClosingLine:
    """The reference's close of a match: its prices, where they came from, when captured
    and, for a live close, the latest moment up to kickoff they were seen to hold."""

    prices: Triple
    origin: CloseOrigin
    captured_at: dt.datetime | None
    seen_at: dt.datetime | None = None


def closing_line(
    quotes: Sequence[ReferenceQuote], kickoff: dt.datetime, window: dt.timedelta
) -> ClosingLine | None:
    """The one rule for a match's close: the reference's latest pre-match quote captured
    before ``kickoff``, if it was seen to hold (captured, or met again unchanged, counted up
    to kickoff) within the ``window`` before kickoff: a live close. A price that did not
    move for hours but was fetched again minutes before kickoff is such a close. Else its
    latest closing-phase quote (a season file's); else None."""
    before = [
        quote
        for quote in quotes
        if quote.phase is Phase.PRE
        and quote.captured_at is not None
        and quote.captured_at < kickoff
    ]
    if before:
        last = max(before, key=_captured)
        seen = min(_last_seen(last), kickoff)
        if seen >= kickoff - window:
            return ClosingLine(last.prices, CloseOrigin.LIVE, last.captured_at, seen)
    closing = [quote for quote in quotes if quote.phase is Phase.CLOSING]
    if closing:
        last = max(closing, key=_captured)
        return ClosingLine(last.prices, CloseOrigin.SEASON_FILE, last.captured_at)
    return None


@dataclass(frozen=True, slots=True)
class TableCloses:
    """Per match of a :class:`MatchTable`, the position in its :class:`QuoteTable` of the
    reference's close (-1: none) and whether that close is a live one."""

    quote: NDArray[np.intp]
    live: NDArray[np.bool_]

    @property
    def found(self) -> NDArray[np.bool_]:
        found: NDArray[np.bool_] = self.quote >= 0
        return found


def closing_quotes(
    matches: MatchTable,
    quotes: QuoteTable,
    window: dt.timedelta,
    reference: str = defaults.CLOSING_BOOKMAKER,
) -> TableCloses:
    """:func:`closing_line` over tables, for every match at once: the ``reference``'s (however
    spelled) latest pre-match quote captured before kickoff, if seen to hold within the
    ``window`` before kickoff; else its latest closing-phase quote valid before kickoff (a
    season file's, whose quotes have no capture time); else none."""
    position = np.full(len(matches), -1, dtype=np.intp)
    live = np.zeros(len(matches), dtype=bool)
    codes, code_of_quote = np.unique(quotes.bookmaker, return_inverse=True)
    key = bookmaker_key(reference)
    of_reference = np.array([bookmaker_key(str(code)) == key for code in codes], dtype=bool)
    at = np.flatnonzero(of_reference[code_of_quote]) if len(codes) else np.zeros(0, np.intp)
    # One spelling of the reference, so that each match has one group of its quotes.
    reference_quotes = replace(quotes.rows(at), bookmaker=np.full(len(at), key))
    closing = select_latest_valid(matches, reference_quotes, Phase.CLOSING)
    position[reference_quotes.match[closing]] = at[closing]
    last = _latest_pre_match(matches, reference_quotes)
    seen = _seen_to_hold(reference_quotes, matches.kickoff, last)
    held = seen >= matches.kickoff[reference_quotes.match[last]] - window.total_seconds()
    position[reference_quotes.match[last[held]]] = at[last[held]]
    live[reference_quotes.match[last[held]]] = True
    return TableCloses(position, live)


def _latest_pre_match(matches: MatchTable, quotes: QuoteTable) -> NDArray[np.intp]:
    """Per match, the position of its latest pre-match quote captured before kickoff."""
    captured = quotes.captured_at
    before = np.zeros(len(quotes), dtype=bool)
    dated = ~np.isnan(captured)
    before[dated] = captured[dated] < matches.kickoff[quotes.match[dated]]
    candidates = np.flatnonzero(before & (quotes.phase == Phase.PRE))
    if candidates.size == 0:
        return candidates
    latest = latest_of_groups(
        quotes.match[candidates], captured[candidates], quotes.received_at[candidates]
    )
    return candidates[latest]


def _seen_to_hold(
    quotes: QuoteTable, kickoff: NDArray[np.float64], at: NDArray[np.intp]
) -> NDArray[np.float64]:
    """The latest moment the quotes ``at`` were seen to hold: seen again (never before their
    capture), else captured; counted up to their match's kickoff."""
    captured = quotes.captured_at[at]
    seen = np.fmax(quotes.seen_at[at], captured)
    held: NDArray[np.float64] = np.minimum(seen, kickoff[quotes.match[at]])
    return held


def _captured(quote: ReferenceQuote) -> dt.datetime:
    return quote.captured_at or dt.datetime.min.replace(tzinfo=dt.UTC)


def _last_seen(quote: ReferenceQuote) -> dt.datetime:
    # A sighting is never before the capture (a clock ahead of the feed's aside).
    if quote.seen_at is None:
        return _captured(quote)
    return max(quote.seen_at, _captured(quote))


@dataclass(frozen=True, slots=True)
class FlagToScore:
    """A flag of a settled match: its outcome and the net price it was raised at."""

    id: int
    outcome: str
    net_price: float


@dataclass(frozen=True, slots=True)
class FlagScore:
    """How a flag fared: its flat return (a stake of 1 at the net price it was raised at)
    and, with a closing line, the close's probability of its outcome and its CLV."""

    id: int
    result: str
    flat_return: float
    closing_probability: float | None
    clv: float | None


def score_flags(
    flags: Sequence[FlagToScore], result: str, close: ClosingLine | None
) -> list[FlagScore]:
    """Each flag of one match scored: ``net price − 1`` or ``−1``, and
    ``CLV = net price × p_close(outcome) − 1`` with the close de-margined by the closing
    method (power), as the track record measures it."""
    if not flags:
        return []
    net = np.array([flag.net_price for flag in flags], dtype=np.float64)
    won = np.array([flag.outcome == result for flag in flags])
    returns = np.where(won, net - 1.0, -1.0)
    if close is None:
        return [
            FlagScore(flag.id, result, float(value), None, None)
            for flag, value in zip(flags, returns.tolist(), strict=True)
        ]
    line = demargin([close.prices], CLOSING_METHOD).probabilities[0]
    probability = line[[OUTCOME_INDEX[flag.outcome] for flag in flags]]
    clv = closing_line_value(net, probability)
    return [
        FlagScore(flag.id, result, value, p, c)
        for flag, value, p, c in zip(
            flags, returns.tolist(), probability.tolist(), clv.tolist(), strict=True
        )
    ]
