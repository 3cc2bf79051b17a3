"""Bodies of the public read endpoints: matches with their quotes, and the reference lists."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.domain.records import Outcome
from app.domain.vocabulary import MatchStatus, Phase

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
    model_config = ConfigDict(from_attributes=True, json_schema_extra={"examples": [MATCH_EXAMPLE]})

    id: int
    competition: str
    season: str
    kickoff: dt.datetime
    kickoff_time_known: bool = Field(description="False when the source gave the date only.")
    home_team: str
    away_team: str
    home_goals: int | None
    away_goals: int | None
    result: Outcome | None
    status: MatchStatus
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
        from_attributes=True,
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
        },
    )


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
