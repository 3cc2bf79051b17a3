"""The command-line and configuration references, generated when the docs are built.

An mkdocs hook (``hooks:`` in mkdocs.yml): a page holding ``<!-- reference:cli -->`` gets
every ``oddsboost`` command with its options, read from the Typer application itself; one
holding ``<!-- reference:configuration -->`` gets every field of ``app.settings.Settings``
with its environment variable, type, default and description. Nothing in either is kept by
hand, so neither can drift from the code.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Callable
from typing import Any

import typer.main
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

CLI_MARKER = "<!-- reference:cli -->"
CONFIGURATION_MARKER = "<!-- reference:configuration -->"


def cli_reference() -> str:
    """Every command of ``oddsboost`` with its arguments and options, as Typer's own docs
    utility (``typer ... utils docs``) writes them, under second-level headings."""
    from typer.cli import get_docs_for_click

    from app.cli import cli

    command = typer.main.get_command(cli)
    return get_docs_for_click(obj=command, ctx=typer.Context(command), name="oddsboost", indent=1)


def _cell(text: str) -> str:
    """Text fit for a table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def configuration_reference() -> str:
    """A table of every setting: its environment variable, type, default and description."""
    from app.settings import Settings

    prefix = str(Settings.model_config.get("env_prefix", ""))
    lines = [
        "| environment variable | type | default | description |",
        "|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        kind = _type_name(field.annotation) + _bounds(field)
        lines.append(
            f"| `{prefix}{name.upper()}` | {_cell(kind)} | {_cell(_default(field))} | "
            f"{_cell(field.description or '')} |"
        )
    return "\n".join(lines) + "\n"


def _type_name(annotation: Any) -> str:
    """``int``, ``list[int]``, ``str or none``, one of ``a``, ``b`` for a Literal."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(arguments[0])
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{value}`" for value in arguments)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(argument) for argument in arguments)
    if origin is not None:
        inner = ", ".join(_type_name(argument) for argument in arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "none"
    if annotation is SecretStr:
        return "secret text"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(f"`{member.value}`" for member in annotation)
    return getattr(annotation, "__name__", str(annotation))


BOUNDS = (("ge", "at least"), ("gt", "above"), ("le", "at most"), ("lt", "below"))


def _bounds(field: FieldInfo) -> str:
    """``, at least 1, at most 65535``: the field's numeric bounds, as validated."""
    said = [
        f"{words} {getattr(constraint, attribute):,}"
        for constraint in field.metadata
        for attribute, words in BOUNDS
        if getattr(constraint, attribute, None) is not None
    ]
    return "".join(f", {text}" for text in said)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        factory: Callable[[], Any] = field.default_factory  # type: ignore[assignment]
        value = factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "unset"
    return f"`{_shown(value)}`"


def _shown(value: Any) -> str:
    """A default as the environment variable would spell it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


GENERATORS: dict[str, Callable[[], str]] = {
    CLI_MARKER: cli_reference,
    CONFIGURATION_MARKER: configuration_reference,
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Fill each marker of the page with its reference (mkdocs calls this for every page)."""
    for marker, generate in GENERATORS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
