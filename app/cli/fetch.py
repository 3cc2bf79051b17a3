"""``oddsboost fetch``: the feeds, run once from the command line (the scheduler runs them
on their schedules)."""

from __future__ import annotations

import typer

fetch_cli = typer.Typer(
    help="Fetch fixtures, odds and results from a feed once, and store them.",
    no_args_is_help=True,
)
