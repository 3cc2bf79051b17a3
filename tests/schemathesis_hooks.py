"""Schemathesis hooks for tests/test_api_fuzz.py: requests that break a rule a JSON schema
cannot state are not sent, and a season file or a CSV of bets is not "valid" for being any
file.

Four rules compare one field with another: a match's home and away teams differ, an inline
prediction names each bookmaker once (by code or by name, in any letter case), its three
prices make a book a bookmaker could offer (the overround, the sum of 1/price less 1, within
bounds), and a window of kickoffs ends after it starts (``to`` after ``from``: the API docs'
examples of a window are dates near today, which the fuzzer mixes with others); and a value
source chain names each link once (`PS,Pinnacle` names one bookmaker twice). A sixth is
about how a number is written: an id or a number of goals is a JSON integer, and 3.0, which
a JSON schema takes for the integer 3, is refused. The API answers each with 422 and says
why; sent as "valid" data, they would only show that a schema cannot say so. And one rule
compares a field with the clock: a quote's capture time (`captured_at`, The Odds API's
`last_update`, a bet's `placed_at`) is not later than the moment the service receives it.
A bet's price typed as text must be one a bookmaker could offer ("5/2", not "0/3"), and a
bet refused for a match or flag that is not stored (or not its match and outcome) is
refused for what it refers to, not for its form. And one rule compares a name with the IANA
time zone database: the summary's `tz` is one of its zones.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import schemathesis
from pydantic import TypeAdapter, ValidationError
from schemathesis.core.failures import Failure
from schemathesis.core.transport import Response
from schemathesis.openapi.checks import RejectedPositiveData

from app.domain.bets import PriceFormatError, decimal_price
from app.domain.bookmakers import bookmaker_key
from app.domain.records import check_overround
from app.domain.time_zones import TimeZoneName
from app.domain.value_sources import LINK_SEPARATOR, SPACES, ValueSourceError, link_of


def _same_teams(node: Any) -> bool:
    if isinstance(node, list):
        return any(_same_teams(item) for item in node)
    if not isinstance(node, dict):
        return False
    home, away = node.get("home_team"), node.get("away_team")
    if isinstance(home, str) and isinstance(away, str) and home.strip() == away.strip():
        return True
    return any(_same_teams(value) for value in node.values())


def _repeated_bookmakers(node: Any) -> bool:
    if isinstance(node, list):
        return any(_repeated_bookmakers(item) for item in node)
    if not isinstance(node, dict):
        return False
    odds = node.get("odds")
    if isinstance(odds, list):
        names = [
            str(item.get("bookmaker")).strip().casefold() for item in odds if isinstance(item, dict)
        ]
        bookmakers = [bookmaker_key(name) for name in names]
        if len(set(bookmakers)) < len(bookmakers):
            return True
    return any(_repeated_bookmakers(value) for value in node.values())


def _impossible_book(node: Any) -> bool:
    """Prices no bookmaker would offer together, as the API's own check says."""
    if isinstance(node, list):
        return any(_impossible_book(item) for item in node)
    if not isinstance(node, dict):
        return False
    prices = [node.get(outcome) for outcome in ("home", "draw", "away")]
    numbers = [float(price) for price in prices if isinstance(price, float | int)]
    if len(numbers) == len(prices) and all(number > 1.0 for number in numbers):
        try:
            check_overround(*numbers)
        except ValueError:
            return True
    return any(_impossible_book(value) for value in node.values())


# The operations whose bodies have these rules (a team of The Odds API's event may repeat: the
# event is skipped and reported, not refused).
CHECKED = frozenset({"/admin/odds", "/admin/results", "/predict"})
PREDICT = "/predict"


INTEGERS = frozenset({"match_id", "home_goals", "away_goals"})


def _integer_as_float(node: Any) -> bool:
    if isinstance(node, list):
        return any(_integer_as_float(item) for item in node)
    if not isinstance(node, dict):
        return False
    if any(isinstance(node.get(name), float) for name in INTEGERS):
        return True
    return any(_integer_as_float(value) for value in node.values())


# The operations that refuse a window given backwards (of kickoffs; of when flags were raised).
# (Of when bets were placed.)
WINDOWED = frozenset(
    {"/upcoming", "/value-bets", "/performance", "/flags", "/bets", "/bets/export", "/bets/summary"}
)


_TIMESTAMP = TypeAdapter(dt.datetime)
_TIME_ZONE: TypeAdapter[str] = TypeAdapter(TimeZoneName)


def _moment(value: Any) -> dt.datetime | None:
    """A query's timestamp as the API reads it (UTC if naive), or None if it is not one."""
    try:
        moment = _TIMESTAMP.validate_python(value)
    except ValidationError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


# The operations that refuse a capture time later than the moment they receive it (beyond a
# small skew): 422 naming the field.
# A bet's time placed is refused in the future the same way.
CAPTURING = frozenset({"/admin/odds", "/admin/import/the-odds-api", "/bets", "/bets/{bet_id}"})
CAPTURE_FIELDS = ("captured_at", "last_update", "placed_at")


