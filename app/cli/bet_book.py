"""``oddsboost bets import``, ``oddsboost bets export`` and ``oddsboost bets summary``: the
bettor's book in and out, in the CSV format of :mod:`app.domain.bet_csv`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.cli.common import (
    AsJson,
    console,
    database_session,
    fail,
    load_settings,
    log_as_a_command,
    new_table,
    say,
    show_json,
    show_table,
)
from app.domain.wording import counted

if TYPE_CHECKING:
    from app.domain.bet_book import BookFigures, BookGroup, BookSummary
    from app.services.bets import BetFilter


def _moment(text: str) -> dt.datetime:
    """A date or an ISO 8601 moment, UTC when it names no zone."""
    from app.domain.records import as_utc

    return as_utc(dt.datetime.fromisoformat(text))


PlacedFrom = Annotated[
    dt.datetime | None,
    typer.Option(
        "--from",
        parser=_moment,
        metavar="DATE",
        help="Bets placed at or after (a date or ISO 8601 moment, UTC if it names no zone).",
    ),
]
PlacedTo = Annotated[
    dt.datetime | None,
    typer.Option("--to", parser=_moment, metavar="DATE", help="Bets placed at or before this."),
]
Bookmaker = Annotated[
    str | None, typer.Option("--bookmaker", help="A bookmaker's code or name, e.g. B365.")
]
CompetitionCode = Annotated[
    str | None, typer.Option("--competition", help="A competition's code, e.g. E0.")
]


def _filter(
    placed_from: dt.datetime | None,
    placed_to: dt.datetime | None,
    bookmaker: str | None,
    competition: str | None,
) -> BetFilter:
    from app.services.bets import BetFilter

    if placed_from is not None and placed_to is not None and placed_to <= placed_from:
        raise typer.BadParameter("must be after --from", param_hint="--to")
    return BetFilter(
        bookmaker=bookmaker,
        competition=competition,
        placed_from=placed_from,
        placed_to=placed_to,
    )


def import_command(
    file: Annotated[
        Path, typer.Argument(help="The CSV file of bets (UTF-8; see the guide for its columns).")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check the file and say what would be recorded.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Record the bets of a CSV file, all or none: every bad row is printed with its line
    (line 1 is the header) and nothing is recorded (exit 1)."""
    from app.domain.bet_csv import BetCsvTooLargeError, check_size
    from app.services.bet_book import BetImportError, import_bets
    from app.services.flags import FlagTerms

    settings = load_settings()
    log_as_a_command(settings)
    try:
        check_size(file.stat().st_size)
        data = file.read_bytes()
    except (OSError, BetCsvTooLargeError) as error:
        fail(f"cannot import {file}: {error}")
    try:
        with database_session(settings, writes=True) as session:
            report = import_bets(
                session,
                data,
                dt.datetime.now(dt.UTC),
                dry_run=dry_run,
                window=FlagTerms.of(settings).closing_window,
            )
    except BetImportError as error:
        _print_errors(error, as_json=as_json)
        raise typer.Exit(1) from None
    if as_json:
        show_json(dataclasses.asdict(report))
        return
    done = "would record" if dry_run else "recorded"
    say(f"{done} {counted(report.imported, 'bet')} from {file}")
    if report.already_recorded:
        lines = ", ".join(map(str, report.already_recorded))
        say(f"{counted(len(report.already_recorded), 'row')} already in the book: lines {lines}")


def _print_errors(error: Any, *, as_json: bool) -> None:
    if as_json:
        show_json({"errors": [dataclasses.asdict(row) for row in error.errors]})
    for row in error.errors:
        where = f"line {row.line}" + (f", {row.column}" if row.column else "")
        console.print(f"{where}: {row.message}", markup=False, soft_wrap=True, highlight=False)
    console.print(
        f"{counted(len(error.errors), 'error')}: nothing was recorded",
        style="red",
        markup=False,
    )


