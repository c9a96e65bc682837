"""Filters on a unit's number and floor (``floorPlans.units.unitNumber:1203``, ``floorPlans.units.floor:PH``),
answered from the units' rows, never from the stored documents.

``listing_plan_units`` keeps each unit's number and floor whole, as JSON (:func:`~.plans.stored_value`), so that
their type is known: ``"12"`` is text, ``12`` a number, and the evaluator compares each its own way. A catalogue
holds few distinct values of either (a few thousand unit numbers, a few dozen floors), so :class:`UnitValues` keeps,
per field, its distinct values and every (value, listing) pair: a test is run by the reference evaluator
(:mod:`precon.filters`) once per distinct value, and the listings holding a value that passes are the answer. Its
semantics are the evaluator's, by construction; the tests hold it to the evaluator over the documents too.

The pairs are read once per process, at the first such question (a scan of the units' rows, not of documents). A
write leaves them as they are: the listings written since are read again into a layer of their own, which stands
for them over the pairs read whole (so a day's updates copy nothing of millions of pairs); past an eighth of the
catalogue written, the pairs are read again whole.
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
    """(value code, listing row id) pairs, distinct."""

    codes: npt.NDArray[np.int32]
    owners: IntArray

    def holders(self, passing: Mask) -> npt.NDArray[np.uint32]:
        """The row ids of the pairs whose value passes (by code)."""
        return self.owners[passing[self.codes]]


@dataclass(frozen=True)
class _Values:
    """One field's values as of a generation: the pairs read whole (``base``), and the listings written since then
    (``written``, row ids, sorted) with their pairs as they are now (``layer``). Values are coded in ``lookup`` (by
    their JSON text) and decoded in ``values`` (by code)."""

    generation: int
    lookup: dict[str, int]
    values: list[Any]
    base: _Pairs
    written: IntArray
    layer: _Pairs

    @classmethod
    def read(cls, generation: int, db: sqlite3.Connection, column: str) -> _Values:
        """Every unit's value of ``column``, read a run of listings at a time: at 50,000 listings the units'
        values are 11 million texts, which read at once would hold some 600 MB as Python strings."""
        lookup: dict[str, int] = {}
        values: list[Any] = []
        parts = [_pairs(*_read(db, column, " WHERE listing BETWEEN ? AND ?", run), lookup, values)
                 for run in _listing_runs(db)]  # fmt: skip
        base = _Pairs(
            np.concatenate([part.codes for part in parts]) if parts else np.empty(0, np.int32),
            np.concatenate([part.owners for part in parts]) if parts else np.empty(0, np.uint32),
        )
        nothing = _Pairs(np.empty(0, np.int32), np.empty(0, np.uint32))
        return cls(generation, lookup, values, base, np.empty(0, np.int64), nothing)

    def mask(self, expr: Match | Compare | Range, rowids: IntArray) -> Mask:
        """Per listing of ``rowids`` (row ids, ascending), whether it holds a value that passes ``expr``."""
        predicate = compile_predicate(replace(expr, attr="value"))
        passing = np.fromiter((predicate({"value": value}) for value in self.values), np.bool_, len(self.values))
        if not len(rowids):
            return np.zeros(0, dtype=np.bool_)
        # Marked by row id, then read at the index's row ids: no sort of what may be most of the pairs.
        highest = max(rowids[-1], self.base.owners.max(initial=0), self.layer.owners.max(initial=0),
                      self.written.max(initial=0))  # fmt: skip
        held = np.zeros(int(highest) + 1, dtype=np.bool_)
        if passing.any():
            held[self.base.holders(passing)] = True
        held[self.written] = False
        held[self.layer.holders(passing)] = True
        return held[rowids]

    def moved(
        self, generation: int, listing: IntArray, texts: list[str], written: IntArray, layered: IntArray
    ) -> _Values:
        """These values with the listings ``written`` since as their rows are now (``listing``, ``texts``) in the
        layer, which then stands for ``layered`` (those and the ones it stood for). Nothing held is changed: a
        search may be reading it."""
        lookup, values = dict(self.lookup), list(self.values)
        fresh = _pairs(listing, texts, lookup, values)
        kept = ~np.isin(self.layer.owners, written)
        layer = _Pairs(np.concatenate([self.layer.codes[kept], fresh.codes]),
                       np.concatenate([self.layer.owners[kept], fresh.owners]))  # fmt: skip
        return _Values(generation, lookup, values, self.base, layered, layer)


def _pairs(listing: IntArray, texts: list[str], lookup: dict[str, int], values: list[Any]) -> _Pairs:
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
    return _Pairs((keys >> 32).astype(np.int32), (keys & 0xFFFFFFFF).astype(np.uint32))


LISTING_RUN = 2000
"""The listings whose units a whole read takes at once."""


def _listing_runs(db: sqlite3.Connection) -> list[tuple[int, int]]:
    """The catalogue's listing row ids in runs of :data:`LISTING_RUN`: (first, last) of each."""
    rowids = [row[0] for row in db.execute("SELECT id FROM listings ORDER BY id")]
    return [(rowids[k], rowids[min(k + LISTING_RUN, len(rowids)) - 1]) for k in range(0, len(rowids), LISTING_RUN)]


