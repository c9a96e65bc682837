"""Shared fixtures: the real service under uvicorn on a loopback port, over a real SQLite data directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread

# A new data directory's catalogue is generate()'s, without the simulated past a served one gets: what most tests
# check it against (tests/test_simulation.py tests the past, and the services and processes started here inherit it).
os.environ.setdefault("PRECON_SERVICE_DEFAULT_HISTORY_DAYS", "0")

TEST_LISTINGS = 400
TEST_SEED = 11

KEY_ALL = "test-key-everything"
"""Product ``everything``: every version and province."""
KEY_ONTARIO = "test-key-ontario"
"""Product ``ontario``: v1 in Ontario only."""
KEY_LITE = "test-key-lite"
"""Product ``lite``: v1-lite, every province."""
KEY_PEI = "test-key-pei"
"""Product ``pei``: v1 in Prince Edward Island only; like any valid key, it may read the sandbox."""

XSS_NAME = "<script>alert(1)</script> Lofts"


@dataclass
class Api:
    """A running service and the keys the tests use."""

    url: str
    directory: DataDirectory
    http: httpx.Client

    def get(self, path: str, key: str | None = KEY_ALL, **params: Any) -> httpx.Response:
        headers = {"x-api-key": key} if key is not None else {}
        return self.http.get(self.url + path, params=params, headers=headers)

    def ok(self, path: str, key: str | None = KEY_ALL, **params: Any) -> Any:
        response = self.get(path, key, **params)
        assert response.status_code == 200, response.text
        return response.json()

    def all_listings(self) -> list[dict[str, Any]]:
        """Every stored listing document: the oracle's view of the catalogue."""
        from precon.service.stores.records import decode_document

        db = self.directory.live._db()
        return [
            decode_document(blob)
            for (blob,) in db.execute(
                "SELECT d.doc FROM listings l JOIN listing_docs d ON d.id = l.id ORDER BY l.listing_id"
            )
        ]

    def all_profiles(self) -> list[dict[str, Any]]:
        from precon.service.stores.records import decode_document

        db = self.directory.live._db()
        return [decode_document(blob) for (blob,) in db.execute("SELECT doc FROM profiles ORDER BY path")]


def _add_special_listings(directory: DataDirectory) -> None:
    template = directory.live.get_listings(
        [directory.live._db().execute("SELECT listing_id FROM listings ORDER BY listing_id LIMIT 1").fetchone()[0]],
        None,
    )
    record = dict(next(iter(template.values())))
    record.update(listingId="XSS0A1", path="Listings/XSS0A1", name=XSS_NAME, isFeatured=False)
    # The copy's floor plans are new plans: without the template's ids, the store gives them their own.
    if isinstance(record.get("floorPlans"), list):
        record["floorPlans"] = [{k: v for k, v in plan.items() if k != "id"} for plan in record["floorPlans"]]
    directory.live.upsert_listings([record])


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("precon-data")


@pytest.fixture(scope="session")
def api(data_dir: Path) -> Iterator[Api]:
    settings = ServiceSettings(
        data_dir=data_dir, default_listings=TEST_LISTINGS, default_seed=TEST_SEED, rate_limit=0, dev=True
    )
    directory = DataDirectory.open(settings)
    accounts = directory.accounts
    accounts.create_key("everything", key=KEY_ALL)
    accounts.create_key("ontario", ["v1"], ["on"], key=KEY_ONTARIO)
    accounts.create_key("lite", ["v1-lite"], key=KEY_LITE)
    accounts.create_key("pei", ["v1"], ["pe"], key=KEY_PEI)
    _add_special_listings(directory)
    with ServerThread(directory.app()) as server, httpx.Client(timeout=30) as http:
        yield Api(server.url, directory, http)
    directory.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The threads still alive at the end: a suite that leaks services grows slow long before it fails."""
    import collections
    import threading

    names = collections.Counter(thread.name.split("-")[0].rstrip("0123456789_ ") for thread in threading.enumerate())
    terminalreporter.write_line(f"threads alive at the end: {threading.active_count()} {dict(names.most_common(8))}")
