"""Batches that raise a flag when ingested directly (not through the API), for the alerts'
tests and benchmark: the books of tests/flag_books.py's ``raise_away_flag``."""

from __future__ import annotations

import datetime as dt

from app.domain.records import IngestBatch, MatchRecord, QuoteRecord
from app.domain.vocabulary import Phase

KICKOFF = dt.datetime(2030, 1, 12, 15, tzinfo=dt.UTC)


def away_flag_batch(
    captured: dt.datetime, home: str = "Arsenal", away: str = "Chelsea"
) -> IngestBatch:
    """PS 2, 4, 4 and B365 2.5, 5, 2.5 for ``home`` v ``away`` in E0: with no model the
    away side at PS's 4.0 is flagged (EV 0.3; see tests/flag_books.py)."""
    match = MatchRecord(competition="E0", home_team=home, away_team=away, kickoff=KICKOFF)
    return IngestBatch(
        matches=[match],
        quotes=[
            QuoteRecord(0, "PS", Phase.PRE, 2.0, 4.0, 4.0, captured),
            QuoteRecord(0, "B365", Phase.PRE, 2.5, 5.0, 2.5, captured),
        ],
    )
