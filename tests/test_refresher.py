"""A served SQLite catalogue's indexes follow each write before any request asks (precon.service.stores.sqlite
.refresher): the first request after a write from another process finds them at its generation."""

from __future__ import annotations

import threading
from pathlib import Path

from precon.filters import parse
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory, load
from precon.service.server import ServerThread
from precon.service.stores.sqlite.refresher import Refresher
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue
from tests.waiting import wait_until

UNITS = ListingQuery(unit_filter=parse("units.status:Available"), limit=5)


def _loaded(path: Path) -> tuple[SQLiteStore, list[dict]]:
    built = generated_catalogue(60, 3)
    store = SQLiteStore(path)
    load(store, built.listings, built.profiles)
    return store, built.listings


def test_the_held_indexes_move_to_a_write_from_another_store_before_any_request(tmp_path: Path) -> None:
    """A write through another store (as another process writes): the refresher patches the column index and the
    floor plans' index this store holds, and its typo index comes from the patched index; a store that held no
    index builds none."""
    served, listings = _loaded(tmp_path / "catalogue.sqlite3")
    idle = SQLiteStore(tmp_path / "catalogue.sqlite3")
    other = SQLiteStore(tmp_path / "catalogue.sqlite3")
    served.search_listings(UNITS)
    refreshers = [Refresher(served, interval=0.01).start(), Refresher(idle, interval=0.01).start()]
    try:
        other.upsert_listings([{**listings[0], "listingId": "ZZZZZ1", "path": "Listings/ZZZZZ1", "name": "Zyx Tower"}])
        generation = other.generation()

        def refreshed() -> bool:
            index, plans = served._column_index, served._plan_index
            ready = index is not None and plans is not None and index.generation == plans.generation == generation
            return ready and served._typo_cache.holds(generation) and served._label_cache.holds(generation)

        wait_until(refreshed, timeout=30, every=0.01)
        found = served.search_listings(ListingQuery(filter=parse('name:"Zyx Tower"')))
        assert [d["listingId"] for d in found.documents] == ["ZZZZZ1"]
        assert idle._column_index is None and idle._plan_index is None
    finally:
        for refresher in refreshers:
            refresher.stop()
        for store in (served, idle, other):
            store.close()


def test_the_market_columns_are_left_to_the_request_that_asks(tmp_path: Path) -> None:
    """The market's columns and the unit ledger do not follow a write (their patch would take the processor from the
    requests after it): the next ``market_stats`` patches them, the base kept, nothing built whole."""
    served, listings = _loaded(tmp_path / "catalogue.sqlite3")
    other = SQLiteStore(tmp_path / "catalogue.sqlite3")
    try:
        served.search_listings(UNITS)
        market, ledger = served.market_columns(), served.unit_ledger()
        other.upsert_listings([{**listings[1], "startPrice": 765_432}])
        generation = other.generation()
        assert served.refresh()
        assert served._column_index is not None and served._column_index.generation == generation
        for held in (served._market.held, served._ledger.held):
            assert held is not None and held[0] < generation
        assert served.market_columns().base is market.base and served.unit_ledger().base is ledger.base
    finally:
        served.close()
        other.close()


def test_a_bulk_write_is_left_to_the_next_request(tmp_path: Path) -> None:
    """More listings written than a patch takes (an import's batches): the refresher builds nothing whole after
    each; the next search does, once."""
    served, listings = _loaded(tmp_path / "catalogue.sqlite3")
    other = SQLiteStore(tmp_path / "catalogue.sqlite3")
    held = served._columns()
    try:
        many = [{**listings[k % len(listings)], "listingId": f"BULK{k:04d}", "path": f"Listings/BULK{k:04d}"}
                for k in range(300)]  # fmt: skip
        other.upsert_listings(many)
        served.refresh()
        assert served._column_index is held
        assert served.search_listings(ListingQuery(limit=1)).total == len(listings) + 300
    finally:
        served.close()
        other.close()


def test_the_served_app_refreshes_its_catalogue_while_it_runs_and_stops_with_it(tmp_path: Path) -> None:
    settings = ServiceSettings(data_dir=tmp_path / "data", default_listings=40, default_history_days=0, dev=True)
    directory = DataDirectory.open(settings)
    other = SQLiteStore(settings.catalogue_path)

    def refreshers() -> int:  # other tests of this process may be serving too
        return sum(thread.name == "precon-refresher" for thread in threading.enumerate())

    running = refreshers()
    try:
        with ServerThread(directory.app()):
            assert refreshers() == running + 2  # the catalogue's and the sandbox's
            live = directory.live
            assert isinstance(live, SQLiteStore) and live._column_index is not None
            before = live._column_index.generation
            listing = next(iter(other.get_listings(other.listing_ids()[:1], None).values()))
            other.upsert_listings([{**listing, "startPrice": 123_456}])
            wait_until(lambda: live._column_index is not None and live._column_index.generation > before, timeout=30)
        assert refreshers() == running
    finally:
        other.close()
        directory.close()
