"""The ``oddsboost`` command: serve, migrate, import, teams."""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine, make_session_factory, session_scope
from app.db.migrate import SchemaNotCurrentError, require_current_schema, upgrade_to_head
from app.domain.football_data import FileFormatError
from app.domain.odds_api import EVENTS
from app.domain.records import as_utc, optional_season
from app.domain.vocabulary import Phase, RunStatus
from app.logs import configure_logging, logging_config
from app.services import ingest, refit, scheduling, teams
from app.services.ingest import IngestReport
from app.settings import Settings, get_settings

cli = typer.Typer(
    name="oddsboost",
    help="Football 1X2 forecasts from bookmakers' odds (AdaBoost.M2 over bookmakers).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
import_cli = typer.Typer(help="Import odds and results from files or URLs.", no_args_is_help=True)
teams_cli = typer.Typer(
    help="Team aliases: other sources' names for stored teams.", no_args_is_help=True
)
cli.add_typer(import_cli, name="import")
cli.add_typer(teams_cli, name="teams")

console = Console(stderr=True)
output = Console()

SKIPPED_SHOWN = 20


def _open_database(settings: Settings) -> tuple[Engine, sessionmaker[Session]]:
    """An engine on a reachable database at the current schema, or a clear exit."""
    engine = make_engine(settings.database_url)
    try:
        require_current_schema(engine)
    except SchemaNotCurrentError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    except OperationalError as error:
        console.print(f"[red]cannot reach the database {engine.url!r}:[/red] {error.orig}")
        raise typer.Exit(1) from None
    return engine, make_session_factory(engine, for_writes=True)


def _settings() -> Settings:
    try:
        return get_settings()
    except ValidationError as error:
        console.print(f"[red]configuration error:[/red] {error}")
        raise typer.Exit(2) from None


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address [default: ODDSBOOST_HOST]")] = None,
    port: Annotated[int | None, typer.Option(help="Port [default: ODDSBOOST_PORT]")] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Worker processes [default: ODDSBOOST_WORKERS]")
    ] = None,
    migrate: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Upgrade the schema before starting.")
    ] = True,
) -> None:
    """Run the HTTP service (uvicorn). Migrations run once, here, before any worker starts."""
    import uvicorn

    settings = _settings()
    configure_logging(settings)
    if migrate:
        upgrade_to_head(settings.database_url)
    worker_count = workers or settings.workers
    if worker_count > 1:
        _prepare_multiprocess_metrics()
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=worker_count,
        proxy_headers=True,
        log_config=logging_config(settings),
        access_log=False,  # the service writes its own request lines, with request ids
        timeout_graceful_shutdown=math.ceil(settings.graceful_shutdown_seconds),
    )


# prometheus-client's own variable. Read here without importing the metrics module, which
# decides at import time whether it writes to that directory.
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def _prepare_multiprocess_metrics() -> None:
    """Workers share their metrics through files in PROMETHEUS_MULTIPROC_DIR: use the one
    configured (emptied of a previous run's files) or make one."""
    configured = os.environ.get(MULTIPROCESS_ENV)
    if configured:
        directory = Path(configured)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink()
    else:
        directory = Path(tempfile.mkdtemp(prefix="oddsboost-metrics-"))
        os.environ[MULTIPROCESS_ENV] = str(directory)
    logging.getLogger(__name__).info("worker metrics are shared through %s", directory)


