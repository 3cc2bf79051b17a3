"""Service configuration: one typed object read from ``ODDSBOOST_*`` environment variables."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Keys that look like a value copied from an example file rather than a real secret.
PLACEHOLDER_ADMIN_KEYS = frozenset({"", "changeme", "change-me", "secret", "admin", "password"})


class Settings(BaseSettings):
    """Every setting of the service; the README's configuration table mirrors this class."""

    model_config = SettingsConfigDict(env_prefix="ODDSBOOST_", env_file=None, extra="ignore")

    environment: Literal["development", "production"] = Field(
        default="production",
        description="`development` relaxes the admin key check; anything public is `production`.",
    )
    database_url: str = Field(
        default="sqlite:///./oddsboost.db",
        description="SQLAlchemy URL: `sqlite:///path.db` or `postgresql+psycopg://user@host/db`.",
    )
    admin_api_key: SecretStr | None = Field(
        default=None,
        description="Key expected in the `X-API-Key` header of /admin requests; "
        "unset disables them.",
    )
    host: str = Field(default="127.0.0.1", description="Address `oddsboost serve` binds to.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port of `oddsboost serve`.")
    workers: int = Field(default=1, ge=1, description="Worker processes of `oddsboost serve`.")
    http_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Timeout when `import` fetches a file over HTTP."
    )
    page_size_max: int = Field(
        default=500, ge=1, description="Largest `limit` accepted by paginated endpoints."
    )

    @field_validator("database_url")
    @classmethod
    def _normalise_postgres_driver(cls, url: str) -> str:
        # psycopg 3 is the supported driver; plain `postgresql://` would select psycopg2.
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @model_validator(mode="after")
    def _refuse_placeholder_admin_key(self) -> Settings:
        key = self.admin_api_key
        if (
            key is not None
            and self.environment != "development"
            and key.get_secret_value().strip().lower() in PLACEHOLDER_ADMIN_KEYS
        ):
            raise ValueError(
                "ODDSBOOST_ADMIN_API_KEY is a placeholder; set a real secret "
                "(or ODDSBOOST_ENVIRONMENT=development for local experiments)"
            )
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    """Settings of this process, read once from the environment."""
    return Settings()
