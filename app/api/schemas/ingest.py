"""Bodies of the admin ingest endpoints: odds, results, imports, team aliases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import (
    AfterValidator,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    model_validator,
)

from app.api.schemas.common import ERRORS_SHOWN, MatchId, StrictModel
from app.domain.fields import Code, Price, TeamName, UtcDateTime
from app.domain.records import (
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    Skipped,
    check_external_id,
    check_overround,
    optional_season,
)
from app.domain.vocabulary import Phase
from app.services.ingest import MatchIdentity, ResultItem

MAX_ITEMS_PER_REQUEST = 10_000


def _optional_external_id(value: str | None) -> str | None:
    return None if value is None else check_external_id(value)


class MatchRef(StrictModel):
    """Identifies a match: competition, teams and kickoff date, or the source's external id."""

    competition: Code
    kickoff: UtcDateTime
    home_team: TeamName
    away_team: TeamName
    external_id: Annotated[str | None, AfterValidator(_optional_external_id)] = None
    season: Annotated[str | None, AfterValidator(optional_season)] = Field(
        default=None,
        description="2018/19 (two consecutive years) or 2019 (a calendar year); defaults "
        "to the August-July season of the kickoff.",
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
            season=self.season,
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
        """The quotes as a batch; a book no bookmaker would offer (its overround) is left
        out and reported, its match kept."""
        batch = IngestBatch(rows_read=len(self.quotes))
        for index, quote in enumerate(self.quotes):
            batch.matches.append(quote.match.to_record(f"quotes[{index}]"))
            try:
                check_overround(quote.home, quote.draw, quote.away)
            except ValueError as error:
                batch.skipped.append(Skipped(f"quotes[{index}]", str(error), "home/draw/away"))
                continue
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
    model_config = ConfigDict(from_attributes=True)

    where: str = Field(examples=["row 532"])
    field: str | None = Field(default=None, examples=["B365H"])
    reason: str = Field(examples=["price 0 must be greater than 1.0 (decimal odds)"])


def _first_shown(skipped: Sequence[object]) -> Sequence[object]:
    return skipped[:ERRORS_SHOWN]


class IngestResponse(BaseModel):
    """What an ingest changed. Sending the same payload again gives only "unchanged" counts."""

    model_config = ConfigDict(from_attributes=True)

    matches_created: int
    matches_updated: int
    matches_rescheduled: int = Field(
        description="Of the updated matches, those moved to another date: by their external "
        "id, or as the one unplayed meeting of the same home and away team in the same "
        "competition and season."
    )
    matches_unchanged: int
    quotes_inserted: int
    quotes_updated: int
    quotes_unchanged: int
    results_set: int
    rows_read: int
    skipped: Annotated[list[SkippedOut], BeforeValidator(_first_shown)] = Field(
        description=f"The first {ERRORS_SHOWN} items skipped, in the order of the input, "
        "each with its reason."
    )
    skipped_total: Annotated[int, BeforeValidator(len)] = Field(
        validation_alias=AliasPath("skipped"), description="How many items were skipped in all."
    )


class AliasIn(StrictModel):
    alias: TeamName = Field(examples=["Manchester United"])
    team: TeamName = Field(examples=["Man United"])
    confirm: Annotated[bool, Strict()] = Field(
        default=False,
        description="Merge a team stored under the alias name even though the two look like "
        "two teams (in a season both played, they share no competition).",
    )
    dry_run: Annotated[bool, Strict()] = Field(
        default=False, description="Change nothing; answer what adding the alias would do."
    )


class CompetitionSeasonOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    competition: str
    season: str
    matches: int


class SeasonClashOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    season: str
    merged_team: list[str] = Field(description="The merged team's competitions that season.")
    team: list[str] = Field(description="The team's competitions that season.")


class MergePreviewOut(BaseModel):
    """What merging the team stored under the alias name into the team changes."""

    model_config = ConfigDict(from_attributes=True)

    merged_team: str
    team: str
    matches_moved: int = Field(description="Matches that move over to the team.")
    matches_merged: int = Field(
        description="Matches the team already has (same competition, teams and date): merged."
    )
    quotes_moved_with_matches: int
    quotes_moved: int = Field(description="Quotes of merged matches that go to the team's.")
    quotes_dropped: int = Field(description="Quotes of merged matches the team's already has.")
    competitions: list[CompetitionSeasonOut] = Field(
        description="The merged team's matches by competition and season."
    )
    clashes: list[SeasonClashOut] = Field(
        description="Seasons in which both teams played and shared no competition."
    )
    needs_confirmation: bool = Field(description='There are clashes: send "confirm": true.')


class AliasOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    alias: str
    team: str
    created: bool
    merged_team: bool = Field(
        description="A team stored under the alias name was merged into the target team."
    )
    matches_moved: int
    matches_merged: int
    quotes_moved: int
    preview: MergePreviewOut | None = Field(
        description="What the merge changed (would change, on a dry run); null when no team "
        "is stored under the alias name."
    )
    dry_run: bool


class NotMovedBackOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    match_id: int | None = Field(description="Null when the match is no longer stored.")
    reason: str


class UnaliasOut(BaseModel):
    """What removing an alias undid of the merge it had made, and what it could not."""

    model_config = ConfigDict(from_attributes=True)

    alias: str
    team: str
    restored_team: bool = Field(description="The merged team is back under its own name.")
    matches_moved_back: int
    not_moved_back: list[NotMovedBackOut]
    merged_matches: list[int] = Field(
        description="Matches the merged team's were merged into when the alias was added: "
        "they keep the quotes (and result) of both and cannot be split again."
    )
    aliases_moved_back: list[str] = Field(
        description="The merged team's own aliases, which name it again."
    )
