"""Counts in messages take the number of their count."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from app.domain.wording import counted


@pytest.mark.parametrize(
    ("count", "expected"), [(0, "0 quotes"), (1, "1 quote"), (2, "2 quotes"), (-1, "-1 quotes")]
)
def test_a_regular_noun(count: int, expected: str) -> None:
    assert counted(count, "quote") == expected


def test_nouns_that_take_es_and_irregular_ones() -> None:
    assert [counted(n, "match") for n in (0, 1, 2)] == ["0 matches", "1 match", "2 matches"]
    assert counted(2, "settled match") == "2 settled matches"
    assert counted(1, "hypothesis", "hypotheses") == "1 hypothesis"
    assert counted(3, "hypothesis", "hypotheses") == "3 hypotheses"


# Nouns a message counts. A number written before one of them by hand ("{n} matches")
# reads "1 matches" when n is 1: messages count with `counted`.
COUNTED_NOUNS = (
    "matches",
    "quotes",
    "files",
    "results",
    "teams",
    "rows",
    "bookmakers",
    "versions",
    "entries",
    "runs",
    "items",
    "seasons",
    "errors",
    "bets",
    "rounds",
    "days",
    "events",
    "sports",
    "requests",
    "credits",
    "tables",
    "competitions",
    "aliases",
    "documents",
    "bytes",
    "minutes",
    "hours",
    "seconds",
    "characters",
    "leagues",
    "activations",
)
# A number, then perhaps a word that qualifies the noun ("test matches"), then the noun.
BEFORE_A_NOUN = rf"(?:(?:new|settled|test|usable|other|more) )?(?:{'|'.join(COUNTED_NOUNS)})\b"
# Fields before such a noun that are words, not counts: a quote phase ("pre quotes"), the
# name of an array ("H rows").
WORDS_NOT_COUNTS = {
    ("fitting.py", "options.phase"),
    ("_checks.py", "name"),
    ("match.html", "view.snapshot.phase.value"),
}
ROOT = Path(__file__).resolve().parents[1]


def hand_made_plurals(path: Path) -> list[str]:
    """Where a Python file writes a count before a plural noun without `counted`: an
    f-string's plain field (a float's has a format spec) or a %d of a log line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.JoinedStr):
            for field, text in itertools.pairwise(node.values):
                if (
                    isinstance(field, ast.FormattedValue)
                    and field.format_spec is None
                    and field.conversion == -1
                    and isinstance(text, ast.Constant)
                    and re.match(rf" {BEFORE_A_NOUN}", str(text.value))
                    and (path.name, ast.unparse(field.value)) not in WORDS_NOT_COUNTS
                ):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.search(rf"%d {BEFORE_A_NOUN}", node.value)
        ):
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    return found


def test_no_message_counts_a_plural_by_hand() -> None:
    sources = sorted([*(ROOT / "app").rglob("*.py"), *(ROOT / "boosting").rglob("*.py")])
    assert [found for path in sources for found in hand_made_plurals(path)] == []


def test_no_page_counts_a_plural_by_hand() -> None:
    """A template counts with its `counted` filter: ``{{ n | counted("day") }}``."""
    pattern = re.compile(r"\{\{\s*([^}|]*?)\s*\}\}\s*" + BEFORE_A_NOUN)
    found = [
        f"{path.name}: {match.group(0)}"
        for path in sorted((ROOT / "app" / "api" / "templates").rglob("*.html"))
        for match in pattern.finditer(path.read_text())
        if (path.name, match.group(1)) not in WORDS_NOT_COUNTS
    ]
    assert found == []


def test_the_checks_see_a_plural_written_by_hand(tmp_path: Path) -> None:
    module = tmp_path / "app" / "module.py"
    module.parent.mkdir()
    module.write_text(
        'log.info("run %d: %d new matches", run, n)\n'
        "message = f\"moved {moved} matches with {counted(quotes, 'quote')}\"\n"
        'fine = f"{share:.0%} of the test matches"\n'
    )
    found = hand_made_plurals(module)
    assert len(found) == 2
    assert re.search(r"\{\{[^}|]*\}\}\s*" + BEFORE_A_NOUN, "in the next {{ view.days }} days")
