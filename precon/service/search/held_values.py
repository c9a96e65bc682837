"""Filters on paths the column index does not answer (a unit's number or floor, a unit's price matched, a plan's
name, ``photos.tags``, a field of an integrator's own), answered from rows that hold the values, never from the
stored documents.

Two kinds of rows hold them, each value whole as JSON so that its type is known (``"12"`` is text, ``12`` a number,
and the evaluator compares each its own way): ``listing_plan_units`` a unit's number, floor and price
(:data:`UNIT_VALUE_COLUMNS`), ``listing_values`` every other value of a listing the index lacks
(:mod:`~precon.service.search.path_values`). :class:`HeldValues` keeps,
per path, its distinct values and every (value, listing) pair: a test is run by the reference evaluator
(:mod:`precon.filters`) once per distinct value, and the listings holding a value that passes are the answer. Its
semantics are the evaluator's, by construction; the tests hold it to the evaluator over the documents too.

A path's pairs are read once per process, at the first question on it (a scan of that path's rows, not of
documents). A write leaves them as they are: the listings written since are read again into a layer of their own,
which stands for them over the pairs read whole (so a day's updates copy nothing of millions of pairs); past an
eighth of the catalogue written, the pairs are read again whole. Paths of many distinct values (a plan's image
address, a listing's summary) are let go, the least recently asked first, past :data:`BYTES_HELD` held.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from precon.filters import Compare, Expr, Match, Range, value_test
from precon.service import metrics
from precon.service.search.attribute_rows import any_passes
from precon.service.search.column_patch import WRITTEN_SINCE, too_many_written, written_since
from precon.service.search.columns import ColumnIndex, IntArray, Mask, catalogue_name
from precon.service.search.path_values import kept_as_values
from precon.service.search.plans import ODD_UNITS, as_unit_comparison, joined_numbers, term_codes
from precon.service.search.sql_filter import canonical_path

UNIT_VALUE_COLUMNS: dict[str, str] = {
    "floorPlans.units.unitNumber": "number_value",
    "floorPlans.units.floor": "floor_value",
    "floorPlans.units.price": "coalesce(price_value, price)",
}
"""The unit paths answered here, and what of ``listing_plan_units`` holds each: a unit's number and floor whole;
its price whole where it is not a whole number, else the number (a unit's status is the column index's)."""
UNIT_NUMBERS_BESIDE: dict[str, str] = {
    "floorPlans.units.price": "price_value",
    "floorPlans.units.floor": "CASE WHEN floor_value LIKE '[%' THEN floor_value END",
}
"""What a comparison of a unit's price or floor needs beside the floor plans' index, which holds one numeric
reading per unit: the values it cannot hold, a list's elements (each a value to the evaluator), kept whole in the
units' rows (a price that is not a whole number is kept whole too; the index reads it the same)."""
ODD_UNITS_ONLY = frozenset(UNIT_NUMBERS_BESIDE.values())
"""The columns only the units :data:`~.plans.ODD_UNITS` picks hold a value in: read through those units' index."""
ALWAYS_HELD = frozenset({"floorPlans.units.unitNumber", "floorPlans.units.floor"})
"""The paths whose values are held whatever the budget."""
BYTES_HELD = 96 * 1024 * 1024
"""About the most the values of other paths hold at once: past it the least recently asked such path is let go
(read again when asked again). The path just asked is always held (one path of more, a plan's image addresses or
the units' prices at 50,000 listings, is held alone)."""


AT_ONCE_VALUES = 20_000
"""The most distinct values a question tests on the event loop (the evaluator once each: some 10 ms)."""
AT_ONCE_PAIRS = 2_000_000
"""The most (value, listing) pairs a question marks on the event loop (some 5 ms): a plan's name at 50,000
listings (450,000), the units' numbers at 2,500 (550,000); not at 20,000 (4.5 million)."""


@dataclass(frozen=True)
class ValueSource:
    """Where one path's values are read: a column of ``listing_plan_units`` (``column``), else ``listing_values``."""

    path: str
    column: str | None

    def read(self, db: sqlite3.Connection, where: str, arguments: tuple[Any, ...]) -> tuple[IntArray, list[str]]:
        """The listings and their values' JSON text ('' for none) of the rows ``where`` picks (a condition on
        ``listing``): only this path's (a question on unit numbers does not wait for the floors)."""
        if self.column is None:
            sql = ("SELECT group_concat(listing), group_concat(value, char(31)) FROM listing_values "
                   f"WHERE path = (SELECT code FROM value_paths WHERE path = ?) AND {where}")  # fmt: skip
            row = db.execute(sql, (self.path, *arguments)).fetchone()
        else:
            # One of this module's expressions, never a user's text.
            assert self.column in UNIT_VALUE_COLUMNS.values() or self.column in UNIT_NUMBERS_BESIDE.values()
            odd = f"({ODD_UNITS}) AND " if self.column in ODD_UNITS_ONLY else ""
            row = db.execute(
                f"SELECT group_concat(listing), group_concat(ifnull({self.column}, ''), char(31)) "
                f"FROM listing_plan_units WHERE {odd}{where}",
                arguments,
            ).fetchone()
        listing = joined_numbers(row[0], np.int64)
        return listing, (row[1] or "").split("\x1f") if len(listing) else []


