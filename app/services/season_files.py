"""Season files on disk: the ``.csv`` files given, and those found below the folders given."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def csv_files_under(directory: Path) -> list[Path]:
    """Every ``.csv`` file below ``directory`` (any letter case), in path order."""
    return sorted(path for path in directory.rglob("*") if path.suffix.lower() == ".csv")


def csv_files(sources: Iterable[Path]) -> list[Path]:
    """Files as given and the ``.csv`` files below folders; a missing path is an error."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            files.extend(csv_files_under(source))
        elif source.is_file():
            files.append(source)
        else:
            raise FileNotFoundError(f"no such file or directory: {source}")
    return files
