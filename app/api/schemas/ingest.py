"""Bodies of the admin ingest endpoints: odds, results, imports, team aliases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import (
    AliasPath,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    Strict,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from app.api.schemas.common import (
    ERRORS_SHOWN,
    AnswerModel,
    MatchId,
    StrictModel,
    price_field,
    with_examples,
)
from app.api.schemas.problems import Problem
from app.domain.fields import Code, ExternalId, OptionalSeason, Price, TeamName, UtcDateTime
from app.domain.leagues import check_league_season
from app.domain.records import (
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    Skipped,
    check_overround,
)
from app.domain.vocabulary import Phase
from app.domain.wording import counted
from app.services.ingest import MatchIdentity, ResultItem

MAX_ITEMS_PER_REQUEST = 10_000


MATCH_EXAMPLE: dict[str, JsonValue] = {
    "competition": "E0",
    "kickoff": "2018-08-10T19:00:00Z",
    "home_team": "Man United",
    "away_team": "Leicester",
}
QUOTE_EXAMPLE: dict[str, JsonValue] = {
    "match": MATCH_EXAMPLE,
    "bookmaker": "B365",
    "home": 1.57,
    "draw": 3.9,
    "away": 7.5,
    "phase": "pre",
}


class MatchRef(StrictModel):
    """Identifies a match: competition, teams and kickoff date, or the source's external id."""

    model_config = with_examples(MATCH_EXAMPLE)

    competition: Code = Field(
        description="The competition's code, as football-data.co.uk writes it (E0: the "
        "Premier League): a letter or digit, then letters, digits, '_', '.' or '-'.",
        examples=["E0"],
    )
    kickoff: UtcDateTime = Field(
        description="Kickoff, ISO 8601, years 1900-2099; without an offset it is UTC. "
        "Matches are told apart by the date.",
        examples=["2018-08-10T19:00:00Z"],
    )
    home_team: TeamName = Field(
        description="The home team as the source names it (an alias maps it to a stored "
        "team); trimmed, 1-100 characters, no control characters.",
        examples=["Man United"],
    )
    away_team: TeamName = Field(
        description="The away team, as home_team; it must differ from it.",
        examples=["Leicester"],
    )
    external_id: ExternalId | None = Field(
        default=None,
        description="The source's own id of the match, if it has one (1-100 characters): "
        "a match sent again under it with a new kickoff is moved, not duplicated.",
        examples=["e912304de2b2ce35b473ce2ecd3d1502"],
    )
    season: OptionalSeason = Field(
        default=None,
        description="2018/19 (two consecutive years) or 2019 (a calendar year), in the "
        "form the competition plays: over two years for football-data.co.uk's main "
        "leagues (E0, SP1, ...) and its extra leagues of July to June (AUT, ...), a "
        "calendar year for its other extra leagues (BRA, ...), either for any other "
        "code. Absent or blank: for a new match, the season its league names the kickoff "
        "in (August to July for any other code); a stored match keeps its own.",
        examples=["2018/19"],
    )

    @field_validator("season")
    @classmethod
    def _season_of_its_competition(cls, season: str | None, info: ValidationInfo) -> str | None:
        competition = info.data.get("competition")
        if season is None or competition is None:
            return season  # not given, or the competition is refused on its own
        return check_league_season(competition, season)

    @model_validator(mode="after")
    def _distinct_teams(self) -> MatchRef:
        if self.home_team == self.away_team:
            raise ValueError("home_team and away_team must differ")
        return self

    def to_record(self, where: str) -> MatchRecord:
        return MatchRecord(**self.model_dump(), where=where)

    def to_identity(self) -> MatchIdentity:
        return MatchIdentity(**self.model_dump())


class QuoteIn(StrictModel):
    model_config = with_examples(QUOTE_EXAMPLE)

    match: MatchRef = Field(description="The match these prices are for.", examples=[MATCH_EXAMPLE])
    bookmaker: Code = Field(
        description="The bookmaker's code, as football-data.co.uk writes it (B365: Bet365, "
        "PS: Pinnacle); a new code creates the bookmaker.",
        examples=["B365"],
    )
    home: Annotated[Price, price_field("a home win", 1.57)]
    draw: Annotated[Price, price_field("a draw", 3.9)]
    away: Annotated[Price, price_field("an away win", 7.5)]
    phase: Phase = Field(
        default=Phase.PRE,
        description="pre: offered before the match; closing: the last prices before kickoff.",
        examples=["pre"],
    )
    captured_at: UtcDateTime | None = Field(
        default=None,
        description="When the bookmaker offered these prices, if known (ISO 8601; UTC "
        "without an offset). Not later than the moment the request is received, beyond "
        "ODDSBOOST_CAPTURE_SKEW_SECONDS (300 s) for a clock running ahead: 422 otherwise.",
        examples=["2018-08-09T12:00:00Z"],
    )


