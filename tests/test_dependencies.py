"""The pinned versions in constraints.txt are the ones every install uses, and they stay inside
the ranges pyproject.toml declares, so a build made later installs what was tested."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    pinned: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pinned[canonicalize_name(name)] = version
    return pinned


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    texts = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        texts.extend(extra)
    return [Requirement(text) for text in texts]


def test_every_declared_dependency_is_pinned_inside_its_range() -> None:
    pinned = pins()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{requirement.name}=={pinned[name]} is outside {requirement.specifier}"
        )


def test_every_pin_is_exact() -> None:
    lines = [
        line
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines
    for line in lines:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[A-Za-z0-9_.+!-]+", line), line


def test_the_image_ci_and_readme_install_with_the_pins() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "constraints.txt" in next(
        line for line in dockerfile.splitlines() if line.startswith("COPY")
    )
    assert "--constraint constraints.txt" in dockerfile
    # pip's isolated build environment reads constraints only from the environment.
    assert "PIP_CONSTRAINT=/src/constraints.txt" in dockerfile
    readme = (ROOT / "README.md").read_text()
    installs = re.findall(r"\.venv/bin/pip install [^&\n]*", readme)
    quick_start = [command for command in installs if "-e '.[dev]'" in command or " . " in command]
    assert len(quick_start) >= 2
    assert all("-c constraints.txt" in command for command in quick_start), quick_start


def test_the_build_backend_is_pinned_inside_its_range() -> None:
    build_system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    pinned = pins()
    for text in build_system["requires"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"the build backend {requirement.name} is not pinned"
        assert requirement.specifier.contains(pinned[name]), (
            f"{requirement.name}=={pinned[name]} is outside {requirement.specifier}"
        )
