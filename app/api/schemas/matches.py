"""Bodies of the public read endpoints: matches with their quotes, and the reference lists.
A value that lives on a related row (a competition's code, a team's name) is read by its path.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import AliasPath, BeforeValidator, Field

from app.api.schemas.common import AnswerModel, StoredMatchOut, with_examples
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


def _of_match(*path: str) -> AliasPath:
    """Where a field of the answer is read in a ``MatchView``: on its stored match."""
    return AliasPath("match", *path)


class MatchOut(AnswerModel):
    model_config = with_examples(MATCH_EXAMPLE)

    id: int = Field(validation_alias=_of_match("id"))
    competition: str = Field(validation_alias=_of_match("competition", "code"))
    season: str = Field(validation_alias=_of_match("season"))
    kickoff: dt.datetime = Field(validation_alias=_of_match("kickoff"))
    kickoff_time_known: bool = Field(
        validation_alias=_of_match("kickoff_time_known"),
        description="False when the source gave the date only.",
    )
    home_team: str = Field(validation_alias=_of_match("home_team", "name"))
    away_team: str = Field(validation_alias=_of_match("away_team", "name"))
    home_goals: int | None = Field(validation_alias=_of_match("home_goals"))
    away_goals: int | None = Field(validation_alias=_of_match("away_goals"))
    result: Outcome | None = Field(validation_alias=_of_match("result"))
    status: MatchStatus
    external_id: str | None = Field(validation_alias=_of_match("external_id"))


class QuoteOut(AnswerModel):
    bookmaker: str = Field(validation_alias=AliasPath("bookmaker", "code"))
    bookmaker_name: str = Field(validation_alias=AliasPath("bookmaker", "name"))
    phase: Phase
    home: float
    draw: float
    away: float
    captured_at: dt.datetime | None = Field(
        validation_alias="credible_captured_at",
        description="When the bookmaker offered these prices, if known; never later than "
        "received_at (a later capture time counts as the moment of receipt).",
    )
    received_at: dt.datetime


class MatchDetailOut(MatchOut):
    quotes: list[QuoteOut] = Field(
        description="The latest quote of each bookmaker in each phase (pre-match first)."
    )

    model_config = with_examples(
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
    )


def _alias_names(aliases: Iterable[object]) -> list[object]:
    """A team's alias rows as the names the answer lists (a name given as such stays)."""
    return [getattr(alias, "alias", alias) for alias in aliases]


class TeamOut(AnswerModel):
    id: int
    name: str
    aliases: Annotated[list[str], BeforeValidator(_alias_names)]

    model_config = with_examples({"id": 7, "name": "Man United", "aliases": ["Manchester United"]})


class CompetitionOut(AnswerModel):
    code: str = Field(validation_alias=AliasPath("competition", "code"))
    name: str | None = Field(validation_alias=AliasPath("competition", "name"))
    matches: int

    model_config = with_examples({"code": "E0", "name": None, "matches": 7600})


class BookmakerOut(AnswerModel):
    code: str = Field(validation_alias=AliasPath("bookmaker", "code"), examples=["PS"])
    name: str = Field(validation_alias=AliasPath("bookmaker", "name"), examples=["Pinnacle"])
    quotes: int = Field(description="Number of stored quotes, in all phases.", examples=[1520])
    quotes_by_phase: dict[Phase, int] = Field(
        description="Number of stored quotes of each phase: pre-match and closing.",
        examples=[{"pre": 760, "closing": 760}],
    )


class DeletedMatchOut(StoredMatchOut):
    """A match that was deleted, as it was, with the number of its quotes deleted."""

    model_config = with_examples(
        {
            "id": 17,
            "competition": "E0",
            "season": "2018/19",
            "kickoff": "2018-08-10T19:00:00Z",
            "home_team": "Man United",
            "away_team": "Leicester",
            "quotes_deleted": 7,
            "model_versions": [],
        }
    )

    season: str
    quotes_deleted: int
    model_versions: list[int] = Field(
        description="Stored model versions trained on the match (deleted with ?force=true)."
    )
