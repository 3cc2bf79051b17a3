"""``oddsboost bets add`` and ``oddsboost bets list``: the bettor's book from the command
line, through the same services as POST and GET /bets."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import (
    AsJson,
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
    from collections.abc import Sequence

    from app.services.bets import BookBet

bets_cli = typer.Typer(help="The bettor's book: the bets you placed.", no_args_is_help=True)

# The most bets one `bets list` prints; page on with --offset.
LIST_LIMIT_MAX = 500


def _moment(text: str) -> dt.datetime:
    """An ISO 8601 moment, UTC when it names no zone."""
    from app.domain.records import as_utc

    return as_utc(dt.datetime.fromisoformat(text))


def _id(value: int) -> int:
    from app.domain.records import MAX_ID

    if not 1 <= value <= MAX_ID:
        raise typer.BadParameter(f"{value} is not an id: ids go from 1 to {MAX_ID}")
    return value


@bets_cli.command("add")
def add_bet(
    match_id: Annotated[int, typer.Option("--match-id", help="The stored match.", callback=_id)],
    outcome: Annotated[str, typer.Option(help="1 (home win), X (draw) or 2 (away win).")],
    bookmaker: Annotated[str, typer.Option(help="Where you placed it (code or name).")],
    price: Annotated[
        str, typer.Option(help="The price: 2.5, 5/2, +150, -200 or evens (stored as decimal).")
    ],
    stake: Annotated[float, typer.Option(help="The stake matched.")],
    placed_at: Annotated[
        dt.datetime | None,
        typer.Option(
            "--placed-at",
            parser=_moment,
            metavar="MOMENT",
            help="When you placed it (ISO 8601, UTC if it names no zone); default: now.",
        ),
    ] = None,
    flag_id: Annotated[
        int | None,
        typer.Option("--flag-id", help="The flag you followed (same match and outcome)."),
    ] = None,
    note: Annotated[str | None, typer.Option(help="Your note (up to 500 characters).")] = None,
    as_json: AsJson = False,
) -> None:
    """Record a bet you placed; one of a match whose result is stored is settled at once."""
    from app.domain.bets import BetChannel, BetDraft
    from app.services import bets
    from app.services.flags import FlagTerms

    settings = load_settings()
    log_as_a_command(settings)
    now = dt.datetime.now(dt.UTC)
    draft = BetDraft(
        match_id=match_id,
        outcome=outcome.strip().upper(),
        bookmaker=bookmaker,
        price_text=price,
        stake=stake,
        placed_at=placed_at or now,
        flag_id=flag_id,
        note=note,
    )
    window = FlagTerms.of(settings).closing_window
    try:
        with database_session(settings, writes=True) as session:
            recorded = bets.add_bet(session, draft, BetChannel.CLI, now, window)
    except bets.BetDraftError as error:
        fail("\n".join(f"--{p.field.replace('_', '-')}: {p.message}" for p in error.problems))
    if as_json:
        show_json(_as_json(recorded))
        return
    say(f"recorded bet {recorded.id}: {_line(recorded)}")


@bets_cli.command("list")
def list_bets(
    status: Annotated[str | None, typer.Option(help="open, won, lost or void.")] = None,
    bookmaker: Annotated[str | None, typer.Option(help="Where placed.")] = None,
    competition: Annotated[str | None, typer.Option(help="A competition's code.")] = None,
    match_id: Annotated[
        int | None, typer.Option("--match-id", help="The bets of one match.")
    ] = None,
    source: Annotated[
        str | None, typer.Option(help="The value source of the flag followed (e.g. PS).")
    ] = None,
    placed_from: Annotated[
        dt.datetime | None,
        typer.Option("--from", parser=_moment, metavar="MOMENT", help="Placed at or after."),
    ] = None,
    placed_to: Annotated[
        dt.datetime | None,
        typer.Option("--to", parser=_moment, metavar="MOMENT", help="Placed at or before."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=LIST_LIMIT_MAX, help="Bets shown.")] = 50,
    offset: Annotated[int, typer.Option(min=0, help="Bets skipped first.")] = 0,
    as_json: AsJson = False,
) -> None:
    """Your bets, latest placed first, with how each fared."""
    from app.domain.bets import BetStatus
    from app.domain.value_sources import chain_links
    from app.services import bets
    from app.services.pagination import PageWindow

    try:
        wanted = None if status is None else BetStatus(status.strip().lower())
    except ValueError:
        raise typer.BadParameter("open, won, lost or void", param_hint="--status") from None
    try:
        links = None if source is None else chain_links(source)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--source") from None
    filters = bets.BetFilter(
        wanted, bookmaker, competition, match_id, links, placed_from, placed_to
    )
    settings = load_settings()
    log_as_a_command(settings)
    with database_session(settings, writes=False) as session:
        page = bets.list_bets(session, filters, PageWindow(limit, offset))
    if as_json:
        show_json(
            {
                "items": [_as_json(bet) for bet in page.items],
                "total": page.total,
                "limit": page.limit,
                "offset": page.offset,
            }
        )
        return
    _print_bets(page.items, page.total)


def _as_json(bet: BookBet) -> dict[str, object]:
    """A bet with the fields of the API's answer, times as ISO 8601 text."""
    import dataclasses

    document = _jsonable(dataclasses.asdict(bet))
    assert isinstance(document, dict)
    return document


def _jsonable(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def _line(bet: BookBet) -> str:
    match = bet.match
    return (
        f"{bet.stake:g} on {bet.outcome} at {bet.price:g} ({bet.price_text}) with "
        f"{bet.bookmaker}, match {match.id} {match.home_team} v {match.away_team} "
        f"({match.kickoff:%Y-%m-%d}); {bet.status}"
        + ("" if bet.profit is None else f", profit {bet.profit:+.2f}")
        + ("" if bet.clv is None else f", CLV {bet.clv:+.1%}")
    )


def _print_bets(items: Sequence[BookBet], total: int) -> None:
    table = new_table()
    for column in ("id", "placed", "match", "outcome", "bookmaker", "price", "stake"):
        table.add_column(column)
    for column in ("status", "profit", "clv"):
        table.add_column(column, justify="right")
    for bet in items:
        table.add_row(
            str(bet.id),
            f"{bet.placed_at:%Y-%m-%d %H:%M}",
            f"{bet.match.home_team} v {bet.match.away_team}",
            bet.outcome,
            bet.bookmaker,
            f"{bet.price:g}",
            f"{bet.stake:g}",
            str(bet.status),
            "" if bet.profit is None else f"{bet.profit:+.2f}",
            "" if bet.clv is None else f"{bet.clv:+.1%}",
        )
    show_table(table)
    say(f"{counted(len(items), 'bet')} shown of {total}")
