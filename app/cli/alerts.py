"""``oddsboost alerts test``: a sample alert to the configured webhook receivers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import AsJson, fail, load_settings, log_as_a_command, say, show_json

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
