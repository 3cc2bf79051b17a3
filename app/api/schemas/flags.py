"""The flag ledger's answer (GET /flags): each flag as first raised, its events, and how it
fared; as JSON pages or as CSV rows."""

from __future__ import annotations

import csv
import datetime as dt
import io

from pydantic import Field, JsonValue

from app.api.schemas.common import (
    STORED_MATCH_EXAMPLE,
    AnswerModel,
    Page,
    StoredMatchOut,
    with_examples,
)
from app.domain.flags import CloseOrigin, FlagChange, FlagStatus
from app.domain.records import Outcome

FLAG_EXAMPLE: dict[str, JsonValue] = {
    "id": 4,
    "match": STORED_MATCH_EXAMPLE,
    "outcome": "2",
    "bookmaker": "B365",
    "price": 4.2,
    "net_price": 4.2,
    "expected_value": 0.05,
    "probability": 0.25,
    "value_source": "PS",
    "value_chain": "PS,consensus",
    "model_version": 3,
    "raised_at": "2026-11-20T09:00:00Z",
    "status": "settled",
    "best_net_price": 4.33,
    "result": "X",
    "flat_return": -1.0,
    "close": {
        "home": 1.95,
        "draw": 3.6,
        "away": 4.0,
        "origin": "live",
        "captured_at": "2026-11-22T11:58:00Z",
        "seen_at": "2026-11-22T14:50:00Z",
    },
    "closing_probability": 0.2431,
    "clv": 0.021,
    "settled_at": "2026-11-22T17:00:00Z",
    "events": [
        {
            "change": "improved",
            "at": "2026-11-21T09:00:00Z",
            "bookmaker": "WH",
            "price": 4.33,
            "net_price": 4.33,
            "expected_value": 0.0825,
            "probability": 0.25,
            "model_version": 3,
        }
    ],
}


class FlagEventOut(AnswerModel):
    change: FlagChange = Field(
        description="improved: a better net price for the outcome; withdrawn: no longer the "
        "match's value bet; raised_again: its value bet again."
    )
    at: dt.datetime
    bookmaker: str | None
    price: float | None
    net_price: float | None
    expected_value: float | None
    probability: float | None
    model_version: int | None


class FlagCloseOut(AnswerModel):
    """The closing line of the reference bookmaker (Pinnacle) the flag was scored against."""

    home: float
    draw: float
    away: float
    origin: CloseOrigin = Field(
        description="live: its last pre-match quote before kickoff, seen to hold within "
        "ODDSBOOST_CLOSING_WINDOW_MINUTES before kickoff; season_file: the closing prices of "
        "a season file."
    )
    captured_at: dt.datetime | None = Field(description="When its prices were last updated.")
    seen_at: dt.datetime | None = Field(
        description="A live close: the latest moment, kickoff at most, a feed saw its prices "
        "unchanged; null for a season file's."
    )


class FlagOut(AnswerModel):
    """A flag as first raised (never rewritten), where it stands, and how it fared."""

    model_config = with_examples(FLAG_EXAMPLE)

    id: int
    match: StoredMatchOut
    outcome: Outcome
    bookmaker: str
    price: float = Field(description="The price when raised, as quoted.")
    net_price: float = Field(description="What it pays after the bookmaker's commission.")
    expected_value: float
    probability: float
    value_source: str = Field(
        description="The link of the value source's chain that priced the flag: where its "
        "probability came from."
    )
    value_chain: str | None = Field(
        description="The value source's chain in force when the flag was raised; null for a "
        "flag raised before the chain was recorded."
    )
    model_version: int | None
    raised_at: dt.datetime
    status: FlagStatus
    best_net_price: float = Field(description="The best net price since first raised.")
    result: Outcome | None
    flat_return: float | None = Field(
        description="A stake of 1 at the net price when raised: net price − 1 or −1."
    )
    close: FlagCloseOut | None
    closing_probability: float | None = Field(
        description="The close's probability of the outcome, its margin removed by power."
    )
    clv: float | None = Field(
        description="net price × closing probability − 1; null without a closing line."
    )
    settled_at: dt.datetime | None
    events: list[FlagEventOut]


CSV_COLUMNS = (
    "id",
    "match_id",
    "competition",
    "home_team",
    "away_team",
    "kickoff",
    "outcome",
    "bookmaker",
    "price",
    "net_price",
    "expected_value",
    "probability",
    "value_source",
    "value_chain",
    "model_version",
    "raised_at",
    "status",
    "best_net_price",
    "result",
    "flat_return",
    "close_home",
    "close_draw",
    "close_away",
    "close_origin",
    "closing_probability",
    "clv",
    "settled_at",
)


def flags_csv(page: Page[FlagOut]) -> str:
    """The page's flags as CSV, one row a flag (its events left out), a header first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_row(flag) for flag in page.items)
    return out.getvalue()


def _row(flag: FlagOut) -> list[object]:
    close = flag.close
    return [
        flag.id,
        flag.match.id,
        flag.match.competition,
        flag.match.home_team,
        flag.match.away_team,
        _moment(flag.match.kickoff),
        flag.outcome,
        flag.bookmaker,
        flag.price,
        flag.net_price,
        flag.expected_value,
        flag.probability,
        flag.value_source,
        _blank(flag.value_chain),
        _blank(flag.model_version),
        _moment(flag.raised_at),
        flag.status.value,
        flag.best_net_price,
        _blank(flag.result),
        _blank(flag.flat_return),
        _blank(None if close is None else close.home),
        _blank(None if close is None else close.draw),
        _blank(None if close is None else close.away),
        _blank(None if close is None else close.origin.value),
        _blank(flag.closing_probability),
        _blank(flag.clv),
        _moment(flag.settled_at),
    ]


def _blank(value: object) -> object:
    return "" if value is None else value


def _moment(value: dt.datetime | None) -> str:
    return "" if value is None else value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
