"""The Dockerfile and docker-compose.yml cannot be run here (no Docker engine), so these
tests keep them honest: every command they run is a real ``oddsboost`` command with real
options, every variable they set is a real setting, and the order of services is right."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pathspec
import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.db.engine import make_engine
from app.domain.vocabulary import FetchSource
from app.services.locks import refit_lock, run_lock
from app.settings import Settings
from tests.commands import Oddsboost

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {f"ODDSBOOST_{name.upper()}" for name in Settings.model_fields}
# Variables read by libraries, not by Settings.
OTHER_RUNTIME_VARIABLES = {
    "PROMETHEUS_MULTIPROC_DIR",
    "PATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PIP_NO_CACHE_DIR",
    "PIP_DISABLE_PIP_VERSION_CHECK",
}
# Used only by docker-compose itself (interpolated into other values).
COMPOSE_ONLY = {"POSTGRES_PASSWORD", "ODDSBOOST_PORT", "ODDSBOOST_WORKERS", "COMPOSE_PROFILES"}


def dockerfile_stages() -> list[list[str]]:
    """Instructions of each stage (continuation lines joined)."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def exec_form(instruction: str) -> list[str]:
    return list(json.loads(instruction[instruction.index("[") :]))


def assert_real_command(oddsboost: Oddsboost, argv: list[str]) -> None:
    assert argv[0] == "oddsboost", argv
    result = oddsboost.run(*argv[1:], "--help")
    assert result.returncode == 0, f"{argv}: {result.stderr}"


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def interpolate(value: str) -> str:
    """Compose's ${NAME:-default} and ${NAME:?message}, with defaults or placeholders."""
    value = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)
    return re.sub(r"\$\{[A-Z_]+:\?[^}]*\}", "placeholder", value)


def test_dockerfile_is_multi_stage_slim_and_unprivileged() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2
    final = stages[-1]
    assert "slim" in final[0]
    assert any(line.startswith("USER ") and "root" not in line for line in final)
    assert any(line.startswith("COPY --from=") for line in final)
    final_text = "\n".join(final).lower()
    for tool in ("gcc", "build-essential", "apt-get install", "pip install"):
        assert tool not in final_text, f"the final stage installs {tool!r}"
    build_text = "\n".join(stages[0])
    assert "pip install ." in build_text  # the project from pyproject.toml
    assert "[dev]" not in build_text
    assert "[report]" not in build_text


def test_dockerfile_commands_are_real(oddsboost: Oddsboost) -> None:
    final = dockerfile_stages()[-1]
    command = next(line for line in final if line.startswith("CMD "))
    assert exec_form(command) == ["oddsboost", "serve"]
    assert_real_command(oddsboost, exec_form(command))
    healthcheck = next(line for line in final if line.startswith("HEALTHCHECK "))
    assert_real_command(oddsboost, exec_form(healthcheck[healthcheck.index("CMD") :]))


def test_dockerfile_variables_are_real_settings() -> None:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    names = set()
    for line in text.splitlines():
        if line.strip().startswith("ENV "):
            names.update(re.findall(r"([A-Z_][A-Z0-9_]*)=", line))
    assert names
    unknown = names - SETTINGS - OTHER_RUNTIME_VARIABLES
    assert not unknown, f"not settings: {sorted(unknown)}"


def test_compose_services_start_in_order() -> None:
    services = compose()["services"]
    assert set(services) == {"db", "migrate", "api", "scheduler", "redis"}
    # Redis is optional: started only with its profile, and nothing waits for it.
    assert services["redis"]["profiles"] == ["redis"]
    assert all("redis" not in service.get("depends_on", {}) for service in services.values())
    db = services["db"]
    assert "pg_isready" in db["healthcheck"]["test"]
    assert any(volume.startswith("pgdata:") for volume in db["volumes"])
    assert "pgdata" in compose()["volumes"]
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    for name in ("api", "scheduler"):
        assert services[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"}
        }


def test_compose_commands_are_real(oddsboost: Oddsboost) -> None:
    services = compose()["services"]
    assert services["migrate"]["command"] == ["oddsboost", "migrate"]
    assert services["scheduler"]["command"] == ["oddsboost", "scheduler"]
    api = [interpolate(part) for part in services["api"]["command"]]
    assert api[:2] == ["oddsboost", "serve"]
    assert "--workers" in api
    for name in ("migrate", "api", "scheduler"):
        assert_real_command(oddsboost, [interpolate(part) for part in services[name]["command"]])


def test_compose_variables_are_real_settings_and_the_admin_key_is_required() -> None:
    services = compose()["services"]
    for name in ("migrate", "api", "scheduler"):
        environment = services[name]["environment"]
        unknown = set(environment) - SETTINGS - OTHER_RUNTIME_VARIABLES
        assert not unknown, f"{name}: not settings: {sorted(unknown)}"
        key = environment["ODDSBOOST_ADMIN_API_KEY"]
        assert key.startswith("${ODDSBOOST_ADMIN_API_KEY:?"), "the admin key must be required"
        assert ":-" not in key
        # Every value, with defaults filled in, is accepted by Settings.
        values: dict[str, Any] = {
            k.removeprefix("ODDSBOOST_").lower(): interpolate(str(v))
            for k, v in environment.items()
            if k.startswith("ODDSBOOST_")
        }
        values["admin_api_key"] = "a-real-looking-secret-123"
        values["cors_allow_origins"] = json.loads(values["cors_allow_origins"])
        Settings(**values)


def test_env_example_names_real_variables() -> None:
    names = [
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert "ODDSBOOST_ADMIN_API_KEY" in names
    assert "POSTGRES_PASSWORD" in names
    unknown = set(names) - SETTINGS - COMPOSE_ONLY
    assert not unknown, sorted(unknown)
    example = dict(
        line.split("=", 1)
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert example["ODDSBOOST_ADMIN_API_KEY"] == ""  # never a default key


@pytest.mark.parametrize("path", ["Dockerfile", "docker-compose.yml", ".env.example"])
def test_files_exist_and_mention_no_local_paths(path: str) -> None:
    text = (ROOT / path).read_text()
    assert "/work/" not in text
    assert "shared/data" not in text


def test_the_files_beside_a_sqlite_database_are_ignored_by_git(tmp_path: Path) -> None:
    """The database of the default URL, and what the service writes beside it (its journal,
    the refit's and each feed's run lock), are never committed by accident."""
    name = make_url(Settings().database_url).database
    assert name is not None
    database = tmp_path / Path(name).name
    engine = make_engine(f"sqlite:///{database}")
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE written (id INTEGER)"))
        with (
            refit_lock(engine) as lock,
            run_lock(engine, f"fetch-{FetchSource.FOOTBALL_DATA}") as football_data,
            run_lock(engine, f"fetch-{FetchSource.THE_ODDS_API}") as odds_api,
        ):
            assert [lock.taken, football_data.taken, odds_api.taken] == [True, True, True]
            written = sorted(path.name for path in tmp_path.iterdir())
    finally:
        engine.dispose()
    assert f"{database.name}.refit-lock" in written
    assert f"{database.name}.fetch-football-data-lock" in written
    ignored = pathspec.GitIgnoreSpec.from_lines((ROOT / ".gitignore").read_text().splitlines())
    assert [name for name in written if not ignored.match_file(name)] == []
