"""The prices of a fold's test matches, straight from the quote table, laid out over the
wanted matches in their order with NaN where a bookmaker did not quote."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from app.domain.odds import demargin
from app.domain.records import OUTCOMES
from app.domain.tables import MatchTable, QuoteTable, positions_of
from app.domain.training import select_latest_valid
from app.domain.vocabulary import Method, Phase


def quoted_prices(
    matches: MatchTable,
    quotes: QuoteTable,
    match_ids: NDArray[np.int64],
    bookmakers: Sequence[str],
    phase: Phase,
) -> NDArray[np.float64]:
    """``prices[match, bookmaker, outcome]`` of ``match_ids``: each bookmaker's latest quote
    of ``phase`` captured before kickoff (``select_latest_valid``, the one rule of recency)."""
    prices = np.full((len(match_ids), len(bookmakers), len(OUTCOMES)), np.nan)
    chosen = select_latest_valid(matches, quotes, phase)
    column = {code: index for index, code in enumerate(bookmakers)}
    columns = np.array([column.get(code, -1) for code in quotes.bookmaker[chosen]], dtype=np.intp)
    row_of_match = np.full(len(matches), -1, dtype=np.intp)
    present = positions_of(matches.ids, match_ids)
    row_of_match[present[present >= 0]] = np.flatnonzero(present >= 0)
    rows = row_of_match[quotes.match[chosen]] if len(chosen) else np.empty(0, dtype=np.intp)
    used = (rows >= 0) & (columns >= 0)
    prices[rows[used], columns[used]] = quotes.prices[chosen[used]]
    return prices


def fair_line(prices: NDArray[np.float64], method: Method) -> NDArray[np.float64]:
    """One bookmaker's ``prices[match, outcome]`` de-margined; NaN rows where it did not
    quote or its de-margining did not converge."""
    line = np.full(prices.shape, np.nan)
    quoted = ~np.isnan(prices).any(axis=1)
    if quoted.any():
        converted = demargin(prices[quoted], method)
        probabilities = np.where(converted.converged[:, None], converted.probabilities, np.nan)
        line[quoted] = probabilities
    return line
