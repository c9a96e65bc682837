"""``PRECON_SERVICE_DATABASE_URL`` (``ServiceSettings.database_url``): the service keeps its catalogue and sandbox
in PostgreSQL instead of SQLite files, and answers the same."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from precon.service.config import DEV_API_KEY, ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.replica import ReplicaCatalogue
from tests import pg_support

pg_cluster = pg_support.pg_cluster


def test_the_catalogues_live_in_postgresql_when_a_database_is_given(
    pg_cluster: pg_support.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = pg_cluster.database()
    monkeypatch.setenv("PRECON_SERVICE_DATABASE_URL", pg_cluster.url(name))
    settings = ServiceSettings(data_dir=tmp_path, default_listings=60, default_seed=3, rate_limit=0, dev=True)
    assert settings.database_url == pg_cluster.url(name)
    directory = DataDirectory.open(settings)
    try:
        # Written to PostgreSQL, read from the replica's local copies.
        assert isinstance(directory.live, ReplicaCatalogue) and isinstance(directory.sandbox, ReplicaCatalogue)
        assert isinstance(directory.live.primary, PostgresCatalogueStore)
        assert not settings.catalogue_path.exists() and not settings.sandbox_path.exists()
        assert (settings.copies_dir / "copy-public.sqlite3").exists()
        assert (settings.copies_dir / "copy-sandbox.sqlite3").exists()
        headers = {"x-api-key": DEV_API_KEY}
        with ServerThread(directory.app()) as server, httpx.Client(timeout=30, headers=headers) as http:
            live = http.get(server.url + "/v1/all/search_listings", params={"perPage": 0}).json()
            sandbox = http.get(server.url + "/v1-sandbox/all/search_listings", params={"perPage": 0}).json()
            assert (live["total"], sandbox["total"]) == (60, 40)
            health = http.get(server.url + "/healthz").json()
            assert (health["status"], health["listings"]) == ("ok", 60)
    finally:
        directory.close()
    again = DataDirectory.open(settings)  # opened again: migrated and filled already, nothing loaded twice
    try:
        assert again.live.counts()["listings"] == 60
        assert isinstance(again.live, ReplicaCatalogue) and again.live.primary.generation() == 2
        assert again.live.copy.generation() == 2
    finally:
        again.close()
    pg_cluster.drop(name)
