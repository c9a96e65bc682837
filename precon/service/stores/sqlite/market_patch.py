"""(ours) The SQLite store's market columns moved to a new generation by reading again only the listings written
since (:func:`market_patched`), not the whole catalogue and its history.

A listing's columns change when its document, province or history entries do, or when it is deleted: the listings a
write wrote are in ``listing_writes`` (as the column index reads them, :mod:`precon.service.search.column_patch`),
entries since the held columns' last are news of their listings, and a listing deleted since is one the held columns
have as not deleted. Those listings' columns are built on their own over the held grid's times and put in
(:func:`precon.service.stores.market_patch.combined`). Built whole instead: a unit's state moved outside the held
grid's times (a new month began), the history was written again from the start (a replica's snapshot), or more than
an eighth of the catalogue was written.
"""

from __future__ import annotations

import sqlite3
import time

from precon.service import metrics
from precon.service.search.columns import catalogue_name
from precon.service.stores.market_patch import combined
from precon.service.stores.market_stats import MarketColumns
from precon.service.stores.sqlite.market_columns import LAST_ENTRY, OutsideGrid, build_market_columns

_WRITTEN = (
    "SELECT l.listing_id FROM listing_writes w JOIN listings l ON l.id = w.id WHERE w.generation > ?1 "
    "UNION SELECT listing_id FROM listing_history WHERE seq > ?2"
)
_DELETED = "SELECT listing_id FROM deleted_listings WHERE listing_id NOT IN (SELECT listing_id FROM listings)"


def market_patched(db: sqlite3.Connection, generation: int, held: MarketColumns) -> MarketColumns | None:
    """``held`` (of ``generation``) moved to the generation the caller's read transaction sees; None: it cannot be,
    build it whole."""
    if held.grid is None or int(db.execute(LAST_ENTRY).fetchone()[0]) < held.history_seq:
        return None
    started = time.perf_counter()
    written = {row[0] for row in db.execute(_WRITTEN, (generation, held.history_seq))}
    codes, deleted = held.listing_codes, held.listing_deleted
    for (listing,) in db.execute(_DELETED):
        code = codes.get(listing)
        if code is None or not deleted[code]:
            written.add(listing)
    if len(written) * 8 > max(len(codes), 8):
        return None
    try:
        fresh = build_market_columns(db, sorted(written), held.grid.times)
    except OutsideGrid:
        return None
    found = combined(held, sorted(written), fresh)
    metrics.market_columns_patched(catalogue_name(db), time.perf_counter() - started)
    return found
