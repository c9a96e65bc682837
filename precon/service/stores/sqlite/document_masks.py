"""Filter tests that no index or rows answer, answered from the stored documents, listing by listing, once.

The column index holds every attribute listings are searched, sorted and counted by (:mod:`precon.schema`), the
floor plans' index their units' prices and floors, and rows every other path's values
(:mod:`~precon.service.search.held_values`); what is left is a unit's price matched as text, and a unit's status or
a text attribute compared as a number (``ceilingHeights > 9``). Such a test is answered by the reference evaluator
(:mod:`precon.filters`) over stored documents, and :class:`DocumentMasks` keeps what it decided, per expression and
listing:

- only the listings still in question are read: those the province and an AND's indexed tests leave (``among``);
  a second page, or a narrower question, reads only the listings not decided yet;
- a write does not throw the answers away: the listings written since (SQLite's ``listing_writes``, as the
  column index's patch reads them) are decided again, the others keep their answers; a listing deleted drops out
  (it is no longer in the index). Past an eighth of the catalogue written, the answers start again.

So an odd filter costs a read of the documents it needs the first time, and after a day's updates a read of the
day's listings, not of the catalogue.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from precon.filters import Expr, compile_predicate
from precon.service import metrics
from precon.service.collector import collector_paused
from precon.service.search.column_patch import too_many_written, written_since
from precon.service.search.columns import ColumnIndex, IntArray, Mask, catalogue_name
from precon.service.stores.records import decode_document

EXPRESSIONS_HELD = 64
"""The expressions whose answers are kept (each at most two arrays of 8 bytes per listing)."""
READ_BATCH = 500
"""The most documents read in one statement."""
WHOLE_SHARE = 0.75
"""Where more than three quarters of the listings are undecided, every document is read in one scan (testing a
document costs some twenty times finding it by its row id)."""


@dataclass(frozen=True)
class _Decided:
    """What is known of one expression as of a generation: the listings decided and those matching (row ids,
    sorted)."""

    generation: int
    decided: IntArray
    matched: IntArray


_NOTHING = np.empty(0, dtype=np.int64)


class DocumentMasks:
    """Per expression, which listings' documents satisfy it, kept across searches and carried across writes."""

    def __init__(self, held: int = EXPRESSIONS_HELD) -> None:
        self._held: OrderedDict[Expr, _Decided] = OrderedDict()
        self._most = held
        self._lock = threading.Lock()

    def mask(self, db: sqlite3.Connection, index: ColumnIndex, expr: Expr, among: Mask | None = None) -> Mask:
        """Per listing of ``index``, whether its document satisfies ``expr``: exact for the listings of ``among``
        (every listing when None); outside it, what is known (the caller keeps only ``among``'s)."""
        with self._lock:
            held = self._held.get(expr)
        decided, matched = self._carried(held, db, index)
        wanted = index.rowids if among is None else index.rowids[among]
        undecided = np.setdiff1d(wanted, decided, assume_unique=True)
        if len(undecided):
            started = time.perf_counter()
            whole = len(undecided) > WHOLE_SHARE * index.size
            found = matching_documents(db, expr, None if whole else undecided)
            if whole:
                decided, matched = index.rowids, np.intersect1d(found, index.rowids, assume_unique=True)
            else:
                decided, matched = np.union1d(decided, undecided), np.union1d(matched, found)
            metrics.documents_filtered(catalogue_name(db), len(index.rowids) if whole else len(undecided),
                                       time.perf_counter() - started)  # fmt: skip
        self._keep(expr, _Decided(index.generation, decided, matched))
        result = index.none()
        result[index.positions_of_rowids(matched)] = True
        return result

    def _carried(self, held: _Decided | None, db: sqlite3.Connection, index: ColumnIndex) -> tuple[IntArray, IntArray]:
        """What ``held`` knows that still holds at ``index``'s generation: all of it at the same generation; at a
        later one, all but the listings written since (none past an eighth of the catalogue written, or for an
        older generation than held: a search on the index before, while a new one is built)."""
        if held is None or held.generation > index.generation:
            return _NOTHING, _NOTHING
        if held.generation == index.generation:
            return held.decided, held.matched
        written = written_since(db, held.generation)
        if too_many_written(len(written), index.size):
            return _NOTHING, _NOTHING
        return np.setdiff1d(held.decided, written, assume_unique=True), np.setdiff1d(held.matched, written, True)

    def _keep(self, expr: Expr, decided: _Decided) -> None:
        with self._lock:
            held = self._held.get(expr)
            if held is not None and held.generation > decided.generation:
                return  # a search on an older index: the newer answers stay
            self._held[expr] = decided
            self._held.move_to_end(expr)
            while len(self._held) > self._most:
                self._held.popitem(last=False)


def matching_documents(db: sqlite3.Connection, expr: Expr, rowids: IntArray | None) -> IntArray:
    """The row ids (sorted) of the listings among ``rowids`` (every listing when None) whose stored document
    satisfies ``expr``, by the reference evaluator."""
    predicate = compile_predicate(expr)
    found: list[int] = []
    with collector_paused():
        for rowid, blob in _documents(db, rowids):
            if predicate(decode_document(blob)):
                found.append(rowid)
    result = np.array(found, dtype=np.int64)
    result.sort()
    return result


def _documents(db: sqlite3.Connection, rowids: IntArray | None) -> Iterator[tuple[int, bytes]]:
    if rowids is None:
        yield from db.execute("SELECT id, doc FROM listing_docs")
        return
    for start in range(0, len(rowids), READ_BATCH):
        chunk = rowids[start : start + READ_BATCH].tolist()
        yield from db.execute(f"SELECT id, doc FROM listing_docs WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
