"""Both search engines of one SQLite store, over the same records, for tests that hold them to an oracle."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from precon.service.runtime import load
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery


@contextmanager
def both_engines(
    path: Path, records: list[dict[str, Any]], profiles: list[dict[str, Any]]
) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """The column engine and the SQL engine over one catalogue file holding ``records`` and ``profiles``."""
    columns = SQLiteStore(path)
    load(columns, records, profiles)
    sql = SQLiteStore(path, engine="sql")
    try:
        yield columns, sql
    finally:
        columns.close()
        sql.close()


def every_id(store: SQLiteStore, **query: Any) -> list[str]:
    """The ids of every listing a query matches, in the store's order."""
    hits = store.search_listings(ListingQuery(limit=10_000, **query))
    assert hits.total == len(hits.documents)
    return [d["listingId"] for d in hits.documents]
