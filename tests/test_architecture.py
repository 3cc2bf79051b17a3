"""The layers' import rules of docs/explanation/architecture.md, checked on the source itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Statements, not types or errors: a layer above the services must not build queries.
SQL_NAMES = {"select", "insert", "update", "delete", "text", "func", "bindparam", "literal"}


def imports_of(path: Path) -> Iterator[tuple[str, set[str]]]:
    """Every module a file imports (at any depth), with the names taken from it."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, set()
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, {alias.name for alias in node.names}


def sources(package: str) -> list[Path]:
    found = sorted((ROOT / package).rglob("*.py"))
    assert found, package
    return found


def inside(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def broken(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources(package)
        for module, _ in imports_of(path)
        if inside(module, *forbidden)
    ]


def test_boosting_needs_only_numpy() -> None:
    allowed = set(sys.stdlib_module_names) | {"numpy", "boosting", "__future__"}
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources("boosting")
        for module, _ in imports_of(path)
        if module.split(".")[0] not in allowed
    ]
    assert not wrong


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        (
            "app/domain",
            ("sqlalchemy", "fastapi", "starlette", "httpx", "app.db", "app.services", "app.api"),
        ),
        ("app/domain", ("app.cli", "app.main", "app.state")),
        ("app/services", ("fastapi", "starlette", "app.api", "app.cli", "app.main")),
        ("app/api", ("sqlalchemy", "app.db")),
        ("app/cli", ("app.db.orm", "app.api")),
        ("boosting", ("app",)),
    ],
)
def test_a_layer_imports_nothing_above_or_beside_it(
    package: str, forbidden: tuple[str, ...]
) -> None:
    assert not broken(package, forbidden)


def test_commands_build_no_queries() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {sorted(names & SQL_NAMES)} from {module}"
        for path in sources("app/cli")
        for module, names in imports_of(path)
        if inside(module, "sqlalchemy") and names & SQL_NAMES
    ]
    assert not wrong


def test_the_rules_see_a_violation(tmp_path: Path) -> None:
    # The checker itself must notice a forbidden import, nested in a function or not.
    module = tmp_path / "module.py"
    module.write_text("def f():\n    from sqlalchemy import select\n")
    assert ("sqlalchemy", {"select"}) in list(imports_of(module))


def is_test_module(module: str) -> bool:
    """A test module (``test_*``) or a conftest: pytest's to collect or to load."""
    last = module.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def imported_test_modules(path: Path) -> list[str]:
    return [
        module if is_test_module(module) else f"{module}.{name}"
        for module, names in imports_of(path)
        for name in (names if module == "tests" else {""})
        if is_test_module(module) or is_test_module(name)
    ]


def test_no_module_of_the_tests_imports_a_test_module_or_a_conftest() -> None:
    # Importing a test module collects its tests again and ties it to its importers: what
    # modules share lives in helper modules (tests/helpers.py and the like) and in the
    # fixture modules of tests/plugins, registered in tests/conftest.py.
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources("tests")
        for module in imported_test_modules(path)
    ]
    assert not wrong


def test_the_tests_rule_sees_a_violation(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "from tests.test_odds import X\nfrom tests import conftest\n"
        "def f():\n    import tests.test_value\n    from tests.helpers import test_data\n"
    )
    assert sorted(imported_test_modules(module)) == [
        "tests.conftest",
        "tests.test_odds",
        "tests.test_value",
    ]


# Imports each module of the service as the first of the app, in one interpreter: the
# modules above the domain and the database are forgotten before each (those two import
# nothing above them, so no cycle runs through them), and a cycle that only works in one
# order shows.
FIRST_IMPORT = """
import importlib, sys
above = ("app.services", "app.api", "app.cli", "app.main", "app.state")
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith(above)]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as error:
        failed.append(f"{name}: {error}")
print("\\n".join(failed))
"""


def test_every_module_imports_first() -> None:
    modules = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in ("app/services", "app/api", "app/cli")
        for path in sources(package)
    ]
    found = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORT, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert found.stdout.strip() == ""
