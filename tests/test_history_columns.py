"""The catalogue's history read over its columns in memory (stores/sqlite/history_columns.py) answers every
``changes`` question as SQLite's query over the table does, as writes add entries and a copy's history is rebuilt."""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

import pytest

from precon.service import catalogue
from precon.service.stores.history import iso_time
from precon.service.stores.loading import batched
from precon.service.stores.simulation import day_time, simulate
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import HistoryQuery

START = date(2025, 6, 1)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    built = catalogue.generate(120, seed=4)
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
