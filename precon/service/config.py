"""Settings of the data service, read from arguments or ``PRECON_SERVICE_*`` environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

DEV_API_KEY = "precon-dev-key"
DEV_PRODUCT_ID = "precon-dev"
DEFAULT_DATA_DIR = Path("data")


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PRECON_SERVICE_")

    data_dir: Path = DEFAULT_DATA_DIR
    dev: bool = False
    """Development mode: loopback only, a known key, local webhook receivers allowed."""
    rate_limit: float = 50.0
    """Requests per second a key may make on average; 0 turns the limit off."""
    rate_burst: int = 200
    """Requests a key may make at once before the average applies."""
    default_listings: int = 2500
    """Listings generated into a new data directory's catalogue."""
    default_seed: int = 0

    @property
    def catalogue_path(self) -> Path:
        return self.data_dir / "catalogue.sqlite3"

    @property
    def sandbox_path(self) -> Path:
        return self.data_dir / "sandbox.sqlite3"

    @property
    def accounts_path(self) -> Path:
        return self.data_dir / "accounts.sqlite3"
