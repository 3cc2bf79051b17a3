"""The Odds API v4 ``/v4/sports/{sport}/odds?markets=h2h`` response → :class:`IngestBatch`:
the 1X2 market only, each price captured at its ``last_update``, in-play prices skipped."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
)

from app.domain.bookmakers import code_of_odds_api_key
from app.domain.fields import Code, DecimalPrice, ExternalId, TeamName, UtcDateTime, text_rule
from app.domain.records import (
    BOOKMAKER_NAME_MAX_LENGTH,
    IngestBatch,
    MatchRecord,
    QuoteRecord,
    Skipped,
    check_bookmaker_name,
    check_overround,
    normalised,
)
from app.domain.vocabulary import Phase

H2H_MARKET = "h2h"
DRAW_OUTCOME = "Draw"

# The Odds API sport keys of the leagues football-data.co.uk also covers, so both sources
# land in the same competition.
SPORT_COMPETITIONS = {
    "soccer_epl": "E0",
    "soccer_efl_champ": "E1",
    "soccer_england_league1": "E2",
    "soccer_england_league2": "E3",
    "soccer_spl": "SC0",
    "soccer_spain_la_liga": "SP1",
    "soccer_spain_segunda_division": "SP2",
    "soccer_italy_serie_a": "I1",
    "soccer_italy_serie_b": "I2",
    "soccer_germany_bundesliga": "D1",
    "soccer_germany_bundesliga2": "D2",
    "soccer_france_ligue_one": "F1",
    "soccer_france_ligue_two": "F2",
    "soccer_netherlands_eredivisie": "N1",
    "soccer_belgium_first_div": "B1",
    "soccer_portugal_primeira_liga": "P1",
    "soccer_turkey_super_league": "T1",
    "soccer_greece_super_league": "G1",
}

# The regions The Odds API groups its bookmakers in; each one asked for costs a credit.
REGIONS = ("uk", "eu", "us", "us2", "au")
# A sport key as The Odds API writes it: lowercase words joined by underscores.
SPORT_KEY_PATTERN = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")


def sport_keys(values: Iterable[str]) -> tuple[str, ...]:
    """The sport keys to fetch, each once, in the order given; ValueError names a bad one."""
    keys = tuple(dict.fromkeys(value.strip() for value in values if value.strip()))
    if not keys:
        raise ValueError("name at least one sport key, e.g. soccer_epl")
    for key in keys:
        if not SPORT_KEY_PATTERN.fullmatch(key):
            raise ValueError(f"{key!r} is not a sport key (lowercase, e.g. soccer_epl)")
    return keys


def region_keys(values: Iterable[str]) -> tuple[str, ...]:
    """The regions to ask for, each once; ValueError names one The Odds API does not have."""
    keys = tuple(dict.fromkeys(value.strip() for value in values if value.strip()))
    if not keys:
        raise ValueError("name at least one region: " + ", ".join(REGIONS))
    unknown = [key for key in keys if key not in REGIONS]
    if unknown:
        raise ValueError(f"unknown region {unknown[0]!r}; The Odds API has " + ", ".join(REGIONS))
    return keys


BookmakerKey = Annotated[Code, Field(examples=["pinnacle"])]


class Outcome(BaseModel):
    # Composed as the event's team names are, so the two spellings find each other.
    name: Annotated[str, AfterValidator(normalised)]
    # Read as the feed sends it: a number, or a number written as text.
    price: DecimalPrice


class H2HMarket(BaseModel):
    """The 1X2 market: read strictly, every price checked."""

    key: Literal["h2h"]
    last_update: UtcDateTime | None = None
    outcomes: list[Outcome]


class OtherMarket(BaseModel):
    """Any other market (totals, spreads, h2h_lay, ...): ignored, so not checked."""

    # Any key but h2h's, which is read as an H2HMarket: the schema says so, so that a market
    # fits exactly one of the two.
    key: Annotated[str, Field(json_schema_extra={"not": {"const": H2H_MARKET}})]


def _market_kind(value: Any) -> str:
    key = value.get("key") if isinstance(value, dict) else getattr(value, "key", None)
    return "h2h" if key == H2H_MARKET else "other"


Market = Annotated[
    Annotated[H2HMarket, Tag("h2h")] | Annotated[OtherMarket, Tag("other")],
    Discriminator(_market_kind),
]


class BookmakerOdds(BaseModel):
    key: BookmakerKey
    title: Annotated[
        str,
        AfterValidator(lambda v: check_bookmaker_name(v, "title")),
        Field(json_schema_extra=text_rule(BOOKMAKER_NAME_MAX_LENGTH)),
    ]
    last_update: UtcDateTime
    markets: list[Market]


class Event(BaseModel):
    id: ExternalId
    sport_key: Annotated[Code, Field(examples=["soccer_epl"])]
    commence_time: UtcDateTime
    home_team: TeamName
    away_team: TeamName
    bookmakers: list[BookmakerOdds] = Field(default_factory=list)


EVENTS = TypeAdapter(list[Event])


class ResponseFormatError(ValueError):
    """The document is not The Odds API's JSON at all (nothing was imported)."""


