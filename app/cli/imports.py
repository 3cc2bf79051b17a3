"""``oddsboost import football-data`` and ``oddsboost import the-odds-api``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from app.cli.common import (
    AsJson,
    console,
    database,
    database_session,
    fail,
    load_settings,
    log_as_a_command,
    new_table,
    say,
    show_json,
    show_table,
)

if TYPE_CHECKING:
    from app.services.downloads import Downloader
    from app.services.ingest import IngestReport
    from app.settings import Settings

import_cli = typer.Typer(help="Import odds and results from files or URLs.", no_args_is_help=True)

SKIPPED_SHOWN = 20


def _expand(locations: list[str]) -> Iterator[str]:
    """Each location, a directory as the season files under it (a path or a URL each)."""
    from app.services.season_files import csv_files_under

    for location in locations:
        path = Path(location)
        files = csv_files_under(path) if path.is_dir() else []
        # A directory without any is reported as an error when read.
        yield from [str(file) for file in files] or [location]


class AnswerStatusError(Exception):
    """A URL answered with a status other than 2xx; the message says which."""


def _read(location: str, downloader: Downloader) -> bytes:
    if Path(location).is_dir():
        raise FileNotFoundError(f"no .csv files in directory {location}")
    return _fetch(location, downloader)


def _fetch(location: str, downloader: Downloader) -> bytes:
    """The bytes of a file, or of what an http(s) URL answers; an error status raises."""
    if not location.startswith(("http://", "https://")):
        return Path(location).read_bytes()
    answer = downloader.get(location)
    if not 200 <= answer.status_code < 300:
        raise AnswerStatusError(f"HTTP {answer.status_code} {answer.reason_phrase}")
    return answer.content


@contextmanager
def _downloader(
    settings: Settings, feed: Literal["football_data", "odds_api"]
) -> Iterator[Downloader]:
    """Downloads within ``feed``'s limits, redirects followed anywhere: the URL is the
    operator's own choice."""
    from app.services.downloads import DownloadLimits, open_downloader
    from app.services.run_bounds import RunBounds

    timeout = settings.http_timeout_seconds
    limits = DownloadLimits.of(settings, feed, read_timeout_seconds=timeout)
    with open_downloader(limits, RunBounds.unbounded(), site=None) as downloader:
        yield downloader


def _why(error: Exception) -> str:
    """Why a source could not be read or imported, on one line."""
    from app.services.downloads import describe

    return str(error) if isinstance(error, AnswerStatusError) else describe(error)


@import_cli.command("football-data")
def import_football_data(
    sources: Annotated[
        list[str], typer.Argument(help="Season files, directories of them, or http(s) URLs.")
    ],
    season: Annotated[
        str | None,
        typer.Option(
            help="Season of every match: 2018/19 (two consecutive years) or 2019 (a calendar "
            "year), in the form each file's league plays; default: derived."
        ),
    ] = None,
    show_all: Annotated[bool, typer.Option("--show-all", help="List every skipped item.")] = False,
    as_json: AsJson = False,
) -> None:
    """Import football-data.co.uk season files: one transaction per file."""
    import httpx
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from sqlalchemy.exc import SQLAlchemyError

    from app.db.engine import session_scope
    from app.domain.football_data import FileFormatError, LeagueSeasonError
    from app.domain.records import TooManyBookmakersError, optional_season
    from app.services import ingest
    from app.services.flags import FlagTerms
    from app.services.ingest import IngestReport

    settings = load_settings()
    log_as_a_command(settings)
    try:
        season = optional_season(season)
    except ValueError as error:
        fail(f"--season: {error}", code=2)
    expanded = list(_expand(sources))
    total = IngestReport()
    per_file: list[tuple[str, IngestReport | str]] = []
    # --season in the form a league of a file does not play: a usage error, as a season that
    # is not one is, though found only once the file is read (and nothing of it imported).
    season_refused = False
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=as_json,
    )
    with (
        database(settings, writes=True) as (_engine, sessions),
        _downloader(settings, "football_data") as downloader,
        progress,
    ):
        task = progress.add_task("importing", total=len(expanded))
        for source in expanded:
            progress.update(task, description=f"importing {Path(source).name}")
            try:
                content = _read(source, downloader)
                with session_scope(sessions) as session:
                    report = ingest.import_football_data(
                        session, content, season=season, flag_terms=FlagTerms.of(settings)
                    )
            except LeagueSeasonError as error:
                per_file.append((source, f"--season: {error}"))
                season_refused = True
            except (
                OSError,
                httpx.HTTPError,
                AnswerStatusError,
                FileFormatError,
                TooManyBookmakersError,
                SQLAlchemyError,
            ) as error:
                per_file.append((source, _why(error)))
            else:
                total.add(report)
                per_file.append((source, report))
            progress.advance(task)
    if as_json:
        show_json(_json_report(per_file, total))
    else:
        _print_summary(per_file, total, show_all=show_all)
    if any(isinstance(report, str) for _, report in per_file):
        raise typer.Exit(2 if season_refused else 1)


