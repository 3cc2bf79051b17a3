"""Service configuration: one typed object read from ``ODDSBOOST_*`` environment variables."""

from __future__ import annotations

import datetime as dt
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Literal, get_args

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.domain import defaults
from app.domain.records import CAPTURE_SKEW
from app.domain.time_zones import TimeZoneName
from app.domain.value_sources import ValueSourceChain
from app.domain.vocabulary import FitTarget, Method, Phase
from app.domain.wording import counted

if TYPE_CHECKING:
    from pydantic import ValidationInfo
    from pydantic_core import ErrorDetails

    from app.domain.alerts import Receiver, RetryTerms
    from app.domain.value import ValueTerms
    from app.services.admission import AdmissionLimits

PLACEHOLDER_ADMIN_KEYS = frozenset({"", "changeme", "change-me", "secret", "admin", "password"})
ADMIN_KEY_MIN_LENGTH = 16
# Room an item of /admin/odds or /admin/results may take in the body, on average: an indented
# quote with every optional field and team names of 23 characters takes 448 bytes.
ADMIN_ITEM_BYTES = 512
MIB = 1024 * 1024
# What a fetch reads is held in memory.
MAX_DOWNLOAD_BYTES = 256 * MIB
Seconds = Annotated[float, Field(gt=0, le=3600)]
RunSeconds = Annotated[float, Field(gt=0, le=86400)]
TimeoutSeconds = Annotated[float, Field(gt=0, le=600)]
WaitSeconds = Annotated[float, Field(ge=0, le=600)]
DownloadBytes = Annotated[int, Field(ge=1024, le=MAX_DOWNLOAD_BYTES)]
Share = Annotated[float, Field(gt=0, le=1)]
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class Settings(BaseSettings):
    """Every setting of the service; the docs' configuration reference is generated from it."""

    # A refused value may be a key or hold a password: it is never repeated in the error.
    model_config = SettingsConfigDict(
        env_prefix="ODDSBOOST_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    environment: Literal["development", "production"] = Field(
        default="production",
        description="`development` relaxes the admin key check; anything public is `production`.",
    )
    database_url: str = Field(
        default="sqlite:///./oddsboost.db",
        description="SQLAlchemy URL: `sqlite:///path.db` or "
        "`postgresql+psycopg://user:password@host:5432/db` (a plain `postgresql://` URL also "
        "selects psycopg 3).",
    )
    admin_api_key: SecretStr | None = Field(
        default=None,
        description="Key expected in the `X-API-Key` header of /admin requests; "
        "unset disables them. Printable ASCII with no space at either end; outside "
        "development at least 16 characters, and a placeholder such as `changeme` is refused "
        "at start-up.",
    )
    host: str = Field(default="127.0.0.1", description="Address `oddsboost serve` binds to.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port of `oddsboost serve`.")
    workers: int = Field(default=1, ge=1, description="Worker processes of `oddsboost serve`.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Lowest level of log lines written."
    )
    log_format: Literal["auto", "json", "text"] = Field(
        default="auto",
        description="`json` (one object per line), `text`, or `auto`: the server and the "
        "scheduler write text in development, JSON otherwise; commands such as `import` "
        "write text.",
    )
    body_limit_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        description="Largest request body accepted (bytes), counted as it streams in.",
    )
    import_body_limit_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1024,
        description="Largest body of the /admin/import/ endpoints (bytes).",
    )
    header_limit_bytes: int = Field(
        default=16 * 1024,
        ge=1024,
        le=1024 * 1024,
        description="Largest request line and headers accepted (bytes), counted as they "
        "arrive; more is answered 431 and the connection closed.",
    )
    header_timeout_seconds: Seconds = Field(
        default=10.0,
        description="A request's line and headers must arrive within this many seconds of "
        "its first byte (or of the connection opening); otherwise 408 and the connection is "
        "closed. An idle kept-alive connection is closed after uvicorn's 5 s.",
    )
    body_timeout_seconds: Seconds = Field(
        default=60.0,
        description="A request's body must arrive within this many seconds of its headers "
        "(time the server itself takes before reading it does not count); otherwise 408 and "
        "the connection is closed.",
    )
    cors_allow_origins: list[str] = Field(
        default=[],
        description="Browser origins allowed to call the API (JSON list, e.g. "
        '["https://dashboard.example"]); none by default.',
    )
    dashboard_time_zone: TimeZoneName = Field(
        default="UTC",
        description="The time zone the dashboard shows times in (an IANA name such as "
        "Europe/London); a page's `?tz=` overrides it.",
    )
    graceful_shutdown_seconds: float = Field(
        default=30.0,
        gt=0,
        description="On SIGTERM, how long `oddsboost serve` lets in-flight requests finish, "
        "and how long `oddsboost scheduler` lets its running jobs stop before it exits anyway.",
    )
    performance_days_max: int = Field(
        default=366,
        ge=1,
        le=100_000,
        description="`/performance` and the track record page list, day by day (and in "
        "the bankroll's points), the latest this many days of a window with a settled "
        "logged match; the other figures cover the whole window.",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Connections to the database each worker keeps open for requests (the "
        "model's refresh has one of its own).",
    )
    database_pool_overflow: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="Connections a worker may open for requests beyond "
        "`database_pool_size` while all of those are in use, closed again when returned.",
    )
    database_pool_timeout_seconds: Seconds = Field(
        default=10.0,
        description="How long a request waits for a free connection when a worker has "
        "`database_pool_size` + `database_pool_overflow` in use before it gets 503 with "
        "Retry-After.",
    )
    admission_board: int = Field(
        default=4,
        ge=1,
        le=1000,
        description="Requests for the board (GET /upcoming, GET /value-bets, the dashboard's "
        "board) each worker serves at once; more wait up to `admission_wait_seconds`, then "
        "get 503 with Retry-After. Each holds one database connection.",
    )
    admission_pages: int = Field(
        default=4,
        ge=1,
        le=1000,
        description="Requests for the dashboard's match and model pages each worker serves "
        "at once (as `admission_board`). Each holds up to two database connections.",
    )
    admission_track_record: int = Field(
        default=2,
        ge=1,
        le=1000,
        description="Requests for the track record (GET /performance, the dashboard's track "
        "record) each worker serves at once (as `admission_board`). Each holds one database "
        "connection.",
    )
    admission_batch: int = Field(
        default=2,
        ge=1,
        le=1000,
        description="Requests to POST /predict/batch each worker serves at once (as "
        "`admission_board`). Each holds one database connection.",
    )
    admission_wait_seconds: WaitSeconds = Field(
        default=5.0,
        description="How long a request over its endpoint's limit of requests at once waits "
        "for a place before it gets 503 with Retry-After (the wait, rounded up; at least 1 s).",
    )
    sqlite_busy_timeout_seconds: Seconds = Field(
        default=30.0,
        description="On SQLite, how long a write waits while another one holds the database "
        "before it gives up (HTTP 503 with Retry-After).",
    )
    http_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Timeout of each read (and of connecting) when `import` fetches a file "
        "over HTTP; its size and overall time are bounded by the feed's settings.",
    )
    page_size_max: int = Field(
        default=500, ge=1, description="Largest `limit` accepted by paginated endpoints."
    )
    capture_skew_seconds: float = Field(
        default=CAPTURE_SKEW.total_seconds(),
        ge=0,
        le=24 * 3600,
        description="How far a quote's capture time may be later than the moment the service "
        "receives it (a sender's clock running ahead). A later one is refused: 422 at the "
        "admin API, skipped and reported in a file or a feed.",
    )

    # --- the model ------------------------------------------------------------------------
    demargin_method: Method = Field(
        default=defaults.METHOD,
        description="How odds become probabilities: multiplicative, additive, power, shin "
        "or odds_ratio.",
    )
    refit_phase: Phase = Field(
        default=defaults.PHASE, description="Which quotes the model learns from and predicts with."
    )
    refit_window_days: int = Field(
        default=3 * 365, ge=30, description="Training window: settled matches this far back."
    )
    refit_validation_fraction: float = Field(
        default=defaults.VALIDATION_FRACTION,
        gt=0,
        lt=1,
        description="Most recent share of the window held out to choose the number of rounds.",
    )
    refit_rounds_grid: list[int] = Field(
        default_factory=lambda: list(defaults.ROUNDS_GRID),
        min_length=1,
        description="Numbers of boosting rounds tried; the lowest validation log loss wins.",
    )
    refit_min_matches: int = Field(
        default=200, ge=10, description="Fewest usable settled matches a refit accepts."
    )
    refit_min_quotes: int = Field(
        default=defaults.MIN_QUOTES,
        ge=1,
        description="Bookmakers with fewer usable quotes in the window are left out.",
    )
    refit_pool_recent_days: int = Field(
        default=defaults.POOL_RECENT_DAYS,
        ge=1,
        description="A bookmaker that stopped quoting is left out of the pool: it stays only "
        "if, in at least one competition, it quoted ODDSBOOST_REFIT_POOL_RECENT_SHARE of the "
        "matches of that competition's last this many days in the window (counted back from "
        "its newest match).",
    )
    refit_pool_recent_share: float = Field(
        default=defaults.POOL_RECENT_SHARE,
        ge=0,
        le=1,
        description="The share of a competition's recent matches a bookmaker must have quoted "
        "to stay in the pool (see ODDSBOOST_REFIT_POOL_RECENT_DAYS); 0: every bookmaker stays.",
    )
    refit_half_life_days: float | None = Field(
        default=None,
        gt=0,
        description="Weigh matches by 2^(-age / half-life) so newer ones count more; unset: "
        "every match counts the same.",
    )
    refit_choose_method: bool = Field(
        default=False,
        description="Choose the de-margining method by validation log loss too.",
    )
    refit_calibrate: bool = Field(
        default=False,
        description="Fit one calibration exponent (p ∝ p^a) on the held-out part.",
    )
    refit_fit_target: FitTarget = Field(
        default=defaults.FIT_TARGET,
        description="What the weights are fitted toward: result (the settled results) or "
        "close (each match's outcomes weighted by Pinnacle's closing line, the result where "
        "it has none; the rounds chosen by the cross-entropy to it).",
    )
    promotion_tolerance: float = Field(
        default=0.002,
        ge=0,
        description="A new version is rejected if its validation log loss is worse than its "
        "own pool's consensus, or than the active version's on the same matches, by more than "
        "this.",
    )
    refit_cron: str = Field(
        default="0 3 * * *", description="When `oddsboost scheduler` refits (cron, UTC)."
    )
    model_refresh_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How often each API worker looks for a newly activated model version.",
    )
    predict_cache_seconds: float = Field(
        default=2.0,
        ge=0,
        description="Each worker reuses an answer by match_id for this long, so quotes "
        "stored meanwhile show up after at most this delay; 0 turns the cache off.",
    )
    catalogue_counts_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How old the counts of /bookmakers and /competitions may grow before a "
        "worker counts again (one request waits for that count; the others meanwhile get "
        "the counts it has); 0 counts for every request.",
    )
    redis_url: str | None = Field(
        default=None,
        description="Redis URL (`redis://host:6379/0`) where every worker and replica keeps "
        "the boards of `/upcoming`, `/value-bets` and the dashboard, so each is built once per "
        "change; unset: each worker keeps its own. The database still decides whether a board "
        "is current, and a Redis that fails is logged, counted and worked around.",
    )
    redis_key_prefix: str = Field(
        default="oddsboost",
        min_length=1,
        max_length=64,
        description="Prefix of every Redis key the service writes, so that several services "
        "(or tests) can share one Redis database.",
    )
    redis_board_seconds: float = Field(
        default=900.0,
        gt=0,
        le=86400,
        description="How long Redis keeps a board; a board is only ever read for the exact "
        "state of the database it was built from, so this only bounds what Redis holds.",
    )
    redis_build_wait_seconds: WaitSeconds = Field(
        default=5.0,
        description="How long a worker that finds another building the board it needs waits "
        "for it before building its own.",
    )
    redis_board_max_bytes: int = Field(
        default=16 * MIB,
        ge=1024,
        le=512 * MIB,
        description="Largest board written to Redis (bytes, serialised); a larger one is kept "
        "by its worker only.",
    )
    warm_board: bool = Field(
        default=True,
        description="Each worker builds the default board of upcoming matches in the "
        "background when it starts and after a model activation, so that no viewer waits for "
        "it (with Redis, only if no process has built it yet).",
    )
    board_cache_bytes: int = Field(
        default=64 * MIB,
        ge=MIB,
        description="Memory each worker may give the boards it keeps (estimated from their "
        "matches), beside the limit of 256 boards.",
    )
    kept_bodies_bytes: int = Field(
        default=16 * MIB,
        ge=MIB,
        description="Memory each worker may give the written answers it keeps to send again "
        "(the dashboard's pages, the bodies of GET /upcoming), for each of the two, beside "
        "their limits of entries; a page of 500 matches is about half a MiB.",
    )
    admin_items_max: int = Field(
        default=10_000,
        ge=1,
        le=10_000,
        description="Most items in one admin JSON request: the quotes of /admin/odds, the "
        "results of /admin/results, the events of /admin/import/the-odds-api. The body "
        "limit of /admin/odds and /admin/results follows it: 512 bytes an item, or "
        "`ODDSBOOST_BODY_LIMIT_BYTES` if that is larger.",
    )
    predict_batch_max: int = Field(
        default=1000, ge=1, le=10_000, description="Most items accepted by POST /predict/batch."
    )

    # --- value bets -----------------------------------------------------------------------
    value_min_ev: float = Field(
        default=defaults.MIN_EV,
        ge=0,
        le=1,
        description="A match's outcome of highest expected value (probability × net price − "
        "1, an exchange's price net of its commission) is flagged as its value bet when that "
        "value is above this: one bet a match at most.",
    )
    value_kelly_fraction: Share = Field(
        default=defaults.KELLY_FRACTION,
        description="Share of the Kelly stake suggested for a value bet.",
    )
    value_stake_cap: Share = Field(
        default=defaults.STAKE_CAP,
        description="Largest suggested stake on one bet, as a share of the bankroll.",
    )
    value_daily_exposure_cap: Share = Field(
        default=defaults.DAILY_EXPOSURE_CAP,
        description="Largest sum of the stakes GET /value-bets suggests on one day's "
        "matches (UTC), as a share of the bankroll; a day over it has its stakes scaled down.",
    )
    value_probability_source: ValueSourceChain = Field(
        default=defaults.VALUE_SOURCE,
        description="Where a value bet's probability comes from: a chain of up to five "
        "links, comma-separated, each `ensemble` (the served prediction), `consensus` (the "
        "mean of the de-margined lines of the bookmakers that quoted the match) or a known "
        "bookmaker's code or name (e.g. `PS`, its de-margined line). For each match the "
        "first link with a line prices it; a match none has a line for gets no value.",
    )
    closing_window_minutes: int = Field(
        default=30,
        ge=1,
        le=24 * 60,
        description="How long before kickoff the last pre-match price of the closing "
        "reference (Pinnacle) must have been seen to hold (captured, or fetched again "
        "unchanged) to count as its closing line, against which the flag ledger measures "
        "each flag's CLV; without one, the closing prices of a season file count.",
    )
    exchange_commission: dict[str, Annotated[float, Field(ge=0, lt=1)]] = Field(
        default_factory=lambda: dict(defaults.EXCHANGE_COMMISSION),
        description="Each exchange's commission on net winnings, by bookmaker code (JSON, "
        'e.g. `{"BFE": 0.05}`; `{}`: none; each at least 0 and under 1; a known bookmaker '
        "may be named by code, name or The Odds API's key, once). An exchange's "
        "price is taken net, 1 + (price − 1) × (1 − commission), in the expected value, the "
        "stake, the choice of the best price and the backtest; answers show the quoted "
        "`price` and the `net_price`. Betfair Exchange (BFE) charges a base rate of 5 % on "
        "net winnings.",
    )

    # --- The Odds API feed ------------------------------------------------------------------
    odds_api_key: SecretStr | None = Field(
        default=None,
        min_length=1,
        description="Key of The Odds API (`oddsboost fetch the-odds-api` and its schedule); "
        "never logged, stored or shown: added to each request as it leaves, and replaced by "
        "`***` in every log line.",
    )
    odds_api_url: str = Field(
        default="https://api.the-odds-api.com",
        pattern=r"^https?://[^?#\s]+$",
        description="Base URL of The Odds API (its /v4 paths are added).",
    )
    odds_api_sports: Annotated[list[str], NoDecode] = Field(
        default=["soccer_epl"],
        description="Sport keys fetched by default (comma-separated or a JSON list).",
    )
    odds_api_regions: Annotated[list[str], NoDecode] = Field(
        default=["uk", "eu"],
        description="Regions asked for (uk, eu, us, us2, au): each costs one credit per sport.",
    )
    odds_api_quota_reserve: int = Field(
        default=10,
        ge=0,
        description="Credits left unspent: a sport whose request would leave fewer is not fetched.",
    )
    odds_api_timeout_seconds: TimeoutSeconds = Field(
        default=30.0, description="Timeout of each request to The Odds API."
    )
    odds_api_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Attempts of a request answered 429 or 5xx, or whose connection could "
        "not be made; of the free check of the key, also one not answered in time (a "
        "sport's odds request is not sent again then: it may have cost credits).",
    )
    odds_api_backoff_seconds: WaitSeconds = Field(
        default=2.0,
        description="Wait before the second attempt, doubled before each next one (unless "
        "the answer says Retry-After).",
    )
    odds_api_max_wait_seconds: float = Field(
        default=120.0,
        ge=0,
        le=3600,
        description="Longest wait before an attempt; a Retry-After beyond it ends the attempts.",
    )
    odds_api_cron: str | None = Field(
        default=None,
        description="When `oddsboost scheduler` fetches The Odds API (cron, UTC); unset: never.",
    )
    odds_api_max_bytes: DownloadBytes = Field(
        default=4 * MIB,
        description="Largest answer of The Odds API read (bytes, once inflated), also by "
        "`oddsboost import the-odds-api URL`: a larger one fails its sport, not read further.",
    )
    odds_api_request_seconds: Seconds = Field(
        default=120.0,
        description="Longest a request to The Odds API may take in all, however slowly its "
        "answer comes (also for `oddsboost import the-odds-api URL`).",
    )
    odds_api_run_seconds: RunSeconds = Field(
        default=1800.0,
        description="Longest a fetch run of The Odds API may take: past it, the run ends as "
        "failed, keeping what it stored.",
    )
    closing_line_cron: str | None = Field(
        default=None,
        description="When `oddsboost scheduler` looks for matches about to kick off and fetches "
        "the closing line of their sports from The Odds API (cron, UTC, e.g. `2-59/5 * * * *`, "
        "minutes apart from the feed's); unset: never.",
    )
    closing_line_minutes: int = Field(
        default=15,
        ge=1,
        le=24 * 60,
        description="How long before kickoff the closing-line job fetches a match's sport "
        "(minutes, at most `closing_window_minutes`): once a match is inside this window its "
        "sport is fetched once, unless a fetch of the sport already came inside it.",
    )

    # --- the track record -----------------------------------------------------------------
    track_record_cron: str | None = Field(
        default="*/5 * * * *",
        description="When `oddsboost scheduler` logs the matches that have kicked off, each "
        "as it would have been served (cron, UTC); empty: never.",
    )
    track_record_lookback_hours: int = Field(
        default=24,
        ge=1,
        le=31 * 24,
        description="How far back before its run the track record's job looks for matches "
        "that kicked off and are not logged yet (hours); older ones need "
        "`oddsboost track-record rebuild`.",
    )
    # --- the price history ------------------------------------------------------------
    quote_history_cron: str | None = Field(
        default=None,
        description="When `oddsboost scheduler` thins the price history of old matches, as "
        "`oddsboost quotes thin` does with `quote_history_interval_hours` and "
        "`quote_history_older_than_days` (cron, UTC, e.g. `30 4 * * 0`); unset: never.",
    )
    quote_history_interval_hours: int = Field(
        default=6,
        ge=1,
        le=7 * 24,
        description="The scheduled thinning keeps one quote per bookmaker, phase and this "
        "many hours of a match's history (hours), besides its opening, close and latest.",
    )
    quote_history_older_than_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        description="The scheduled thinning takes the matches that kicked off more than "
        "this many days ago (days).",
    )
    # --- alerts ---------------------------------------------------------------------------
    alert_urls: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="Webhook receivers of alerts (comma-separated or a JSON list): each an "
        "http(s) URL, optionally prefixed `discord:` (a Discord webhook) or `telegram:` (a "
        "Telegram bot's sendMessage URL with `?chat_id=`); none: no alerts. Only these URLs "
        "are ever called (a redirect is a failed attempt); logs name their host only.",
    )
    alert_secret: SecretStr | None = Field(
        default=None,
        min_length=16,
        description="Key of the HMAC-SHA256 signature of every alert (header "
        "`X-Oddsboost-Signature`), at least 16 characters; required when `alert_urls` are "
        "set. Never logged or shown.",
    )
    alert_price_improvement: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="An open flag whose net price improves by at least this share of the "
        "price last alerted (0.05: 5 %) is alerted again; 0: improvements are not alerted.",
    )
    alert_attempts: int = Field(
        default=6,
        ge=1,
        le=20,
        description="Attempts of an alert's delivery before it is recorded as failed.",
    )
    alert_backoff_seconds: Seconds = Field(
        default=10.0,
        description="Wait before an alert's second attempt, doubled before each next one (at "
        "most an hour), each shortened by up to a quarter at random.",
    )
    alert_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = Field(
        default=5.0,
        description="How long an alert's attempt waits to connect, to send, and for each "
        "part of the answer; an answer is read no further than 64 KiB or this long after the "
        "attempt began. A receiver slower than this fails the attempt.",
    )
    alert_poll_seconds: Seconds = Field(
        default=5.0,
        description="How often the server's alert sender looks for due deliveries besides "
        "being woken by the writes of its own process (those of a command or another worker "
        "are found by this look).",
    )
    alert_sender: bool = Field(
        default=True,
        description="Whether `oddsboost serve` sends the queued alerts (each worker runs a "
        "sender; two never post one delivery at once); false: it only queues them, for "
        "another server to send, and needs no `alert_secret` (a refit's process is started so).",
    )
    alert_retention_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        description="Delivered and failed alert deliveries (and their attempts) queued more "
        "than this many days ago, of matches that have kicked off, are deleted by the "
        "server's sender, in small batches about once an hour, or by `oddsboost alerts "
        "prune` (days).",
    )
    public_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^?#\s]+$",
        description="The address the service is reached at (e.g. `https://odds.example`), "
        "for the links of alerts; unset: the links are paths (`/dashboard/matches/17`).",
    )
    # --- the Football-Data.co.uk feed -------------------------------------------------
    football_data_url: str = Field(
        default="https://www.football-data.co.uk",
        pattern=r"^https?://\S+[^/]$",
        description="Address of Football-Data.co.uk (no trailing slash); "
        "`oddsboost fetch football-data` downloads its files from there.",
    )
    football_data_leagues: str = Field(
        default="E0,E1,SP1,I1,D1,F1",
        description="Leagues `oddsboost fetch football-data` fetches when given none, "
        "comma-separated: main leagues (E0, SP1, ...) and extra ones (BRA, USA, ...).",
    )
    football_data_cron: str | None = Field(
        default=None,
        description="When `oddsboost scheduler` fetches Football-Data.co.uk's files of the "
        "current season (cron, UTC); unset: never.",
    )
    football_data_timeout_seconds: TimeoutSeconds = Field(
        default=30.0,
        description="Timeout of each request to Football-Data.co.uk (connect, and between "
        "bytes read).",
    )
    football_data_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Times a request to Football-Data.co.uk is tried again after a 5xx "
        "answer, a timeout or a broken connection.",
    )
    football_data_retry_wait_seconds: WaitSeconds = Field(
        default=2.0,
        description="Wait before the first retry of a request to Football-Data.co.uk; "
        "doubled before each further one.",
    )
    football_data_max_bytes: DownloadBytes = Field(
        default=2 * MIB,
        description="Largest file read from Football-Data.co.uk (bytes, once inflated), also "
        "by `oddsboost import football-data URL`: a larger one fails, not read further.",
    )
    football_data_request_seconds: Seconds = Field(
        default=120.0,
        description="Longest a request to Football-Data.co.uk may take in all, however "
        "slowly its answer comes (also for `oddsboost import football-data URL`).",
    )
    football_data_run_seconds: RunSeconds = Field(
        default=1800.0,
        description="Longest a fetch run of Football-Data.co.uk may take: past it, the run "
        "ends as failed, keeping the files it imported.",
    )

    @field_validator("alert_urls", mode="before")
    @classmethod
    def _alert_urls_list(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part for part in text.split(",") if part.strip()]
        return value

    @field_validator("alert_urls")
    @classmethod
    def _alert_receivers(cls, entries: list[str]) -> list[str]:
        from app.domain.alerts import read_receiver

        for position, entry in enumerate(entries, start=1):
            try:
                read_receiver(entry)
            except ValueError as error:
                # The entry is not repeated: a chat's URL holds its token.
                raise ValueError(f"entry {position} is {error}") from None
        return [entry.strip() for entry in entries]

    @model_validator(mode="after")
    def _alerts_need_a_secret(self) -> Settings:
        # A process that only queues alerts (a refit's, which is given no secret) needs none.
        if self.alert_urls and self.alert_secret is None and self.alert_sender:
            raise ValueError(
                "ODDSBOOST_ALERT_URLS is set but ODDSBOOST_ALERT_SECRET is not: every alert "
                "is signed with it"
            )
        return self

    def alert_receivers(self) -> tuple[Receiver, ...]:
        """The configured receivers, as the sender addresses them."""
        from app.domain.alerts import read_receiver

        return tuple(read_receiver(entry) for entry in self.alert_urls)

    def alert_retry(self) -> RetryTerms:
        from app.domain.alerts import RetryTerms

        return RetryTerms(attempts=self.alert_attempts, backoff=self.alert_backoff_seconds)

    @field_validator("football_data_leagues")
    @classmethod
    def _known_leagues(cls, text: str) -> str:
        from app.domain.football_data_feed import check_leagues

        return ",".join(check_leagues(text.split(",")))

    @property
    def capture_skew(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.capture_skew_seconds)

    @property
    def admin_json_body_limit_bytes(self) -> int:
        """The largest body of /admin/odds and /admin/results: room for ``admin_items_max``
        items, never less than the body limit."""
        return max(self.body_limit_bytes, self.admin_items_max * ADMIN_ITEM_BYTES)

    def value_terms(self) -> ValueTerms:
        from app.domain.value import ValueTerms

        return ValueTerms(
            kelly_fraction=self.value_kelly_fraction,
            stake_cap=self.value_stake_cap,
            min_ev=self.value_min_ev,
            source=self.value_probability_source,
            commissions=self.commissions(),
        )

    def admission_limits(self) -> AdmissionLimits:
        """The limits of requests at once of each expensive kind of endpoint."""
        from app.services.admission import AdmissionLimits, Endpoints

        limits = {
            Endpoints.BOARD: self.admission_board,
            Endpoints.PAGES: self.admission_pages,
            Endpoints.TRACK_RECORD: self.admission_track_record,
            Endpoints.BATCH: self.admission_batch,
        }
        return AdmissionLimits(limits, self.admission_wait_seconds)

    def commissions(self) -> tuple[tuple[str, float], ...]:
        """``exchange_commission`` by bookmaker key, as value terms and the backtest take it."""
        from app.domain.bookmakers import bookmaker_key

        return tuple(
            sorted((bookmaker_key(code), rate) for code, rate in self.exchange_commission.items())
        )

    @field_validator("exchange_commission")
    @classmethod
    def _one_commission_per_bookmaker(cls, rates: dict[str, float]) -> dict[str, float]:
        """Keyed by a known bookmaker's code (its code, name or The Odds API's key all name
        it), so two spellings of one bookmaker cannot give it two rates."""
        from app.domain.bookmakers import bookmaker_key, commission_code

        keyed: dict[str, float] = {}
        spelled: dict[str, str] = {}
        for name, rate in rates.items():
            if not name.strip():
                raise ValueError("a bookmaker's code is empty")
            code = commission_code(name)
            key = bookmaker_key(code)
            if key in spelled:
                raise ValueError(f"{spelled[key]!r} and {name!r} name the same bookmaker")
            keyed[code], spelled[key] = rate, name
        return keyed

    @field_validator("refit_rounds_grid")
    @classmethod
    def _positive_sorted_grid(cls, grid: list[int]) -> list[int]:
        if any(rounds < 1 for rounds in grid):
            raise ValueError("every number of rounds must be at least 1")
        return sorted(set(grid))

    @field_validator("refit_cron")
    @classmethod
    def _valid_cron(cls, expression: str) -> str:
        return check_cron(expression)

    @field_validator("odds_api_sports", "odds_api_regions", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else text.split(",")
        return value

    @field_validator("odds_api_sports", "odds_api_regions")
    @classmethod
    def _odds_api_keys(cls, keys: list[str], info: ValidationInfo) -> list[str]:
        from app.domain.odds_api import region_keys, sport_keys

        return list((sport_keys if info.field_name == "odds_api_sports" else region_keys)(keys))

    @field_validator(
        "odds_api_cron",
        "closing_line_cron",
        "football_data_cron",
        "track_record_cron",
        "quote_history_cron",
    )
    @classmethod
    def _optional_cron(cls, expression: str | None) -> str | None:
        if expression is None or not expression.strip():
            return None
        return check_cron(expression)

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url is None or not url.strip():
            return None
        if not url.strip().startswith(REDIS_SCHEMES):
            raise ValueError(f"a Redis URL starts with {', '.join(REDIS_SCHEMES)}")
        return url.strip()

    @model_validator(mode="after")
    def _odds_api_schedule_needs_a_key(self) -> Settings:
        for setting in ("odds_api_cron", "closing_line_cron"):
            if getattr(self, setting) is not None and self.odds_api_key is None:
                raise ValueError(
                    f"ODDSBOOST_{setting.upper()} is set but ODDSBOOST_ODDS_API_KEY is not"
                )
        return self

    @model_validator(mode="after")
    def _closing_line_fetched_inside_the_closing_window(self) -> Settings:
        # A fetch earlier than the window would never count as the close the ledger measures.
        if self.closing_line_minutes > self.closing_window_minutes:
            raise ValueError(
                f"ODDSBOOST_CLOSING_LINE_MINUTES ({self.closing_line_minutes}) is more than "
                f"ODDSBOOST_CLOSING_WINDOW_MINUTES ({self.closing_window_minutes}): the "
                "closing-line job would fetch before the window in which a quote counts as "
                "the closing line"
            )
        return self

    @model_validator(mode="after")
    def _limited_endpoints_fit_in_the_pool(self) -> Settings:
        # Past the pool, a limited request would wait for a connection another one holds;
        # at the pool, the endpoints no limit holds would.
        from app.services.admission import RESERVED_CONNECTIONS, connections_needed

        needed = connections_needed(self.admission_limits().limits)
        pool = self.database_pool_size + self.database_pool_overflow
        if needed + RESERVED_CONNECTIONS > pool:
            raise ValueError(
                f"the limited endpoints may hold {counted(needed, 'database connection')} at "
                "once (ODDSBOOST_ADMISSION_BOARD + 2 × ODDSBOOST_ADMISSION_PAGES + "
                "ODDSBOOST_ADMISSION_TRACK_RECORD + ODDSBOOST_ADMISSION_BATCH), and "
                f"{RESERVED_CONNECTIONS} more are kept for the other endpoints: more than the "
                f"{pool} of ODDSBOOST_DATABASE_POOL_SIZE + ODDSBOOST_DATABASE_POOL_OVERFLOW"
            )
        return self

    @field_validator("database_url")
    @classmethod
    def _normalise_postgres_driver(cls, url: str) -> str:
        # psycopg 3 is the supported driver; plain `postgresql://` would select psycopg2.
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @model_validator(mode="after")
    def _refuse_unusable_admin_key(self) -> Settings:
        if self.admin_api_key is None:
            return self
        key = self.admin_api_key.get_secret_value()
        if not (key.isascii() and key.isprintable() and key == key.strip()):
            # A header value arrives as Latin-1 bytes, trimmed: such a key could never match.
            raise ValueError(
                "ODDSBOOST_ADMIN_API_KEY must be printable ASCII with no space at either end, "
                "or no client could send it in the X-API-Key header"
            )
        if self.environment == "development":
            return self
        if key.strip().lower() in PLACEHOLDER_ADMIN_KEYS:
            raise ValueError(
                "ODDSBOOST_ADMIN_API_KEY is a placeholder; set a real secret "
                "(or ODDSBOOST_ENVIRONMENT=development for local experiments)"
            )
        if len(key) < ADMIN_KEY_MIN_LENGTH:
            raise ValueError(
                "ODDSBOOST_ADMIN_API_KEY must have at least "
                f"{counted(ADMIN_KEY_MIN_LENGTH, 'character')} "
                "outside development; make one with "
                "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        return self


def check_cron(expression: str) -> str:
    """A cron expression the scheduler accepts (five fields, UTC), or ValueError."""
    from apscheduler.triggers.cron import CronTrigger

    try:
        CronTrigger.from_crontab(expression)
    except ValueError as error:
        raise ValueError(f"not a cron expression ({error})") from None
    return expression


class ConfigurationError(ValueError):
    """Settings that cannot be used: one problem per variable, with why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def configuration_problems(error: ValidationError) -> list[str]:
    """Each error as ``ODDSBOOST_NAME: reason``, without pydantic's links or the value (a
    secret, maybe); a check of several settings names them in its reason."""
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        reason = _reason(item)
        if not item["loc"]:
            problems.append(reason)
            continue
        name, *within = item["loc"]
        variable = f"ODDSBOOST_{str(name).upper()}" + "".join(f"[{part}]" for part in within)
        problems.append(f"{variable}: {reason}")
    return problems


def _reason(item: ErrorDetails) -> str:
    # A validator's own ValueError: its message, without pydantic's "Value error, ".
    error = item.get("ctx", {}).get("error")
    return str(error) if item["type"] == "value_error" and error is not None else item["msg"]


@lru_cache
def get_settings() -> Settings:
    """Settings of this process, read once from the environment, or ConfigurationError."""
    try:
        return Settings()
    except ValidationError as error:
        raise ConfigurationError(configuration_problems(error)) from None


# The variables of the secret settings, which no child process is given.
SECRET_VARIABLES = frozenset(
    f"ODDSBOOST_{name.upper()}"
    for name, field in Settings.model_fields.items()
    if SecretStr in (field.annotation, *get_args(field.annotation))
)


def settings_environment(settings: Settings) -> dict[str, str]:
    """The settings but the secrets as ``ODDSBOOST_*`` variables, for a child process."""
    environment: dict[str, str] = {}
    for name, value in settings.model_dump(mode="json").items():
        variable = f"ODDSBOOST_{name.upper()}"
        if value is not None and variable not in SECRET_VARIABLES:
            environment[variable] = (
                json.dumps(value) if isinstance(value, (list, dict)) else str(value)
            )
    return environment