def read_events(content: bytes) -> list[Event]:
    """The events of a saved ``/odds`` response, checked field by field (pydantic's
    ``ValidationError`` says where); :class:`ResponseFormatError` for a CSV file."""
    head = content.lstrip()[:1]
    first_line = content.lstrip().split(b"\n", 1)[0]
    if head not in (b"[", b"{") and b"," in first_line:
        raise ResponseFormatError(
            "this is a CSV file, not The Odds API's JSON; a football-data.co.uk season file "
            "is imported by `oddsboost import football-data` or POST /admin/import/football-data"
        )
    return EVENTS.validate_json(content)


def problem_location(loc: tuple[int | str, ...]) -> str:
    """Where a validation problem is in the document, as ``[0].bookmakers[1].key``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def competition_code(sport_key: str) -> str:
    return SPORT_COMPETITIONS.get(sport_key, sport_key)


def _h2h_market(bookmaker: BookmakerOdds) -> tuple[int, H2HMarket] | None:
    """The bookmaker's 1X2 market, with its index among its markets."""
    return next(
        ((index, m) for index, m in enumerate(bookmaker.markets) if isinstance(m, H2HMarket)),
        None,
    )


def _capture_path(
    event_index: int, bookmaker_index: int, market_index: int, market: H2HMarket
) -> tuple[str | int, ...]:
    """Where the response gives a quote's capture time: its market's ``last_update``, else
    its bookmaker's."""
    bookmaker = (event_index, "bookmakers", bookmaker_index)
    if market.last_update is not None:
        return (*bookmaker, "markets", market_index, "last_update")
    return (*bookmaker, "last_update")


def parse_events(events: list[Event]) -> IngestBatch:
    """Turn validated events into a batch; in-play prices and non-1X2 markets are skipped."""
    batch = IngestBatch()
    for event_index, event in enumerate(events):
        where = f"[{event_index}]"
        if event.home_team == event.away_team:
            batch.skipped.append(Skipped(where, "home and away team are the same", "away_team"))
            continue
        kickoff = event.commence_time
        batch.rows_read += 1
        batch.matches.append(
            MatchRecord(
                competition=competition_code(event.sport_key),
                home_team=event.home_team,
                away_team=event.away_team,
                kickoff=kickoff,
                external_id=event.id,
                where=where,
            )
        )
        match_index = len(batch.matches) - 1
        for bookmaker_index, bookmaker in enumerate(event.bookmakers):
            found = _h2h_market(bookmaker)
            if found is None:
                continue
            market_index, market = found
            bookmaker_where = f"{where}.bookmakers[{bookmaker_index}]"
            captured_at = market.last_update or bookmaker.last_update
            if captured_at >= kickoff:
                batch.skipped.append(
                    Skipped(bookmaker_where, "prices updated at or after kickoff (in-play)")
                )
                continue
            prices = {outcome.name: outcome.price for outcome in market.outcomes}
            expected = (event.home_team, DRAW_OUTCOME, event.away_team)
            missing = [name for name in expected if name not in prices]
            if missing:
                batch.skipped.append(
                    Skipped(
                        bookmaker_where,
                        "h2h market lacks outcome(s) " + ", ".join(repr(m) for m in missing),
                        "markets",
                    )
                )
                continue
            home, draw, away = (prices[name] for name in expected)
            try:
                check_overround(home, draw, away)
            except ValueError as error:
                batch.skipped.append(Skipped(bookmaker_where, str(error), "outcomes"))
                continue
            code = code_of_odds_api_key(bookmaker.key)
            batch.bookmaker_names.setdefault(code, bookmaker.title)
            batch.quotes.append(
                QuoteRecord(
                    match=match_index,
                    bookmaker=code,
                    phase=Phase.PRE,
                    home=home,
                    draw=draw,
                    away=away,
                    captured_at=captured_at,
                    where=bookmaker_where,
                    capture_path=_capture_path(event_index, bookmaker_index, market_index, market),
                )
            )
    return batch
