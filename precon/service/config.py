"""Settings of the data service, read from arguments or ``PRECON_SERVICE_*`` environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from precon.service.webhooks.model import PRODUCTION_SCHEDULE_S

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
    failed_auth_rate: float = 2.0
    """Requests per second without a valid key that one client address may make on average; 0 turns it off."""
    failed_auth_burst: int = 30
    """Requests without a valid key one address may make at once before the average applies."""
    default_listings: int = 2500
    """Listings generated into a new data directory's catalogue."""
    default_seed: int = 0
    default_history_days: int = Field(default=730, ge=0, le=3650)
    """Days of simulated market history a new data directory's catalogue comes with (0: none, the catalogue as
    generated)."""
    webhook_retry_schedule: list[float] = list(PRODUCTION_SCHEDULE_S)
    """Seconds to wait before each retry of a failed delivery; when spent, the delivery has failed."""
    webhook_first_delay: float = 0.0
    """Seconds between storing a delivery and its first attempt."""
    webhook_worker: bool = True
    """Whether this process sends deliveries (off for a process that only writes the catalogue)."""
    workers: int = 1
    """Processes serving the data directory together (``precon serve --workers``): with more than one, they map
    one copy of the indexes, share the rate limits, and one of them at a time sends webhook deliveries."""
    database_url: str | None = None
    """A ``postgresql://`` URL: everything is kept in that PostgreSQL database instead of SQLite files in
    ``data_dir``: the catalogue and the sandbox (schemas ``public`` and ``sandbox``), the keys, products and grants,
    the webhook subscriptions, outbox and attempts. Migrated and filled on first use, once however many replicas
    start; every replica sends webhook deliveries, each claimed by one of them."""
    redis_url: str | None = None
    """A ``redis://`` (or ``rediss://``, ``unix://``) URL: the rate limits are kept in that Redis, so that they hold
    across every replica of the service using it rather than per replica. When Redis does not answer within a
    quarter of a second, each replica limits on its own until it does again (and logs a warning)."""

    switch_interval_ms: float | None = Field(default=None, gt=0, le=100)
    """How long, in milliseconds, a thread of a serving process runs before the interpreter lets another take its
    turn (Python's ``sys.setswitchinterval``; None: Python's own 5 ms). Shorter gives a replica's follower thread
    its turns sooner behind the searches the event loop answers (the write-to-read lag under load), for more CPU
    spent switching (docs/deploy.md measures both)."""

    host: str = "127.0.0.1"
    """The address the service listens on (``precon serve --host`` sets it): where ``/metrics`` is served by
    default, and the address of ``metrics_port``."""
    metrics: bool | None = None
    """``/metrics`` in Prometheus's format: by default (unset) on when the service listens on loopback; beyond
    loopback only with ``metrics_token`` or ``metrics_port``. False turns it off; True beyond loopback needs one of
    them."""
    metrics_token: str | None = None
    """A bearer token ``/metrics`` then asks for (``Authorization: Bearer <token>``), on either port."""
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    """A port of its own that serves ``/metrics`` (on ``host``; every worker process binds it): the API's port then
    does not."""
    log_format: Literal["auto", "json", "text"] = "auto"
    """Logs on standard error as JSON lines (one a request, one a webhook attempt) or as text; ``auto``: text on a
    terminal, JSON otherwise."""

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, url: str | None) -> str | None:
        if not url:
            return None
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("a Redis URL starts with redis://, rediss:// or unix://")
        return url

    @property
    def catalogue_path(self) -> Path:
        return self.data_dir / "catalogue.sqlite3"

    @property
    def sandbox_path(self) -> Path:
        return self.data_dir / "sandbox.sqlite3"

    @property
    def copies_dir(self) -> Path:
        """A replica's local copies of the catalogues in PostgreSQL (``database_url``)."""
        return self.data_dir / "copies"

    @property
    def webhooks_path(self) -> Path:
        return self.data_dir / "webhooks.sqlite3"

    @property
    def accounts_path(self) -> Path:
        return self.data_dir / "accounts.sqlite3"

    @property
    def rate_limits_path(self) -> Path:
        """The keys' rate-limit buckets, shared by the worker processes."""
        return self.data_dir / "rate-limits.keys"

    @property
    def guessing_limits_path(self) -> Path:
        """The buckets of requests without a valid key, per address, shared by the worker processes."""
        return self.data_dir / "rate-limits.addresses"

    @property
    def delivery_lock_path(self) -> Path:
        """Held by the one worker process that sends webhook deliveries."""
        return self.data_dir / "webhook-sender.lock"
