"""The ``oddsboost`` command. Each command imports what it needs (the database, numpy, the web
framework) only when it runs, so that ``oddsboost health`` starts in a fraction of a second."""

from __future__ import annotations

from app.cli import (
    alerts,
    backtest,
    bet_book,
    bets,
    fetch,
    imports,
    matches,
    models,
    quotes,
    refits,
    server,
    teams,
    track_record,
)
from app.cli.common import cli

cli.add_typer(imports.import_cli, name="import")
cli.add_typer(teams.teams_cli, name="teams")
cli.add_typer(matches.matches_cli, name="matches")
cli.add_typer(quotes.quotes_cli, name="quotes")
cli.add_typer(models.models_cli, name="models")
cli.add_typer(fetch.fetch_cli, name="fetch")
cli.add_typer(track_record.track_record_cli, name="track-record")
cli.add_typer(bets.bets_cli, name="bets")
bets.bets_cli.command("import")(bet_book.import_command)
bets.bets_cli.command("export")(bet_book.export_command)
bets.bets_cli.command("summary")(bet_book.summary_command)
cli.add_typer(alerts.alerts_cli, name="alerts")
cli.command("serve")(server.serve)
cli.command("migrate")(server.migrate_command)
cli.command("health")(server.health_command)
cli.command("refit")(refits.refit_command)
cli.command("scheduler")(refits.scheduler_command)
cli.command("backtest")(backtest.backtest_command)


def main() -> None:
    cli()


__all__ = ["cli", "main"]
