"""Request and response bodies of the HTTP API (pydantic v2), separate from the ORM models."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, model_validator

from app.domain.records import (
    CODE_MAX_LENGTH,
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    Skipped,
    as_utc,
    check_external_id,
    check_price,
    check_team_name,
    optional_season,
)
from app.domain.vocabulary import Phase
from app.services.ingest import IngestReport, MatchIdentity, ResultItem

MAX_ITEMS_PER_REQUEST = 10_000
# Largest id or offset accepted: the range of a 32-bit integer column.
MAX_ID = 2**31 - 1

ItemT = TypeVar("ItemT")

Price = Annotated[
    float,
    Strict(),
    AfterValidator(check_price),
    Field(description="Decimal odds, 1.0 < price ≤ 1000.", examples=[2.1]),
]
TeamName = Annotated[
    str,
    AfterValidator(check_team_name),
    Field(description="Trimmed; 1-100 characters; stored verbatim.", examples=["Man United"]),
]
Code = Annotated[
    str,
    Field(
        min_length=1,
        max_length=CODE_MAX_LENGTH,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$",
        examples=["E0"],
    ),
]
UtcDateTime = Annotated[
    dt.datetime,
    AfterValidator(as_utc),
    Field(description="ISO 8601; a timestamp without an offset is taken as UTC."),
]


def _optional_external_id(value: str | None) -> str | None:
    return None if value is None else check_external_id(value)


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MatchRef(StrictModel):
    """Identifies a match: competition, teams and kickoff date, or the source's external id."""

    competition: Code
    kickoff: UtcDateTime
    home_team: TeamName
    away_team: TeamName
    external_id: Annotated[str | None, AfterValidator(_optional_external_id)] = None
    season: Annotated[str | None, AfterValidator(optional_season)] = Field(
        default=None,
        description="Defaults to the August-July season of the kickoff.",
        examples=["2018/19"],
    )

    @model_validator(mode="after")
    def _distinct_teams(self) -> MatchRef:
        if self.home_team == self.away_team:
            raise ValueError("home_team and away_team must differ")
        return self

    def to_record(self, where: str) -> MatchRecord:
        return MatchRecord(
            competition=self.competition,
            home_team=self.home_team,
            away_team=self.away_team,
            kickoff=self.kickoff,
            season=self.season,
            external_id=self.external_id,
            where=where,
        )

    def to_identity(self) -> MatchIdentity:
        return MatchIdentity(
            competition=self.competition,
            home_team=self.home_team,
            away_team=self.away_team,
            kickoff=self.kickoff,
            external_id=self.external_id,
        )


class QuoteIn(StrictModel):
    match: MatchRef
    bookmaker: Annotated[Code, Field(examples=["B365"])]
    home: Price
    draw: Price
    away: Price
    phase: Phase = Phase.PRE
    captured_at: UtcDateTime | None = Field(
        default=None, description="When the bookmaker offered these prices, if known."
    )


class OddsUpload(StrictModel):
    quotes: Annotated[list[QuoteIn], Field(min_length=1, max_length=MAX_ITEMS_PER_REQUEST)]

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "quotes": [
                        {
                            "match": {
                                "competition": "E0",
                                "kickoff": "2018-08-10T19:00:00Z",
                                "home_team": "Man United",
                                "away_team": "Leicester",
                                "external_id": None,
                            },
                            "bookmaker": "B365",
                            "home": 1.57,
                            "draw": 3.9,
                            "away": 7.5,
                            "phase": "pre",
                            "captured_at": None,
                        }
                    ]
                }
            ]
        },
    )

    def to_batch(self) -> IngestBatch:
        batch = IngestBatch(rows_read=len(self.quotes))
        for index, quote in enumerate(self.quotes):
            batch.matches.append(quote.match.to_record(f"quotes[{index}]"))
            batch.quotes.append(
                QuoteRecord(
                    match=index,
                    bookmaker=quote.bookmaker,
                    phase=quote.phase,
                    home=quote.home,
                    draw=quote.draw,
                    away=quote.away,
                    captured_at=quote.captured_at,
                    where=f"quotes[{index}]",
                )
            )
        return batch


Goals = Annotated[int, Strict(), Field(ge=0, le=99)]
# A JSON integer only: "3", true or 3.0 are a client's mistake, not match 3 or match 1.
MatchId = Annotated[int, Strict(), Field(ge=1, le=MAX_ID)]


class ResultIn(StrictModel):
    match: MatchRef | None = None
    match_id: MatchId | None = None
    home_goals: Goals
    away_goals: Goals

    @model_validator(mode="after")
    def _one_reference(self) -> ResultIn:
        if (self.match is None) == (self.match_id is None):
            raise ValueError("give exactly one of 'match' and 'match_id'")
        return self

    def to_item(self) -> ResultItem:
        return ResultItem(
            home_goals=self.home_goals,
            away_goals=self.away_goals,
            match_id=self.match_id,
            match=None if self.match is None else self.match.to_identity(),
        )


