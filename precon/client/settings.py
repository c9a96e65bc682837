"""Where the client connects: its settings, read from ``PRECON_*`` environment variables when not given."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PRODUCTION_URL = "https://api.getbuildify.com"
DEFAULT_TIMEOUT_S = 30.0


class ClientSettings(BaseSettings):
    """Where the client connects, read from ``PRECON_*`` environment variables when not given."""

    model_config = SettingsConfigDict(env_prefix="PRECON_", extra="ignore")

    api_url: str | None = None
    api_key: SecretStr | None = None
    product_id: str | None = None
    version: str = "v1"
    province: str = "all"
    cache_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT_S

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, values: Any) -> Any:
        """An empty (or blank) ``PRECON_*`` setting means "not set": the default applies."""
        if isinstance(values, dict):
            return {k: v for k, v in values.items() if not (isinstance(v, str) and not v.strip())}
        return values
