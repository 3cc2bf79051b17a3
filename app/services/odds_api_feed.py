"""The Odds API feed: each sport's upcoming 1X2 prices fetched and stored, one transaction
per sport, within the quota's reserve, each run recorded.

The key travels in the query string, as the API requires, but the transport adds it as each
request leaves: the URL the client logs, raises and keeps holds no key, and every error
text is cleaned of it before it is logged or stored.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from pydantic import ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import session_scope
from app.db.orm import Clock, FetchedDocument, utcnow
from app.domain.odds_api import (
    H2H_MARKET,
    Event,
    problem_location,
    read_events,
    region_keys,
    sport_keys,
)
from app.domain.records import TooManyBookmakersError
from app.domain.vocabulary import FetchSource, FetchStatus, RunTrigger
from app.domain.wording import counted
from app.logs import REDACTED
from app.services.downloads import (
    Download,
    Downloader,
    DownloadLimits,
    bounded_transport,
    describe,
    open_downloader,
)
from app.services.fetch_runs import (
    FetchCounts,
    ended_early,
    recorded_fetch,
    scheduled_fetch,
)
from app.services.fetched_documents import remember_fetch
from app.services.flags import FlagTerms
from app.services.http_retry import GaveUpError, RetryPolicy, send_with_retries
from app.services.ingest import import_odds_api
from app.services.run_bounds import RunBounds, RunEndedEarlyError, Stop
from app.settings import Settings

log = logging.getLogger(__name__)

SOURCE = FetchSource.THE_ODDS_API
SPORTS_PATH = "/v4/sports"
UNAUTHORIZED = 401
# Longest part of an error answer's own message repeated in the run's error.
API_MESSAGE_MAX = 200
# A scheduled run skipped for the lock tries again this often, this many times (5 minutes in
# all, longer than a closing-line run takes), rather than leave its sports a period old.
SKIPPED_RUN_PAUSE_SECONDS = 30.0
SKIPPED_RUN_TRIES = 10


class OddsApiKeyMissingError(Exception):
    """No key is configured: nothing was fetched or recorded."""


class KeyRefusedError(Exception):
    """The Odds API answered 401: the key is wrong, or its credits are spent."""


class SportFailedError(Exception):
    """One sport's answer could not be used; the message says why."""


def _header_count(headers: httpx.Headers, name: str, otherwise: int | None) -> int | None:
    try:
        # Sent as text; some answers write a whole number with a fraction ("480.0").
        return int(float(headers[name]))
    except (KeyError, ValueError):
        return otherwise


@dataclass(frozen=True, slots=True)
class SportFetch:
    """One sport of a run: what it sent and stored, or why it stored nothing."""

    sport: str
    counts: FetchCounts
    error: str | None = None


@dataclass(frozen=True, slots=True)
class OddsApiFetch:
    """A finished run: its id in the fetch runs, its totals, each sport, and its error."""

    run_id: int
    status: FetchStatus
    counts: FetchCounts
    sports: tuple[SportFetch, ...]
    error: str | None


class KeyedTransport(httpx.BaseTransport):
    """Adds ``apiKey`` to each request's query on its way out, so the request the client
    logs and attaches to answers and errors never holds it."""

    def __init__(self, key: str, inner: httpx.BaseTransport) -> None:
        self._key = key
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        keyed = httpx.Request(
            request.method,
            request.url.copy_merge_params({"apiKey": self._key}),
            headers=request.headers,
            stream=request.stream,
            extensions=request.extensions,
        )
        return self._inner.handle_request(keyed)

    def close(self) -> None:
        self._inner.close()


