"""``oddsboost backtest``: load seasons from files or the database and run the walk-forward."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.domain.backtest.config import VARIANTS, BacktestConfig
from app.domain.backtest.folds import Fold, run_backtest
from app.domain.backtest.value_bets import ValueBetConfig
from app.domain.backtest_summary import (
    BacktestSummary,
    VariantSummary,
    summarise,
    variant_summary,
)
from app.domain.football_data import FileFormatError, parse_football_data
from app.domain.tables import MatchTable, QuoteTable, restrict, tables_from_batches
from app.domain.value_summary import ValueSummary, summarise_value
from app.domain.vocabulary import Phase
from app.services.season_files import SeasonFileError, leagues_of


@dataclass
class Evaluation:
    config: BacktestConfig
    source: str
    folds: list[Fold]
    summary: BacktestSummary
    variants: dict[str, VariantSummary] = field(default_factory=dict)
    value: ValueSummary | None = None  # with value bets measured


def tables_from_files(
    files: Sequence[Path], *, leagues: Sequence[str] | None = None
) -> tuple[MatchTable, QuoteTable]:
    """The tables of the season files of ``leagues`` (every file when None). A file of
    another league (told from its first rows) is never parsed, so it cannot stop the run."""
    wanted = set(leagues or ())
    present: set[str] = set()
    batches = []
    for path in files:
        found = leagues_of(path)
        present |= found
        if wanted and found and not found & wanted:
            continue
        try:
            batches.append(parse_football_data(path.read_bytes()))
        except (OSError, FileFormatError) as error:
            raise SeasonFileError(path, str(error)) from None
    _check_known("league", wanted, present)
    return tables_from_batches(batches)


class UnknownNameError(ValueError):
    """A league or bookmaker asked for is not in the data; the message says which are."""


def checked_tables(
    matches: MatchTable,
    quotes: QuoteTable,
    *,
    leagues: Sequence[str] | None,
    bookmakers: Sequence[str] | None,
    value_bets: ValueBetConfig | None,
) -> tuple[MatchTable, QuoteTable]:
    """The tables of ``leagues`` (all when None), once every league and bookmaker asked for
    is found in them (the value reference with closing quotes), or :class:`UnknownNameError`."""
    _check_known("league", set(leagues or ()), set(matches.competition.tolist()))
    _check_known("bookmaker", set(bookmakers or ()), set(quotes.bookmaker.tolist()))
    if value_bets is not None:
        named = {*value_bets.bookmaker_sources(), *value_bets.bookmakers}
        _check_known("bookmaker", named, set(quotes.bookmaker.tolist()))
        closing = set(quotes.bookmaker[quotes.phase == Phase.CLOSING].tolist())
        _check_known("closing line of", {value_bets.reference}, closing)
    if not leagues:
        return matches, quotes
    return restrict(matches, quotes, np.isin(matches.competition, list(leagues)))


def _check_known(label: str, wanted: set[str], present: set[str]) -> None:
    unknown = sorted(wanted - present)
    if unknown:
        raise UnknownNameError(
            f"no {label} {', '.join(unknown)} in the data; it has "
            f"{', '.join(sorted(present)) or 'none'}"
        )


def evaluate(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    *,
    source: str,
    compare_variants: bool = False,
    value_bets: ValueBetConfig | None = None,
    progress: Callable[[str], None] = lambda _step: None,
) -> Evaluation:
    """The walk-forward of ``config``, with each variant of plain M2 and the value bets if
    asked for."""
    folds = run_backtest(matches, quotes, config, progress=lambda s: progress(f"baseline {s}"))
    evaluation = Evaluation(config, source, folds, summarise(folds))
    if value_bets is not None:
        evaluation.value = summarise_value(folds, matches, quotes, value_bets)
    if not compare_variants:
        return evaluation
    for variant in VARIANTS:

        def report_step(season: str, name: str = variant.name) -> None:
            progress(f"{name} {season}")

        variant_folds = run_backtest(
            matches, quotes, variant.applied_to(config), progress=report_step
        )
        evaluation.variants[variant.name] = variant_summary(variant, config, folds, variant_folds)
    return evaluation
