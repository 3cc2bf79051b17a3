"""Prometheus metrics, correct with several worker processes.

Counters and histograms live in this module's registry. When ``PROMETHEUS_MULTIPROC_DIR``
is set (``oddsboost serve --workers N`` sets it when it is not), every worker writes its
values to files in that directory and a scrape of any worker adds them all up
(prometheus-client's multiprocess mode). The model and refit gauges are computed at scrape
time from what the worker's model cache last read, so a scrape never queries the database.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Literal

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from app.domain import defaults

if TYPE_CHECKING:
    from prometheus_client import Metric

    from app.services.serving import ModelCache

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
REGISTRY = CollectorRegistry(auto_describe=True)

HTTP_REQUESTS = Counter(
    "oddsboost_http_requests_total",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_LATENCY = Histogram(
    "oddsboost_http_request_duration_seconds",
    "Time to answer an HTTP request, by method and route template.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
PREDICTIONS = Counter(
    "oddsboost_predictions_total",
    "Predictions served, by source (inline or match_id) and basis (model or consensus).",
    ["source", "basis"],
    registry=REGISTRY,
)
MODEL_PREDICTIONS = Counter(
    "oddsboost_model_predictions_total",
    "Predictions served with a model active, by where (predict or board).",
    ["served_by"],
    registry=REGISTRY,
)
UNDER_HALF_WEIGHT = Counter(
    "oddsboost_model_predictions_under_half_weight_total",
    "Of those, the predictions whose quoting bookmakers held less than half of the model's "
    "weight, by where (predict or board).",
    ["served_by"],
    registry=REGISTRY,
)
INGESTED = Counter(
    "oddsboost_ingested_rows_total",
    "Rows written by ingests (the admin endpoints, imports), by kind.",
    ["kind"],
    registry=REGISTRY,
)

ADMISSION_REFUSALS = Counter(
    "oddsboost_admission_refusals_total",
    "Requests answered 503 because their kind of endpoint was at its limit of requests at "
    "once in the worker for longer than they may wait, by kind (board, pages, track_record, "
    "batch).",
    ["endpoints"],
    registry=REGISTRY,
)

FETCH_RUNS = Counter(
    "oddsboost_fetch_runs",
    "Feed runs finished, by source and status (succeeded, failed or skipped).",
    ["source", "status"],
    registry=REGISTRY,
)
FETCH_QUOTA_REMAINING = Gauge(
    "oddsboost_fetch_quota_remaining",
    "Requests (credits) a feed's source said were left after the latest run's last request.",
    ["source"],
    multiprocess_mode="mostrecent",
    registry=REGISTRY,
)

BOARD_BUILDS = Counter(
    "oddsboost_board_builds",
    "Boards of upcoming matches built (the matches whose part of the board changed predicted "
    "again), by every worker; with Redis, a board another process built is read, not built.",
    registry=REGISTRY,
)
SHARED_BOARDS = Counter(
    "oddsboost_shared_boards",
    "Boards looked up in Redis, by result: hit (read), miss (built here and written), "
    "waited (read once another process had built it), too_large (kept here only), failed "
    "(Redis out of reach or in error: built and kept here).",
    ["result"],
    registry=REGISTRY,
)

ALERT_ATTEMPTS = Counter(
    "oddsboost_alert_attempts",
    "Attempts to deliver an alert to a webhook receiver, by result: delivered (answered "
    "2xx), retry (failed, to be tried again), failed (failed, no attempt left).",
    ["result"],
    registry=REGISTRY,
)
ALERT_DELAY = Histogram(
    "oddsboost_alert_delay_seconds",
    "Time from an alert being stored with its flag's event to its first attempt leaving.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0),
    registry=REGISTRY,
)

# labels() costs more than inc() or observe(); the label values, and so the caches, are bounded.


@cache
def _requests_counted(method: str, route: str, status: int) -> Counter:
    return HTTP_REQUESTS.labels(method, route, str(status))


@cache
def _latency_observed(method: str, route: str) -> Histogram:
    return HTTP_LATENCY.labels(method, route)


@cache
def _predictions_counted(source: str, basis: str) -> Counter:
    return PREDICTIONS.labels(source, basis)


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    _requests_counted(method, route, status).inc()
    _latency_observed(method, route).observe(seconds)


def count_prediction(source: Literal["inline", "match_id"], basis: str) -> None:
    _predictions_counted(source, basis).inc()


@cache
def _model_predictions_counted(served_by: str) -> Counter:
    return MODEL_PREDICTIONS.labels(served_by)


@cache
def _under_half_counted(served_by: str) -> Counter:
    return UNDER_HALF_WEIGHT.labels(served_by)


def count_model_weight(served_by: Literal["predict", "board"], present: float | None) -> None:
    """A prediction's share of the model's weight present; none counted without a model."""
    if present is None:
        return
    _model_predictions_counted(served_by).inc()
    if present < defaults.LOW_WEIGHT_PRESENT:
        _under_half_counted(served_by).inc()


def count_admission_refusal(endpoints: str) -> None:
    ADMISSION_REFUSALS.labels(endpoints).inc()


def count_fetch_run(source: str, status: str, quota_remaining: int | None) -> None:
    FETCH_RUNS.labels(source, status).inc()
    if quota_remaining is not None:
        FETCH_QUOTA_REMAINING.labels(source).set(quota_remaining)


class LiveCollector(Collector):
    """The active model and the refits, as this worker's model cache last saw them."""

    def __init__(self, cache: ModelCache) -> None:
        self.cache = cache

    def collect(self) -> Iterator[Metric]:
        ensemble = self.cache.ensemble
        version = GaugeMetricFamily(
            "oddsboost_active_model_version",
            "Id of the model version being served (0: none fitted yet).",
        )
        version.add_metric([], float(ensemble.version or 0) if ensemble else 0.0)
        yield version
        refits = self.cache.refits
        runs = CounterMetricFamily(
            "oddsboost_refit_runs", "Refit runs recorded, by status.", labels=["status"]
        )
        for status, count in sorted(refits.runs_by_status.items()):
            runs.add_metric([status], float(count))
        yield runs
        if refits.last_success_at is not None:
            since = GaugeMetricFamily(
                "oddsboost_seconds_since_last_successful_refit",
                "Seconds since the last refit that produced an active version finished.",
            )
            since.add_metric([], max(0.0, time.time() - refits.last_success_at))
            yield since
        if refits.last_duration_seconds is not None:
            duration = GaugeMetricFamily(
                "oddsboost_refit_last_duration_seconds",
                "Duration of the most recent finished refit, labelled with how it ended.",
                labels=["status"],
            )
            duration.add_metric([refits.last_status or ""], refits.last_duration_seconds)
            yield duration
        yield from track_record_gauge(self.cache.served_minus_consensus)


