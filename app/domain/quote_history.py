"""Which quotes of a price history to keep when it is thinned.

Per match, bookmaker and phase, a history keeps:

* every undated quote (a season file's: nothing says when it was offered);
* the opening, its earliest capture;
* the close, its latest quote valid before kickoff (the rule of
  :func:`app.domain.training.select_latest_valid`, which the refit, the board and every
  prediction read), and whatever the flag ledger reads as the match's closing line
  (:func:`app.domain.flags.closing_quotes`), so no served or scored figure moves;
* the latest quote, whenever it was captured;
* the last capture of each ``interval`` (UTC buckets counted from the epoch: with six hours,
  00:00–06:00, 06:00–12:00, ...), for the chart of the match's prices.

Recency is the one rule of :func:`app.domain.training.latest_of_groups` (credible capture
time, then arrival); a quote indistinguishable by both from a kept one is kept too, since the
readers' choice between them falls to the order rows come back in. Every quote a second pass
would look at was kept by the first, so thinning again removes nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.domain.flags import CLOSING_WINDOW, closing_quotes
from app.domain.tables import MatchTable, QuoteTable
from app.domain.training import latest_of_groups, select_latest_valid
from app.domain.vocabulary import Phase


@dataclass(frozen=True, slots=True)
class ThinningRule:
    """One quote kept per ``interval`` of each history (besides the opening, the close and
    the latest); ``closing_window`` is the flag ledger's (``ODDSBOOST_CLOSING_WINDOW_MINUTES``)."""

    interval: dt.timedelta
    closing_window: dt.timedelta = CLOSING_WINDOW

    def __post_init__(self) -> None:
        if self.interval <= dt.timedelta(0):
            raise ValueError(f"the interval must be positive, not {self.interval}")


def quotes_to_keep(
    matches: MatchTable, quotes: QuoteTable, rule: ThinningRule
) -> NDArray[np.bool_]:
    """Per quote of ``quotes`` (the whole stored history of each match of ``matches``),
    whether thinning by ``rule`` keeps it."""
    keep = np.isnan(quotes.captured_at)
    if len(quotes) == 0:
        return keep
    history = _histories(quotes)
    keep[latest_of_groups(history, quotes.captured_at, quotes.received_at)] = True
    keep[_closes(matches, quotes, rule.closing_window)] = True
    dated = np.flatnonzero(~np.isnan(quotes.captured_at))
    if dated.size:
        of_dated, dated_quotes = history[dated], quotes.rows(dated)
        keep[dated[_openings(of_dated, dated_quotes)]] = True
        keep[dated[_last_of_each_interval(of_dated, dated_quotes, rule.interval)]] = True
    return _with_ties(keep, history, quotes)


def _histories(quotes: QuoteTable) -> NDArray[np.intp]:
    """A number per quote, the same for the quotes of one match, bookmaker and phase."""
    _, bookmaker = np.unique(quotes.bookmaker, return_inverse=True)
    _, phase = np.unique(quotes.phase, return_inverse=True)
    key = np.stack([quotes.match, bookmaker.reshape(-1), phase.reshape(-1)])
    _, history = np.unique(key, axis=1, return_inverse=True)
    result: NDArray[np.intp] = history.reshape(-1).astype(np.intp)
    return result


def _closes(matches: MatchTable, quotes: QuoteTable, window: dt.timedelta) -> NDArray[np.intp]:
    """Positions of the latest valid quote of each history, and of each match's closing line
    as the flag ledger reads it."""
    latest_valid = [
        select_latest_valid(matches, quotes, Phase(phase)) for phase in np.unique(quotes.phase)
    ]
    ledger = closing_quotes(matches, quotes, window)
    return np.concatenate([*latest_valid, ledger.quote[ledger.found]]).astype(np.intp)


def _openings(history: NDArray[np.intp], dated: QuoteTable) -> NDArray[np.intp]:
    """Positions in ``dated`` of each history's earliest capture (then earliest arrival)."""
    return latest_of_groups(history, -dated.captured_at, -dated.received_at)


def _last_of_each_interval(
    history: NDArray[np.intp], dated: QuoteTable, interval: dt.timedelta
) -> NDArray[np.intp]:
    """Positions in ``dated`` of the latest capture of each history in each interval."""
    bucket = np.floor(dated.captured_at / interval.total_seconds()).astype(np.int64)
    _, group = np.unique(np.stack([history.astype(np.int64), bucket]), axis=1, return_inverse=True)
    return latest_of_groups(group.reshape(-1), dated.captured_at, dated.received_at)


def _with_ties(
    keep: NDArray[np.bool_], history: NDArray[np.intp], quotes: QuoteTable
) -> NDArray[np.bool_]:
    """``keep``, and every quote of the same history with the same capture and arrival as
    a kept one."""
    captured = np.where(np.isnan(quotes.captured_at), -np.inf, quotes.captured_at)
    order = np.lexsort((quotes.received_at, captured, history))
    changes = np.zeros(max(len(order) - 1, 0), dtype=bool)
    for column in (history, captured, quotes.received_at):
        ordered = column[order]
        changes |= ordered[1:] != ordered[:-1]
    run = np.empty(len(order), dtype=np.intp)
    run[order] = np.r_[0, np.cumsum(changes)]
    kept_runs = np.zeros(len(order), dtype=bool)
    kept_runs[run[keep]] = True
    result: NDArray[np.bool_] = kept_runs[run]
    return result
