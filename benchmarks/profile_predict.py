"""Where the time of one inline POST /predict goes, measured in process.

The application is called directly as an ASGI app (no HTTP server, no socket), on the
model and the inline requests of ``bench_predict.py``, with the request log configured as
the server configures it (JSON lines, to /dev/null). Beside it, the bare app of
``bench_predict.py`` answers the same requests. Then each step of the service's answer is
timed alone: parsing and checking the body, making the service's records of it, the
prediction (de-margining and mixing the quotes, then the value of the outcomes), writing
the answer and the request's log line. "The rest" is what the whole request costs beyond
those steps: the framework, the middleware and the metrics.

Each figure is the best of ``--repeats`` rounds of ``--requests`` requests (the least
disturbed by other work), in microseconds of CPU time of this process.

Run: ``python benchmarks/profile_predict.py [--requests 2000 --repeats 9]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from pydantic import TypeAdapter
from starlette.types import ASGIApp, Message

from app.api.middleware import _log_request
from app.api.schemas.predict import PredictIn, PredictionOut
from app.domain.prediction import QuotedMatch, predict_matches
from app.domain.value import match_value
from app.logs import configure_logging
from app.main import create_app
from app.services.prediction import PredictionAnswer
from app.state import AppState, app_state
from benchmarks.bare_app import create_bare_app
from benchmarks.bench_predict import inline_odds, prepare


def scope_of(body: bytes, state: dict[str, object]) -> dict[str, object]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/predict",
        "raw_path": b"/predict",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": state,
    }


async def call(app: ASGIApp, body: bytes, state: dict[str, object]) -> int:
    """POST /predict with ``body``; the size of the answer's body."""
    delivered = False
    status = 0
    size = 0

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status, size
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            size += len(message.get("body", b""))

    await app(scope_of(body, state), receive, send)
    assert status == 200, status
    return size


async def best_async(
    step: Callable[[bytes], Awaitable[object]], bodies: Sequence[bytes], repeats: int
) -> float:
    """The least CPU time per item of ``step`` over ``repeats`` rounds, in µs."""
    rounds = []
    for _ in range(repeats):
        started = time.process_time()
        for body in bodies:
            await step(body)
        rounds.append((time.process_time() - started) / len(bodies) * 1e6)
    return min(rounds)


def best(step: Callable[[], object], count: int, repeats: int) -> float:
    rounds = []
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(count):
            step()
        rounds.append((time.process_time() - started) / count * 1e6)
    return min(rounds)


def bare_app(size: int) -> ASGIApp:
    os.environ["ODDSBOOST_BENCH_BODIES"] = json.dumps({"/predict": size})
    return create_bare_app()


async def steps(state: AppState, body: bytes, count: int, repeats: int) -> dict[str, float]:
    """Each step of one answer, timed alone on the request ``body``."""
    service = state.predictions
    predict_in = TypeAdapter(PredictIn)
    item = predict_in.validate_json(body)
    request = item.to_request()
    assert isinstance(request, QuotedMatch)
    ensemble = state.models.ensemble
    assert ensemble is not None
    (answer,) = await service.answer([request])
    assert isinstance(answer, PredictionAnswer)
    odds = request.odds
    prediction = answer.prediction

    async def answer_once(_body: bytes) -> object:
        return await service.answer([request])

    return {
        "parsing and checking the body": best(
            lambda: predict_in.validate_json(body), count, repeats
        ),
        "making the request's records": best(
            lambda: (item.to_request(), item.value_terms(service.default_terms)), count, repeats
        ),
        "the prediction": await best_async(answer_once, [body] * count, repeats),
        "  de-margining and mixing the quotes": best(
            lambda: predict_matches([odds], ensemble, ensemble.method), count, repeats
        ),
        "  the value of the outcomes": best(
            lambda: match_value(
                prediction.probabilities, odds, service.default_terms, ensemble.method
            ),
            count,
            repeats,
        ),
        "writing the answer": best(
            lambda: PredictionOut.model_validate(answer).model_dump_json(), count, repeats
        ),
        "the request's log line": best(
            lambda: _log_request("/predict", "POST", "/predict", 200, 0.000_2), count, repeats
        ),
    }


async def measure(count: int, repeats: int) -> None:
    data_dir = Path(os.environ.get("ODDSBOOST_DATA_DIR", "../shared/data"))
    with tempfile.TemporaryDirectory() as directory, open(os.devnull, "w") as sink:
        settings, _ids = prepare(Path(directory), data_dir)
        configure_logging(settings.model_copy(update={"log_format": "json"}))
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(sink)
        rng = random.Random(7)
        bodies = [json.dumps({"odds": inline_odds(rng)}).encode() for _ in range(count)]
        app = create_app(settings)
        async with app.router.lifespan_context(app) as lifespan_state:
            state = dict(lifespan_state or {})
            # The bare app's answer is as large as the real one.
            bare = bare_app(await call(app, bodies[0], state))
            whole = await best_async(lambda body: call(app, body, state), bodies, repeats)
            reference = await best_async(lambda body: call(bare, body, {}), bodies, repeats)
            parts = await steps(app_state(state), bodies[0], count, repeats)
    report(whole, reference, parts)


def report(whole: float, bare: float, parts: dict[str, float]) -> None:
    print(f"{'the bare app, whole request':<40} {bare:8.1f} µs")
    print(f"{'oddsboost, whole request':<40} {whole:8.1f} µs   ratio {bare / whole:.2f}")
    for name, value in parts.items():
        print(f"{name:<40} {value:8.1f} µs")
    counted = sum(value for name, value in parts.items() if not name.startswith(" "))
    print(f"{'the rest (framework, middleware, metrics)':<40} {whole - counted:8.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    asyncio.run(measure(args.requests, args.repeats))


if __name__ == "__main__":
    main()