def export_command(
    output_file: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the CSV here (default: standard output)."),
    ] = None,
    placed_from: PlacedFrom = None,
    placed_to: PlacedTo = None,
    bookmaker: Bookmaker = None,
    competition: CompetitionCode = None,
) -> None:
    """Write the book as CSV: the columns the import reads, then the settlement's."""
    from app.services.bet_book import export_bets

    filters = _filter(placed_from, placed_to, bookmaker, competition)
    settings = load_settings()
    log_as_a_command(settings)
    with database_session(settings, writes=False) as session:
        text = export_bets(session, filters)
    if output_file is None:
        # The file itself, as written: not through the wrapped lines of the results' console.
        typer.echo(text, nl=False)
        return
    try:
        output_file.write_text(text, encoding="utf-8")
    except OSError as error:
        fail(f"cannot write {output_file}: {error}")
    console.print(f"wrote {counted(text.count(chr(10)) - 1, 'bet')} to {output_file}", markup=False)


def summary_command(
    placed_from: PlacedFrom = None,
    placed_to: PlacedTo = None,
    bookmaker: Bookmaker = None,
    competition: CompetitionCode = None,
    starting_bankroll: Annotated[
        float, typer.Option("--bankroll", help="The bankroll the curve starts from.")
    ] = 0.0,
    time_zone: Annotated[
        str, typer.Option("--tz", help="The time zone of the months (IANA name).")
    ] = "UTC",
    as_json: AsJson = False,
) -> None:
    """Staked, returned, ROI and CLV with 95 % intervals, by bookmaker, competition, month
    and source. ROI over a few hundred bets is noise; CLV is the signal."""
    from pydantic import TypeAdapter, ValidationError

    from app.domain.time_zones import TimeZoneName
    from app.services.bet_book import summarise_bets

    filters = _filter(placed_from, placed_to, bookmaker, competition)
    try:
        TypeAdapter(TimeZoneName).validate_python(time_zone)
    except ValidationError as error:
        message = error.errors()[0]["msg"].removeprefix("Value error, ")
        raise typer.BadParameter(message, param_hint="--tz") from None
    settings = load_settings()
    log_as_a_command(settings)
    with database_session(settings, writes=False) as session:
        summary = summarise_bets(
            session, filters, starting_bankroll=starting_bankroll, time_zone=time_zone
        )
    if as_json:
        show_json(json.loads(json.dumps(dataclasses.asdict(summary), default=_iso)))
        return
    _print_summary(summary)


def _iso(value: object) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _interval(mean: float | None, low: float | None, high: float | None) -> str:
    if mean is None:
        return "-"
    if low is None or high is None:
        return f"{mean:+.1%}"
    return f"{mean:+.1%} ({low:+.1%} to {high:+.1%})"


def _print_summary(summary: BookSummary) -> None:
    overall = summary.overall
    say(
        f"{counted(overall.bets, 'bet')}: {overall.settled} settled, {overall.open} open "
        f"(staking {overall.open_stake:.2f}), {overall.void} void"
    )
    say(
        f"staked {overall.staked:.2f}, returned {overall.returned:.2f}, profit "
        f"{overall.profit:+.2f}; ROI {_interval(*_roi(overall))}; mean CLV "
        f"{_interval(*_clv(overall))} over {counted(overall.clv.n, 'bet')} with a close"
    )
    say("ROI over a few hundred bets is noise; CLV is the signal.")
    for title, groups in (
        ("by bookmaker", summary.by_bookmaker),
        ("by competition", summary.by_competition),
        ("by month", summary.by_month),
        ("by source", summary.by_source),
    ):
        show_table(_group_table(title, groups))


def _roi(figures: BookFigures) -> tuple[float | None, float | None, float | None]:
    return figures.roi.mean, figures.roi.low, figures.roi.high


def _clv(figures: BookFigures) -> tuple[float | None, float | None, float | None]:
    return figures.clv.mean, figures.clv.low, figures.clv.high


def _group_table(title: str, groups: list[BookGroup]) -> Any:
    table = new_table(title)
    for name in ("group", "bets", "settled", "staked", "profit", "ROI (95 %)", "CLV (95 %)"):
        table.add_column(name)
    for group in groups:
        figures = group.figures
        table.add_row(
            group.key,
            str(figures.bets),
            str(figures.settled),
            f"{figures.staked:.2f}",
            f"{figures.profit:+.2f}",
            _interval(*_roi(figures)),
            _interval(*_clv(figures)),
        )
    return table
