"""(ours) The SQLite store's :class:`~precon.service.stores.market_units.UnitLedger`: every unit of its listings (and
of its deleted listings as they last were) as a row, with its plan's fields and its entries, read in one pass over
the documents and ``listing_history`` (the market columns' pass, :mod:`.market_columns`), when a ``market_stats``
request first names a ``unitFilter`` in a generation.

Units and plans are known by their keys, as history knows them (:mod:`precon.record_keys`), so that an entry finds
its unit; a unit's entries that no unit of the document holds any more (a unit removed) still count, with its plan
where the plan is still there.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import sqlite3
from array import array
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from precon.filters.plans import number_of
from precon.record_keys import plans_by_key, units_by_key
from precon.service.search.plans import PLAN_FIELDS
from precon.service.stores import market_layers, market_units
from precon.service.stores.market_stats import ALWAYS, CUT, INCREASE, NEVER, SOLD_EVENT
from precon.service.stores.market_units import UnitLedger, value_key
from precon.service.stores.sqlite import market_columns
from precon.service.stores.sqlite.market_columns import (
    LAST_ENTRY,
    documents_with_entries,
    json_value,
    loose_number,
    milliseconds,
    typed_price,
)

PLAN_KEPT = (*PLAN_FIELDS, "planCategory")
"""A plan's fields a unit filter or a group tests: what the ledger keeps of it."""
SOLD = "Sold"
LEDGER_VERSION = hashlib.blake2b(
    b"".join(Path(module.__file__ or "").read_bytes() for module in (market_units, market_layers, market_columns))
    + Path(__file__).read_bytes(),
    digest_size=6,
).hexdigest()
"""Names ledgers written to be shared by this code: those other code wrote are built again."""

UnitEntry = tuple[int, bool, Any, Any]
"""A unit's status or price entry: its time, whether of the price, its ``from`` and ``to`` (as written)."""


