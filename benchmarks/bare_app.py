"""The reference for bench_predict.py: FastAPI answering constant JSON bodies, no work at all.

``ODDSBOOST_BENCH_BODIES`` maps each path to the size in bytes of the body to return, so
that each reference response is as large as the real one it stands beside.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastapi import FastAPI


def constant_body(size: int) -> dict[str, Any]:
    """A JSON object whose serialisation is ``size`` bytes long."""
    skeleton = {"padding": ""}
    overhead = len(json.dumps(skeleton, separators=(",", ":")))
    return {"padding": "x" * max(0, size - overhead)}


def create_bare_app() -> FastAPI:
    sizes: dict[str, int] = json.loads(os.environ["ODDSBOOST_BENCH_BODIES"])
    app = FastAPI()
    for path, size in sizes.items():
        body = constant_body(size)

        async def answer(body: dict[str, Any] = body) -> dict[str, Any]:
            return body

        app.add_api_route(path, answer, methods=["POST"])
    return app