class OddsApiClient:
    """One run's requests: each tried as the policy says, counted, the quota its headers
    say left read; a 401 raises :class:`KeyRefusedError`. A request that costs credits is
    sent again only if it never left: The Odds API counts one it answered too late."""

    def __init__(self, downloader: Downloader, policy: RetryPolicy, key: str) -> None:
        self.downloader = downloader
        self._free_policy = policy
        self._paid_policy = policy.for_counted_requests()
        self._key = key
        self.requests = 0
        self.quota_remaining: int | None = None
        self.quota_used: int | None = None

    def get(self, path: str, params: dict[str, str], *, costs: bool) -> Download:
        def once() -> Download:
            self.requests += 1
            response = self.downloader.get(path, params=params)
            headers = response.headers
            self.quota_remaining = _header_count(
                headers, "x-requests-remaining", self.quota_remaining
            )
            self.quota_used = _header_count(headers, "x-requests-used", self.quota_used)
            return response

        response = send_with_retries(once, self._paid_policy if costs else self._free_policy)
        if response.status_code == UNAUTHORIZED:
            raise KeyRefusedError
        return response

    def scrubbed(self, text: str) -> str:
        """``text`` without the key, whatever put it there."""
        return text.replace(self._key, REDACTED)

    def counts(self, requests: int, **stored: int) -> FetchCounts:
        return FetchCounts(
            requests=requests,
            quota_remaining=self.quota_remaining,
            quota_used=self.quota_used,
            **stored,
        )


@contextmanager
def odds_api_client(
    settings: Settings, sleep: Callable[[float], None] | None, bounds: RunBounds
) -> Iterator[OddsApiClient]:
    """The run's client, waiting between attempts with ``sleep`` (None: the run's own)."""
    if settings.odds_api_key is None:
        raise OddsApiKeyMissingError("ODDSBOOST_ODDS_API_KEY is not set")
    key = settings.odds_api_key.get_secret_value()
    policy = RetryPolicy(
        attempts=settings.odds_api_attempts,
        backoff=settings.odds_api_backoff_seconds,
        max_wait=settings.odds_api_max_wait_seconds,
        sleep=bounds.sleep if sleep is None else bounds.checked(sleep),
    )
    base_url = settings.odds_api_url.rstrip("/")
    timeout = settings.odds_api_timeout_seconds
    limits = DownloadLimits.of(settings, "odds_api", read_timeout_seconds=timeout)
    with open_downloader(
        limits,
        bounds,
        site=httpx.URL(base_url),  # the key never leaves for another host
        base_url=base_url,
        transport=KeyedTransport(key, bounded_transport()),
        headers={"Accept": "application/json"},
    ) as downloader:
        yield OddsApiClient(downloader, policy, key)


def fetch_the_odds_api(
    factory: sessionmaker[Session],
    settings: Settings,
    *,
    trigger: RunTrigger,
    sports: tuple[str, ...] | None = None,
    regions: tuple[str, ...] | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Clock = utcnow,
    stop: Stop | None = None,
) -> OddsApiFetch:
    """Fetch and store the h2h prices of ``sports`` (default: the settings'), recording the
    run: a sport that fails stores nothing and the others go on; a refused key, the run's
    deadline or ``stop`` ends it. ``sleep`` waits between attempts (None: the run's own).
    :class:`OddsApiKeyMissingError` (nothing recorded) without a key, ValueError for a bad
    sport or region."""
    chosen_sports = sport_keys(sports) if sports is not None else tuple(settings.odds_api_sports)
    chosen_regions = (
        region_keys(regions) if regions is not None else tuple(settings.odds_api_regions)
    )
    bounds = RunBounds(settings.odds_api_run_seconds, "ODDSBOOST_ODDS_API_RUN_SECONDS", stop)
    with odds_api_client(settings, sleep, bounds) as api:

        def fault(unexpected: BaseException) -> str:
            return api.scrubbed(f"stopped by {type(unexpected).__name__}: {unexpected}")

        with recorded_fetch(factory, SOURCE, trigger, fault=fault) as run:
            if run.skipped is not None:
                return OddsApiFetch(run.run_id, run.status, FetchCounts(), (), run.skipped)
            sports_run = _SportsRun(
                api,
                factory,
                settings.odds_api_url,
                chosen_regions,
                settings.odds_api_quota_reserve,
                clock,
                settings.capture_skew,
                FlagTerms.of(settings),
            )
            try:
                done, run.error = sports_run.fetch_all(chosen_sports)
            finally:
                run.counts = api.counts(api.requests)
            for sport in done:
                stored = sport.counts
                run.counts = run.counts.plus(
                    FetchCounts(
                        changed=stored.changed,
                        matches=stored.matches,
                        quotes=stored.quotes,
                        skipped=stored.skipped,
                    )
                )
    return OddsApiFetch(run.run_id, run.status, run.counts, done, run.error)


