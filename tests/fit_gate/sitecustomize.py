"""Imported at start-up by Python processes whose PYTHONPATH starts with this directory.

Wraps ``fit_ensemble`` so that a refit, once its data is loaded, marks the gate directory
(``ODDSBOOST_TEST_FIT_GATE``) as reached and waits there until the test releases it.
See ``tests.processes.FitGate``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import app.domain.fitting as fitting

GATE = Path(os.environ["ODDSBOOST_TEST_FIT_GATE"])
# A test that forgot to release the gate fails this refit rather than leaving it waiting.
WAIT_SECONDS = 300.0

_fit_ensemble = fitting.fit_ensemble


def fit_ensemble(*args: Any, **kwargs: Any) -> Any:
    (GATE / "reached").touch()
    deadline = time.monotonic() + WAIT_SECONDS
    while not (GATE / "released").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the test never released the fit gate")
        time.sleep(0.01)
    return _fit_ensemble(*args, **kwargs)


fitting.fit_ensemble = fit_ensemble
