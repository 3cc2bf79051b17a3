"""The command-line and configuration references are generated when the docs are built
(``docs/hooks/references.py``): every command and every setting is on its page."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import typer.main

from app.cli import cli
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "docs" / "hooks" / "references.py"


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_references_hook", HOOK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def command_paths(command: object, prefix: str) -> list[str]:
    """Every command under ``command``, as typed after ``oddsboost``."""
    found = [prefix]
    subcommands: dict[str, object] = getattr(command, "commands", {})
    for name, child in subcommands.items():
        found += command_paths(child, f"{prefix} {name}")
    return found


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    reference = load_hook().cli_reference()
    root = typer.main.get_command(cli)

    for path in command_paths(root, "oddsboost"):
        assert f"`{path}`" in reference, f"{path} is not in the CLI reference"
    backtest = root.commands["backtest"]  # type: ignore[attr-defined]
    for param in backtest.params:
        for option in param.opts:
            assert option in reference, f"{option} of backtest is not in the CLI reference"


def test_every_setting_is_in_the_configuration_reference_with_its_description() -> None:
    reference = load_hook().configuration_reference()

    for name, field in Settings.model_fields.items():
        assert field.description, f"Settings.{name} has no description"
        row = next(
            (line for line in reference.splitlines() if f"`ODDSBOOST_{name.upper()}`" in line),
            None,
        )
        assert row is not None, f"ODDSBOOST_{name.upper()} is not in the configuration reference"
        assert " ".join(field.description.split()).replace("|", "\\|") in row


def test_the_hook_fills_each_reference_page_marker() -> None:
    hook = load_hook()
    cli_page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    configuration_page = (ROOT / "docs" / "reference" / "configuration.md").read_text()

    assert hook.CLI_MARKER in cli_page
    assert hook.CONFIGURATION_MARKER in configuration_page
    built = hook.on_page_markdown(configuration_page)
    assert hook.CONFIGURATION_MARKER not in built
    assert "`ODDSBOOST_DATABASE_URL`" in built