@cli.command("health")
def health_command(
    url: Annotated[
        str | None,
        typer.Option(help="The /health URL [default: http://127.0.0.1:ODDSBOOST_PORT/health]."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for an answer.")] = 3.0,
) -> None:
    """Exit 0 if the service answers /health (for container health checks), else 1."""
    settings = _settings()
    target = url or f"http://127.0.0.1:{settings.port}/health"
    try:
        response = httpx.get(target, timeout=timeout)
    except httpx.HTTPError as error:
        console.print(f"[red]{target}: {error}[/red]")
        raise typer.Exit(1) from None
    if response.status_code != 200:
        console.print(f"[red]{target}: HTTP {response.status_code}[/red]")
        raise typer.Exit(1)
    output.print(f"{target}: ok")


@cli.command("migrate")
def migrate_command() -> None:
    """Upgrade the configured database to the newest schema (alembic upgrade head)."""
    settings = _settings()
    upgrade_to_head(settings.database_url)
    console.print("database is at the newest schema")


def _parse_until(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        return as_utc(dt.datetime.fromisoformat(value))
    except ValueError as error:
        console.print(f"[red]--until: {error} (use ISO 8601, e.g. 2019-06-01T00:00:00Z)[/red]")
        raise typer.Exit(2) from None


@cli.command("refit")
def refit_command(
    until: Annotated[
        str | None,
        typer.Option(help="Pretend 'now' is this ISO 8601 moment (backtests); default: now."),
    ] = None,
    run_id: Annotated[
        int | None, typer.Option(help="Carry out this queued run (used by POST /admin/refit).")
    ] = None,
) -> None:
    """Refit the model once. Exits 0 when it succeeded, was rejected or was skipped."""
    settings = _settings()
    configure_logging(settings)
    engine, _factory = _open_database(settings)
    try:
        outcome = refit.run_refit(
            engine,
            settings,
            trigger="api" if run_id else "cli",
            until=_parse_until(until),
            run_id=run_id,
        )
    except refit.RefitError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    output.print(f"refit run {outcome.run_id} {outcome.status}: {outcome.message}", soft_wrap=True)
    if outcome.status == RunStatus.FAILED:
        raise typer.Exit(1)


@cli.command("scheduler")
def scheduler_command(
    run_now: Annotated[
        bool, typer.Option("--run-now", help="Refit once at start, then keep the schedule.")
    ] = False,
) -> None:
    """Refit on the ODDSBOOST_REFIT_CRON schedule (UTC) until stopped with SIGTERM or SIGINT."""
    settings = _settings()
    configure_logging(settings)
    engine, _factory = _open_database(settings)
    try:
        scheduling.run_scheduler(engine, settings, run_now=run_now)
    finally:
        engine.dispose()


def _split(value: str | None) -> tuple[str, ...] | None:
    if value is None or not value.strip():
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


@cli.command("backtest")
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
    from app.domain.backtest import BacktestConfig
    from app.domain.fitting import OTHER_ALGORITHMS, FitOptions
    from app.domain.odds import Method
    from app.reporting import write_report
    from app.services import backtest

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
    methods = (
        (chosen_method, *(m for m in Method if m != chosen_method))
        if choose_method
        else (chosen_method,)
    )
    config = BacktestConfig(
        options=FitOptions(
            rounds_grid=grid,
            phase=phase,
            methods=methods,
            bookmakers=_split(bookmakers),
            min_quotes=min_quotes,
            half_life_days=half_life_days,
            calibrate=calibrate,
        ),
        train_seasons=train_seasons,
        test_seasons=_split(test_seasons),
        per_competition=per_competition,
        algorithms=tuple(OTHER_ALGORITHMS) if compare_algorithms else (),
    )
    if database:
        settings = _settings()
        engine, factory = _open_database(settings)
        with factory() as session:
            matches, quotes = backtest.tables_from_database(session)
        engine.dispose()
        source = "the configured database"
    else:
        try:
            files = backtest.csv_files(sources or [])
            matches, quotes = backtest.tables_from_files(files)
        except (OSError, FileFormatError) as error:
            console.print(f"[red]{error}[/red]")
            raise typer.Exit(1) from None
        source = f"{len(files)} football-data.co.uk files"
    for label, wanted, known in (
        ("league", _split(leagues), matches.competition),
        ("bookmaker", _split(bookmakers), quotes.bookmaker),
    ):
        unknown = sorted(set(wanted or ()) - set(known.tolist()))
        if unknown:
            console.print(
                f"[red]no {label} {', '.join(unknown)} in the data; it has "
                f"{', '.join(sorted(set(known.tolist()))) or 'none'}[/red]"
            )
            raise typer.Exit(2)
    matches, quotes = backtest.only_leagues(matches, quotes, _split(leagues))
    if leagues:
        source += f" ({', '.join(_split(leagues) or ())})"
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
    whole = evaluation.summary["overall"]
    table = Table(title=f"overall, {whole['rows']} test matches")
    for column in ("forecast", "log loss", "Brier", "RPS", "accuracy"):
        table.add_column(column, justify="left" if column == "forecast" else "right")
    for name, row in whole["scores"].items():
        table.add_row(
            name,
            f"{row['log_loss']:.4f}",
            f"{row['brier']:.4f}",
            f"{row['rps']:.4f}",
            f"{row['accuracy']:.4f}",
        )
    output.print(table)
    difference = whole["ensemble_vs_consensus"]
    output.print(
        f"ensemble - consensus: {difference['mean']:+.4f} ± {difference['standard_error']:.4f} "
        f"log loss per match (p = {difference['p_value']:.2f})"
    )
    output.print("wrote " + ", ".join(str(path) for path in written), soft_wrap=True)


@dataclass
class Source:
    label: str
    location: str  # a path or a URL


def _expand(locations: list[str]) -> Iterator[Source]:
    for location in locations:
        if location.startswith(("http://", "https://")):
            yield Source(location, location)
            continue
        path = Path(location)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix.lower() == ".csv")
            if not files:
                yield Source(location, location)  # reported as an error when read
            yield from (Source(str(p), str(p)) for p in files)
        else:
            yield Source(location, location)


def _read(source: Source, client: httpx.Client) -> bytes:
    if source.location.startswith(("http://", "https://")):
        response = client.get(source.location)
        response.raise_for_status()
        return response.content
    path = Path(source.location)
    if path.is_dir():
        raise FileNotFoundError(f"no .csv files in directory {path}")
    return path.read_bytes()


@import_cli.command("football-data")
def import_football_data(
    sources: Annotated[
        list[str], typer.Argument(help="Season files, directories of them, or http(s) URLs.")
    ],
    season: Annotated[
        str | None, typer.Option(help="Season of every match (e.g. 2018/19); default: derived.")
    ] = None,
    show_all: Annotated[bool, typer.Option("--show-all", help="List every skipped item.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Import football-data.co.uk season files: one transaction per file."""
    settings = _settings()
    try:
        season = optional_season(season)
    except ValueError as error:
        console.print(f"[red]--season: {error}[/red]")
        raise typer.Exit(2) from None
    engine, factory = _open_database(settings)
    expanded = list(_expand(sources))
    total = IngestReport()
    per_file: list[tuple[str, IngestReport | str]] = []
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=as_json,
    )
    with (
        httpx.Client(timeout=settings.http_timeout_seconds, follow_redirects=True) as client,
        progress,
    ):
        task = progress.add_task("importing", total=len(expanded))
        for source in expanded:
            progress.update(task, description=f"importing {Path(source.label).name}")
            try:
                content = _read(source, client)
                with session_scope(factory) as session:
                    report = ingest.import_football_data(session, content, season=season)
            except (OSError, httpx.HTTPError, FileFormatError, SQLAlchemyError) as error:
                per_file.append((source.label, f"{type(error).__name__}: {error}"))
            else:
                total.add(report)
                per_file.append((source.label, report))
            progress.advance(task)
    engine.dispose()
    failed = [(label, r) for label, r in per_file if isinstance(r, str)]
    if as_json:
        output.print_json(json.dumps(_json_report(per_file, total)))
    else:
        _print_summary(per_file, total, show_all=show_all)
    if failed:
        raise typer.Exit(1)


@import_cli.command("the-odds-api")
def import_the_odds_api(
    path: Annotated[Path, typer.Argument(help="A saved JSON response of The Odds API v4 /odds.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Import a saved The Odds API v4 response (h2h market) in one transaction."""
    settings = _settings()
    try:
        events = EVENTS.validate_json(path.read_bytes())
    except OSError as error:
        console.print(f"[red]cannot read {path}:[/red] {error}")
        raise typer.Exit(1) from None
    except ValidationError as error:
        console.print(f"[red]{path} is not a valid The Odds API response; nothing imported:[/red]")
        for problem in error.errors()[:SKIPPED_SHOWN]:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"])
            console.print(f"  {where or '(document)'}: {problem['msg']}")
        raise typer.Exit(1) from None
    engine, factory = _open_database(settings)
    with session_scope(factory) as session:
        report = ingest.import_odds_api(session, events)
    engine.dispose()
    if as_json:
        output.print_json(json.dumps(_json_report([(str(path), report)], report)))
    else:
        _print_summary([(str(path), report)], report, show_all=False)


@teams_cli.command("alias")
def add_alias(
    alias: Annotated[
        str, typer.Argument(help="The other source's name, e.g. 'Manchester United'.")
    ],
    team: Annotated[str, typer.Argument(help="The stored team, e.g. 'Man United'.")],
) -> None:
    """Map ALIAS to TEAM for every ingest; a team already stored as ALIAS is merged into TEAM."""
    settings = _settings()
    engine, factory = _open_database(settings)
    try:
        with session_scope(factory) as session:
            report = teams.add_alias(session, alias=alias, team=team)
    except (teams.TeamNotFoundError, teams.AliasConflictError, ValueError) as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    if not report.created:
        output.print(f"{report.alias!r} already maps to {report.team!r}")
    elif report.merged_team:
        output.print(
            f"{report.alias!r} now maps to {report.team!r}; merged the team stored under that "
            f"name: {report.matches_moved} matches moved, {report.matches_merged} merged, "
            f"{report.quotes_moved} quotes moved"
        )
    else:
        output.print(f"{report.alias!r} now maps to {report.team!r}")


@teams_cli.command("unalias")
def remove_alias(alias: Annotated[str, typer.Argument(help="The alias to remove.")]) -> None:
    """Remove an alias (stored matches keep their team)."""
    settings = _settings()
    engine, factory = _open_database(settings)
    try:
        with session_scope(factory) as session:
            teams.remove_alias(session, alias)
    except teams.TeamNotFoundError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    output.print(f"removed alias {alias!r}")


COUNTS = (
    "matches_created",
    "matches_updated",
    "matches_unchanged",
    "quotes_inserted",
    "quotes_updated",
    "quotes_unchanged",
    "results_set",
)


def _json_report(
    per_file: list[tuple[str, IngestReport | str]], total: IngestReport
) -> dict[str, object]:
    def counts(report: IngestReport) -> dict[str, object]:
        return {
            **{name: getattr(report, name) for name in (*COUNTS, "rows_read")},
            "skipped": [
                {"where": s.where, "field": s.field, "reason": s.reason} for s in report.skipped
            ],
        }

    return {
        "files": [
            {"source": label, **({"error": r} if isinstance(r, str) else counts(r))}
            for label, r in per_file
        ],
        "total": counts(total),
    }


def _print_summary(
    per_file: list[tuple[str, IngestReport | str]], total: IngestReport, *, show_all: bool
) -> None:
    table = Table(title="import summary", caption="new/updated/unchanged")
    for name in ("file", "rows", "matches", "quotes", "results", "skipped"):
        table.add_column(name, justify="left" if name == "file" else "right")
    for label, report in per_file:
        if isinstance(report, str):
            table.add_row(Path(label).name, "[red]failed[/red]")
        else:
            table.add_row(Path(label).name, *_count_cells(report))
    if len(per_file) > 1:
        table.add_row("[bold]total[/bold]", *_count_cells(total))
    output.print(table)
    skipped = [(label, s) for label, r in per_file if not isinstance(r, str) for s in r.skipped]
    shown = skipped if show_all else skipped[:SKIPPED_SHOWN]
    for label, item in shown:
        where = f"{Path(label).name} {item.where}" + (f" {item.field}" if item.field else "")
        output.print(f"skipped {where}: {item.reason}", soft_wrap=True)
    if len(skipped) > len(shown):
        output.print(f"... and {len(skipped) - len(shown)} more (use --show-all)")
    for label, report in per_file:
        if isinstance(report, str):
            output.print(f"[red]failed[/red] {label}: {report} (nothing imported)", soft_wrap=True)


def _count_cells(report: IngestReport) -> list[str]:
    return [
        str(report.rows_read),
        f"{report.matches_created}/{report.matches_updated}/{report.matches_unchanged}",
        f"{report.quotes_inserted}/{report.quotes_updated}/{report.quotes_unchanged}",
        str(report.results_set),
        str(len(report.skipped)),
    ]


def main() -> None:
    cli()
