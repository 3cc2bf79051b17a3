"""Small helpers shared by tests (independent counts, row counts, a free port, polling, a
model version and a track record's entry made by hand, model versions committed, the admin
API's clock moved, the service's JSON log lines caught in a buffer)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.api.deps import received_now
from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.orm import Base, ModelVersion
from app.domain.odds import Triple
from app.domain.scoring import Scores
from app.domain.track_record import LoggedQuote, ServedPrediction
from app.domain.version_records import BookmakerWeight, FitReport
from app.domain.vocabulary import ActivatedBy, Basis, Method, Phase
from app.logs import RequestIdFilter, SecretFilter, logging_config
from app.services.model_versions import activate
from app.settings import Settings
from boosting import StopReason


def csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and non-blank rows of a season file, read with the standard csv module."""
    text = path.read_bytes().decode("latin-1")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], [r for r in rows[1:] if any(cell.strip() for cell in r)]


def count_complete_triples(path: Path, prefix: str) -> int:
    """Rows where all three <prefix>H/D/A cells hold a price above 1: an independent count."""
    header, rows = csv_rows(path)
    positions = [header.index(prefix + s) for s in "HDA"]
    return sum(
        all(p < len(row) and row[p].strip() for p in positions)
        and all(float(row[p]) > 1.0 for p in positions)
        for row in rows
    )


def count_rows(session: Session, model: type[Base]) -> int:
    return session.scalar(select(func.count()).select_from(model)) or 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# Generous: the machine may be busy; a test that is not stuck never waits this long.
DEADLINE_SECONDS = 120.0


def wait_until(
    condition: Callable[[], bool],
    what: str,
    *,
    alive: subprocess.Popen[bytes] | None = None,
    seconds: float = DEADLINE_SECONDS,
) -> None:
    """Poll ``condition`` until it holds; fail if ``alive`` exits first or time runs out."""
    deadline = time.monotonic() + seconds
    while not condition():
        if alive is not None and alive.poll() is not None:
            raise AssertionError(f"the process exited ({alive.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:.0f} s")
        time.sleep(0.05)


def error_messages(body: object) -> list[str]:
    """The messages of an error answer (a problem), each with its location when it has one.

    Tests read error answers through this one function, so they assert what the error says
    and where, whatever the envelope around it: each invalid field as "loc: msg", else the
    problem's detail.
    """
    assert isinstance(body, dict), body
    assert {"type", "title", "status", "detail", "instance", "errors"} <= body.keys(), body
    errors = body["errors"]
    assert isinstance(errors, list), body
    if not errors:
        assert isinstance(body["detail"], str), body
        return [body["detail"]]
    messages = []
    for item in errors:
        location = ".".join(str(part) for part in item["loc"])
        messages.append(f"{location}: {item['msg']}" if location else str(item["msg"]))
    return messages


HAND_MADE_SCORES = Scores(log_loss=1.0, brier=0.6, rps=0.2, accuracy=0.5)
HAND_MADE_VALIDATION = FitReport(
    rows=0,
    model=HAND_MADE_SCORES,
    consensus=HAND_MADE_SCORES,
    bookmakers={},
    fit_rows=0,
    dropped={},
    stop_reason=StopReason.MAX_ROUNDS,
    rounds_run=1,
)


def hand_made_version(
    *,
    phase: Phase = Phase.PRE,
    method: Method = Method.POWER,
    weights: dict[str, float] | None = None,
    **columns: Any,
) -> ModelVersion:
    """A model version that trusts the given bookmakers (one round each), not yet stored."""
    until = dt.datetime(2018, 6, 1, tzinfo=dt.UTC)
    pool = weights or {"B365": 1.0}
    return ModelVersion(
        **{
            "algorithm": "adaboost.m2",
            "method": method,
            "phase": phase,
            "rounds": len(pool),
            "window_start": until - dt.timedelta(days=1095),
            "window_end": until,
            "n_matches": 1,
            "bookmakers": tuple(BookmakerWeight(code, w, 1) for code, w in pool.items()),
            "rounds_grid": (),
            "validation": HAND_MADE_VALIDATION,
            "project_version": "test",
            "fit_seconds": 0.0,
            **columns,
        }
    )


# Tables only the model cache's background refresh reads (every few seconds, in its own
# thread): statements on them may interleave with any request's.
REFRESH_TABLES = ("refit_runs", "model_versions", "model_activations", "rolling_scores")


# Statements that only open or end a transaction (SQLite's BEGIN is sent as one): they read
# nothing, and the refresh sends them too. A request that reads sends statements that do.
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def request_statements(statements: list[str]) -> list[str]:
    """The statements recorded on an app's engine, less the background refresh's."""
    return [
        s
        for s in statements
        if not any(table in s for table in REFRESH_TABLES)
        and not s.lstrip().upper().startswith(TRANSACTION_CONTROL)
    ]


def hand_made_served(
    probabilities: Triple, lines: dict[str, Triple] | None = None
) -> ServedPrediction:
    """A logged prediction serving ``probabilities``, from quotes of the given bookmakers
    without margin (each price 1/p of its line), with no value bet; the consensus is the
    mean of the lines (``probabilities`` without any)."""
    lines = lines or {}
    quotes = tuple(
        LoggedQuote(code, 1 / line[0], 1 / line[1], 1 / line[2], None, line)
        for code, line in lines.items()
    )
    mean = [sum(line[i] for line in lines.values()) / len(lines) for i in range(3)] if lines else []
    return ServedPrediction(
        probabilities=probabilities,
        consensus=(mean[0], mean[1], mean[2]) if mean else probabilities,
        basis=Basis.MODEL,
        model_version=None,
        method=Method.MULTIPLICATIVE,
        phase=Phase.PRE,
        value_source="model",
        quotes=quotes,
        bets=(),
    )


@contextmanager
def received_at(client: TestClient, moment: dt.datetime) -> Iterator[None]:
    """Within the block, ``client``'s app takes the quotes it is sent as received at
    ``moment``: a match years ahead can then have quotes captured before (and after) its
    kickoff, which the real present would refuse as captured in the future."""
    app = cast(FastAPI, client.app)
    app.dependency_overrides[received_now] = lambda: moment
    try:
        yield
    finally:
        del app.dependency_overrides[received_now]


def store_versions(database_url: str, *versions: ModelVersion) -> list[int]:
    """Commit hand-made versions; the last one active, as the refit that made it left it."""
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine, for_writes=True)) as session:
        session.add_all(versions)
        session.flush()
        activate(session, versions[-1], by=ActivatedBy.REFIT)
        ids = [version.id for version in versions]
    engine.dispose()
    return ids


def json_handler(settings: Settings) -> tuple[logging.Handler, io.StringIO]:
    """A handler writing into a buffer with the formatter and filters of the service's JSON
    configuration for ``settings``."""
    config = logging_config(settings.model_copy(update={"log_format": "json"}))
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(config["formatters"]["default"]["()"]())
    handler.addFilter(RequestIdFilter())
    handler.addFilter(SecretFilter(config["filters"]["secrets"]["secrets"]))
    return handler, buffer


def written(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]