class OddsUpload(StrictModel):
    quotes: list[QuoteIn] = Field(
        min_length=1,
        max_length=MAX_ITEMS_PER_REQUEST,
        description="1 to 10,000 quotes; one invalid quote rejects them all.",
        examples=[[QUOTE_EXAMPLE]],
    )

    model_config = with_examples({"quotes": [QUOTE_EXAMPLE]})

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
                    **quote.model_dump(exclude={"match"}),
                    match=index,
                    where=f"quotes[{index}]",
                    capture_path=("quotes", index, "captured_at"),
                )
            )
        return batch


Goals = Annotated[int, Strict(), Field(ge=0, le=99)]


RESULT_EXAMPLES: list[JsonValue] = [
    {"match_id": 17, "home_goals": 2, "away_goals": 1},
    {"match": MATCH_EXAMPLE, "home_goals": 2, "away_goals": 1},
]


class ResultIn(StrictModel):
    """A result, for a match given by its id or by its identity (exactly one of the two)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": RESULT_EXAMPLES,
            # Exactly one of the two, as _one_reference checks.
            "oneOf": [
                {"required": ["match"], "properties": {"match": {"type": "object"}}},
                {"required": ["match_id"], "properties": {"match_id": {"type": "integer"}}},
            ],
        },
    )

    match: MatchRef | None = Field(
        default=None,
        description="The match by its competition, teams and kickoff; or give match_id.",
        examples=[MATCH_EXAMPLE],
    )
    match_id: MatchId | None = Field(
        default=None, description="The stored match's id; or give match.", examples=[17]
    )
    home_goals: Annotated[Goals, Field(description="Goals of the home team, 0-99.", examples=[2])]
    away_goals: Annotated[Goals, Field(description="Goals of the away team, 0-99.", examples=[1])]

    @model_validator(mode="after")
    def _one_reference(self) -> ResultIn:
        if (self.match is None) == (self.match_id is None):
            raise ValueError("give exactly one of 'match' and 'match_id'")
        return self

    def to_item(self) -> ResultItem:
        match = None if self.match is None else self.match.to_identity()
        return ResultItem(**self.model_dump(exclude={"match"}), match=match)


class ResultsUpload(StrictModel):
    results: list[ResultIn] = Field(
        min_length=1,
        max_length=MAX_ITEMS_PER_REQUEST,
        description="1 to 10,000 results; one invalid result rejects them all. A result "
        "for a match that is not stored, or has not kicked off, is skipped.",
        examples=[RESULT_EXAMPLES],
    )

    model_config = with_examples({"results": RESULT_EXAMPLES})


class SkippedOut(AnswerModel):
    where: str = Field(examples=["row 532"])
    field: str | None = Field(default=None, examples=["B365H"])
    reason: str = Field(examples=["price 0 must be greater than 1.0 (decimal odds)"])


def _first_shown(skipped: Sequence[object]) -> Sequence[object]:
    return skipped[:ERRORS_SHOWN]


class IngestResponse(AnswerModel):
    """What an ingest changed. Sending the same payload again gives only "unchanged" counts."""

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
        description=f"The first {counted(ERRORS_SHOWN, 'item')} skipped, in the order of the "
        "input, each with its reason."
    )
    skipped_total: Annotated[int, BeforeValidator(len)] = Field(
        validation_alias=AliasPath("skipped"), description="How many items were skipped in all."
    )


class AliasIn(StrictModel):
    model_config = with_examples({"alias": "Manchester United", "team": "Man United"})

    alias: TeamName = Field(
        description="Another source's name for the team; trimmed, 1-100 characters.",
        examples=["Manchester United"],
    )
    team: TeamName = Field(
        description="The name of the stored team it stands for.", examples=["Man United"]
    )
    confirm: StrictBool = Field(
        default=False,
        description="Merge a team stored under the alias name even though the two look "
        "like two teams (in a season both played, they share no competition).",
        examples=[False],
    )
    dry_run: StrictBool = Field(
        default=False,
        description="Change nothing; answer what adding the alias would do.",
        examples=[True],
    )


class CompetitionSeasonOut(AnswerModel):
    competition: str
    season: str
    matches: int


class SeasonClashOut(AnswerModel):
    season: str
    merged_team: list[str] = Field(description="The merged team's competitions that season.")
    team: list[str] = Field(description="The team's competitions that season.")


class MergePreviewOut(AnswerModel):
    """What merging the team stored under the alias name into the team changes."""

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


class MergeConfirmationProblem(Problem):
    """409 to a merge of two teams that look like two: the problem, with what the merge
    would change."""

    preview: MergePreviewOut = Field(
        description='What the merge would change; send "confirm": true to make it.'
    )


class AliasOut(AnswerModel):
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


class NotMovedBackOut(AnswerModel):
    match_id: int | None = Field(description="Null when the match is no longer stored.")
    reason: str


class UnaliasOut(AnswerModel):
    """What removing an alias undid of the merge it had made, and what it could not."""

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
