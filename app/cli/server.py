"""``oddsboost serve``, ``migrate`` and ``health``."""

from __future__ import annotations

import logging
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import (
    database,
    database_errors,
    fail,
    load_settings,
    log_as_a_command,
    say,
)

if TYPE_CHECKING:
    from app.settings import Settings

# app.metrics's, not imported: it decides at import time whether it writes to that directory.
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address [default: ODDSBOOST_HOST]")] = None,
    port: Annotated[int | None, typer.Option(help="Port [default: ODDSBOOST_PORT]")] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Worker processes [default: ODDSBOOST_WORKERS]")
    ] = None,
    migrate: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Upgrade the schema before starting.")
    ] = True,
) -> None:
    """Run the HTTP service (uvicorn). Migrations run once, here, before any worker starts."""
    import uvicorn

    from app.logs import configure_logging, logging_config

    settings = load_settings()
    configure_logging(settings)
    _prepare_database(settings, migrate=migrate)
    worker_count = workers or settings.workers
    if worker_count > 1:
        _prepare_multiprocess_metrics()
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        # Named, as the app is, for the workers to import.
        http="app.http_protocol:LimitedHttpProtocol",
        host=host or settings.host,
        port=port or settings.port,
        workers=worker_count,
        proxy_headers=True,
        log_config=logging_config(settings),
        access_log=False,  # the service writes its own request lines, with request ids
        timeout_graceful_shutdown=math.ceil(settings.graceful_shutdown_seconds),
    )


def _prepare_database(settings: Settings, *, migrate: bool) -> None:
    """Upgrade the schema, or check it is current, before any worker starts."""
    from app.db.migrate import upgrade_to_head

    if migrate:
        with database_errors(settings.database_url):
            upgrade_to_head(settings.database_url)
    else:
        with database(settings, writes=False):
            pass


def _prepare_multiprocess_metrics() -> None:
    """Workers share their metrics through files in the configured directory (emptied of a
    previous run's) or a new one."""
    configured = os.environ.get(MULTIPROCESS_ENV)
    if configured:
        directory = Path(configured)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink()
    else:
        directory = Path(tempfile.mkdtemp(prefix="oddsboost-metrics-"))
        os.environ[MULTIPROCESS_ENV] = str(directory)
    logging.getLogger(__name__).info("worker metrics are shared through %s", directory)


def health_command(
    url: Annotated[
        str | None,
        typer.Option(
            help="The service's base URL or its /health URL "
            "[default: http://127.0.0.1:ODDSBOOST_PORT/health]."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for an answer.")] = 3.0,
) -> None:
    """Exit 0 if the service answers /health (for container health checks), else 1."""
    target = _health_url(url) if url else f"http://127.0.0.1:{load_settings().port}/health"
    try:
        status = _status_of(target, timeout)
    except (OSError, ValueError) as error:
        fail(f"{target}: {error}")
    if status != 200:
        fail(f"{target}: HTTP {status}")
    say(f"{target}: ok")


def _health_url(url: str) -> str:
    """The /health URL of a service given by its base URL; any other URL as it is."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.path in ("", "/") and not parts.query:
        return parts._replace(path="/health").geturl()
    return url


def _status_of(url: str, timeout: float) -> int:
    """The HTTP status of a GET of ``url``, with the standard library's client: importing a
    richer one would take longer than the request."""
    from http.client import HTTPConnection, HTTPSConnection
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http(s) URL")
    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=timeout)
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


def migrate_command() -> None:
    """Upgrade the configured database to the newest schema (alembic upgrade head), and say
    what that did: the revisions, and the tables it created."""
    from app.db.migrate import upgrade_and_report
    from app.domain.wording import counted

    settings = load_settings()
    log_as_a_command(settings)
    with database_errors(settings.database_url):
        upgrade = upgrade_and_report(settings.database_url)
        filled = _fill_track_record(settings)
    created = counted(len(upgrade.tables_created), "table")
    if upgrade.before is None:
        say(f"the database had no schema: created the newest, revision {upgrade.after}, {created}:")
    elif upgrade.before != upgrade.after:
        say(
            f"upgraded the schema from revision {upgrade.before} to {upgrade.after}: "
            f"{created} created{':' if upgrade.tables_created else ''}"
        )
    else:
        say(f"the database is at the newest schema, revision {upgrade.after}: nothing to do")
    if upgrade.tables_created:
        say(", ".join(upgrade.tables_created), indent=2, hang=0)
    if filled:
        say(f"track record: aggregates filled in {counted(filled, 'chunk')}")


def _fill_track_record(settings: Settings) -> int:
    """Fill the track record's aggregates a log kept before them lacks."""
    import datetime as dt

    from app.services import track_record, track_record_aggregates

    with database(settings, writes=True) as (_engine, sessions):
        return track_record_aggregates.fill(
            sessions, track_record.tally_terms(settings), now=dt.datetime.now(dt.UTC)
        )
