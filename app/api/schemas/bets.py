"""The bettor's book (POST, GET, PATCH /bets): a bet as sent, as corrected, and as the book
shows it, with its match, how it fared and its audit trail."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, Strict, StrictFloat, StrictStr, field_validator

from app.api.schemas.common import (
    MAX_ID,
    STORED_MATCH_EXAMPLE,
    AnswerModel,
    MatchId,
    StoredMatchOut,
    StrictModel,
    with_examples,
)
from app.domain.bets import (
    BET_NOTE_MAX_LENGTH,
    MAX_DECIMAL_PRICE,
    MIN_DECIMAL_PRICE,
    PRICE_TEXT_MAX_LENGTH,
    STAKE_MAX,
    BetChangeKind,
    BetChannel,
    BetDraft,
    BetStatus,
)
from app.domain.fields import UtcDateTime, text_rule
from app.domain.flags import CloseOrigin
from app.domain.records import CODE_MAX_LENGTH, Outcome
from app.services.bets import BetCorrection

FlagId = Annotated[int, Strict(), Field(ge=1, le=MAX_ID)]
TypedPrice = Annotated[
    Annotated[StrictFloat, Field(ge=MIN_DECIMAL_PRICE, le=MAX_DECIMAL_PRICE)]
    | Annotated[StrictStr, Field(max_length=PRICE_TEXT_MAX_LENGTH)],
    Field(
        description="The price you got: a JSON number (decimal odds, 1.001 to 1001) or the "
        'text you typed: decimal "2.5", fractional "5/2", American "+150" or "-200", or '
        '"evens". Stored as decimal odds, the text kept.',
        examples=["5/2", 2.5, "+150"],
    ),
]
Stake = Annotated[
    StrictFloat,
    Field(
        gt=0,
        le=STAKE_MAX,
        allow_inf_nan=False,
        description="The stake the bookmaker accepted (a partial fill: the part matched).",
        examples=[10.0],
    ),
]
Bookmaker = Annotated[
    str,
    Field(
        description="Where you placed it: a known bookmaker by code or name (stored as its "
        "code), or any other name, 1-64 characters.",
        examples=["B365"],
        json_schema_extra=text_rule(CODE_MAX_LENGTH),
    ),
]
Note = Annotated[
    str,
    Field(
        description="Your note, 1-500 characters, no control characters.",
        examples=["took the early price"],
        json_schema_extra=text_rule(BET_NOTE_MAX_LENGTH),
    ),
]
PlacedAt = Annotated[
    UtcDateTime,
    Field(
        description="When you placed it (ISO 8601; UTC if naive); not in the future.",
        examples=["2018-08-10T12:00:00Z"],
    ),
]

BET_IN_EXAMPLE: dict[str, JsonValue] = {
    "match_id": 17,
    "outcome": "1",
    "bookmaker": "B365",
    "price": "5/2",
    "stake": 10.0,
    "placed_at": "2018-08-10T12:00:00Z",
    "note": "took the early price",
}


def price_text(price: float | str) -> str:
    """A price as the book keeps its text: as typed, or a number written back plainly."""
    return price if isinstance(price, str) else f"{price:.12g}"


class BetIn(StrictModel):
    """A bet you placed."""

    model_config = with_examples(BET_IN_EXAMPLE)

    match_id: MatchId = Field(description="The stored match.", examples=[17])
    outcome: Outcome = Field(description="1 (home win), X (draw) or 2 (away win).", examples=["1"])
    bookmaker: Bookmaker
    price: TypedPrice
    stake: Stake
    placed_at: PlacedAt | None = Field(
        default=None,
        description="When you placed it (ISO 8601; UTC if naive); not in the future; absent: now.",
        examples=["2018-08-10T12:00:00Z"],
    )
    flag_id: FlagId | None = Field(
        default=None,
        description="The flag (GET /flags) you followed: of the same match and outcome. The "
        "bet takes its value source as its `source`.",
        examples=[4],
    )
    note: Note | None = Field(
        default=None,
        description="Your note, 1-500 characters, no control characters.",
        examples=["took the early price"],
    )

    def draft(self, now: dt.datetime) -> BetDraft:
        return BetDraft(
            match_id=self.match_id,
            outcome=self.outcome,
            bookmaker=self.bookmaker,
            price_text=price_text(self.price),
            stake=self.stake,
            placed_at=self.placed_at or now,
            flag_id=self.flag_id,
            note=self.note,
        )


def _never_null(schema: dict[str, JsonValue]) -> None:
    """A field of a correction that may be left out, never sent as null: its schema without
    the null branch (null is refused: a bet always has one)."""
    branches = schema.pop("anyOf", None)
    if not isinstance(branches, list):
        return
    kept = [branch for branch in branches if branch != {"type": "null"}]
    if len(kept) == 1 and isinstance(kept[0], dict):
        schema.update(kept[0])
    else:
        schema["anyOf"] = kept
    schema.pop("default", None)


BET_PATCH_EXAMPLE: dict[str, JsonValue] = {"price": "11/4", "stake": 12.5}


class BetPatch(StrictModel):
    """A correction: the fields given replace the bet's (`null` removes a note or a flag);
    `status` `void` voids the bet, `open` undoes a void."""

    model_config = with_examples(BET_PATCH_EXAMPLE, {"status": "void"})

    outcome: Outcome | None = Field(
        json_schema_extra=_never_null, default=None, description="1, X or 2.", examples=["X"]
    )
    bookmaker: Bookmaker | None = Field(
        json_schema_extra=_never_null,
        default=None,
        description="Where you placed it (a known bookmaker is stored as its code).",
        examples=["WH"],
    )
    price: TypedPrice | None = Field(
        json_schema_extra=_never_null,
        default=None,
        description="The price, as a number or as typed (2.5, 5/2, +150, -200, evens).",
        examples=["11/4"],
    )
    stake: Stake | None = Field(
        json_schema_extra=_never_null,
        default=None,
        description="The stake matched.",
        examples=[12.5],
    )
    placed_at: PlacedAt | None = Field(
        json_schema_extra=_never_null,
        default=None,
        description="When you placed it (ISO 8601; UTC if naive); not in the future.",
        examples=["2018-08-10T12:30:00Z"],
    )
    note: Note | None = Field(
        default=None, description="Your note; null removes it.", examples=["corrected stake"]
    )
    flag_id: FlagId | None = Field(
        default=None, description="The flag you followed; null unlinks it.", examples=[4]
    )
    status: Literal["void", "open"] | None = Field(
        json_schema_extra=_never_null,
        default=None,
        description="void: the bet was voided (the stake comes back); open: undo a void.",
        examples=["void"],
    )

    @field_validator("outcome", "bookmaker", "price", "stake", "placed_at", "status", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("a bet always has one; leave the field out to keep it")
        return value

    def correction(self) -> BetCorrection:
        given = set(self.model_fields_set)
        values: dict[str, Any] = {
            name: getattr(self, name)
            for name in ("outcome", "bookmaker", "stake", "placed_at", "note", "flag_id")
        }
        if self.price is not None:
            values["price_text"] = price_text(self.price)
        if "price" in given:
            given.add("price_text")
        if "status" in given:
            given.add("void")
        return BetCorrection(
            **values,
            void=None if self.status is None else self.status == "void",
            given=frozenset(given),
        )


# --- answers -------------------------------------------------------------------------------

BET_MATCH_EXAMPLE: dict[str, JsonValue] = {**STORED_MATCH_EXAMPLE, "result": "1"}
CHANGE_EXAMPLE: dict[str, JsonValue] = {
    "id": 7,
    "change": "created",
    "channel": "api",
    "at": "2026-11-20T09:05:00Z",
    "before": None,
    "after": {
        "match_id": 17,
        "outcome": "1",
        "bookmaker": "B365",
        "price": 3.5,
        "price_text": "5/2",
        "stake": 10.0,
        "placed_at": "2026-11-20T09:00:00+00:00",
        "flag_id": None,
        "source": None,
        "note": None,
        "status": "open",
    },
}
BET_EXAMPLE: dict[str, JsonValue] = {
    "id": 3,
    "match": BET_MATCH_EXAMPLE,
    "outcome": "1",
    "bookmaker": "B365",
    "price": 3.5,
    "price_text": "5/2",
    "stake": 10.0,
    "placed_at": "2026-11-20T09:00:00Z",
    "flag_id": None,
    "source": None,
    "note": None,
    "status": "won",
    "returned": 35.0,
    "profit": 25.0,
    "clv": 0.0769,
    "closing_probability": 0.3077,
    "close": {"price": 3.1, "origin": "live", "captured_at": "2026-11-22T14:52:00Z"},
    "settled_at": "2026-11-22T17:00:00Z",
    "created_at": "2026-11-20T09:05:00Z",
    "updated_at": "2026-11-20T09:05:00Z",
}


class BetMatchOut(StoredMatchOut):
    """The bet's match, with its result once stored."""

    model_config = with_examples(BET_MATCH_EXAMPLE)

    result: Outcome | None


