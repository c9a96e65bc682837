"""Filters on a unit's number and floor (``floorPlans.units.unitNumber:1203``, ``floorPlans.units.floor:PH``),
answered from the units' rows, never from the stored documents.

``listing_plan_units`` keeps each unit's number and floor whole, as JSON (:func:`~.plans.stored_value`), so that
their type is known: ``"12"`` is text, ``12`` a number, and the evaluator compares each its own way. A catalogue
holds few distinct values of either (a few thousand unit numbers, a few dozen floors), so :class:`UnitValues` keeps,
per field, its distinct values and every (value, listing) pair: a test is run by the reference evaluator
(:mod:`precon.filters`) once per distinct value, and the listings holding a value that passes are the answer. Its
semantics are the evaluator's, by construction; the tests hold it to the evaluator over the documents too.

The pairs are read once per process, at the first such question (a scan of the units' rows, not of documents), and
after a write moved to the new generation by the listings written since (their rows read again, the others kept);
past an eighth of the catalogue written, they are read again whole.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from precon.filters import Compare, Expr, Match, Range, compile_predicate
from precon.service import metrics
from precon.service.search.column_patch import WRITTEN_SINCE, too_many_written, written_since
from precon.service.search.columns import ColumnIndex, IntArray, Mask, catalogue_name
from precon.service.search.plans import joined_numbers, term_codes
from precon.service.search.sql_filter import canonical_path

UNIT_VALUE_COLUMNS: dict[str, str] = {
    "floorPlans.units.unitNumber": "number_value",
    "floorPlans.units.floor": "floor_value",
}
"""The paths answered here, and the column of ``listing_plan_units`` holding each whole."""


def unit_value_column(expr: Expr) -> str | None:
    """The column holding the path ``expr`` tests, where it is one test of a unit's number or floor; else None."""
    if not isinstance(expr, Match | Compare | Range):
        return None
    return UNIT_VALUE_COLUMNS.get(canonical_path(expr.attr))


@dataclass(frozen=True)
class _Pairs:
    """One field's distinct values (by code, decoded) and every (value, listing) pair."""

    codes: npt.NDArray[np.int32]
    owners: IntArray
    """Per pair, the listing's row id."""
    lookup: dict[str, int]
    """The code of each value's JSON text."""
    values: list[Any]
    """Each code's value, decoded."""

    @classmethod
    def of(cls, listing: IntArray, texts: list[str]) -> _Pairs:
        """The pairs of rows (their listing, their value's JSON text)."""
        lookup: dict[str, int] = {}
        values: list[Any] = []
        codes, owners = _pairs(listing, texts, lookup, values)
        return cls(codes, owners, lookup, values)

    def mask(self, expr: Match | Compare | Range, rowids: IntArray) -> Mask:
        """Per listing of ``rowids`` (row ids, ascending), whether it holds a value that passes ``expr``."""
        predicate = compile_predicate(replace(expr, attr="value"))
        passing = np.fromiter((predicate({"value": value}) for value in self.values), np.bool_, len(self.values))
        if not passing.any() or not len(rowids):
            return np.zeros(len(rowids), dtype=np.bool_)
        holders = self.owners[passing[self.codes]]
        # Marked by row id, then read at the index's row ids: no sort of what may be most of the pairs.
        held = np.zeros(max(int(rowids[-1]), int(holders.max(initial=0))) + 1, dtype=np.bool_)
        held[holders] = True
        return held[rowids]

    def moved(self, listing: IntArray, texts: list[str], written: IntArray) -> _Pairs:
        """These pairs without those of the listings ``written`` since, with their rows as they are now (``listing``,
        ``texts``). Nothing held is changed: a search may be reading it."""
        lookup, values = dict(self.lookup), list(self.values)
        codes, owners = _pairs(listing, texts, lookup, values)
        kept = ~np.isin(self.owners, written)
        return _Pairs(
            np.concatenate([self.codes[kept], codes]), np.concatenate([self.owners[kept], owners]), lookup, values
        )


def _pairs(
    listing: IntArray, texts: list[str], lookup: dict[str, int], values: list[Any]
) -> tuple[npt.NDArray[np.int32], IntArray]:
    """The distinct (code, listing) pairs of rows (their listing, their value's JSON text), coding the values
    ``lookup`` lacks (added to it, and decoded to ``values``); rows without a value are left out."""
    known = len(lookup)
    codes = term_codes(texts, lookup)
    values.extend(orjson.loads(text) if text else None for text in list(lookup)[known:])
    held = codes != lookup.get("", -1)
    # One sort of one array, not of pairs: a listing's row id (SQLite's, from 1) takes the low 32 bits. Sorted and
    # its repeats dropped by hand: np.unique takes ten times as long on such keys (numpy 2.4).
    keys = np.sort((codes[held].astype(np.int64) << 32) | listing[held])
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys
    return (keys >> 32).astype(np.int32), keys & 0xFFFFFFFF


@dataclass(frozen=True)
class _Held:
    """One field's pairs as of a generation."""

    generation: int
    pairs: _Pairs


class UnitValues:
    """Per column of :data:`UNIT_VALUE_COLUMNS`, the listings holding each value; kept across searches and moved
    across writes (see the module's docstring)."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()

    def mask(self, db: sqlite3.Connection, index: ColumnIndex, expr: Match | Compare | Range, column: str) -> Mask:
        """Per listing of ``index``, whether one of its units has a value of ``column`` that passes ``expr``."""
        held = self._held.get(column)
        current = self._current(held, db, index, column)
        if current is not held:
            with self._lock:
                kept = self._held.get(column)
                if kept is None or kept.generation <= current.generation:
                    self._held[column] = current
        return current.pairs.mask(expr, index.rowids)

    def _current(self, held: _Held | None, db: sqlite3.Connection, index: ColumnIndex, column: str) -> _Held:
        """``held`` as of ``index``'s generation: as it is, moved by the listings written since, or read whole."""
        if held is not None and held.generation >= index.generation:
            return held  # a search on an older index while a newer one is built: the values it asks of are older
        started = time.perf_counter()
        began = not db.in_transaction
        if began:
            db.execute("BEGIN")  # the written listings and their rows of one snapshot
        try:
            written = None if held is None else written_since(db, held.generation)
            if held is None or written is None or too_many_written(len(written), index.size):
                current, kind = _Held(index.generation, _Pairs.of(*_read(db, column, "", ()))), "whole"
            else:
                listing, texts = _read(db, column, f" WHERE listing IN ({WRITTEN_SINCE})", (held.generation,))
                current, kind = _Held(index.generation, held.pairs.moved(listing, texts, written)), "written"
        finally:
            if began:
                db.execute("COMMIT")
        metrics.unit_values_read(catalogue_name(db), kind, time.perf_counter() - started)
        return current


def _read(db: sqlite3.Connection, column: str, where: str, arguments: tuple[Any, ...]) -> tuple[IntArray, list[str]]:
    """The units' listings and their values' JSON text in ``column`` ('' for none), in one scan of their rows (only
    the field asked: a question on unit numbers does not wait for the floors)."""
    assert column in UNIT_VALUE_COLUMNS.values()  # a name of this module's, never a user's text
    row = db.execute(
        f"SELECT group_concat(listing), group_concat(ifnull({column}, ''), char(31)) FROM listing_plan_units{where}",
        arguments,
    ).fetchone()
    listing = joined_numbers(row[0], np.int64)
    return listing, (row[1] or "").split("\x1f") if len(listing) else []
