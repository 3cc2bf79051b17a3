"""``oddsboost bets``: the bettor's book."""

from __future__ import annotations

import typer

bets_cli = typer.Typer(help="The bettor's book: the bets placed, in and out.", no_args_is_help=True)