def value_source(expr: Expr) -> ValueSource | None:
    """Where the values ``expr`` tests are held, where it is one test of a path that rows hold; else None."""
    if not isinstance(expr, Match | Compare | Range):
        return None
    path = canonical_path(expr.attr)
    column = UNIT_VALUE_COLUMNS.get(path)
    if column is not None:
        return ValueSource(path, column)
    return ValueSource(path, None) if kept_as_values(path) else None


def answered_by(test: Expr) -> tuple[Compare | Range | None, ValueSource]:
    """What answers a test the column index leaves to its fallback: a unit's price or floor compared, the floor
    plans' index (the test as a unit test) and the values it cannot hold (:data:`UNIT_NUMBERS_BESIDE`); any other
    test, the values rows hold of its path alone (None and :func:`value_source`)."""
    unit_test = as_unit_comparison(test)
    if unit_test is not None:
        assert isinstance(test, Compare | Range)
        return unit_test, ValueSource(test.attr, UNIT_NUMBERS_BESIDE[test.attr])
    source = value_source(test)
    if source is None:  # left_to_fallback leaves no other test: every path is the index's or rows'
        raise AssertionError(f"no index or rows answer {test!r}")
    return None, source


@dataclass(frozen=True)
class _Pairs:
    """(value code, listing row id) pairs, distinct."""

    codes: npt.NDArray[np.int32]
    owners: IntArray

    def holders(self, passing: Mask) -> npt.NDArray[np.uint32]:
        """The row ids of the pairs whose value passes (by code)."""
        return self.owners[passing[self.codes]] if passing.any() else self.owners[:0]


@dataclass(frozen=True)
class _Values:
    """One path's values as of a generation: the pairs read whole (``base``, coding ``base_values``), and the
    listings written since then (``written``, row ids, sorted) with their pairs as they are now (``layer``, coding
    ``layer_values``, coded by their JSON text in ``layer_lookup``). The base keeps its values decoded only (its
    lookup, a second copy of every value as text, is let go once read): the layer codes its own."""

    generation: int
    base_values: list[Any]
    base: _Pairs
    size: int
    """What the base holds, in bytes, about (its values' text and objects, its pairs)."""
    written: IntArray
    layer_lookup: dict[str, int]
    layer_values: list[Any]
    layer: _Pairs

    @classmethod
    def read(cls, generation: int, db: sqlite3.Connection, source: ValueSource) -> _Values:
        """Every value of ``source``'s path, read a run of listings at a time: at 50,000 listings the units'
        values are 11 million texts, which read at once would hold some 600 MB as Python strings."""
        lookup: dict[str, int] = {}
        values: list[Any] = []
        parts = [_pairs(*source.read(db, "listing BETWEEN ? AND ?", run), lookup, values)
                 for run in _listing_runs(db)]  # fmt: skip
        base = _Pairs(
            np.concatenate([part.codes for part in parts]) if parts else np.empty(0, np.int32),
            np.concatenate([part.owners for part in parts]) if parts else np.empty(0, np.uint32),
        )
        size = sum(map(len, lookup)) + VALUE_OVERHEAD * len(values) + 8 * len(base.codes)
        return cls(generation, values, base, size, np.empty(0, np.int64), {}, [], _NO_PAIRS)

    def mask(self, expr: Match | Compare | Range, rowids: IntArray) -> Mask:
        """Per listing of ``rowids`` (row ids, ascending), whether it holds a value that passes ``expr``."""
        if not len(rowids):
            return np.zeros(0, dtype=np.bool_)
        test = value_test(expr)
        # Marked by row id, then read at the index's row ids: no sort of what may be most of the pairs.
        highest = max(rowids[-1], self.base.owners.max(initial=0), self.layer.owners.max(initial=0),
                      self.written.max(initial=0))  # fmt: skip
        held = np.zeros(int(highest) + 1, dtype=np.bool_)
        held[self.base.holders(_passing(test, self.base_values))] = True
        held[self.written] = False
        held[self.layer.holders(_passing(test, self.layer_values))] = True
        return held[rowids]

    def moved(
        self, generation: int, listing: IntArray, texts: list[str], written: IntArray, layered: IntArray
    ) -> _Values:
        """These values with the listings ``written`` since as their rows are now (``listing``, ``texts``) in the
        layer, which then stands for ``layered`` (those and the ones it stood for). Nothing held is changed: a
        search may be reading it."""
        lookup, values = dict(self.layer_lookup), list(self.layer_values)
        fresh = _pairs(listing, texts, lookup, values)
        kept = ~np.isin(self.layer.owners, written)
        layer = _Pairs(np.concatenate([self.layer.codes[kept], fresh.codes]),
                       np.concatenate([self.layer.owners[kept], fresh.owners]))  # fmt: skip
        return replace(self, generation=generation, written=layered, layer_lookup=lookup, layer_values=values,
                       layer=layer)  # fmt: skip


