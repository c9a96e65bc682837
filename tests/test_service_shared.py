"""What the worker processes share, in one process: indexes written once and mapped, the generation signal, the
rate-limit buckets in a file."""

from __future__ import annotations

import os
import pickle
import sys
import threading
import types
from pathlib import Path

import numpy as np

from precon.service.api.calls import SharedRateLimiter
from precon.service.runtime import load
from precon.service.search.shared import CODE_VERSION, SharedIndexes
from precon.service.search.text import TextQuery
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue


def test_an_index_is_built_once_and_mapped_read_only(tmp_path: Path) -> None:
    shared = SharedIndexes(tmp_path / "catalogue.sqlite3")
    builds: list[str] = []

    def build(key: str) -> tuple[str, dict[str, object]]:
        builds.append(key)
        return key, {"numbers": np.arange(10, dtype=np.int64), "names": ["a", "b"]}

    first = shared.get("columns", lambda: "1-5", lambda: build("1-5"))
    again = shared.get("columns", lambda: "1-5", lambda: build("1-5"))
    assert builds == ["1-5"]
    numbers = again["numbers"]
    assert isinstance(numbers, np.ndarray) and not numbers.flags.writeable
    assert isinstance(numbers.base, np.memmap) or numbers.base is not None
    assert list(numbers) == list(range(10)) and again["names"] == ["a", "b"] == first["names"]
    newer = shared.get("columns", lambda: "1-6", lambda: build("1-6"))
    assert builds == ["1-5", "1-6"] and list(newer["numbers"]) == list(range(10))
    assert [p.name for p in shared.root.iterdir() if p.is_dir()] == [f"columns-{CODE_VERSION}-1-6"]


def _directory_files(shared: SharedIndexes, kind: str) -> dict[str, os.stat_result]:
    [directory] = [p for p in shared.root.iterdir() if p.is_dir() and p.name.startswith(f"{kind}-")]
    return {p.name: p.stat() for p in directory.iterdir()}


def test_a_patched_generation_writes_only_its_new_arrays_and_links_the_rest(tmp_path: Path) -> None:
    """An index of the next generation that keeps most arrays of the one before (a patch) writes only the arrays it
    made, into a new pack, and links the pack of the others (one file, two directories): a write costs the disk what
    it changed. The same array twice in an index is one array read back."""
    shared = SharedIndexes(tmp_path / "catalogue.sqlite3")
    big = np.arange(200_000, dtype=np.int64)
    first = shared.get("columns", lambda: "1-5", lambda: ("1-5", {"big": big, "small": np.arange(3), "words": ["a"]}))
    [old_pack] = [name for name in _directory_files(shared, "columns") if name.endswith(".pack")]
    changed = np.array([7, 8, 9], dtype=np.int32)
    patched = {**first, "small": changed, "again": changed}
    second = shared.get("columns", lambda: "1-6", lambda: ("1-6", patched))
    files = _directory_files(shared, "columns")  # the directory of 1-5 removed: the pack lives on, linked here
    packs = {name: status for name, status in files.items() if name.endswith(".pack")}
    assert old_pack in packs and packs[old_pack].st_size >= big.nbytes
    [new_pack] = set(packs) - {old_pack}
    assert packs[new_pack].st_size <= 64 + changed.nbytes  # only the array the patch made
    assert list(second["big"]) == list(big) and list(second["small"]) == [7, 8, 9] == list(second["again"])
    assert second["again"] is second["small"] and second["words"] == ["a"]
    assert not second["small"].flags.writeable and second["small"].dtype == np.int32


def test_a_pack_kept_for_a_small_part_of_it_is_written_out_again(tmp_path: Path) -> None:
    """A generation that keeps only a small array of a large pack does not hold the whole pack alive: what it keeps
    is written into its own pack, and the large one goes with the directory before."""
    shared = SharedIndexes(tmp_path / "catalogue.sqlite3")
    first = shared.get("plans", lambda: "1-5", lambda: ("1-5", [np.zeros(100_000), np.ones(10)]))
    [old_pack] = [name for name in _directory_files(shared, "plans") if name.endswith(".pack")]
    second = shared.get("plans", lambda: "1-6", lambda: ("1-6", [np.arange(5.0), first[1]]))
    packs = {name: s.st_size for name, s in _directory_files(shared, "plans").items() if name.endswith(".pack")}
    assert old_pack not in packs and sum(packs.values()) <= 64 + 15 * 8
    assert list(second[0]) == [0, 1, 2, 3, 4] and list(second[1]) == [1.0] * 10


def _pickle_of_a_class_that_moved() -> bytes:
    """A pickled instance of a class whose module is gone, as an index of the code before an upgrade is."""
    module = types.ModuleType("precon_module_that_moved")

    class ColumnIndex:
        pass

    ColumnIndex.__module__, ColumnIndex.__qualname__ = module.__name__, "ColumnIndex"
    module.ColumnIndex = ColumnIndex  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        return pickle.dumps(ColumnIndex())
    finally:
        del sys.modules[module.__name__]


