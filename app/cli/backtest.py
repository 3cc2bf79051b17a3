"""``oddsboost backtest``: the walk-forward evaluation by season, and its report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import (
    console,
    database_session,
    fail,
    load_settings,
    new_table,
    say,
    show_table,
    split_list,
)
from app.domain import defaults
from app.domain.vocabulary import FitTarget, Method, Phase
from app.domain.wording import counted

if TYPE_CHECKING:
    from app.domain.backtest.config import BacktestConfig
    from app.domain.backtest.value_bets import ValueBetConfig
    from app.domain.backtest_summary import OverallSummary
    from app.domain.tables import MatchTable, QuoteTable
    from app.services.backtest import Evaluation


ROUNDS_GRID = ",".join(map(str, defaults.ROUNDS_GRID))


def backtest_command(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(help="football-data.co.uk files or folders (omit with --database)."),
    ] = None,
    database: Annotated[
        bool, typer.Option("--database", help="Read the configured database instead of files.")
    ] = False,
    leagues: Annotated[str | None, typer.Option(help="Competitions, e.g. E0,SP1,I1.")] = None,
    test_seasons: Annotated[
        str | None, typer.Option(help="Seasons to test, e.g. 2015/16,2016/17; default: all.")
    ] = None,
    train_seasons: Annotated[
        int, typer.Option(min=1, help="Seasons to train on before each.")
    ] = defaults.TRAIN_SEASONS,
    method: Annotated[Method, typer.Option(help="De-margining method.")] = defaults.METHOD,
    phase: Annotated[Phase, typer.Option(help="Odds phase.")] = defaults.PHASE,
    rounds_grid: Annotated[str, typer.Option(help="Numbers of rounds tried.")] = ROUNDS_GRID,
    bookmakers: Annotated[
        str | None,
        typer.Option(help="A fixed pool, e.g. B365,BW,IW,PS,WH,VC; default: by --min-quotes."),
    ] = None,
    min_quotes: Annotated[
        int, typer.Option(min=1, help="Pool: bookmakers with this many quotes.")
    ] = defaults.MIN_QUOTES,
    pool_recent_days: Annotated[
        int,
        typer.Option(
            min=1,
            help="Pool: leave out a bookmaker that quoted under --pool-recent-share of each "
            "competition's matches in the last this many days of the training window.",
        ),
    ] = defaults.POOL_RECENT_DAYS,
    pool_recent_share: Annotated[
        float, typer.Option(min=0, max=1, help="See --pool-recent-days; 0: nobody is left out.")
    ] = defaults.POOL_RECENT_SHARE,
    half_life_days: Annotated[
        float | None, typer.Option(min=1, help="Time decay: weigh matches by 2^(-age/half-life).")
    ] = None,
    per_competition: Annotated[
        bool, typer.Option("--per-competition", help="One pool and model per competition.")
    ] = False,
    choose_method: Annotated[
        bool, typer.Option("--choose-method", help="Choose the method by validation log loss too.")
    ] = False,
    calibrate: Annotated[
        bool, typer.Option("--calibrate", help="Fit a calibration exponent on the held-out part.")
    ] = False,
    fit_target: Annotated[
        FitTarget,
        typer.Option(help="Fit toward the results, or toward Pinnacle's closing line."),
    ] = defaults.FIT_TARGET,
    compare_variants: Annotated[
        bool,
        typer.Option("--compare-variants", help="Also measure each option beyond plain M2."),
    ] = False,
    compare_algorithms: Annotated[
        bool,
        typer.Option(
            "--compare-algorithms",
            help="Also fit AdaBoost.M1, SAMME and AdaBoost.MH on the same bookmakers.",
        ),
    ] = False,
    value_bets: Annotated[
        bool,
        typer.Option(
            "--value-bets",
            help="Also measure value bets: closing-line value, return and a Kelly bankroll.",
        ),
    ] = False,
    value_sources: Annotated[
        str,
        typer.Option(
            help="Value: probability sources separated by ';', each a chain of links "
            "separated by ',' (ensemble, consensus or a bookmaker; the first with a line "
            "prices a match), e.g. 'ensemble;PS;PS,consensus'."
        ),
    ] = "ensemble;consensus;PS",
    value_thresholds: Annotated[
        str, typer.Option(help="Value: EV thresholds above which an outcome is bet.")
    ] = "0,0.02,0.05",
    value_reference: Annotated[
        str, typer.Option(help="Value: the bookmaker whose closing line measures CLV.")
    ] = "PS",
    value_bookmakers: Annotated[
        str, typer.Option(help="Value: bookmakers whose pre-match prices may be taken.")
    ] = "B365,BW,IW,PS,WH,VC",
    report_dir: Annotated[
        Path, typer.Option("--output", help="Directory for report.md, report.json, plots.")
    ] = Path("reports/backtest"),
) -> None:
    """Walk-forward evaluation by season: fit on earlier seasons, score each test season."""
    from app.cli.backtest_report import write_report
    from app.domain.backtest.algorithms import OTHER_ALGORITHMS
    from app.domain.backtest.config import BacktestConfig
    from app.domain.fitting import FitOptions, methods_to_try
    from app.services import backtest

    try:
        grid = tuple(int(part) for part in rounds_grid.split(","))
        if min(grid) < 1:
            raise ValueError("the rounds grid needs numbers of at least 1")
        config = BacktestConfig(
            options=FitOptions(
                rounds_grid=grid,
                phase=phase,
                methods=methods_to_try(method, choose=choose_method),
                bookmakers=split_list(bookmakers),
                min_quotes=min_quotes,
                recent_days=pool_recent_days,
                recent_share=pool_recent_share,
                half_life_days=half_life_days,
                calibrate=calibrate,
                fit_target=fit_target,
            ),
            train_seasons=train_seasons,
            test_seasons=split_list(test_seasons),
            per_competition=per_competition,
            algorithms=tuple(OTHER_ALGORITHMS) if compare_algorithms else (),
        )
        value_config = (
            _value_config(value_sources, value_thresholds, value_reference, value_bookmakers)
            if value_bets
            else None
        )
    except ValueError as error:
        fail(str(error), code=2)
    if database == bool(sources):
        fail("give season files or folders, or --database (not both)", code=2)
    wanted_leagues = split_list(leagues)
    matches, quotes, source = _read_tables(sources or [], database=database, leagues=wanted_leagues)
    try:
        matches, quotes = backtest.checked_tables(
            matches,
            quotes,
            leagues=wanted_leagues,
            bookmakers=split_list(bookmakers),
            value_bets=value_config,
        )
    except backtest.UnknownNameError as error:
        fail(str(error), code=2)
    if wanted_leagues:
        source += f" ({', '.join(wanted_leagues)})"
    evaluation = _evaluate(
        matches,
        quotes,
        config,
        source,
        compare_variants=compare_variants,
        value_bets=value_config,
    )
    written = write_report(evaluation, report_dir)
    _print_overall(evaluation.summary.overall)
    say("wrote " + ", ".join(str(path) for path in written))


def _value_config(sources: str, thresholds: str, reference: str, bookmakers: str) -> ValueBetConfig:
    """The value-bet rules of the options; ``ValueError`` says what is wrong."""
    from app.domain.backtest.value_bets import ValueBetConfig
    from app.domain.value_sources import normalised_chains

    try:
        numbers = tuple(float(part) for part in split_list(thresholds) or ())
    except ValueError:
        raise ValueError(
            f"--value-thresholds takes numbers, e.g. 0,0.02: not {thresholds!r}"
        ) from None
    return ValueBetConfig(
        sources=normalised_chains(sources),
        thresholds=tuple(sorted(numbers)),
        reference=reference.strip(),
        bookmakers=split_list(bookmakers) or (),
        commissions=load_settings().commissions(),
    )


def _read_tables(
    sources: list[Path], *, database: bool, leagues: tuple[str, ...] | None
) -> tuple[MatchTable, QuoteTable, str]:
    """The tables of the season files (of ``leagues``: the files of others are not parsed)
    or of the configured database, and what they are."""
    from app.domain.records import EARLIEST, LATEST
    from app.services import backtest
    from app.services.model_versions import load_tables
    from app.services.season_files import SeasonFileError, csv_files

    if database:
        with database_session(load_settings(), writes=False) as session:
            matches, quotes = load_tables(session, start=EARLIEST, end=LATEST)
        return matches, quotes, "the configured database"
    try:
        files = csv_files(sources)
        matches, quotes = backtest.tables_from_files(files, leagues=leagues)
    except backtest.UnknownNameError as error:
        fail(str(error), code=2)
    except (OSError, SeasonFileError) as error:
        fail(str(error), code=1)
    return matches, quotes, f"{len(files)} football-data.co.uk files"


def _evaluate(
    matches: MatchTable,
    quotes: QuoteTable,
    config: BacktestConfig,
    source: str,
    *,
    compare_variants: bool,
    value_bets: ValueBetConfig | None,
) -> Evaluation:
    """The evaluation, with a progress bar on stderr; exit 1 if the data cannot be tested."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from app.services import backtest

    steps = len(config.test_seasons or ()) or None
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console
    ) as progress:
        task = progress.add_task("backtest", total=steps)

        def step(description: str) -> None:
            progress.update(task, description=description, advance=1)

        try:
            return backtest.evaluate(
                matches,
                quotes,
                config,
                source=source,
                compare_variants=compare_variants,
                value_bets=value_bets,
                progress=step,
            )
        except ValueError as error:
            fail(str(error), code=1)


def _print_overall(whole: OverallSummary) -> None:
    table = new_table(f"overall, {counted(whole.rows, 'test match')}")
    for column in ("forecast", "log loss", "Brier", "RPS", "accuracy"):
        table.add_column(column, justify="left" if column == "forecast" else "right")
    for name, scored in whole.scores.items():
        row = scored.scores
        table.add_row(
            name, f"{row.log_loss:.4f}", f"{row.brier:.4f}", f"{row.rps:.4f}", f"{row.accuracy:.4f}"
        )
    show_table(table)
    from app.cli.backtest_report.markdown import difference

    paired = whole.ensemble_vs_consensus
    say(f"ensemble - consensus: {difference(paired)} log loss per match (p = {paired.p_value:.2f})")
