"""The service inside the calling process: what the dashboard uses when no ``PRECON_API_URL`` is set.

::

    from precon.service import embedded

    with embedded.start() as service:
        page = service.client.search_listings("condo")
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from precon.client import Client
from precon.client.cache import ResponseCache
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread


class EmbeddedService:
    """The listings service on an ephemeral loopback port in a background thread, and a client for it."""

    def __init__(
        self, data_dir: Path | None = None, *, cache: ResponseCache | None = None, listings: int | None = None
    ) -> None:
        overrides: dict[str, object] = {"dev": True}
        if data_dir is not None:
            overrides["data_dir"] = data_dir
        if listings is not None:
            overrides["default_listings"] = listings
        self.directory = DataDirectory.open(ServiceSettings(**overrides))  # type: ignore[arg-type]
        self.data_dir = self.directory.settings.data_dir
        self._server = ServerThread(self.directory.app()).start()
        self.url = self._server.url
        self.api_key = DEV_API_KEY
        self.product_id = DEV_PRODUCT_ID
        self.client = Client(
            self.url,
            DEV_API_KEY,
            DEV_PRODUCT_ID,
            cache=cache if cache is not None else ResponseCache("memory:"),
        )

    def stop(self) -> None:
        self.client.close()
        self._server.stop()
        self.directory.close()

    def __enter__(self) -> EmbeddedService:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def start(
    data_dir: Path | None = None, *, cache: ResponseCache | None = None, listings: int | None = None
) -> EmbeddedService:
    """Starts the service over ``data_dir`` (``./data`` by default; made with the default catalogue on first use)."""
    return EmbeddedService(data_dir, cache=cache, listings=listings)
