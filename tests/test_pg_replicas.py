"""Replicas: several stores (processes, in production) on one PostgreSQL catalogue read each other's writes as soon
as their copies catch up, and their writes, however concurrent, leave the catalogue as one writer at a time
would."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from precon import filters
from precon.service.runtime import load
from precon.service.search.text import TextQuery
from precon.service.stores.postgres.store import CHANNEL, PostgresCatalogueStore
from precon.service.stores.replica import CatalogueCopy, ReplicaCatalogue
from precon.service.stores.types import ListingQuery
from tests import pg_support
from tests.catalogues import generated_catalogue

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database


def test_a_write_of_one_replica_is_read_in_another_once_its_copy_catches_up(pg_database: str, tmp_path: Path) -> None:
    built = generated_catalogue(60, 3)
    first = ReplicaCatalogue(CatalogueCopy(PostgresCatalogueStore(pg_database, migrate=False), tmp_path / "1.sqlite3"))
    second = ReplicaCatalogue(CatalogueCopy(PostgresCatalogueStore(pg_database, migrate=False), tmp_path / "2.sqlite3"))
    second.local.background_index = False  # the column index, rebuilt for each generation, is what is checked
    try:
        first.upsert_profiles(built.profiles)
        first.upsert_listings(built.listings)
        second.copy.catch_up()
        # The second replica's caches (facet labels, typo vocabulary, attribute names) are filled...
        second.search_listings(ListingQuery(facets=("cityOrDistrict",), text=TextQuery.parse("condso")))
        assert "quayfront" not in second.listing_attribute_names()
        # ...and followed when the first writes.
        record = {**built.listings[0], "name": "Zanzibar Quarters", "cityOrDistrict": "Ÿellowknife", "quayfront": 1}
        first.upsert_listings([record])
        second.copy.catch_up()
        hits = second.search_listings(ListingQuery(text=TextQuery.parse("zanzibra"), facets=("cityOrDistrict",)))
        assert [d["listingId"] for d in hits.documents] == [record["listingId"]]
        assert ("Ÿellowknife", 1) in hits.facets["cityOrDistrict"]
        assert "quayfront" in second.listing_attribute_names()
        assert second.search_listings(ListingQuery(filter=filters.parse("quayfront = 1"))).total == 1
        first.delete_listing(record["listingId"])
        second.copy.catch_up()
        assert second.search_listings(ListingQuery(filter=filters.parse("quayfront = 1"))).total == 0
        assert second.get_listings([record["listingId"]], None) == {}
    finally:
        first.close()
        second.close()


def test_concurrent_writers_leave_one_consistent_catalogue(pg_database: str) -> None:
    built = generated_catalogue(80, 4)
    replicas = [PostgresCatalogueStore(pg_database, migrate=False) for _ in range(3)]
    errors: list[BaseException] = []
    actions: list[list[str]] = []

    def write(store: PostgresCatalogueStore, offset: int) -> None:
        try:
            for round_ in range(4):
                batch = [{**r, "name": f"{r['name']} {offset}-{round_}"} for r in built.listings[offset::2]]
                actions.append([c.action for c in store.upsert_listings(batch)])
        except BaseException as error:
            errors.append(error)

    try:
        replicas[0].upsert_profiles(built.profiles)
        threads = [threading.Thread(target=write, args=(store, i % 2)) for i, store in enumerate(replicas)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert replicas[1].counts()["listings"] == len(built.listings)
        # Each listing was created once, by whichever writer came first; every later write updated it.
        assert sum(a.count("created") for a in actions) == len(built.listings)
        with psycopg.connect(pg_database) as connection:
            orphans = connection.execute(
                "SELECT count(*) FROM listing_references t LEFT JOIN listings l ON l.id = t.listing WHERE l.id IS NULL"
            ).fetchone()
            generation = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        assert orphans == (0,)
        assert generation is not None and int(generation[0]) == 1 + len(actions)
    finally:
        for store in replicas:
            store.close()


def test_every_write_is_announced_on_the_channel_after_its_commit(pg_database: str) -> None:
    store = PostgresCatalogueStore(pg_database, migrate=False)
    heard: list[str] = []
    with psycopg.connect(pg_database, autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        try:
            store.upsert_listings(generated_catalogue(5, 1).listings)
            store.delete_listing("no-such-listing")  # nothing changed: nothing announced
            store.record_view("no-such-listing")  # a view is not a catalogue change
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not heard:
                for notice in listener.notifies(timeout=0.5, stop_after=1):
                    heard.append(notice.payload)
        finally:
            store.close()
    assert heard == ["public 1"]


def test_an_import_is_one_transaction_whose_events_are_heard_once_after_its_commit(pg_database: str) -> None:
    built = generated_catalogue(30, 6)
    store = PostgresCatalogueStore(pg_database, migrate=False)
    other = PostgresCatalogueStore(pg_database, migrate=False)
    heard: list[tuple[int, int]] = []
    store.listeners.append(lambda changes: heard.append((len(changes), other.counts()["listings"])))
    try:
        with pytest.raises(ValueError), store.atomic():
            load(store, built.listings[:20], built.profiles)
            assert other.counts() == {"listings": 0, "profiles": 0}  # not committed yet
            store.upsert_listings([{"name": "no id"}])  # a bad record: the whole import is undone
        assert store.counts() == {"listings": 0, "profiles": 0}
        assert heard == []
        with store.atomic():
            load(store, built.listings, built.profiles)
            store.delete_listing(built.listings[0]["listingId"])
        # One call, after the commit: another replica already sees what it announces.
        assert heard == [(len(built.profiles) + len(built.listings) + 1, len(built.listings) - 1)]
        assert other.counts() == {"listings": len(built.listings) - 1, "profiles": len(built.profiles)}
    finally:
        store.close()
        other.close()


def test_connections_the_server_dropped_are_replaced(pg_database: str) -> None:
    store = PostgresCatalogueStore(pg_database, migrate=False, min_size=2, max_size=2)
    try:
        store.upsert_listings(generated_catalogue(5, 2).listings)
        with psycopg.connect(pg_database, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid != pg_backend_pid()"
            )
        for _ in range(4):  # every pooled connection was cut: each is found dead and replaced on checkout
            assert store.counts()["listings"] == 5
    finally:
        store.close()
