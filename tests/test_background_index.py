"""A store that builds each new generation's column index on a thread (a replica's copy, which follows every write):
searches meanwhile answer as the catalogue stood before the write, whole, or (when their page holds a record written
since) as it stands now; never an error, never half of both; and once built, the new index answers."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from precon.service.runtime import load
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue

QUERY = ListingQuery(limit=1000, facets=("sellingStatus",))


@pytest.fixture
def store(tmp_path: Path) -> Any:
    built = generated_catalogue(300, 5)
    store = SQLiteStore(tmp_path / "copy.sqlite3")
    load(store, built.listings, built.profiles)
    store.warm()
    store.background_index = True
    yield store, built.listings
    store.close()


def _settled(store: SQLiteStore) -> None:
    deadline = time.monotonic() + 30
    while store._index_thread is not None or store._column_index.generation != store.generation():
        store.search_listings(ListingQuery(limit=0))
        assert time.monotonic() < deadline, "the index of the newest generation was never built"
        time.sleep(0.02)


def _consistent(hits: Any) -> None:
    """The page (every match) and the counts are of one state: the facet counts are those of the documents."""
    assert len(hits.documents) == hits.total
    counted: dict[str, int] = {}
    for document in hits.documents:
        if document.get("sellingStatus"):
            counted[document["sellingStatus"]] = counted.get(document["sellingStatus"], 0) + 1
    assert dict(hits.facets["sellingStatus"]) == counted


def test_a_write_is_searched_once_its_index_is_built_and_the_state_before_is_answered_whole_meanwhile(
    store: Any,
) -> None:
    store, listings = store
    before = store.search_listings(QUERY)
    record = {**listings[0], "listingId": "NEWONE", "path": "Listings/NEWONE", "isFeatured": True}
    record.pop("floorPlans", None)
    store.upsert_listings([record])
    during = store.search_listings(QUERY)
    _consistent(during)
    assert during.total in (before.total, before.total + 1)
    if during.total == before.total:  # the index of the state before: its answer, whole
        assert [d["listingId"] for d in during.documents] == [d["listingId"] for d in before.documents]
    assert store.get_listings(["NEWONE"], None)  # read by id at once
    _settled(store)
    after = store.search_listings(QUERY)
    assert after.total == before.total + 1 and "NEWONE" in {d["listingId"] for d in after.documents}


def test_searches_while_writes_arrive_never_fail_and_end_on_the_newest_state(store: Any, tmp_path: Path) -> None:
    store, listings = store
    errors: list[BaseException] = []
    stop = threading.Event()

    def write() -> None:
        try:
            for n in range(40):
                changed = {**listings[n % 50], "name": f"Rewritten {n}", "startPrice": 400_000 + n}
                store.upsert_listings([changed])
                if n % 7 == 0:
                    store.delete_listing(listings[100 + n]["listingId"])
                time.sleep(0.01)
        except BaseException as error:
            errors.append(error)
        finally:
            stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while not stop.is_set():
            _consistent(store.search_listings(QUERY))
    finally:
        writer.join()
    assert errors == []
    _settled(store)
    fresh = SQLiteStore(tmp_path / "fresh.sqlite3")
    try:
        rows = store._db().execute("SELECT doc FROM listing_docs").fetchall()
        from precon.service.stores.records import decode_document

        fresh.upsert_listings([decode_document(row[0]) for row in rows], as_stored=True)
        ours, theirs = store.search_listings(QUERY), fresh.search_listings(QUERY)
        assert (ours.total, ours.facets) == (theirs.total, theirs.facets)
        assert [d["listingId"] for d in ours.documents] == [d["listingId"] for d in theirs.documents]
    finally:
        fresh.close()


def test_after_a_write_searches_stay_in_memory_and_warming_builds_nothing_in_the_callers_thread(store: Any) -> None:
    store, listings = store
    store.search_listings(QUERY)
    store.upsert_listings([{**listings[1], "name": "Rewritten Once"}])
    # The index of the state before answers meanwhile, on the event loop: no request waits for a build.
    assert store.answers_from_memory(False, False)
    builds: list[str] = []
    original = store._build_columns
    store._build_columns = lambda generation: builds.append(threading.current_thread().name) or original(generation)
    store.warm()
    _settled(store)
    assert builds and all(name == "precon-index" for name in builds)
    store.warm(now=True)  # what a replica does after writing through itself: the index current when it returns
    assert store._column_index.generation == store.generation()