@import_cli.command("the-odds-api")
def import_the_odds_api(
    source: Annotated[
        str,
        typer.Argument(help="A saved JSON response of The Odds API v4 /odds, or its http(s) URL."),
    ],
    as_json: AsJson = False,
) -> None:
    """Import a saved The Odds API v4 response (h2h market) in one transaction."""
    import httpx
    from pydantic import ValidationError

    from app.domain.odds_api import ResponseFormatError, problem_location, read_events
    from app.domain.records import TooManyBookmakersError
    from app.services import ingest
    from app.services.flags import FlagTerms

    settings = load_settings()
    log_as_a_command(settings)
    try:
        with _downloader(settings, "odds_api") as downloader:
            content = _fetch(source, downloader)
        events = read_events(content)
    except (OSError, httpx.HTTPError, AnswerStatusError) as error:
        fail(f"cannot read {source}: {_why(error)}")
    except ResponseFormatError as error:
        fail(f"{source}: {error}; nothing imported")
    except ValidationError as error:
        console.print(
            f"{source} is not a valid The Odds API response; nothing imported:",
            style="red",
            markup=False,
        )
        problems = error.errors()
        for problem in problems[:SKIPPED_SHOWN]:
            where = problem_location(problem["loc"]) or "(document)"
            console.print(f"  {where}: {problem['msg']}", markup=False)
        if len(problems) > SKIPPED_SHOWN:
            console.print(f"  ... and {len(problems) - SKIPPED_SHOWN} more", markup=False)
        raise typer.Exit(1) from None
    try:
        with database_session(settings, writes=True) as session:
            report = ingest.import_odds_api(
                session,
                events,
                capture_skew=settings.capture_skew,
                flag_terms=FlagTerms.of(settings),
            )
    except TooManyBookmakersError as error:
        fail(f"{source}: {error}; nothing imported")
    if as_json:
        show_json(_json_report([(source, report)], report))
    else:
        _print_summary([(source, report)], report, show_all=False)


def _json_report(
    per_file: list[tuple[str, IngestReport | str]], total: IngestReport
) -> dict[str, object]:
    def counts(report: IngestReport) -> dict[str, object]:
        return {
            **report.counts(),
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
    from rich.text import Text

    table = new_table("import summary")
    for name in ("file", "rows", "matches", "rescheduled", "quotes", "results", "skipped"):
        table.add_column(name, justify="left" if name == "file" else "right")
    for label, report in per_file:
        if isinstance(report, str):
            table.add_row(Path(label).name, Text("failed", style="red"))
        else:
            table.add_row(Path(label).name, *_count_cells(report))
    if len(per_file) > 1:
        table.add_row("total", *_count_cells(total))
    show_table(table)
    say("matches and quotes: new/updated/unchanged")
    skipped = [(label, s) for label, r in per_file if not isinstance(r, str) for s in r.skipped]
    shown = skipped if show_all else skipped[:SKIPPED_SHOWN]
    for label, item in shown:
        where = f"{Path(label).name} {item.where}" + (f" {item.field}" if item.field else "")
        say(f"skipped {where}: {item.reason}")
    if len(skipped) > len(shown):
        say(f"... and {len(skipped) - len(shown)} more (use --show-all)")
    for label, report in per_file:
        if isinstance(report, str):
            say(f"failed {label}: {report} (nothing imported)")


def _count_cells(report: IngestReport) -> list[str]:
    return [
        str(report.rows_read),
        f"{report.matches_created}/{report.matches_updated}/{report.matches_unchanged}",
        str(report.matches_rescheduled),
        f"{report.quotes_inserted}/{report.quotes_updated}/{report.quotes_unchanged}",
        str(report.results_set),
        str(len(report.skipped)),
    ]