class _Listing:
    """What one listing's entries say: when it, its plans and units were created, when it was deleted, and each
    unit's status and price entries, by (plan, unit)."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.created: list[int] = []
        self.deleted: int | None = None
        self.plan_created: dict[str, int] = {}
        self.unit_created: dict[tuple[str, str], int] = {}
        self.moves: dict[tuple[str, str], list[UnitEntry]] = defaultdict(list)
        moments = milliseconds([row[0] for row in rows]).tolist() if rows else []
        for moment, (_, _, scope, plan, unit, name, change, before, after) in zip(moments, rows, strict=True):
            if scope == "unit":
                if change == "created":
                    self.unit_created[(plan, unit)] = moment
                else:
                    self.moves[(plan, unit)].append((moment, name == "price", json_value(before), json_value(after)))
            elif scope == "floorPlan":
                self.plan_created[plan] = moment
            elif change == "created":
                self.created.append(moment)
            elif change == "deleted":
                self.deleted = moment


class _Columns:
    """Machine numbers gathered row by row (a Python object each would be many times the size)."""

    def __init__(self, kinds: str) -> None:
        self.columns = [array(kind) for kind in kinds]

    def add(self, *values: Any) -> None:
        for column, value in zip(self.columns, values, strict=True):
            column.append(value)

    def extend(self, *values: list[Any]) -> None:
        """Many rows at once, given column by column."""
        for column, some in zip(self.columns, values, strict=True):
            column.extend(some)

    def __len__(self) -> int:
        return len(self.columns[0])

    def arrays(self, *dtypes: Any) -> list[np.ndarray[Any, Any]]:
        return [np.frombuffer(column, dtype).copy() for column, dtype in zip(self.columns, dtypes, strict=True)]


class _LedgerBuilder:
    def __init__(self) -> None:
        self.ledger = UnitLedger()
        self.statuses: dict[str, int] = {}
        self.gone: list[int] = []
        self.deleted: list[bool] = []
        self.plan_codes: dict[str, array[int]] = {name: array("i") for name in PLAN_KEPT}
        self.field_values: dict[str, dict[bytes, tuple[int, Any]]] = {name: {} for name in PLAN_KEPT}
        self.plan_sqft = array("d")
        self.firsts: list[list[int]] = [[0], [0], [0]]  # plans, units, events
        # plan, floor, status, price, whether the price is text, born
        self.units = _Columns("idhdbq")
        self.status_rows = _Columns("qqd")  # unit, at, from
        self.price_rows = _Columns("qqdd")  # unit, at, from (a filter's reading), from (a number)
        self.events = _Columns("qbidhd")  # at, kind, plan, floor, status before, price before

    def status_code(self, value: Any) -> int:
        if not isinstance(value, str):
            return -1
        return self.statuses.setdefault(value, len(self.statuses))

    def add(self, listing: str, province: str | None, doc: dict[str, Any], deleted: bool, told: _Listing) -> None:
        self.ledger.listing_codes[listing] = len(self.ledger.listing_ids)
        self.ledger.listing_ids.append(listing)
        self.ledger.listing_provinces.append(province)
        self.gone.append(told.deleted if deleted and told.deleted is not None else NEVER)
        self.deleted.append(deleted)
        listing_born = max(told.created, default=ALWAYS)
        plan_rows: dict[str, int] = {}
        told_of: dict[str, set[str]] = defaultdict(set)
        for plan_key, unit_key in itertools.chain(told.unit_created, told.moves):
            told_of[plan_key].add(unit_key)
        for plan_key, plan in plans_by_key(doc).items():
            row = plan_rows[plan_key] = len(self.plan_sqft)
            self._plan_fields(plan)
            sqft = loose_number(plan.get("squareFeet"))
            self.plan_sqft.append(sqft if sqft > 0 else math.nan)
            plan_born = max(listing_born, told.plan_created.get(plan_key, ALWAYS))
            units = units_by_key(plan)
            first = len(self.units)
            if not self._plan_units(row, list(units.values()), plan_born):
                for unit_key, unit in units.items():
                    created = told.unit_created.get((plan_key, unit_key), ALWAYS)
                    self._unit(row, unit, max(plan_born, created), told.moves.pop((plan_key, unit_key), []))
            elif plan_key in told_of:
                self._told_units(row, first, plan_key, units, plan_born, told, told_of[plan_key])
        for (plan_key, _), entries in told.moves.items():  # units no longer in the listing
            self._events(plan_rows.get(plan_key, -1), math.nan, -1, math.nan, entries)
        for first, size in zip(self.firsts, (len(self.plan_sqft), len(self.units), len(self.events)), strict=True):
            first.append(size)

    def _plan_fields(self, plan: dict[str, Any]) -> None:
        """The codes of the plan's values of the fields kept (a value is told from another by its JSON: ``2`` and
        ``2.0`` and ``"2"`` are three)."""
        for name, codes in self.plan_codes.items():
            if name not in plan:
                codes.append(-1)
                continue
            value = plan[name]
            known = self.field_values[name]
            key = value_key(value)
            held = known.get(key)
            if held is None:
                held = known[key] = (len(known), value)
            codes.append(held[0])

    def _plan_units(self, plan: int, units: list[Mapping[str, Any]], born: int) -> bool:
        """Adds a plan's units as they are now, born with their plan, column by column: what :meth:`_unit` does for
        each, without its cost per unit. False (nothing added) where a unit's status is one not seen yet: statuses
        are numbered in the order met, unit by unit, each unit's before its entries'."""
        codes = self.statuses.get
        statuses = [codes(status) if isinstance(status, str) else -1 for status in [u.get("status") for u in units]]
        if None in statuses:
            return False
        prices = [unit.get("price") for unit in units]
        readings, floors = _readings(prices), _readings([unit.get("floor") for unit in units])
        texts = [isinstance(price, str) and reading == reading for price, reading in zip(prices, readings, strict=True)]
        self.units.extend([plan] * len(units), floors, statuses, readings, texts, [born] * len(units))
        return True

    def _told_units(
        self, plan: int, first: int, plan_key: str, units: dict[str, Any], born: int, told: _Listing, keys: set[str]
    ) -> None:
        """What the entries say of a plan's units (``keys``: those they name), added from ``first`` on: when each
        was created (after its plan), and each one's entries and events, unit by unit in the plan's order."""
        floors, statuses, prices, borns = (self.units.columns[column] for column in (1, 2, 3, 5))
        rows = {unit_key: row for row, unit_key in enumerate(units, start=first)}
        for row, unit_key in sorted((rows[key], key) for key in keys if key in rows):
            created = told.unit_created.get((plan_key, unit_key))
            if created is not None and created > born:
                borns[row] = created
            entries = told.moves.pop((plan_key, unit_key), None)
            if entries:
                self._entries(row, plan, floors[row], statuses[row], prices[row], entries)

    def _unit(self, plan: int, unit: dict[str, Any], born: int, entries: list[UnitEntry]) -> None:
        row = len(self.units)
        status, price, floor = self.status_code(unit.get("status")), unit.get("price"), _reading(unit.get("floor"))
        filter_price = _reading(price)
        self.units.add(plan, floor, status, filter_price, isinstance(price, str) and filter_price == filter_price, born)
        self._entries(row, plan, floor, status, filter_price, entries)

    def _entries(self, row: int, plan: int, floor: float, status: int, price: float, entries: list[UnitEntry]) -> None:
        """The status and price entries of the unit of ``row`` (its floor, status and price now as given), and its
        events."""
        for moment, of_price, before, _ in entries:
            if of_price:
                self.price_rows.add(row, moment, _reading(before), typed_price(before))
            else:
                self.status_rows.add(row, moment, self.status_code(before))
        self._events(plan, floor, status, price, entries)

    def _events(self, plan: int, floor: float, status: int, price: float, entries: list[UnitEntry]) -> None:
        """The unit's entries that count (sales, price increases and cuts), each with the unit's state just before
        it: replayed backwards from its state now (``status``, ``price``; -1 and NaN where not known)."""
        found = []
        for moment, of_price, before, after in reversed(entries):
            if of_price:
                low, high = typed_price(before), typed_price(after)
                reading = _reading(before)
                if not (math.isnan(low) or math.isnan(high) or low == high):
                    found.append((moment, INCREASE if high > low else CUT, status, reading))
                price = reading
            else:
                if after == SOLD and before != SOLD:
                    found.append((moment, SOLD_EVENT, self.status_code(before), price))
                status = self.status_code(before)
        for moment, kind, status_before, price_before in reversed(found):
            self.events.add(moment, kind, plan, floor, status_before, price_before)

    def built(self) -> UnitLedger:
        ledger = self.ledger
        ledger.plan_first, ledger.unit_first, ledger.event_first = (np.array(f, np.int64) for f in self.firsts)
        ledger.plan_codes = {name: np.frombuffer(codes, np.int32).copy() for name, codes in self.plan_codes.items()}
        ledger.field_values = {
            name: [value for _, value in known.values()] for name, known in self.field_values.items()
        }
        ledger.listing_gone = np.array(self.gone, np.int64)
        ledger.listing_deleted = np.array(self.deleted, np.bool_)
        ledger.plan_sqft = np.frombuffer(self.plan_sqft, np.float64).copy()
        ledger.statuses = list(self.statuses)
        unit_types = (np.int32, np.float64, np.int16, np.float64, np.int8, np.int64)
        (ledger.unit_plan, ledger.unit_floor, ledger.unit_status, ledger.unit_price, text,
         ledger.unit_born) = self.units.arrays(*unit_types)  # fmt: skip
        ledger.unit_text_price = text.astype(np.bool_)
        units = len(ledger.unit_plan)
        owner, at, before = self.status_rows.arrays(np.int64, np.int64, np.float64)
        order = np.lexsort((at, owner))
        ledger.status_first = np.searchsorted(owner[order], np.arange(units + 1)).astype(np.int64)
        ledger.status_at, ledger.status_from = at[order], before[order]
        owner, at, before, typed = self.price_rows.arrays(np.int64, np.int64, np.float64, np.float64)
        order = np.lexsort((at, owner))
        ledger.price_first = np.searchsorted(owner[order], np.arange(units + 1)).astype(np.int64)
        ledger.price_at, ledger.price_from, ledger.typed_from = at[order], before[order], typed[order]
        event_types = (np.int64, np.int8, np.int32, np.float64, np.int16, np.float64)
        (ledger.event_at, ledger.event_kind, ledger.event_plan, ledger.event_floor, ledger.event_status,
         ledger.event_price) = self.events.arrays(*event_types)  # fmt: skip
        return ledger


def _readings(values: list[Any]) -> list[float]:
    """Each value's reading as a number (:func:`number_of`), NaN for none; plain numbers read inline."""
    return [
        float(value) if (kind := value.__class__) is int
        else (value if value - value == 0 else math.nan) if kind is float
        else _reading(value)
        for value in values
    ]  # fmt: skip


def _reading(value: Any) -> float:
    number = number_of(value)
    return math.nan if number is None else number


def build_unit_ledger(db: sqlite3.Connection, listing_ids: list[str] | None = None) -> UnitLedger:
    """The catalogue's unit ledger (of ``listing_ids`` only, when given), read in the caller's read transaction."""
    last_entry = int(db.execute(LAST_ENTRY).fetchone()[0])
    builder = _LedgerBuilder()
    for listing_id, province, doc, deleted, entries in documents_with_entries(db, listing_ids):
        builder.add(listing_id, province, doc, deleted, _Listing(entries))
    ledger = builder.built()
    ledger.history_seq = last_entry
    return ledger