def captured_in_future(node: Any, now: dt.datetime) -> bool:
    """Whether a body holds a capture time later than ``now``."""
    if isinstance(node, list):
        return any(captured_in_future(item, now) for item in node)
    if not isinstance(node, dict):
        return False
    for name in CAPTURE_FIELDS:
        value = node.get(name)
        moment = _moment(value) if isinstance(value, str) else None
        if moment is not None and moment > now:
            return True
    return any(captured_in_future(value, now) for value in node.values())


def backwards_window(query: Any) -> bool:
    """Whether a query's ``from`` and ``to`` are both timestamps, ``to`` not after ``from``."""
    if not isinstance(query, dict):
        return False
    start, end = _moment(query.get("from")), _moment(query.get("to"))
    return start is not None and end is not None and end <= start


def repeated_source_links(node: Any) -> bool:
    """Whether a query or body gives a value source chain of known links, one of them twice."""
    if isinstance(node, list):
        return any(repeated_source_links(item) for item in node)
    if not isinstance(node, dict):
        return False
    source = node.get("source")
    if isinstance(source, str):
        try:
            links = [link_of(w.strip(SPACES)) for w in source.split(LINK_SEPARATOR)]
        except ValueSourceError:
            links = []
        if len(set(links)) < len(links):
            return True
    return any(repeated_source_links(value) for value in node.values())


# The operations that take a time zone (`tz`), which must be one of the IANA database: a
# schema gives its length, not the database's names.
ZONED = frozenset({"/bets/summary"})


def unknown_time_zone(query: Any) -> bool:
    """Whether a query names a time zone the IANA database does not hold."""
    if not isinstance(query, dict) or not isinstance(query.get("tz"), str):
        return False
    try:
        _TIME_ZONE.validate_python(query["tz"])
    except ValidationError:
        return True
    return False


@schemathesis.hook
def filter_case(_context: schemathesis.HookContext, case: schemathesis.Case[Any]) -> bool:
    """Whether to send the case (every phase asks, with the case's whole request)."""
    if case.operation.path in ZONED and (
        unknown_time_zone(case.query) or backwards_window(case.query)
    ):
        return False
    if case.operation.path in WINDOWED:
        return not (backwards_window(case.query) or repeated_source_links(case.query))
    if case.operation.path in CAPTURING and captured_in_future(case.body, dt.datetime.now(dt.UTC)):
        return False
    if case.operation.path in BETS and unreadable_price(case.body):
        return False
    if case.operation.path not in CHECKED:
        return True
    body = case.body
    if case.operation.path == PREDICT and _impossible_book(body):
        # At /admin/odds such a book is skipped and reported, not refused.
        return False
    return not (
        _same_teams(body)
        or _repeated_bookmakers(body)
        or _integer_as_float(body)
        or repeated_source_links(body)
    )


# Files whose content a schema does not describe: a season file, a CSV of bets (whose rows
# name stored matches and teams).
FILES = frozenset({"/admin/import/football-data", "/bets/import"})


# The operations that take a price as typed: "5/2" is one, "0.5/9" is text a schema cannot
# tell from it.
BETS = frozenset({"/bets", "/bets/{bet_id}"})


def unreadable_price(body: Any) -> bool:
    """Whether a bet's price is text no bookmaker's price reads as."""
    price = body.get("price") if isinstance(body, dict) else None
    if not isinstance(price, str):
        return False
    try:
        decimal_price(price)
    except PriceFormatError:
        return True
    return False


def _refused_bet(body: Any, errors: list[dict[str, Any]]) -> bool:
    """Whether a bet was refused only for what it refers to, or for a rule the filters above
    state (a phase may send a case it made from another without asking them again)."""
    refused = list(BET_REFERENCES)
    if unreadable_price(body):
        refused.append(["body", "price"])
    if captured_in_future(body, dt.datetime.now(dt.UTC)):
        refused.append(["body", "placed_at"])
    return bool(errors) and all(error.get("loc") in refused for error in errors)


UNPROCESSABLE = 422
# What a bet refers to: a stored match, a stored flag (of its match and outcome).
BET_REFERENCES = (["body", "match_id"], ["body", "flag_id"])


def _refused_for_its_content(case: schemathesis.Case[Any], response: Response) -> bool:
    """A valid request the API refuses for what it refers to, not for its form.

    What a season file or a CSV of bets holds is not something a schema describes, so an
    upload of any bytes is "valid" to Schemathesis; the API refuses it with 422 ("not a
    football-data.co.uk file", an empty body, a row naming a team not stored). And a stored
    match with no usable quote cannot be predicted: 422 with no field in error ("match 7 has
    no usable quote").
    """
    if response.status_code != UNPROCESSABLE:
        return False
    if case.operation.path in FILES:
        return True
    if case.operation.path in BETS:
        return _refused_bet(case.body, response.json().get("errors", []))
    if case.operation.path == PREDICT:
        body = response.json()
        return isinstance(body, dict) and body.get("errors") == []
    return False


@schemathesis.hook
def filter_failure(
    _context: schemathesis.HookContext,
    failure: Failure,
    case: schemathesis.Case[Any],
    response: Response,
) -> bool:
    """Whether a failure counts: not a valid request refused for what it refers to."""
    return not (
        failure.code == RejectedPositiveData.code and _refused_for_its_content(case, response)
    )