def test_an_index_written_by_code_whose_classes_moved_is_rebuilt(tmp_path: Path) -> None:
    """An upgrade that moves a module leaves the old index naming it: the index is built again, not a failed start."""
    shared = SharedIndexes(tmp_path / "catalogue.sqlite3")
    old = shared.root / f"columns-{CODE_VERSION}-1-5"
    old.mkdir(parents=True)
    (old / "index.pickle").write_bytes(_pickle_of_a_class_that_moved())
    builds: list[str] = []

    def build() -> tuple[str, dict[str, object]]:
        builds.append("1-5")
        return "1-5", {"numbers": np.arange(3, dtype=np.int64)}

    index = shared.get("columns", lambda: "1-5", build)
    assert builds == ["1-5"] and list(index["numbers"]) == [0, 1, 2]
    assert list(shared.get("columns", lambda: "1-5", build)["numbers"]) == [0, 1, 2] and builds == ["1-5"]


def test_an_index_written_by_other_code_is_not_read_even_where_it_loads(tmp_path: Path) -> None:
    """An object pickled by the code before an upgrade loads, but lacks what the new code added: it is built again."""
    shared = SharedIndexes(tmp_path / "catalogue.sqlite3")
    old = shared.root / "columns-0123456789ab-1-5"
    old.mkdir(parents=True)
    (old / "index.pickle").write_bytes(pickle.dumps({"numbers": "from the code before"}))
    index = shared.get("columns", lambda: "1-5", lambda: ("1-5", {"numbers": np.arange(2, dtype=np.int64)}))
    assert list(index["numbers"]) == [0, 1]
    assert [p.name for p in shared.root.iterdir() if p.is_dir()] == [f"columns-{CODE_VERSION}-1-5"]


def test_concurrent_readers_wait_for_one_build(tmp_path: Path) -> None:
    shared = SharedIndexes(tmp_path / "catalogue.sqlite3")
    builds: list[int] = []

    def build() -> tuple[str, list[int]]:
        builds.append(1)
        return "k", [1, 2, 3]

    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(shared.get("plans", lambda: "k", build))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [[1, 2, 3]] * 4
    assert builds == [1]  # the others found it written once the lock was theirs (flock is per open file)


def test_a_write_through_another_store_is_seen_at_once_and_answers_stay_the_same(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.sqlite3"
    built = generated_catalogue(60, 2)
    plain = SQLiteStore(path)
    load(plain, built.listings, built.profiles)
    shared = SQLiteStore(path, shared_indexes=True)
    other = SQLiteStore(path)
    try:
        queries = [
            ListingQuery(limit=100, facets=("type", "builders", "cityOrDistrict", "startPrice")),
            ListingQuery(limit=10, text=TextQuery.parse("condo"), order="relevance"),
            ListingQuery(limit=10, order="trending"),
        ]
        for query in queries:
            assert shared.search_listings(query) == plain.search_listings(query)
        generation = shared.generation()
        other.upsert_listings([{**built.listings[0], "listingId": "ZZZZZ1", "path": "Listings/ZZZZZ1"}])
        assert shared.generation() == generation + 1
        found = shared.search_listings(ListingQuery(limit=100_000))
        assert "ZZZZZ1" in {d["listingId"] for d in found.documents}
        for query in queries:
            assert shared.search_listings(query) == plain.search_listings(query)
        assert len([p for p in shared._shared.root.iterdir() if p.name.startswith("columns-")]) == 1  # type: ignore[union-attr]
    finally:
        for store in (plain, shared, other):
            store.close()


def test_the_generation_is_not_read_from_sqlite_while_nothing_changed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    try:
        store.generation()
        statements: list[str] = []
        store._db().set_trace_callback(statements.append)
        for _ in range(20):
            store.generation()
        assert statements == []
    finally:
        store.close()


def test_two_limiters_over_one_file_share_the_buckets(tmp_path: Path) -> None:
    first = SharedRateLimiter(1.0, 5, tmp_path / "limits")
    second = SharedRateLimiter(1.0, 5, tmp_path / "limits")
    waits = [limiter.retry_after(42) for limiter in (first, second) * 5]
    assert waits[:5] == [0.0] * 5 and all(wait > 0 for wait in waits[5:])
    assert first.retry_after("another caller") == 0.0


def test_a_file_of_an_older_layout_is_upgraded_not_refused(tmp_path: Path) -> None:
    """A catalogue written before profiles had ``listing_count``: opening it rebuilds what finds records."""
    import sqlite3

    path = tmp_path / "catalogue.sqlite3"
    built = generated_catalogue(30, 4)
    store = SQLiteStore(path)
    load(store, built.listings, built.profiles)
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX profiles_by_listing_count")
    db.execute("ALTER TABLE profiles DROP COLUMN listing_count")
    db.execute("UPDATE meta SET value = '5' WHERE key = 'schema'")
    db.commit()
    db.close()
    reopened = SQLiteStore(path)
    try:
        assert reopened.counts() == {"listings": 30, "profiles": len(built.profiles)}
        assert reopened.search_listings(ListingQuery(limit=5)).total == 30
    finally:
        reopened.close()
