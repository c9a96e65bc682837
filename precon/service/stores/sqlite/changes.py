"""The SQLite store's ``changes`` feed narrowed by a search: where the column index (which listings match now) and
the history's columns (what changed in them) meet.

A feed narrowed to the listings a ``filterQuery`` matches keeps the entries of those listings and of the deleted
ones whose last document matches. Over the column index that set is a mask by index position; each listing
code of the history's columns is given its index position once per pair of generations (:class:`_Positions`),
so the mask becomes one over the history's listing codes without a listing id written out or looked up (at
50,000 listings, a broad filter names 25,000 of them: 20 ms as strings).
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from precon.service.search.columns import ColumnIndex, IntArray, Mask
from precon.service.stores.sqlite.history import SQLiteHistory
from precon.service.stores.sqlite.history_columns import HistoryColumns
from precon.service.stores.sqlite.reads import SQLiteReads
from precon.service.stores.types import HistoryPage, HistoryQuery, ListingQuery


class _Positions:
    """Per listing code of one history's columns, the listing's position in one column index (-1 where the index
    does not hold it: deleted, or written since)."""

    def __init__(self, index: ColumnIndex, columns: HistoryColumns, names: list[str]) -> None:
        self.index = index
        self.columns = columns
        self.count = len(names)
        self.positions: IntArray = index.listing_ids.codes_of(names)

    def serves(self, index: ColumnIndex, columns: HistoryColumns) -> bool:
        return self.index is index and self.columns is columns


class SQLiteChanges(SQLiteReads, SQLiteHistory):
    """``changes`` narrowed to what a listing search matches."""

    _positions_lock: threading.Lock
    _positions: _Positions | None

    def warm(self, now: bool = False) -> None:
        """The search's indexes (:meth:`SQLiteReads.warm`); the first time, the history's columns too, so that no
        ``changes`` request waits for them (3 s at 2 million entries). Where indexes are shared between processes,
        the floor plans' columns as well: ``precon serve --workers`` warms the data directory in one process before
        the workers start, which builds and writes them once; each worker then maps them. A later generation's are
        built when first asked for, by one process while the others wait for its files."""
        super().warm(now)
        if self._history_held is None:
            with self._reading() as db:
                self._history_columns(db)
        index = self._column_index
        if self._shared is not None and self._plan_index is None and index is not None:
            self._plans(index)

    def changes(self, query: HistoryQuery, matching: ListingQuery | None) -> HistoryPage:
        """A page of the catalogue's entries the query asks for, of the listings ``matching`` (when given) matches
        now and of the deleted ones whose last document it matches."""
        if matching is None:
            return self.listing_history(query)
        page = self._changes_over_columns(query, matching, self._index_to_search())
        if page is not None:
            return page
        listing_ids = (*self.matching_listing_ids(matching), *self.deleted_matching(matching))
        return self.listing_history(replace(query, listing_ids=listing_ids))

    def _changes_over_columns(
        self, query: HistoryQuery, matching: ListingQuery, index: ColumnIndex
    ) -> HistoryPage | None:
        """The page over the column index and the history's columns (None where the history's cannot be read)."""
        mask, _, _ = self._matching(matching, matching.text, index)
        deleted = self.deleted_matching(matching)
        with self._reading() as db:
            columns = self._history_columns(db)
            if columns is None:
                return None
            total, seqs = columns.matching(query, self._wanted_codes(index, columns, mask, deleted))
            return self._entries_page(db, total, seqs)

    def _wanted_codes(
        self, index: ColumnIndex, columns: HistoryColumns, mask: Mask, deleted: list[str]
    ) -> npt.NDArray[np.bool_]:
        """Per listing code of ``columns``, whether the feed keeps its entries: the listing is in ``mask`` (by index
        position), or is one of ``deleted``."""
        with self._positions_lock:
            held = self._positions
            if held is None or not held.serves(index, columns):
                with self._history_lock:  # the codes grow as the history's columns catch up
                    names = list(columns.listings.codes)
                held = self._positions = _Positions(index, columns, names)
        wanted = np.zeros(held.count + 1, dtype=np.bool_)
        known = held.positions >= 0
        wanted[: held.count][known] = mask[held.positions[known]]
        codes = columns.listings.codes
        wanted[[codes[i] for i in deleted if i in codes]] = True
        return wanted
