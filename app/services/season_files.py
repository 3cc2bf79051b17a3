"""Season files on disk: the ``.csv`` files given, those found below the folders given, and
the leagues a file holds."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from app.domain.football_data import FileFormatError, leading_competitions

# A season file's league is read from its first rows: this many bytes hold hundreds of them.
HEAD_BYTES = 64 * 1024


class SeasonFileError(ValueError):
    """A season file that cannot be read; the message names it and says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")


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


def leagues_of(path: Path) -> frozenset[str]:
    """The competitions of the rows a season file starts with (its first bytes only), or
    :class:`SeasonFileError` if it cannot be read or is not a season file."""
    try:
        with path.open("rb") as file:
            return leading_competitions(file.read(HEAD_BYTES))
    except (OSError, FileFormatError) as error:
        raise SeasonFileError(path, str(error)) from None
