"""The filter evaluator's property tests (tests/test_filters.py's expressions), run against the PostgreSQL engine
over records of every odd shape (numbers as text, booleans, nulls, arrays of mixed values where a single value is
indexed, nested floor plans): a filter finds in PostgreSQL exactly what the SQLite store finds, and its negation
the rest. (Over well-formed records both equal :func:`precon.filters.evaluate`: tests/test_pg_store.py.)"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from precon import filters
from precon.service.postgres.store import PostgresCatalogueStore
from precon.service.store import ListingQuery, SQLiteStore
from tests import pg_support
from tests.store_support import every_id
from tests.test_filters import SMALL_EXPRS

pg_cluster = pg_support.pg_cluster

ODD_VALUES: list[Any] = [None, True, False, 0, 5, -5, 2.5, -1.5, "Condo", "condo", "5", "", "true", "-1.5", "5.0"]


def odd_value(rng: random.Random) -> Any:
    if rng.random() < 0.3:
        return [rng.choice(ODD_VALUES) for _ in range(rng.randint(0, 3))]
    return rng.choice(ODD_VALUES)


def odd_records(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for number in range(count):
        record: dict[str, Any] = {"listingId": f"ODD{number:04d}", "name": f"Odd {number}"}
        for name in ("type", "startPrice"):
            if rng.random() < 0.8:
                record[name] = odd_value(rng)
        if rng.random() < 0.8:
            record["floorPlans"] = [
                {k: rng.choice(ODD_VALUES) for k in ("startPrice", "floorPlanType") if rng.random() < 0.8}
                for _ in range(rng.randint(0, 3))
            ]
        records.append(record)
    return records


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return odd_records(400, 13)


@pytest.fixture(scope="module")
def stores(
    pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]
) -> Iterator[tuple[SQLiteStore, PostgresCatalogueStore]]:
    name = pg_cluster.database(pg_support.migrate)
    sqlite = SQLiteStore(Path(tmp_path_factory.mktemp("pg-filters")) / "c.sqlite3", engine="sql")
    postgres = PostgresCatalogueStore(pg_cluster.conninfo(name), migrate=False)
    for store in (sqlite, postgres):
        store.upsert_listings(records)
    try:
        yield sqlite, postgres
    finally:
        sqlite.close()
        postgres.close()
        pg_cluster.drop(name)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=SMALL_EXPRS)
def test_odd_records_filter_alike(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], records: list[dict[str, Any]], expr: filters.Expr
) -> None:
    sqlite, postgres = stores
    found = every_id(postgres, filter=expr)  # type: ignore[arg-type]
    assert found == every_id(sqlite, filter=expr)
    assert postgres.search_listings(ListingQuery(filter=filters.Not(expr), limit=0)).total == len(records) - len(found)
