"""``oddsboost backtest``: load seasons from files or the database and run the walk-forward."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from app.domain.backtest import (
    BacktestConfig,
    Fold,
    overall,
    paired,
    run_backtest,
    summarise,
    with_options,
)
from app.domain.fitting import methods_to_try
from app.domain.football_data import parse_football_data
from app.domain.records import EARLIEST, LATEST
from app.domain.tables import MatchTable, QuoteTable, restrict, tables_from_batches
from app.services.model_versions import load_tables

# The options beyond plain M2 compared with --compare-variants (each against the baseline).
VARIANTS: dict[str, dict[str, Any]] = {
    "time decay, half-life 365 days": {"half_life_days": 365.0},
    "time decay, half-life 180 days": {"half_life_days": 180.0},
    "per-competition pools": {"per_competition": True},
    "method chosen by validation": {"methods": "all"},
    "calibrated (power on the mix)": {"calibrate": True},
}


@dataclass
class Evaluation:
    config: BacktestConfig
    source: str
    folds: list[Fold]
    summary: dict[str, Any]
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)


def tables_from_files(files: Sequence[Path]) -> tuple[MatchTable, QuoteTable]:
    return tables_from_batches(parse_football_data(path.read_bytes()) for path in files)


def tables_from_database(session: Session) -> tuple[MatchTable, QuoteTable]:
    return load_tables(session, start=EARLIEST, end=LATEST)


def only_leagues(
    matches: MatchTable, quotes: QuoteTable, leagues: Sequence[str] | None
) -> tuple[MatchTable, QuoteTable]:
    if not leagues:
        return matches, quotes
    return restrict(matches, quotes, np.isin(matches.competition, list(leagues)))


def evaluate(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    *,
    source: str,
    compare_variants: bool = False,
    progress: Callable[[str], None] = lambda _step: None,
) -> Evaluation:
    """The walk-forward of ``config``; with ``compare_variants`` also each option beyond
    plain M2, compared with it on the same rows."""
    folds = run_backtest(matches, quotes, config, progress=lambda s: progress(f"baseline {s}"))
    evaluation = Evaluation(config, source, folds, summarise(folds))
    if not compare_variants:
        return evaluation
    y, baseline = overall(folds)
    for name, change in VARIANTS.items():
        change = dict(change)
        if change.get("methods") == "all":
            change["methods"] = methods_to_try(config.options.methods[0], choose=True)
        variant = with_options(config, **change)

        def report_step(season: str, variant_name: str = name) -> None:
            progress(f"{variant_name} {season}")

        variant_folds = run_backtest(matches, quotes, variant, progress=report_step)
        variant_y, variant_forecasts = overall(variant_folds)
        if not np.array_equal(
            variant_y, y
        ):  # pragma: no cover - the rows do not depend on the variant
            raise AssertionError("a variant was scored on other rows than the baseline")
        summary = summarise(variant_folds)
        evaluation.variants[name] = {
            "options": change | {"methods": [str(m) for m in change["methods"]]}
            if "methods" in change
            else change,
            "overall": summary["overall"]["scores"]["M2 ensemble"],
            "seasons": {
                s["season"]: s["scores"]["M2 ensemble"]["log_loss"] for s in summary["seasons"]
            },
            "versus_baseline": paired(y, variant_forecasts["M2 ensemble"], baseline["M2 ensemble"]),
            "versus_consensus": paired(y, variant_forecasts["M2 ensemble"], baseline["consensus"]),
        }
    return evaluation