class UnitValues:
    """Per column of :data:`UNIT_VALUE_COLUMNS`, the listings holding each value; kept across searches and moved
    across writes (see the module's docstring)."""

    def __init__(self) -> None:
        self._held: dict[str, _Values] = {}
        self._reading = threading.Lock()
        """Held while the values are read: two questions at once read them once (a whole read is seconds at
        50,000 listings)."""

    def mask(self, db: sqlite3.Connection, index: ColumnIndex, expr: Match | Compare | Range, column: str) -> Mask:
        """Per listing of ``index``, whether one of its units has a value of ``column`` that passes ``expr``."""
        current = self._held.get(column)
        if current is None or current.generation < index.generation:
            with self._reading:
                current = self._current(self._held.get(column), db, index, column)
                self._held[column] = current
        return current.mask(expr, index.rowids)

    def _current(self, held: _Values | None, db: sqlite3.Connection, index: ColumnIndex, column: str) -> _Values:
        """``held`` as of ``index``'s generation: as it is (as of a later one: a search on an older index while a
        newer one is built), with the listings written since in its layer, or read whole."""
        if held is not None and held.generation >= index.generation:
            return held
        started = time.perf_counter()
        began = not db.in_transaction
        if began:
            db.execute("BEGIN")  # the written listings and their rows of one snapshot
        try:
            moved = None if held is None else _caught_up(held, db, index, column)
            if moved is not None:
                current, kind = moved, "written"
            else:
                current, kind = _Values.read(index.generation, db, column), "whole"
        finally:
            if began:
                db.execute("COMMIT")
        metrics.unit_values_read(catalogue_name(db), kind, time.perf_counter() - started)
        return current


def _caught_up(held: _Values, db: sqlite3.Connection, index: ColumnIndex, column: str) -> _Values | None:
    """``held`` at ``index``'s generation with the listings written since in its layer; None where the layer would
    then stand for too many listings (the values are read whole)."""
    written = written_since(db, held.generation)
    layered = np.union1d(held.written, written)
    if too_many_written(len(layered), index.size):
        return None
    listing, texts = _read(db, column, f" WHERE listing IN ({WRITTEN_SINCE})", (held.generation,))
    return held.moved(index.generation, listing, texts, written, layered)


def _read(db: sqlite3.Connection, column: str, where: str, arguments: tuple[Any, ...]) -> tuple[IntArray, list[str]]:
    """The units' listings and their values' JSON text in ``column`` ('' for none), of the rows ``where`` picks (only
    the field asked: a question on unit numbers does not wait for the floors)."""
    assert column in UNIT_VALUE_COLUMNS.values()  # a name of this module's, never a user's text
    row = db.execute(
        f"SELECT group_concat(listing), group_concat(ifnull({column}, ''), char(31)) FROM listing_plan_units{where}",
        arguments,
    ).fetchone()
    listing = joined_numbers(row[0], np.int64)
    return listing, (row[1] or "").split("\x1f") if len(listing) else []