class BetCloseOut(AnswerModel):
    """The reference bookmaker's (Pinnacle's) close the bet was settled against."""

    price: float = Field(description="The close's price of the bet's outcome, as quoted.")
    origin: CloseOrigin = Field(
        description="live: its last pre-match quote before kickoff, seen to hold within "
        "ODDSBOOST_CLOSING_WINDOW_MINUTES before kickoff; season_file: the closing prices of "
        "a season file."
    )
    captured_at: dt.datetime | None = Field(description="When its prices were last updated.")


class BetOut(AnswerModel):
    """A bet of the book: as you gave it (price as decimal odds and as typed), and once its
    match's result is stored, how it fared and its CLV."""

    model_config = with_examples(BET_EXAMPLE)

    id: int
    match: BetMatchOut
    outcome: Outcome
    bookmaker: str
    price: float = Field(description="Decimal odds.")
    price_text: str = Field(description="The price as you gave it.")
    stake: float
    placed_at: dt.datetime
    flag_id: int | None = Field(description="The flag you followed (null: none, or deleted).")
    source: str | None = Field(description="The value source of that flag (null: no flag).")
    note: str | None
    status: BetStatus = Field(
        description="open: waiting for its result; won; lost; void: its stake returned, left "
        "out of ROI and CLV."
    )
    returned: float | None = Field(
        description="What came back, stake included: stake × price if won, 0 if lost, the "
        "stake if void; null while open."
    )
    profit: float | None = Field(description="returned − stake; null while open.")
    clv: float | None = Field(
        description="price × closing probability − 1: how far the price beat the close; null "
        "without a closing line, and for a void or open bet."
    )
    closing_probability: float | None = Field(
        description="The close's probability of the outcome, its margin removed by power."
    )
    close: BetCloseOut | None
    settled_at: dt.datetime | None = Field(description="When it was last settled (or voided).")
    created_at: dt.datetime
    updated_at: dt.datetime = Field(description="When you last corrected it.")


class BetChangeOut(AnswerModel):
    """One change of a bet's audit trail: appended, never edited."""

    model_config = with_examples(CHANGE_EXAMPLE)

    id: int
    change: BetChangeKind = Field(
        description="created; corrected (by you, or by a team merge moving it to the match "
        "its own was folded into); deleted."
    )
    channel: BetChannel = Field(description="api, cli, import, or merge.")
    at: dt.datetime
    before: dict[str, Any] | None = Field(description="Its fields before (null: created).")
    after: dict[str, Any] | None = Field(description="Its fields after (null: deleted).")


class BetDetailOut(BetOut):
    """A bet with its audit trail, oldest change first."""

    model_config = with_examples({**BET_EXAMPLE, "changes": [CHANGE_EXAMPLE]})

    changes: list[BetChangeOut]