@dataclass(frozen=True, slots=True)
class _SportsRun:
    """What each sport of a run is fetched with; an answer counts as received at ``clock``'s
    present, and a price's ``last_update`` may be ``capture_skew`` later."""

    api: OddsApiClient
    factory: sessionmaker[Session]
    base_url: str
    regions: tuple[str, ...]
    reserve: int
    clock: Clock
    capture_skew: dt.timedelta
    flag_terms: FlagTerms

    def fetch_all(self, sports: tuple[str, ...]) -> tuple[tuple[SportFetch, ...], str | None]:
        """Each sport's fetch, and the run's error (None when every sport was stored)."""
        done: list[SportFetch] = []
        try:
            refused = _check_key(self.api)
            if refused is not None:
                return (), refused
            for sport in sports:
                self.api.downloader.bounds.check()
                fetched = self.within_reserve(sport)
                if fetched is None:
                    return tuple(done), _refused(f"while fetching {sport}")
                done.append(fetched)
        except RunEndedEarlyError as error:
            ended: str | None = ended_early(error, len(done), len(sports), "sport")
        else:
            ended = None
        failures = [f"{sport.sport}: {sport.error}" for sport in done if sport.error is not None]
        for failure in failures:
            log.warning("The Odds API %s", failure)
        if ended is not None:
            failures.append(ended)
        return tuple(done), "; ".join(failures) or None

    def within_reserve(self, sport: str) -> SportFetch | None:
        """One sport, unless its cost would spend the reserve; None when the key was
        refused."""
        # The documented price of a sport's request, markets × regions (h2h only), known
        # before it is sent.
        cost = len(self.regions)
        remaining = self.api.quota_remaining
        if remaining is not None and remaining - cost < self.reserve:
            why = (
                f"not fetched: {counted(remaining, 'credit')} left, it costs {cost} and "
                f"{self.reserve} are kept in reserve (ODDSBOOST_ODDS_API_QUOTA_RESERVE)"
            )
            return SportFetch(sport, FetchCounts(), why)
        try:
            return self.fetch(sport)
        except KeyRefusedError:
            return None

    def fetch(self, sport: str) -> SportFetch:
        api = self.api
        before = api.requests
        try:
            events = _events_of(api, sport, self.regions)
            now = self.clock()
            with session_scope(self.factory) as session:
                report = import_odds_api(
                    session,
                    events,
                    source=f"The Odds API {sport}",
                    now=now,
                    capture_skew=self.capture_skew,
                    flag_terms=self.flag_terms,
                )
                # Its answer changed when it stored something: its matches and prices are
                # compared with the stored ones, the document itself carries no validator.
                stored = (
                    report.matches_created,
                    report.matches_updated,
                    report.quotes_inserted,
                    report.quotes_updated,
                )
                remember_fetch(
                    session, odds_document(self.base_url, sport), at=now, changed=any(stored)
                )
        except (SportFailedError, GaveUpError, TooManyBookmakersError) as error:
            why = str(error)
        except httpx.RequestError as error:
            why = describe(error)
        except SQLAlchemyError as error:
            why = f"not stored: {type(error).__name__}: {str(error).splitlines()[0]}"
        else:
            counts = api.counts(
                api.requests - before,
                changed=1,
                matches=report.matches_created + report.matches_updated,
                quotes=report.quotes_inserted + report.quotes_updated,
                skipped=len(report.skipped),
            )
            return SportFetch(sport, counts)
        return SportFetch(sport, api.counts(api.requests - before), api.scrubbed(why))


def odds_document(base_url: str, sport: str) -> str:
    """The address of a sport's odds, without the key: the fetched document under which
    the sport's last stored fetch is remembered."""
    return f"{base_url.rstrip('/')}{SPORTS_PATH}/{sport}/odds"


def last_fetched(
    session: Session, base_url: str, sports: tuple[str, ...]
) -> dict[str, dt.datetime]:
    """When each of ``sports`` was last fetched and stored, for those that ever were."""
    urls = {odds_document(base_url, sport): sport for sport in sports}
    rows = session.execute(
        select(FetchedDocument.url, FetchedDocument.checked_at).where(FetchedDocument.url.in_(urls))
    )
    return {urls[url]: checked_at for url, checked_at in rows}


