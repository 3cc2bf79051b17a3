"""The backtest's statistics need scipy, from the ``report`` extra: without it the command says
what to install and writes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.commands import Oddsboost


def test_without_scipy_the_backtest_names_the_extra_and_writes_nothing(
    oddsboost: Oddsboost, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    # A None entry makes the import fail exactly as it does where scipy is not installed.
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    output = tmp_path / "report"
    result = oddsboost.run(
        "backtest", str(data_dir / "football-data" / "E0_1819.csv"), "--output", str(output)
    )
    assert result.returncode == 2
    assert "pip install 'oddsboost[report]'" in " ".join((result.stdout + result.stderr).split())
    assert not output.exists()