def track_record_gauge(served_minus_consensus: float | None) -> Iterator[Metric]:
    if served_minus_consensus is None:
        return
    gauge = GaugeMetricFamily(
        "oddsboost_served_minus_consensus_log_loss_30d",
        "Log loss of the predictions served at kickoff minus the consensus's, over the "
        "settled matches of the last 30 days (negative: the model did better).",
    )
    gauge.add_metric([], served_minus_consensus)
    yield gauge


def exposition(cache: ModelCache) -> tuple[bytes, str]:
    """The body and content type of a scrape."""
    registry = CollectorRegistry()
    multiprocess = bool(os.environ.get(MULTIPROCESS_ENV))
    if multiprocess:
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # untyped upstream
    registry.register(LiveCollector(cache))
    own = b"" if multiprocess else generate_latest(REGISTRY)
    return own + generate_latest(registry), CONTENT_TYPE_LATEST


def count_board_build() -> None:
    BOARD_BUILDS.inc()


def count_shared_board(result: Literal["hit", "miss", "waited", "too_large", "failed"]) -> None:
    SHARED_BOARDS.labels(result).inc()


def count_alert_attempt(result: Literal["delivered", "retry", "failed"]) -> None:
    ALERT_ATTEMPTS.labels(result).inc()


def observe_alert_delay(seconds: float) -> None:
    ALERT_DELAY.observe(max(seconds, 0.0))
