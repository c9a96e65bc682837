"""(ours) The SQLite store's market columns and unit ledger moved to a new generation by reading again only the
listings written since (:func:`market_patched`, :func:`ledger_patched`), not the whole catalogue and its history.

A listing's columns change when its document, province or history entries do, or when it is deleted: the listings a
write wrote are in ``listing_writes`` (as the column index reads them, :mod:`precon.service.search.column_patch`),
entries since the held columns' last are news of their listings, and a listing deleted since is one the held columns
have as not deleted. Those listings are built on their own (the columns over the held grid's times) and go into the
fresh layer (:mod:`precon.service.stores.market_layers`; combined with the one held by
:mod:`precon.service.stores.market_patch`, :mod:`precon.service.stores.ledger_patch`). Built whole instead: the history
was written again from the start (a replica's snapshot), more than an eighth of the catalogue was written, or (the
columns) a unit's state moved outside the held grid's times (a new month began).
"""

from __future__ import annotations

import sqlite3
import time

from precon.service import metrics
from precon.service.search.columns import catalogue_name
from precon.service.stores.ledger_patch import combined_ledger
from precon.service.stores.market_layers import Layers, patched
from precon.service.stores.market_patch import combined
from precon.service.stores.market_stats import MarketColumns
from precon.service.stores.market_units import UnitLedger
from precon.service.stores.sqlite.market_columns import LAST_ENTRY, OutsideGrid, build_market_columns
from precon.service.stores.sqlite.market_units import build_unit_ledger

_WRITTEN = (
    "SELECT l.listing_id FROM listing_writes w JOIN listings l ON l.id = w.id WHERE w.generation > ?1 "
    "UNION SELECT listing_id FROM listing_history WHERE seq > ?2"
)
_DELETED = "SELECT listing_id FROM deleted_listings WHERE listing_id NOT IN (SELECT listing_id FROM listings)"


def written_since(
    db: sqlite3.Connection, generation: int, held: Layers[MarketColumns] | Layers[UnitLedger]
) -> list[str] | None:
    """The listings (in the order of their ids) whose columns may have changed since ``generation`` and the history
    entry ``held`` holds last, of ``held`` (the columns or the ledger); None: too many to patch, or the history was
    written again."""
    history_seq = held.history_seq
    if int(db.execute(LAST_ENTRY).fetchone()[0]) < history_seq:
        return None
    written = {row[0] for row in db.execute(_WRITTEN, (generation, history_seq))}
    for (listing,) in db.execute(_DELETED):
        if not held.deleted(listing):
            written.add(listing)
    return None if len(written) * 8 > max(held.base_listings, 8) else sorted(written)


def market_patched(
    db: sqlite3.Connection, generation: int, held: Layers[MarketColumns]
) -> Layers[MarketColumns] | None:
    """``held`` (of ``generation``) moved to the generation the caller's read transaction sees; None: it cannot be,
    build it whole."""
    started = time.perf_counter()
    grid = held.base.grid
    if grid is None:
        return None
    written = written_since(db, generation, held)
    if written is None:
        return None
    try:
        fresh = build_market_columns(db, written, grid.times)
    except OutsideGrid:
        return None
    found = patched(held, written, fresh, combined)
    metrics.market_patched(catalogue_name(db), "columns", time.perf_counter() - started)
    return found


def ledger_patched(db: sqlite3.Connection, generation: int, held: Layers[UnitLedger]) -> Layers[UnitLedger] | None:
    """The unit ledger ``held`` (of ``generation``) moved the same way."""
    started = time.perf_counter()
    written = written_since(db, generation, held)
    if written is None:
        return None
    found = patched(held, written, build_unit_ledger(db, written), combined_ledger)
    metrics.market_patched(catalogue_name(db), "ledger", time.perf_counter() - started)
    return found


def whole_market(db: sqlite3.Connection) -> Layers[MarketColumns]:
    """The market columns built whole, as one layer."""
    return Layers(build_market_columns(db))


def whole_ledger(db: sqlite3.Connection) -> Layers[UnitLedger]:
    """The unit ledger built whole, as one layer."""
    return Layers(build_unit_ledger(db))