class ResultsUpload(StrictModel):
    results: Annotated[list[ResultIn], Field(min_length=1, max_length=MAX_ITEMS_PER_REQUEST)]

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "results": [
                        {"match_id": 12, "home_goals": 2, "away_goals": 1},
                        {
                            "match": {
                                "competition": "E0",
                                "kickoff": "2018-08-10T19:00:00Z",
                                "home_team": "Man United",
                                "away_team": "Leicester",
                            },
                            "home_goals": 2,
                            "away_goals": 1,
                        },
                    ]
                }
            ]
        },
    )


class SkippedOut(BaseModel):
    where: str = Field(examples=["row 532"])
    field: str | None = Field(default=None, examples=["B365H"])
    reason: str = Field(examples=["price 0 must be greater than 1.0 (decimal odds)"])

    @classmethod
    def of(cls, skipped: Skipped) -> SkippedOut:
        return cls(where=skipped.where, field=skipped.field, reason=skipped.reason)


class IngestResponse(BaseModel):
    """What an ingest changed. Sending the same payload again gives only "unchanged" counts."""

    matches_created: int
    matches_updated: int
    matches_unchanged: int
    quotes_inserted: int
    quotes_updated: int
    quotes_unchanged: int
    results_set: int
    rows_read: int
    skipped: list[SkippedOut]

    @classmethod
    def of(cls, report: IngestReport) -> IngestResponse:
        return cls(
            matches_created=report.matches_created,
            matches_updated=report.matches_updated,
            matches_unchanged=report.matches_unchanged,
            quotes_inserted=report.quotes_inserted,
            quotes_updated=report.quotes_updated,
            quotes_unchanged=report.quotes_unchanged,
            results_set=report.results_set,
            rows_read=report.rows_read,
            skipped=[SkippedOut.of(s) for s in report.skipped],
        )


class AliasIn(StrictModel):
    alias: TeamName = Field(examples=["Manchester United"])
    team: TeamName = Field(examples=["Man United"])


class AliasOut(BaseModel):
    alias: str
    team: str
    created: bool
    merged_team: bool = Field(
        description="A team stored under the alias name was merged into the target team."
    )
    matches_moved: int
    matches_merged: int
    quotes_moved: int


class TeamOut(BaseModel):
    id: int
    name: str
    aliases: list[str]

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"id": 7, "name": "Man United", "aliases": ["Manchester United"]}]
        }
    )


class CompetitionOut(BaseModel):
    code: str
    name: str | None
    matches: int

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"code": "E0", "name": None, "matches": 7600}]}
    )


class BookmakerOut(BaseModel):
    code: str = Field(examples=["PS"])
    name: str = Field(examples=["Pinnacle"])
    quotes: int = Field(description="Number of stored quotes.")


MATCH_EXAMPLE: dict[str, Any] = {
    "id": 17,
    "competition": "E0",
    "season": "2018/19",
    "kickoff": "2018-08-10T19:00:00Z",
    "kickoff_time_known": True,
    "home_team": "Man United",
    "away_team": "Leicester",
    "home_goals": 2,
    "away_goals": 1,
    "result": "1",
    "status": "settled",
    "external_id": None,
}


class MatchOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [MATCH_EXAMPLE]})

    id: int
    competition: str
    season: str
    kickoff: dt.datetime
    kickoff_time_known: bool = Field(description="False when the source gave the date only.")
    home_team: str
    away_team: str
    home_goals: int | None
    away_goals: int | None
    result: Literal["1", "X", "2"] | None
    status: Literal["upcoming", "unsettled", "settled"]
    external_id: str | None


class QuoteOut(BaseModel):
    bookmaker: str
    bookmaker_name: str
    phase: Phase
    home: float
    draw: float
    away: float
    captured_at: dt.datetime | None
    received_at: dt.datetime


class MatchDetailOut(MatchOut):
    quotes: list[QuoteOut] = Field(
        description="The latest quote of each bookmaker in each phase (pre-match first)."
    )

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    **MATCH_EXAMPLE,
                    "quotes": [
                        {
                            "bookmaker": "B365",
                            "bookmaker_name": "Bet365",
                            "phase": "pre",
                            "home": 1.57,
                            "draw": 3.9,
                            "away": 7.5,
                            "captured_at": None,
                            "received_at": "2026-11-21T14:42:49Z",
                        }
                    ],
                }
            ]
        }
    )


class Page(BaseModel, Generic[ItemT]):
    items: list[ItemT]
    total: int
    limit: int
    offset: int
