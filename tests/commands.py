"""The ``oddsboost`` command run in this process, as a user would run it in a shell.

Each run reads its settings from the environment, as the command does: variables are set
for the run with ``monkeypatch`` and the cached settings are cleared before and after it.
What a command does to this process's logging (``dictConfig``) is undone afterwards, and
its output is plain text, as it is when a process writes to a pipe.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from rich.console import Console
from typer.testing import CliRunner

from app.cli import cli, common
from app.settings import get_settings


@dataclass(frozen=True)
class CommandResult:
    """Exit status and output of one run, named as ``subprocess`` names them."""

    returncode: int
    stdout: str
    stderr: str


class Oddsboost:
    """Runs ``oddsboost ARGS`` in this process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        terminal: bool = False,
        columns: int | None = 200,
    ) -> CommandResult:
        """Run the command with ``env`` added to this process's environment for the run.

        Its output goes to a pipe, or with ``terminal`` to a terminal (without colours, so
        that tests read the text). ``columns`` is the terminal's width and COLUMNS; None
        leaves COLUMNS unset, as a shell does for the commands it starts.
        """
        # Wide enough that messages are not wrapped in the middle of what tests look for.
        variables = {**({} if columns is None else {"COLUMNS": str(columns)}), **(env or {})}
        with self._monkeypatch.context() as patch, preserved_logging():
            patch.delenv("COLUMNS", raising=False)
            for name, value in variables.items():
                patch.setenv(name, value)
            for console in vars(common).values():
                if isinstance(console, Console):
                    # Chosen when the console was made, which may have been on a terminal
                    # (pytest -s); a process writing to a pipe would use no colours.
                    patch.setattr(console, "_color_system", None)
                    # Its width too was fixed then, from that process's COLUMNS or terminal:
                    # the terminal's (say, 200 columns), whatever COLUMNS is.
                    patch.setattr(console, "_width", columns or 200)
                    patch.setattr(console, "_force_terminal", terminal)
            get_settings.cache_clear()
            try:
                result = CliRunner().invoke(cli, list(args))
            finally:
                get_settings.cache_clear()
        stderr = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            # What the interpreter would have printed had the command run as a process.
            stderr += "".join(traceback.format_exception(result.exception))
        return CommandResult(result.exit_code, result.stdout, stderr)


@contextmanager
def preserved_logging() -> Iterator[None]:
    """Restore every logger's level, handlers, filters and flags as they were."""
    manager = logging.Logger.manager
    loggers = [logging.getLogger()] + [
        logger for logger in manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    saved = [
        (logger, logger.level, list(logger.handlers), list(logger.filters), logger.propagate)
        for logger in loggers
    ]
    disabled = {logger.name: logger.disabled for logger in loggers}
    try:
        yield
    finally:
        for logger, level, handlers, filters, propagate in saved:
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.filters[:] = filters
            logger.propagate = propagate
            logger.disabled = disabled[logger.name]
        for made in list(manager.loggerDict.values()):
            if isinstance(made, logging.Logger) and made.name not in disabled:
                # Made during the run: back to a logger that only passes records up.
                made.setLevel(logging.NOTSET)
                made.handlers.clear()
                made.propagate = True
                made.disabled = False


def table_rows(printed: str, first_column: str) -> list[dict[str, str]]:
    """The rows of a table a command printed, each cell by its column's name.

    The header is the first line that starts with ``first_column``; the rows are the lines
    after it as wide as it (a table pads each of its lines to its width). A column is a run
    of the positions some line of the table fills, apart from the next by two spaces or more.
    """
    lines = printed.splitlines()
    header = next(line for line in lines if line.startswith(first_column))
    at = lines.index(header)
    block = [header]
    for line in lines[at + 1 :]:
        if len(line) != len(header):
            break
        block.append(line)
    filled = [any(line[i] != " " for line in block) for i in range(len(header))]
    spans: list[tuple[int, int]] = []
    for i, used in enumerate(filled):
        if not used:
            continue
        if spans and i - spans[-1][1] <= 1:
            spans[-1] = (spans[-1][0], i + 1)  # one space inside a column: "log loss"
        else:
            spans.append((i, i + 1))
    names = [header[a:b].strip() for a, b in spans]
    return [
        {name: line[a:b].strip() for name, (a, b) in zip(names, spans, strict=True)}
        for line in block[1:]
    ]
