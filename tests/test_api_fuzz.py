"""The served API keeps to its documentation: Schemathesis runs every check and every phase
against a real ``oddsboost serve`` on a fresh migrated database, admin key set.

It must find no server error, no answer the OpenAPI document does not list or describe, no
valid request refused and no invalid one accepted. The refusals a JSON schema cannot state
are told to it in tests/schemathesis.toml and tests/schemathesis_hooks.py, each with its
reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.settings import Settings
from tests.apps import ADMIN_KEY
from tests.processes import child_environment, running_server

pytestmark = pytest.mark.slow

ST = Path(sys.executable).with_name("st")
HERE = Path(__file__).parent
# Enough to reach every operation in every phase in well under a minute on two cores; the
# seed is fixed so that a failure is found again on the next run, not by luck.
MAX_EXAMPLES = 10
SEED = 1
# A hard stop for a run that hangs; a run that works takes a fraction of it.
RUN_TIMEOUT_SECONDS = 600
REPORT_CHARACTERS = 8000


def _report(output: str) -> str:
    """The end of Schemathesis's report, each line cut short (a body may be megabytes)."""
    return "\n".join(line[:300] for line in output[-REPORT_CHARACTERS * 20 :].splitlines())[
        -REPORT_CHARACTERS:
    ]


def test_the_served_api_keeps_to_its_documentation(migrated_url: str, tmp_path: Path) -> None:
    assert ST.is_file(), f"schemathesis is not installed at {ST}: install the dev extra"
    settings = Settings(database_url=migrated_url, admin_api_key=ADMIN_KEY)
    with running_server(child_environment(settings), tmp_path / "server.log") as server:
        result = subprocess.run(
            [
                str(ST),
                "--config-file",
                str(HERE / "schemathesis.toml"),
                "run",
                f"{server.base_url}/openapi.json",
                "--checks",
                "all",
                "--phases",
                "examples,coverage,fuzzing,stateful",
                "--max-examples",
                str(MAX_EXAMPLES),
                "--seed",
                str(SEED),
                "--header",
                f"X-API-Key: {ADMIN_KEY}",
                "--generation-database",
                "none",
                "--no-color",
            ],
            env={**os.environ, "SCHEMATHESIS_HOOKS": str(HERE / "schemathesis_hooks.py")},
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECONDS,
            check=False,
        )
    report = _report(result.stdout + result.stderr)
    assert result.returncode == 0, report
    # Its last line counts what it found: warnings (operations with no data to reach) at most.
    summary = result.stdout.strip().splitlines()[-1]
    assert not re.search(r"\b\d+ (failures?|errors?)\b", summary), report
    # Every operation of the document was selected and tested.
    selected = re.search(r"Selected:\W*(\d+)\W*/\W*(\d+)", result.stdout)
    tested = re.search(r"Tested:\W*(\d+)", result.stdout)
    assert selected is not None, report
    assert tested is not None, report
    assert selected[1] == selected[2] == tested[1], report
