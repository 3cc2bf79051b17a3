"""``oddsboost models list``, ``models activate`` and ``models activations``."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from app.cli.common import (
    AsJson,
    console,
    database_session,
    fail,
    load_settings,
    new_table,
    say,
    show_json,
    show_table,
)

models_cli = typer.Typer(
    help="Model versions: list them, activate one (roll back or forward), see the activations.",
    no_args_is_help=True,
)

Limit = Annotated[int, typer.Option(min=1, max=500, help="How many, newest first.")]


@models_cli.command("list")
def list_command(limit: Limit = 20, as_json: AsJson = False) -> None:
    """Model versions, newest first: status, how each was fitted and its validation log loss."""
    from app.services import model_versions
    from app.services.pagination import PageWindow

    with database_session(load_settings(), writes=False) as session:
        page = model_versions.list_versions(session, PageWindow(limit, 0))
    if as_json:
        json_page = page.map(
            lambda version: {
                "id": version.id,
                "status": version.status,
                "phase": version.phase,
                "method": version.method,
                "rounds": version.rounds,
                "n_matches": version.n_matches,
                "window_start": version.window_start.isoformat(),
                "window_end": version.window_end.isoformat(),
                "log_loss": version.validation.model.log_loss,
                "consensus_log_loss": version.validation.consensus.log_loss,
                "created_at": version.created_at.isoformat(),
                "activated_at": (
                    None if version.activated_at is None else version.activated_at.isoformat()
                ),
            }
        )
        show_json(dataclasses.asdict(json_page))
        return
    if not page.items:
        say("no model version yet: run `oddsboost refit`")
        return
    table = new_table(f"model versions ({len(page.items)} of {page.total})")
    for column in ("id", "status", "phase", "method", "rounds", "matches", "window end"):
        table.add_column(column)
    table.add_column("log loss", justify="right")
    table.add_column("consensus", justify="right")
    # When each was activated: `models activations` (and --json) tell.
    for version in page.items:
        table.add_row(
            str(version.id),
            str(version.status),
            str(version.phase),
            str(version.method),
            str(version.rounds),
            str(version.n_matches),
            f"{version.window_end:%Y-%m-%d}",
            f"{version.validation.model.log_loss:.4f}",
            f"{version.validation.consensus.log_loss:.4f}",
        )
    show_table(table)


@models_cli.command("activate")
def activate_command(
    version_id: Annotated[
        int, typer.Argument(metavar="N", min=1, help="The version to make active.")
    ],
    reason: Annotated[
        str | None, typer.Option(help="Why, recorded with the activation (up to 500 characters).")
    ] = None,
) -> None:
    """Make version N the active one (roll back or forward), whatever its status.

    Every API worker serves it within ODDSBOOST_MODEL_REFRESH_SECONDS.
    """
    from app.domain.records import check_reason
    from app.domain.vocabulary import ActivatedBy
    from app.services import model_versions

    if reason is not None:
        try:
            reason = check_reason(reason)
        except ValueError as error:
            fail(f"--reason: {error}", code=2)
    settings = load_settings()
    try:
        with database_session(settings, writes=True) as session:
            done = model_versions.activate_version(
                session, version_id, by=ActivatedBy.CLI, reason=reason, settings=settings
            )
    except model_versions.VersionNotFoundError as error:
        fail(f"{error}: `oddsboost models list` shows the versions")
    for warning in done.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}", soft_wrap=True)
    if done.activation is None:
        say(f"version {version_id} is already the active version")
    elif done.activation.previous_version_id is None:
        say(f"version {version_id} is active")
    else:
        say(
            f"version {version_id} is active, in place of version "
            f"{done.activation.previous_version_id}"
        )


@models_cli.command("activations")
def activations_command(limit: Limit = 20, as_json: AsJson = False) -> None:
    """Every time a version became the active one, newest first: when, by whom and why."""
    from app.services import model_versions
    from app.services.pagination import PageWindow

    with database_session(load_settings(), writes=False) as session:
        page = model_versions.list_activations(session, PageWindow(limit, 0))
    if as_json:
        json_page = page.map(
            lambda activation: {
                "id": activation.id,
                "version_id": activation.version_id,
                "previous_version_id": activation.previous_version_id,
                "activated_at": activation.activated_at.isoformat(),
                "by": activation.activated_by,
                "reason": activation.reason,
                "run_id": activation.run_id,
            }
        )
        show_json(dataclasses.asdict(json_page))
        return
    if not page.items:
        say("no version has been activated yet")
        return
    table = new_table(f"activations ({len(page.items)} of {page.total})")
    for column in ("activated", "version", "previous", "by", "run", "reason"):
        table.add_column(column)
    for activation in page.items:
        table.add_row(
            f"{activation.activated_at:%Y-%m-%d %H:%M}",
            str(activation.version_id),
            "" if activation.previous_version_id is None else str(activation.previous_version_id),
            str(activation.activated_by),
            "" if activation.run_id is None else str(activation.run_id),
            activation.reason or "",
        )
    show_table(table)
