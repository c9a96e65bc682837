"""A dashboard catalogue with a simulated past and a deleted listing: for the pages that show history (the listing's
price over time and its changes) and the Compare page's removed listings."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from tests.dashboard_support import reset_caches

HISTORY_LISTINGS = 150
HISTORY_DAYS = 120


@dataclass(frozen=True)
class HistoryCatalogue:
    data_dir: Path
    deleted_id: str
    """A listing deleted after the simulated past: its history ends with its deletion."""


def make_history_catalogue(data_dir: Path) -> HistoryCatalogue:
    """The default catalogue of ``data_dir`` with ``HISTORY_DAYS`` of simulated past, then one listing deleted."""
    settings = ServiceSettings(
        dev=True, data_dir=data_dir, default_listings=HISTORY_LISTINGS, default_history_days=HISTORY_DAYS
    )
    directory = DataDirectory.open(settings)
    try:
        db = directory.live._db()
        (deleted,) = db.execute("SELECT listing_id FROM listings ORDER BY listing_id DESC LIMIT 1").fetchone()
        directory.live.delete_listing(deleted)
    finally:
        directory.close()
    return HistoryCatalogue(data_dir, str(deleted))


@pytest.fixture(scope="session")
def history_catalogue(tmp_path_factory: pytest.TempPathFactory) -> HistoryCatalogue:
    return make_history_catalogue(tmp_path_factory.mktemp("history-dashboard-data"))


@pytest.fixture
def history_dashboard(
    history_catalogue: HistoryCatalogue, monkeypatch: pytest.MonkeyPatch
) -> Iterator[HistoryCatalogue]:
    """The dashboard on its embedded service over :func:`history_catalogue`."""
    for name in ("PRECON_API_URL", "PRECON_API_KEY", "PRECON_PRODUCT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(history_catalogue.data_dir))
    monkeypatch.setenv("PRECON_SERVICE_DEFAULT_LISTINGS", str(HISTORY_LISTINGS))
    monkeypatch.setenv("PRECON_SERVICE_DEFAULT_HISTORY_DAYS", str(HISTORY_DAYS))
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    reset_caches()
    yield history_catalogue
    reset_caches()
