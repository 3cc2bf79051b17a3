"""The backtest report: Markdown for people, JSON with every figure, and PNG plots.

Plots need matplotlib, the project's ``[report]`` extra; without it the report says so and
the Markdown and JSON are written all the same. Nothing in the report depends on the time
it was made, so the same inputs give the same report.
"""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from app.cli.backtest_report.markdown import markdown
from app.domain.backtest.folds import CONSENSUS, ENSEMBLE
from app.domain.backtest_summary import overall, report_json
from app.domain.reliability import reliability
from app.domain.version_records import recorded_options_json
from app.services.backtest import Evaluation

MARGIN_QUANTILES = (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1)


def report_data(evaluation: Evaluation) -> dict[str, object]:
    """Every figure of report.json (value bets only when they were measured), its records
    written by :func:`report_json`."""
    config = evaluation.config
    y, forecasts = overall(evaluation.folds)
    value = {} if evaluation.value is None else {"value": evaluation.value}
    return {
        "source": evaluation.source,
        "config": {
            "train_seasons": config.train_seasons,
            "test_seasons": [fold.season for fold in evaluation.folds],
            "per_competition": config.per_competition,
            "compare_share": config.compare_share,
            "algorithms": list(config.algorithms),
            "fit": recorded_options_json(config.options),
        },
        "seasons": evaluation.summary.seasons,
        "overall": evaluation.summary.overall,
        "reliability": {name: reliability(y, forecasts[name]) for name in (ENSEMBLE, CONSENSUS)},
        "training_margins": {
            fold.season: np.quantile(fold.training_margins, MARGIN_QUANTILES).tolist()
            for fold in evaluation.folds
        },
        "variants": evaluation.variants,
        **value,
    }


def write_report(evaluation: Evaluation, directory: Path) -> list[Path]:
    """Write report.md, report.json and the plots; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / "report.json"
    data = report_data(evaluation)
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False, default=report_json)
    json_path.write_text(text + "\n")
    plots = []
    if find_spec("matplotlib"):  # the [report] extra
        from app.cli.backtest_report.plots import write_plots

        plots = write_plots(evaluation, directory)
    markdown_path = directory / "report.md"
    markdown_path.write_text(markdown(evaluation, plots_written=bool(plots)))
    return [json_path, *plots, markdown_path]
