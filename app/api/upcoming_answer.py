"""The body of GET /upcoming, written as JSON once per page the service hands out.

A dashboard polls the same page over and over; the service hands out the same page record
while nothing it shows changed (within the second its ages were worked out for), so its
body is written once and served as bytes after. It is built as plain dicts and lists and
written by ``to_json``: reading a 200-match page into ``UpcomingPage`` and validating it
would cost more than everything else an answer does. The shape is still the documented
one: a test checks real answers against ``UpcomingPage``.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from pydantic_core import to_json

from app.api.schemas.value_bets import NO_MODEL_NOTE
from app.domain.value import MatchValue
from app.services.upcoming import Freshness, Outcomes, UpcomingMatch, UpcomingPage
from app.services.value_bets import AppliedTerms, ValueBet

# Kept while the service keeps the page. Used on the event loop only.
_WRITTEN: WeakKeyDictionary[UpcomingPage, bytes] = WeakKeyDictionary()

NOT_MODIFIED = (
    "The answer is the one whose ETag was sent as If-None-Match (its ages as of that answer); "
    "no body."
)


def etag_of(page: UpcomingPage) -> str:
    """The weak ETag of ``page``: equal for pages that show the same (but their ages)."""
    return f'W/"{page.tag}"'


def matches_etag(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (or is ``*``), compared weakly as
    RFC 9110 asks of If-None-Match."""
    if if_none_match is None:
        return False
    wanted = etag.removeprefix("W/")
    for held in if_none_match.split(","):
        held = held.strip()
        if held == "*" or held.removeprefix("W/") == wanted:
            return True
    return False


def upcoming_json(page: UpcomingPage) -> bytes:
    """The body of ``page``, in the shape :class:`app.api.schemas.upcoming.UpcomingPage`
    documents."""
    body = _WRITTEN.get(page)
    if body is None:
        body = _WRITTEN[page] = to_json(_page(page))
    return body


def _page(page: UpcomingPage) -> dict[str, Any]:
    return {
        "items": [_item(item) for item in page.items],
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
        "from": page.kickoff_from,
        "to": page.kickoff_to,
        "terms": _terms(page.terms),
        "model_version": page.model_version,
        "answered_at": page.answered_at,
        "note": NO_MODEL_NOTE if page.unfitted else None,
    }


def _terms(terms: AppliedTerms) -> dict[str, Any]:
    return {
        "min_ev": terms.min_ev,
        "kelly_fraction": terms.kelly_fraction,
        "stake_cap": terms.stake_cap,
        "daily_exposure_cap": terms.daily_exposure_cap,
        "source": terms.source,
        "bookmakers": None if terms.bookmakers is None else list(terms.bookmakers),
        "bankroll": terms.bankroll,
    }


def _outcomes(values: Outcomes) -> dict[str, float]:
    return {"home": values.home, "draw": values.draw, "away": values.away}


def _item(item: UpcomingMatch) -> dict[str, Any]:
    match, prediction = item.match, item.prediction
    return {
        "match": {
            "id": match.id,
            "competition": match.competition,
            "season": match.season,
            "home_team": match.home_team,
            "away_team": match.away_team,
            "kickoff": match.kickoff,
        },
        "prediction": None
        if prediction is None
        else {
            "probabilities": _outcomes(prediction.probabilities),
            "fair_odds": _outcomes(prediction.fair_odds),
            "basis": prediction.basis,
            "outcome": prediction.outcome,
        },
        "reason": item.reason,
        "value": None if item.value is None else _value(item.value),
        "value_bets": [_bet(bet) for bet in item.value_bets],
        "freshness": _freshness(item.freshness),
        "model_version": item.model_version,
    }


def _value(value: MatchValue) -> dict[str, Any]:
    return {
        "source": value.source,
        "outcomes": [
            {
                "outcome": outcome.outcome,
                "probability": outcome.probability,
                "price": outcome.price,
                "bookmaker": outcome.bookmaker,
                "captured_at": outcome.captured_at,
                "expected_value": outcome.expected_value,
                "flagged": outcome.flagged,
            }
            for outcome in value.outcomes
        ],
    }


def _bet(bet: ValueBet) -> dict[str, Any]:
    match = bet.match
    return {
        "match": {
            "id": match.id,
            "competition": match.competition,
            "home_team": match.home_team,
            "away_team": match.away_team,
            "kickoff": match.kickoff,
        },
        "outcome": bet.outcome,
        "probability": bet.probability,
        "source": bet.source,
        "basis": bet.basis,
        "model_version": bet.model_version,
        "price": bet.price,
        "bookmaker": bet.bookmaker,
        "captured_at": bet.captured_at,
        "expected_value": bet.expected_value,
        "unscaled_stake_fraction": bet.unscaled_stake_fraction,
        "day_scale": bet.day_scale,
        "stake_fraction": bet.stake_fraction,
        "stake": bet.stake,
    }


def _freshness(freshness: Freshness) -> dict[str, Any]:
    return {
        "bookmakers": freshness.bookmakers,
        "newest_captured_at": freshness.newest_captured_at,
        "oldest_captured_at": freshness.oldest_captured_at,
        "age_seconds": freshness.age_seconds,
    }
