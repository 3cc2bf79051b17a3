"""A match's close over tables (``closing_quotes``, what a fit toward the close learns) is
the flag ledger's close (``closing_line``) of the same quotes, match by match."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from app.domain.flags import CloseOrigin, ReferenceQuote, closing_line, closing_quotes
from app.domain.tables import QuoteRow, tables_from_rows
from app.domain.vocabulary import Phase

KICKOFF = dt.datetime(2026, 3, 7, 15, 0, tzinfo=dt.UTC)
WINDOW = dt.timedelta(minutes=30)
MINUTE = dt.timedelta(minutes=1)
HOUR = dt.timedelta(hours=1)

# Per match: (bookmaker, phase, captured before kickoff, seen again before kickoff, prices);
# a time None where there is none. Every quote arrives a minute after its capture.
Quote = tuple[str, Phase, dt.timedelta | None, dt.timedelta | None, tuple[float, float, float]]
MATCHES: dict[int, list[Quote]] = {
    # Unchanged for three hours, fetched again ten minutes before kickoff: live.
    1: [("PS", Phase.PRE, 3 * HOUR, 10 * MINUTE, (2.0, 3.5, 4.0))],
    # Last seen three hours before kickoff: the season file's closing price.
    2: [
        ("PS", Phase.PRE, 3 * HOUR, None, (2.0, 3.5, 4.0)),
        ("PS", Phase.CLOSING, None, None, (2.1, 3.4, 3.9)),
    ],
    # Last seen three hours before kickoff, no closing price: no close.
    3: [("PS", Phase.PRE, 3 * HOUR, None, (2.0, 3.5, 4.0))],
    # The latest capture is the close, though an older one was seen again later.
    4: [
        ("PS", Phase.PRE, 2 * HOUR, 5 * MINUTE, (2.0, 3.5, 4.0)),
        ("PS", Phase.PRE, 20 * MINUTE, None, (2.2, 3.4, 3.5)),
    ],
    # Pinnacle spelled by its name.
    5: [("Pinnacle", Phase.PRE, 15 * MINUTE, None, (1.8, 3.6, 5.0))],
    # Captured after kickoff: not a pre-match price; the closing price instead.
    6: [
        ("PS", Phase.PRE, -5 * MINUTE, None, (2.0, 3.5, 4.0)),
        ("PS", Phase.CLOSING, None, None, (2.1, 3.4, 3.9)),
    ],
    # Seen again after kickoff: it held up to kickoff.
    7: [("PS", Phase.PRE, HOUR, -2 * HOUR, (2.5, 3.2, 3.0))],
    # An undated pre-match price is no live close.
    8: [
        ("PS", Phase.PRE, None, None, (2.0, 3.5, 4.0)),
        ("PS", Phase.CLOSING, None, None, (2.1, 3.4, 3.9)),
    ],
    # Another bookmaker's prices are nobody's close.
    9: [("B365", Phase.PRE, 5 * MINUTE, None, (2.0, 3.5, 4.0))],
    # Seen again exactly at the window's edge.
    10: [("PS", Phase.PRE, 2 * HOUR, 30 * MINUTE, (2.3, 3.3, 3.3))],
    # Just outside it.
    11: [("PS", Phase.PRE, 2 * HOUR, 31 * MINUTE, (2.3, 3.3, 3.3))],
}


def before(offset: dt.timedelta | None) -> dt.datetime | None:
    return None if offset is None else KICKOFF - offset


def quote_rows() -> list[QuoteRow]:
    rows: list[QuoteRow] = []
    for match_id, quotes in MATCHES.items():
        for code, phase, captured, seen, prices in quotes:
            at = before(captured)
            received = None if at is None else at + MINUTE
            rows.append((match_id, code, phase, at, received, *prices, before(seen)))
    return rows


def reference_quotes(match_id: int) -> list[ReferenceQuote]:
    """The match's quotes of Pinnacle, as the ledger reads them."""
    return [
        ReferenceQuote(phase, prices, before(captured), before(seen))
        for code, phase, captured, seen, prices in MATCHES[match_id]
        if code != "B365"
    ]


def test_the_close_over_tables_is_the_ledgers_close_match_by_match() -> None:
    match_rows = [(match_id, KICKOFF, "1", "E0", "2025/26") for match_id in MATCHES]
    matches, quotes = tables_from_rows(match_rows, quote_rows())

    closes = closing_quotes(matches, quotes, WINDOW)

    origins: list[CloseOrigin | None] = []
    for row, match_id in enumerate(matches.ids.tolist()):
        line = closing_line(reference_quotes(match_id), KICKOFF, WINDOW)
        if line is None:
            assert closes.quote[row] == -1, match_id
            origins.append(None)
            continue
        assert tuple(quotes.prices[closes.quote[row]].tolist()) == line.prices, match_id
        assert closes.live[row] == (line.origin is CloseOrigin.LIVE), match_id
        origins.append(line.origin)
    # The cases are the ones their comments say (read by hand).
    live, filed = CloseOrigin.LIVE, CloseOrigin.SEASON_FILE
    assert origins == [live, filed, None, live, live, filed, live, filed, None, live, None]
    assert closes.found.tolist() == [origin is not None for origin in origins]


def test_tables_without_quotes_have_no_close() -> None:
    matches, quotes = tables_from_rows([(1, KICKOFF, "1", "E0", "2025/26")], [])

    closes = closing_quotes(matches, quotes, WINDOW)

    assert closes.quote.tolist() == [-1]
    assert not closes.live.any()


@pytest.mark.parametrize("minutes", [9, 10])
def test_the_window_decides_a_live_close(minutes: int) -> None:
    # Pinnacle's price was last seen ten minutes before kickoff.
    rows: list[QuoteRow] = [
        (1, "PS", Phase.PRE, KICKOFF - HOUR, KICKOFF - HOUR, 2.0, 3.5, 4.0, KICKOFF - 10 * MINUTE)
    ]
    matches, quotes = tables_from_rows([(1, KICKOFF, "1", "E0", "2025/26")], rows)

    closes = closing_quotes(matches, quotes, dt.timedelta(minutes=minutes))

    assert closes.live.tolist() == [minutes == 10]
    assert np.array_equal(closes.found, closes.live)