VALUE_OVERHEAD = 120
"""Bytes a value held costs beside its text, about: its Python object and its place in the list."""
_NO_PAIRS = _Pairs(np.empty(0, np.int32), np.empty(0, np.uint32))


def _passing(test: Callable[[Any], bool], values: list[Any]) -> Mask:
    """Per value (by code), whether the evaluator's ``test`` of one value holds of it (a list, held whole for a
    unit's number, passes where an element does, as over a record)."""
    return np.fromiter((any_passes(test, value) for value in values), np.bool_, len(values))


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


class HeldValues:
    """Per path that rows hold (:func:`value_source`), the listings holding each value; kept across searches and
    moved across writes (see the module's docstring)."""

    def __init__(self, most: int = BYTES_HELD) -> None:
        self._held: OrderedDict[ValueSource, _Values] = OrderedDict()
        self._most = most
        self._reading = threading.Lock()
        """Held while values are read: two questions at once read them once (a whole read is seconds at 50,000
        listings)."""
        self._order = threading.Lock()
        """Held while the paths held are reordered or let go (a moment), which searches on other threads do."""

    def mask(
        self, db: sqlite3.Connection, index: ColumnIndex, expr: Match | Compare | Range, source: ValueSource
    ) -> Mask:
        """Per listing of ``index``, whether it holds a value at ``source``'s path that passes ``expr``."""
        current = self._held.get(source)
        if current is None or current.generation < index.generation:
            with self._reading:
                current = self._current(self._held.get(source), db, index, source)
                self._keep(source, current)
        else:
            with self._order:
                if source in self._held:
                    self._held.move_to_end(source)  # the least recently asked are let go first
        return current.mask(expr, index.rowids)

    def answers_at_once(self, source: ValueSource, generation: int) -> bool:
        """Whether a question on ``source``'s values is answered in a few milliseconds as of ``generation``: they
        are held (nothing to read), and few enough (:data:`AT_ONCE_VALUES`, :data:`AT_ONCE_PAIRS`) that testing
        each and marking their listings is quick; such a search may run on the event loop."""
        held = self._held.get(source)
        return (
            held is not None
            and held.generation >= generation
            and len(held.base_values) + len(held.layer_values) <= AT_ONCE_VALUES
            and len(held.base.codes) + len(held.layer.codes) <= AT_ONCE_PAIRS
        )

    def _keep(self, source: ValueSource, current: _Values) -> None:
        """``current`` held; unless it is always held, the least recently asked others let go past the budget."""
        with self._order:
            self._held[source] = current
            self._held.move_to_end(source)
            if source.path in ALWAYS_HELD:
                return
            held = sum(values.size for key, values in self._held.items() if key.path not in ALWAYS_HELD)
            for key in [key for key in self._held if key.path not in ALWAYS_HELD and key != source]:
                if held <= self._most:
                    break
                held -= self._held.pop(key).size

    def _current(
        self, held: _Values | None, db: sqlite3.Connection, index: ColumnIndex, source: ValueSource
    ) -> _Values:
        """``held`` as of ``index``'s generation: as it is (as of a later one: a search on an older index while a
        newer one is built), with the listings written since in its layer, or read whole."""
        if held is not None and held.generation >= index.generation:
            return held
        started = time.perf_counter()
        began = not db.in_transaction
        if began:
            db.execute("BEGIN")  # the written listings and their rows of one snapshot
        try:
            moved = None if held is None else _caught_up(held, db, index, source)
            if moved is not None:
                current, kind = moved, "written"
            else:
                current, kind = _Values.read(index.generation, db, source), "whole"
        finally:
            if began:
                db.execute("COMMIT")
        where = "listings" if source.column is None else "units"
        metrics.held_values_read(catalogue_name(db), kind, where, time.perf_counter() - started)
        return current


def _caught_up(held: _Values, db: sqlite3.Connection, index: ColumnIndex, source: ValueSource) -> _Values | None:
    """``held`` at ``index``'s generation with the listings written since in its layer; None where the layer would
    then stand for too many listings (the values are read whole)."""
    written = written_since(db, held.generation)
    layered = np.union1d(held.written, written)
    if too_many_written(len(layered), index.size):
        return None
    listing, texts = source.read(db, f"listing IN ({WRITTEN_SINCE})", (held.generation,))
    return held.moved(index.generation, listing, texts, written, layered)
