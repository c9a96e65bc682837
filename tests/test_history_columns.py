"""The catalogue's history read over its columns in memory (stores/sqlite/history_columns.py) answers every
``changes`` question as SQLite's query over the table does, as writes add entries and a copy's history is rebuilt."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from precon import filters
from precon.service.stores.history import iso_time
from precon.service.stores.loading import batched
from precon.service.stores.simulation import day_time, simulate
from precon.service.stores.sqlite import history_columns
from precon.service.stores.sqlite.history_columns import HistoryColumns
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import HistoryQuery, ListingQuery
from tests.catalogues import generated_catalogue

START = date(2025, 6, 1)
ENTRY = "at, listing_id, province, scope, plan, unit, field, change, from_value, to_value"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    built = generated_catalogue(120, seed=4)
    store = SQLiteStore(tmp_path_factory.mktemp("columns") / "c.sqlite3")
    store.upsert_profiles(built.profiles)
    for batch in batched(built.listings):
        store.upsert_listings(batch, at=day_time(START))
    simulate(store, 60, seed=1)
    for listing in built.listings[:3]:
        store.delete_listing(listing["listingId"], at=day_time(START + timedelta(days=61)))
    return store


def random_query(rng: random.Random, ids: list[str]) -> HistoryQuery:
    day = START + timedelta(days=rng.randint(-5, 70))
    return HistoryQuery(
        scopes=tuple(rng.sample(["listing", "floorPlan", "unit"], rng.randint(0, 2))),
        fields=tuple(rng.sample(["status", "price", "startPrice", "sellingStatus", "name"], rng.randint(0, 2))),
        records=rng.random() < 0.5,
        since=iso_time(day_time(day)) if rng.random() < 0.7 else None,
        until=iso_time(day_time(day + timedelta(days=rng.randint(0, 30)))) if rng.random() < 0.4 else None,
        changes=tuple(rng.sample(["created", "updated", "deleted"], rng.randint(0, 2))),
        listing_ids=tuple(rng.sample(ids, rng.randint(0, 40))) if rng.random() < 0.6 else None,
        provinces=tuple(rng.sample(["on", "bc", "qc", "ab"], rng.randint(1, 3))) if rng.random() < 0.3 else None,
        offset=rng.choice([0, 0, 5, 40]),
        limit=rng.choice([1, 20, 100]),
    )


def test_the_columns_answer_as_sql_does(store: SQLiteStore) -> None:
    ids = [row[0] for row in store._db().execute("SELECT DISTINCT listing_id FROM listing_history")]
    rng = random.Random(7)
    for _ in range(300):
        query = random_query(rng, ids)
        columns, sql = store._catalogue_history(query), store._sql_history(query)
        assert columns is not None
        assert (columns.total, columns.entries) == (sql.total, sql.entries), query


FILTERS = (
    None,
    "state:Ontario",
    'sellingStatus:"Selling Now"',
    "startPrice < 700000",
    "state:Ontario OR state:Quebec",
    'NOT sellingStatus:"Selling Now" AND startPrice > 400000',
    "startPrice > 99999999",
)


def test_a_feed_narrowed_by_a_search_keeps_the_entries_of_the_ids_it_matches(store: SQLiteStore) -> None:
    """The column index's mask given to the history's columns by listing code answers as the ids written out did
    (those the search matches now, and the deleted ones whose last document it matches)."""
    ids = [row[0] for row in store._db().execute("SELECT DISTINCT listing_id FROM listing_history")]
    rng = random.Random(11)
    for _ in range(120):
        text = rng.choice(FILTERS)
        matching = ListingQuery(filter=None if text is None else filters.parse(text), limit=0)
        query = replace(random_query(rng, ids), listing_ids=None)
        named = (*store.matching_listing_ids(matching), *store.deleted_matching(matching))
        expected = store._sql_history(replace(query, listing_ids=named))
        found = store.changes(query, matching)
        assert (found.total, found.entries) == (expected.total, expected.entries), (text, query)
    assert store.changes(HistoryQuery(), None) == store.listing_history(HistoryQuery())


def test_a_history_whose_times_go_back_is_read_whole(store: SQLiteStore, tmp_path: Path) -> None:
    rows = [
        (iso_time(day_time(START + timedelta(days=k * 7 % 40))), *row[1:])  # times going back and forth
        for k, row in enumerate(store._db().execute(f"SELECT {ENTRY} FROM listing_history LIMIT 200"))
    ]
    copy = SQLiteStore(tmp_path / "copy.sqlite3")
    copy.copy_history(rows)
    ids = list({row[1] for row in rows})
    rng = random.Random(3)
    for _ in range(150):
        query = random_query(rng, ids)
        columns, sql = copy._catalogue_history(query), copy._sql_history(query)
        assert columns is not None
        assert (columns.total, columns.entries) == (sql.total, sql.entries), query
    held = copy._history_held
    assert held is not None and not held[1].ascending


def test_the_columns_follow_writes_and_a_history_read_again(store: SQLiteStore, tmp_path: Path) -> None:
    query = HistoryQuery(limit=5)
    before = store._catalogue_history(query)
    simulate(store, 10, seed=2)
    after = store._catalogue_history(query)
    assert after is not None and before is not None
    assert after.total > before.total and after.entries == store._sql_history(query).entries
    # A history emptied and written again (a replica's copy rebuilt): its seqs start over, the columns are read anew.
    db = store._db()
    rows = db.execute("SELECT at, listing_id, province, scope, plan, unit, field, change, from_value, to_value "
                      "FROM listing_history ORDER BY seq LIMIT 50").fetchall()  # fmt: skip
    with store._transaction() as db:
        db.execute("DELETE FROM listing_history")
        store._bump_generation(db)
    store.copy_history(rows)
    again = store._catalogue_history(HistoryQuery(limit=100))
    assert again is not None and again.total == 50 == store._sql_history(HistoryQuery(limit=100)).total


def test_the_history_is_read_a_chunk_at_a_time(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = HistoryColumns().caught_up(store._db())
    monkeypatch.setattr(history_columns, "CHUNK", 37)
    chunked = HistoryColumns().caught_up(store._db())
    assert whole is not None and chunked is not None and chunked.count == whole.count > 37
    for name in ("seq", "at", "listing", "scope", "change", "field_code", "province"):
        assert np.array_equal(getattr(chunked, name), getattr(whole, name)), name


def test_processes_sharing_a_data_directory_map_one_copy_of_the_history(store: SQLiteStore, tmp_path: Path) -> None:
    """Warmed where indexes are shared, the history's columns are read by one store and mapped by the others,
    which append the entries written since each on its own."""
    path = tmp_path / "shared.sqlite3"
    copy = SQLiteStore(path)
    copy.upsert_listings(store.get_listings(store.listing_ids()[:30], None).values())
    copy.copy_history(store._db().execute(f"SELECT {ENTRY} FROM listing_history ORDER BY seq").fetchall())
    first, second = SQLiteStore(path, shared_indexes=True), SQLiteStore(path, shared_indexes=True)
    try:
        first.warm()
        second.warm()
        held = second._history_held
        assert held is not None and not held[1].at.flags.writeable  # mapped from the files the first wrote
        assert len([p for p in path.with_name("shared.sqlite3.index").iterdir() if p.name.startswith("history-")]) == 1
        copy.delete_listing(store.listing_ids()[0])
        query = HistoryQuery(limit=30)
        for reader in (first, second):
            found = reader._catalogue_history(query)
            assert found is not None and (found.total, found.entries[0]["change"]) == (
                copy._sql_history(query).total,
                "deleted",
            )
    finally:
        for opened in (copy, first, second):
            opened.close()
