"""``oddsboost alerts test``: a sample alert to the configured webhook receivers;
``oddsboost alerts deliveries``: the delivery log; ``oddsboost alerts prune``: the log past
its retention deleted."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import (
    AsJson,
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
    from app.services.alerts import TestAnswer

alerts_cli = typer.Typer(help="Alerts to webhook receivers.", no_args_is_help=True)


@alerts_cli.command("test")
def send_sample(
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Only this receiver: one of the entries of ODDSBOOST_ALERT_URLS, as written "
            "there (no other URL is ever called).",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Send a sample alert (its event is `test`, its flag and match 0), signed, to every
    configured receiver once, and print each answer; exit 1 if any failed. Nothing is stored."""
    from app.domain.alerts import read_receiver
    from app.services.alerts import SenderTerms, send_test

    settings = load_settings()
    log_as_a_command(settings)
    if not settings.alert_urls:
        fail("no receivers: ODDSBOOST_ALERT_URLS is not set")
    if settings.alert_secret is None:
        fail("ODDSBOOST_ALERT_SECRET is not set: every alert is signed with it")
    only = None
    if url is not None:
        if url.strip() not in settings.alert_urls:
            fail("--url is not one of the entries of ODDSBOOST_ALERT_URLS")
        only = read_receiver(url)
    answers = send_test(SenderTerms.of(settings), settings.public_url, only)
    _show(answers, as_json=as_json)
    if not all(item.answer.delivered for item in answers):
        raise typer.Exit(1)


def _show(answers: list[TestAnswer], *, as_json: bool) -> None:
    if as_json:
        show_json(
            {
                "receivers": [
                    {
                        "host": item.host,
                        "kind": item.kind,
                        "delivered": item.answer.delivered,
                        "status_code": item.answer.status_code,
                        "error": item.answer.error,
                        "duration_seconds": round(item.answer.seconds, 3),
                    }
                    for item in answers
                ]
            }
        )
        return
    for item in answers:
        outcome = (
            f"delivered ({item.answer.status_code})"
            if item.answer.delivered
            else f"failed: {item.answer.error}"
        )
        say(f"{item.host} ({item.kind}): {outcome} in {item.answer.seconds:.3f} s")


@alerts_cli.command("deliveries")
def list_deliveries(
    status: Annotated[
        str | None,
        typer.Option("--status", help="pending, delivered or failed."),
    ] = None,
    flag_id: Annotated[int | None, typer.Option("--flag", min=1, help="One flag's only.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="How many.")] = 20,
    as_json: AsJson = False,
) -> None:
    """The latest deliveries of alerts, newest first, as GET /alerts/deliveries lists them:
    each with its receiver's host, status, attempts and the last attempt's answer."""
    from app.domain.alerts import DeliveryStatus
    from app.domain.wording import counted
    from app.services.alerts import DeliveryFilter, DeliverySummary
    from app.services.alerts import list_deliveries as listed
    from app.services.pagination import PageWindow

    if status is not None and status not in set(DeliveryStatus):
        fail(f"--status must be one of {', '.join(DeliveryStatus)}, not {status!r}")
    settings = load_settings()
    log_as_a_command(settings)
    chosen = None if status is None else DeliveryStatus(status)
    with database_session(settings, writes=False) as session:
        page = listed(session, DeliveryFilter(chosen, flag_id), PageWindow(limit, 0))
        rows = [dataclasses.asdict(DeliverySummary.of(delivery)) for delivery in page.items]
    if as_json:
        show_json({"total": page.total, "items": rows})
        return
    table = new_table(counted(page.total, "delivery", "deliveries"))
    for column in ("id", "flag", "event", "host", "status", "attempts", "last answer"):
        table.add_column(column)
    keys = ("id", "flag_id", "event", "host", "status", "attempts", "last_answer")
    for row in rows:
        table.add_row(*("" if row[key] is None else str(row[key]) for key in keys))
    show_table(table)


@alerts_cli.command("prune")
def prune(
    days: Annotated[
        int | None,
        typer.Option(
            "--older-than-days",
            min=1,
            max=3650,
            help="Retention in days (default: ODDSBOOST_ALERT_RETENTION_DAYS).",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Delete the delivered and failed deliveries of alerts queued more than the retention
    ago, of matches that have kicked off, with their attempts, in small batches (a server's
    sender does the same about once an hour)."""
    from app.domain.wording import counted
    from app.services.alerts import prune_deliveries

    settings = load_settings()
    log_as_a_command(settings)
    retention = dt.timedelta(days=settings.alert_retention_days if days is None else days)
    with database(settings, writes=True) as (_engine, sessions):
        pruned = prune_deliveries(sessions, dt.datetime.now(dt.UTC), retention)
    if as_json:
        show_json({"deleted": pruned, "retention_days": retention.days})
        return
    older = counted(retention.days, "day")
    say(f"{counted(pruned, 'delivery', 'deliveries')} deleted (older than {older})")
