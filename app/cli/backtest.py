"""``oddsboost backtest``: the walk-forward evaluation by season, and its report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.common import console, load_settings, open_database, output, split_list
from app.domain.vocabulary import Phase


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
    train_seasons: Annotated[int, typer.Option(min=1, help="Seasons to train on before each.")] = 3,
    method: Annotated[str, typer.Option(help="De-margining method.")] = "power",
    phase: Annotated[Phase, typer.Option(help="Odds phase.")] = Phase.PRE,
    rounds_grid: Annotated[
        str, typer.Option(help="Numbers of rounds tried.")
    ] = "1,2,5,10,20,50,100,200",
    bookmakers: Annotated[
        str | None,
        typer.Option(help="A fixed pool, e.g. B365,BW,IW,PS,WH,VC; default: by --min-quotes."),
    ] = None,
    min_quotes: Annotated[
        int, typer.Option(min=1, help="Pool: bookmakers with this many quotes.")
    ] = 100,
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
    report_dir: Annotated[
        Path, typer.Option("--output", help="Directory for report.md, report.json, plots.")
    ] = Path("reports/backtest"),
) -> None:
    """Walk-forward evaluation by season: fit on earlier seasons, score each test season."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from app.cli.backtest_report import write_report
    from app.domain.backtest import BacktestConfig
    from app.domain.fitting import OTHER_ALGORITHMS, FitOptions, methods_to_try
    from app.domain.football_data import FileFormatError
    from app.domain.vocabulary import Method
    from app.services import backtest
    from app.services.season_files import csv_files

    try:
        chosen_method = Method(method)
        grid = tuple(int(part) for part in rounds_grid.split(","))
        if not grid or min(grid) < 1:
            raise ValueError("the rounds grid needs numbers of at least 1")
    except ValueError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None
    if database == bool(sources):
        console.print("[red]give season files or folders, or --database (not both)[/red]")
        raise typer.Exit(2)
    config = BacktestConfig(
        options=FitOptions(
            rounds_grid=grid,
            phase=phase,
            methods=methods_to_try(chosen_method, choose=choose_method),
            bookmakers=split_list(bookmakers),
            min_quotes=min_quotes,
            half_life_days=half_life_days,
            calibrate=calibrate,
        ),
        train_seasons=train_seasons,
        test_seasons=split_list(test_seasons),
        per_competition=per_competition,
        algorithms=tuple(OTHER_ALGORITHMS) if compare_algorithms else (),
    )
    if database:
        settings = load_settings()
        engine, factory = open_database(settings)
        with factory() as session:
            matches, quotes = backtest.tables_from_database(session)
        engine.dispose()
        source = "the configured database"
    else:
        try:
            files = csv_files(sources or [])
            matches, quotes = backtest.tables_from_files(files)
        except (OSError, FileFormatError) as error:
            console.print(f"[red]{error}[/red]")
            raise typer.Exit(1) from None
        source = f"{len(files)} football-data.co.uk files"
    for label, wanted, known in (
        ("league", split_list(leagues), matches.competition),
        ("bookmaker", split_list(bookmakers), quotes.bookmaker),
    ):
        unknown = sorted(set(wanted or ()) - set(known.tolist()))
        if unknown:
            console.print(
                f"[red]no {label} {', '.join(unknown)} in the data; it has "
                f"{', '.join(sorted(set(known.tolist()))) or 'none'}[/red]"
            )
            raise typer.Exit(2)
    matches, quotes = backtest.only_leagues(matches, quotes, split_list(leagues))
    if leagues:
        source += f" ({', '.join(split_list(leagues) or ())})"
    steps = len(config.test_seasons or ()) or None
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console
    ) as progress:
        task = progress.add_task("backtest", total=steps)

        def step(description: str) -> None:
            progress.update(task, description=description, advance=1)

        try:
            evaluation = backtest.evaluate(
                matches,
                quotes,
                config,
                source=source,
                compare_variants=compare_variants,
                progress=step,
            )
        except ValueError as error:
            console.print(f"[red]{error}[/red]")
            raise typer.Exit(1) from None
    written = write_report(evaluation, report_dir)
    whole = evaluation.summary.overall
    table = Table(title=f"overall, {whole.rows} test matches")
    for column in ("forecast", "log loss", "Brier", "RPS", "accuracy"):
        table.add_column(column, justify="left" if column == "forecast" else "right")
    for name, scored in whole.scores.items():
        row = scored.scores
        table.add_row(
            name, f"{row.log_loss:.4f}", f"{row.brier:.4f}", f"{row.rps:.4f}", f"{row.accuracy:.4f}"
        )
    output.print(table)
    difference = whole.ensemble_vs_consensus
    output.print(
        f"ensemble - consensus: {difference.mean:+.4f} ± {difference.standard_error:.4f} "
        f"log loss per match (p = {difference.p_value:.2f})"
    )
    output.print("wrote " + ", ".join(str(path) for path in written), soft_wrap=True)