def _not_fetched_since(
    factory: sessionmaker[Session], base_url: str, sports: tuple[str, ...], moment: dt.datetime
) -> tuple[str, ...]:
    """Those of ``sports`` no fetch stored at or after ``moment``."""
    with factory() as session:
        fetched = last_fetched(session, base_url, sports)
    return tuple(sport for sport in sports if sport not in fetched or fetched[sport] < moment)


def _check_key(api: OddsApiClient) -> str | None:
    """The free list of sports checks the key and reads the quota before any request that
    costs; the run's error if it cannot go on."""
    try:
        response = api.get(SPORTS_PATH, {}, costs=False)
    except KeyRefusedError:
        return _refused("nothing fetched")
    except GaveUpError as error:
        return api.scrubbed(f"The Odds API did not answer: {error}; nothing fetched")
    except httpx.RequestError as error:
        return api.scrubbed(f"The Odds API did not answer: {describe(error)}; nothing fetched")
    if response.status_code != httpx.codes.OK:
        return api.scrubbed(f"The Odds API answered {_status(response)}; nothing fetched")
    return None


def _refused(what: str) -> str:
    return (
        "The Odds API refused the key (HTTP 401: wrong key, or its credits are spent); check "
        f"ODDSBOOST_ODDS_API_KEY; {what}"
    )


def _events_of(api: OddsApiClient, sport: str, regions: tuple[str, ...]) -> list[Event]:
    response = api.get(
        f"{SPORTS_PATH}/{sport}/odds",
        {
            "regions": ",".join(regions),
            "markets": H2H_MARKET,
            "oddsFormat": "decimal",
            "dateFormat": "iso",
        },
        costs=True,
    )
    if response.status_code != httpx.codes.OK:
        raise SportFailedError(_status(response))
    try:
        return read_events(response.content)
    except ValidationError as error:
        raise SportFailedError(_first_problem(error)) from None
    except ValueError as error:  # ResponseFormatError: not JSON of this API at all
        raise SportFailedError(f"not The Odds API's JSON: {error}") from None


def _status(response: Download) -> str:
    """An error answer's status, and the message The Odds API puts in its body."""
    said = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        message = None
    if isinstance(message, str) and message.strip():
        said += f": {' '.join(message.split())[:API_MESSAGE_MAX]}"
    return said


def _first_problem(error: ValidationError) -> str:
    problems = error.errors(include_url=False, include_input=False)
    first = problems[0]
    where = problem_location(first["loc"])
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"not a valid answer, nothing stored: {where or 'the document'}: {first['msg']}{more}"


def odds_api_job(
    engine: Engine,
    settings: Settings,
    *,
    clock: Clock = utcnow,
    stop: Stop | None = None,
    pause: Callable[[float], bool] | None = None,
) -> None:
    """One run on the schedule, which ``stop`` ends at once; it never raises. A run that
    finds the feed's lock taken (most often by a closing-line run, which holds it for a few
    requests) tries again after ``SKIPPED_RUN_PAUSE_SECONDS``, up to ``SKIPPED_RUN_TRIES``
    times, for the sports no fetch stored since it was due; ``pause`` waits and says
    whether to give up (None: the stop's wait)."""
    stop = stop or Stop()
    wait = pause or stop.wait

    def fetch(factory: sessionmaker[Session]) -> None:
        due, sports = clock(), tuple(settings.odds_api_sports)
        for _ in range(SKIPPED_RUN_TRIES):
            outcome = fetch_the_odds_api(
                factory,
                settings,
                trigger=RunTrigger.SCHEDULER,
                sports=sports,
                clock=clock,
                stop=stop,
            )
            if outcome.status is not FetchStatus.SKIPPED or wait(SKIPPED_RUN_PAUSE_SECONDS):
                return
            sports = _not_fetched_since(factory, settings.odds_api_url, sports, due)
            if not sports:
                return

    scheduled_fetch(
        engine, fetch, "scheduled fetch of The Odds API failed; the next one is on schedule"
    )
