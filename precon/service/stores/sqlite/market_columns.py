"""(ours) The SQLite store's :class:`~precon.service.stores.market_stats.MarketColumns`: its units (of its listings,
and of its deleted listings as they last were) and the history entries ``market_stats`` needs, read once per
generation and kept (one pass over the documents and over ``listing_history``).

Units and floor plans are known by their keys, as history knows them (:mod:`precon.record_keys`: by ``unitNumber``
and ``id``, else by position), so that an entry finds the unit it is of.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import operator
import sqlite3
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from precon.filters import Expr
from precon.record_keys import plans_by_key, units_by_key
from precon.service.collector import collector_paused
from precon.service.stores import market_grid, market_layers, market_stats
from precon.service.stores.market_grid import (
    MarketGrid,
    Placed,
    Runs,
    UnitStates,
    grid_of,
    month_times,
    place_units,
)
from precon.service.stores.market_layers import Layers
from precon.service.stores.market_stats import (
    ALWAYS,
    CUT,
    INCREASE,
    NEVER,
    OTHER,
    PLAN_GROUPS,
    SOLD,
    SOLD_EVENT,
    STATUS_CODES,
    IntArray,
    MarketColumns,
    MarketGroup,
    UnitReplay,
    counts_by_listing,
    event_months,
    market_series,
    plan_keys,
)
from precon.service.stores.market_units import UnitLedger, unit_filtered_series
from precon.service.stores.records import decode_document
from precon.service.stores.sqlite.catalogue import SQLiteCatalogueBase
from precon.service.stores.sqlite.generation_held import GenerationHeld

SELLING_NOW = "Selling Now"
MARKET_VERSION = hashlib.blake2b(
    b"".join(Path(module.__file__ or "").read_bytes() for module in (market_grid, market_layers, market_stats))
    + Path(__file__).read_bytes(),
    digest_size=6,
).hexdigest()
"""Names market columns written to be shared by this code: those other code wrote are built again."""

_COUNTED = (
    "((scope = 'unit' AND (change = 'created' OR (change = 'updated' AND field IN ('status', 'price')))) "
    "OR (scope = 'floorPlan' AND change = 'created') "
    "OR (scope = 'listing' AND (change IN ('created', 'deleted') OR field = 'sellingStatus')))"
)
_ENTRIES = "SELECT at, listing_id, scope, plan, unit, field, change, from_value, to_value FROM listing_history "
ENTRIES = f"{_ENTRIES} WHERE {_COUNTED} ORDER BY listing_id, seq"
_NAMED = "IN (SELECT value FROM json_each(?1))"
ENTRIES_OF = f"{_ENTRIES} WHERE listing_id {_NAMED} AND {_COUNTED} ORDER BY listing_id, seq"
"""The entries of some listings (their ids a JSON array)."""
DOCUMENTS = (
    "SELECT l.listing_id, l.province, d.doc, 0 FROM listings l JOIN listing_docs d ON d.id = l.id UNION ALL "
    "SELECT listing_id, province, doc, 1 FROM deleted_listings "
    "WHERE listing_id NOT IN (SELECT listing_id FROM listings) ORDER BY 1"
)
DOCUMENTS_OF = (
    f"SELECT l.listing_id, l.province, d.doc, 0 FROM listings l JOIN listing_docs d ON d.id = l.id "
    f"WHERE l.listing_id {_NAMED} UNION ALL SELECT listing_id, province, doc, 1 FROM deleted_listings "
    f"WHERE listing_id {_NAMED} AND listing_id NOT IN (SELECT listing_id FROM listings) ORDER BY 1"
)
LAST_ENTRY = "SELECT coalesce(max(seq), 0) FROM listing_history"


def milliseconds(times: list[str]) -> IntArray:
    """Unix milliseconds of times as entries write them (``2026-11-27T14:00:00.000Z``), all at once."""
    if not times:
        return np.empty(0, np.int64)
    return np.array([time.rstrip("Z") for time in times], dtype="datetime64[ms]").astype(np.int64)


def loose_number(value: Any) -> float:
    """A number (or numeric text) as a float; NaN for anything else."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def json_value(blob: bytes | None) -> Any:
    return None if blob is None else orjson.loads(blob)


Entry = tuple[int, bool, float, int]
"""A unit's entry as kept: time, whether of the price, from (a status code, a price), kind (-1: none)."""


@dataclass
class _History:
    """What the entries say, by listing: creations, deletions, selling statuses, and each unit's entries."""

    created: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    deleted: dict[str, int] = field(default_factory=dict)
    plan_created: dict[tuple[str, str], int] = field(default_factory=dict)
    unit_created: dict[tuple[str, str], dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    """Per listing and plan: when each unit created after its plan was."""
    selling: dict[str, list[tuple[int, Any, Any]]] = field(default_factory=lambda: defaultdict(list))
    """Per listing: (time, from, to) of each sellingStatus entry, and of each creation (``to`` the marker)."""
    units: dict[str, dict[str, dict[str, list[Entry]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    )
    """Per listing, plan and unit: its status and price entries (:data:`Entry`)."""

    def read(self, rows: list[tuple[Any, ...]]) -> _History:
        """Reads entry rows (of one listing, as the build reads them, or of several)."""
        if rows:
            self._read(rows)
        return self

    def _read(self, rows: list[tuple[Any, ...]]) -> None:
        moments = milliseconds([row[0] for row in rows]).tolist()
        for moment, (_, listing, scope, plan, unit, name, change, before, after) in zip(moments, rows, strict=True):
            if scope == "unit":
                if change == "created":
                    self.unit_created[(listing, plan)][unit] = moment
                else:
                    self.units[listing][plan][unit].append(_entry(moment, name, json_value(before), json_value(after)))
            elif scope == "floorPlan":
                self.plan_created[(listing, plan)] = moment
            elif change == "created":
                self.created[listing].append(moment)
                self.selling[listing].append((moment, _CREATED, None))
            elif change == "deleted":
                self.deleted[listing] = moment
            else:
                self.selling[listing].append((moment, json_value(before), json_value(after)))


def _entry(moment: int, name: str, before: Any, after: Any) -> Entry:
    """A unit's status or price entry as kept: its time, whether of the price, its ``from`` (a status code, a price)
    and what it counts as (:func:`_kind`; -1: nothing). No text is kept."""
    kind = _kind(name, before, after)
    if name == "status":
        return moment, False, float(_status(before)), -1 if kind is None else kind
    return moment, True, typed_price(before), -1 if kind is None else kind


_CREATED = object()
"""Marks a listing's creation among its selling status entries."""


def launches(entries: list[tuple[int, Any, Any]], last: Any) -> list[int]:
    """The times a listing launched: each entry whose sellingStatus became Selling Now, and each creation whose
    status then (the ``from`` of the next sellingStatus entry, else ``last``, what it holds now) was Selling Now."""
    found = []
    for position, (moment, before, after) in enumerate(entries):
        if before is _CREATED:
            following = next((b for _, b, _ in entries[position + 1 :] if b is not _CREATED), last)
            if following == SELLING_NOW:
                found.append(moment)
        elif after == SELLING_NOW:
            found.append(moment)
    return found


PlanKeys = tuple[tuple[str, ...], ...]


class _Builder:
    """Columns gathered listing by listing, in the order of their codes (and their parts, listing by listing)."""

    def __init__(self, history: _History) -> None:
        self.history = history
        self.codes: dict[str, int] = {}
        self.provinces: list[str | None] = []
        self.deleted: list[bool] = []
        # status, price, sqft, born, gone, whether it has entries: machine numbers (a Python float each would be 4 times
        # the size)
        self.unit_rows: list[array[Any]] = [array(kind) for kind in "bddqqb"]
        self.unit_part: array[int] = array("i")
        self.part_first: list[int] = [0]
        self.plan_parts: list[dict[str, list[int]]] = [defaultdict(list) for _ in PLAN_GROUPS]
        # (owner, at, value) columns: a status entry's (unit, at, from), a price entry's, a counted entry's (part,
        # at, kind), a launch's (listing, at, 0)
        self.status, self.price, self.events, self.launches = (_Rows() for _ in range(4))
        self.parts: dict[PlanKeys, int] = {}
        """The current listing's parts by their plan keys."""
        self.plan_cache: dict[tuple[Any, ...], PlanKeys] = {}

    def _plan_keys(self, plan: dict[str, Any]) -> PlanKeys:
        """:func:`plan_keys`, kept by the plan's values (most plans hold a few values, text in lists)."""
        bedrooms, bathrooms = plan.get("numberOfBedrooms"), plan.get("numberOfBathrooms")
        kind, category = plan.get("floorPlanType"), plan.get("planCategory")
        held = (
            *(bedrooms, type(bedrooms), bathrooms, type(bathrooms)),  # 1, 1.0 and True are one key, not one value
            tuple(kind) if isinstance(kind, list) else kind,
            tuple(category) if isinstance(category, list) else category,
        )
        try:
            return self.plan_cache[held]
        except KeyError:
            found = self.plan_cache[held] = plan_keys(plan)
            return found
        except TypeError:  # a list of numbers, a record: not kept
            return plan_keys(plan)

    def _part(self, keys: PlanKeys) -> int:
        """The current listing's part of the plans holding ``keys`` (a new one at its first unit or entry)."""
        part = self.parts.get(keys)
        if part is None:
            part = self.parts[keys] = self.part_first[-1] + len(self.parts)
            for held, values in zip(self.plan_parts, keys, strict=True):
                for value in values:
                    held[value].append(part)
        return part

    def add(self, listing: str, province: str | None, doc: dict[str, Any], deleted: bool) -> None:
        code = len(self.codes)
        self.codes[listing] = code
        self.provinces.append(province)
        self.deleted.append(deleted)
        history = self.history
        listing_born = max(history.created.get(listing, ()), default=ALWAYS)
        gone = history.deleted.get(listing, NEVER) if deleted else NEVER
        touched = history.units.get(listing, {})
        self.parts = {}
        plan_of: dict[str, PlanKeys] = {}
        for plan_key, plan in plans_by_key(doc).items():
            plan_of[plan_key] = keys = self._plan_keys(plan)
            units = units_by_key(plan)
            if not units:
                continue
            self.unit_part.extend([self._part(keys)] * len(units))
            plan_born = max(listing_born, history.plan_created.get((listing, plan_key), ALWAYS))
            sqft = loose_number(plan.get("squareFeet"))
            sqft = sqft if sqft > 0 else math.nan
            status, price, size, born, ended, changed = self.unit_rows
            first = len(status)
            records = list(units.values())
            status.extend(_statuses(records))
            price.extend([p if type(p) in (int, float) else math.nan for p in (u.get("price") for u in records)])
            size.extend([sqft] * len(units))
            ended.extend([gone] * len(units))
            born.extend([plan_born] * len(units))
            changed.frombytes(bytes(len(units)))
            moved, created = touched.get(plan_key), history.unit_created.get((listing, plan_key))
            if moved or created:
                self._plan_units(first, list(units), plan_born, moved or {}, created or {})
        self._counted(plan_of, touched)
        self.part_first.append(self.part_first[-1] + len(self.parts))
        last = doc.get("sellingStatus")
        for moment in launches(history.selling.get(listing, []), last):
            self.launches.add(code, moment, 0.0)

    def _plan_units(
        self, first: int, keys: list[str], plan_born: int, moved: dict[str, list[Entry]], created: dict[str, int]
    ) -> None:
        """The units of a plan that were created after it, or have entries, told apart from the others."""
        _, _, _, born, _, changed = self.unit_rows
        positions = dict(zip(keys, range(first, first + len(keys)), strict=True))
        for key, moment in created.items():
            unit = positions.get(key)
            if unit is not None and moment > plan_born:
                born[unit] = moment
        for key, entries in moved.items():
            unit = positions.get(key)
            if unit is not None and entries:
                self._entries(unit, entries)
                changed[unit] = 1

    def _entries(self, unit: int, entries: list[Entry]) -> None:
        """Records a unit's status and price entries (for replaying it)."""
        for moment, of_price, before, _ in entries:
            (self.price if of_price else self.status).add(unit, moment, before)

    def _counted(self, plan_of: dict[str, PlanKeys], touched: dict[str, dict[str, list[Entry]]]) -> None:
        """The listing's unit entries that count (sales, price increases and cuts), each in its plan's part (a plan
        no longer in the document: a part holding no value)."""
        nothing: PlanKeys = ((),) * len(PLAN_GROUPS)
        for plan_key, plan_entries in touched.items():
            part = None
            for entries in plan_entries.values():
                for moment, _, _, kind in entries:
                    if kind >= 0:
                        part = self._part(plan_of.get(plan_key, nothing)) if part is None else part
                        self.events.add(part, moment, kind)

    def columns(self, history_seq: int = 0, times: IntArray | None = None) -> MarketColumns:
        """The columns; their grid over ``times`` when given (:class:`OutsideGrid` when a unit's state moves outside
        them), else over the times the units' states move in (None: no unit)."""
        listings, parts = len(self.codes), self.part_first[-1]
        units = len(self.unit_rows[0])
        event_rows, event_first = _ordered(self.events, parts)
        launch_rows, launch_first = _ordered(self.launches, listings)
        event_at, event_kind = event_rows[1].astype(np.int64), event_rows[2].astype(np.int64)
        part_first = np.array(self.part_first, np.int64)
        if units:
            grid: MarketGrid | None = grid_of(self._placed(times))
        else:
            grid = None if times is None else empty_grid(times, parts)
        return MarketColumns(
            listing_codes=self.codes,
            listing_provinces=self.provinces,
            part_first=part_first,
            plan_parts={
                path: {key: np.array(found, np.int64) for key, found in held.items()}
                for path, held in zip(PLAN_GROUPS, self.plan_parts, strict=True)
            },
            grid=grid,
            listing_counts=None if grid is None else counts_by_listing(grid.counts, part_first),
            event_first=event_first,
            event_at=event_at,
            event_kind=event_kind,
            event_months=event_months(event_at, event_kind),
            launch_first=launch_first,
            launch_at=launch_rows[1].astype(np.int64),
            listing_deleted=np.array(self.deleted, np.bool_),
            history_seq=history_seq,
        )

    def _placed(self, times: IntArray | None) -> Placed:
        """The units placed on the grid (over ``times``, when given); their columns (and the builder's) let go."""
        status, price, sqft, born, gone, changed = self.unit_rows
        units = len(status)
        status_rows, status_first = _ordered(self.status, units)
        price_rows, price_first = _ordered(self.price, units)
        states = UnitStates(
            listing=np.frombuffer(self.unit_part, np.int32),
            status=np.frombuffer(status, np.int8),
            price=np.frombuffer(price, np.float64),
            sqft=np.frombuffer(sqft, np.float64),
            born=np.frombuffer(born, np.int64),
            gone=np.frombuffer(gone, np.int64),
            moving=np.frombuffer(changed, np.bool_),
            listings=self.part_first[-1],
        )
        entries = (status_first, status_rows[1], status_rows[2].astype(np.int64), price_first, price_rows[1],
                   price_rows[2])  # fmt: skip
        replay = UnitReplay(np.flatnonzero(states.moving), states.status, states.price, entries)
        extent = _extent(states, status_rows[1], price_rows[1])
        if times is None:
            times = np.zeros(1, np.int64) if extent is None else month_times(*extent)
        elif extent is not None and not times[0] <= extent[0] <= extent[1] < times[-1]:
            raise OutsideGrid
        placed = place_units(states, times, replay)
        self.unit_rows, self.unit_part, self.status, self.price = [], array("i"), _Rows(), _Rows()
        return placed


class OutsideGrid(Exception):
    """A unit's state moves outside the times of the grid asked for."""


def _extent(units: UnitStates, *entry_times: IntArray) -> tuple[int, int] | None:
    """The first and the last time a unit's state moved (an entry, a creation, a deletion); None: never. The grid's
    times run from the first to the start of the month after the last."""
    moments = [units.born[units.born != ALWAYS], units.gone[units.gone != NEVER], *entry_times]
    found = np.concatenate(moments)
    return (int(found.min()), int(found.max())) if len(found) else None


def empty_grid(times: IntArray, parts: int) -> MarketGrid:
    """A grid over ``times`` holding no unit."""
    none = np.empty(0, np.int64)
    runs = Runs.ordered(none, none, none, np.empty(0, np.float64), parts, len(times))
    return MarketGrid(times, np.zeros((parts, 3, len(times)), np.int32), runs, runs)


def _statuses(units: list[Any]) -> list[int]:
    codes = STATUS_CODES
    try:
        return [codes.get(unit.get("status"), OTHER) for unit in units]
    except TypeError:  # a status that is a list or an object: no status of ours
        return [_status(unit.get("status")) for unit in units]


def _status(value: Any) -> int:
    return STATUS_CODES.get(value, OTHER) if isinstance(value, str) else OTHER


def typed_price(value: Any) -> float:
    """A unit's price: a number (not numeric text, not a boolean), else NaN."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def _kind(name: str, before: Any, after: Any) -> int | None:
    """What a unit entry counts as: a sale, a price increase or a cut (None: nothing)."""
    if name == "status":
        return SOLD_EVENT if after == "Sold" and _status(before) != SOLD else None
    low, high = typed_price(before), typed_price(after)
    if math.isnan(low) or math.isnan(high) or low == high:
        return None
    return INCREASE if high > low else CUT


class _Rows:
    """Rows of (owner, time, value) as machine numbers (a tuple each would be 6 times the size)."""

    def __init__(self) -> None:
        self.owner, self.at, self.value = array("q"), array("q"), array("d")

    def add(self, owner: int, at: int, value: float) -> None:
        self.owner.append(owner)
        self.at.append(at)
        self.value.append(value)


def _ordered(rows: _Rows, owners: int) -> tuple[list[np.ndarray[Any, Any]], IntArray]:
    """The rows as columns ordered by owner then time (stably), and each owner's first row."""
    owner, moment = np.frombuffer(rows.owner, np.int64), np.frombuffer(rows.at, np.int64)
    value = np.frombuffer(rows.value, np.float64)
    order = np.lexsort((moment, owner))
    first = np.searchsorted(owner[order], np.arange(owners + 1), side="left").astype(np.int64)
    return [owner[order], moment[order], value[order]], first


def by_listing(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """Entry rows ordered by listing, listing by listing."""
    for listing, held in itertools.groupby(rows, key=operator.itemgetter(1)):
        yield str(listing), list(held)


def documents_with_entries(
    db: sqlite3.Connection, listing_ids: list[str] | None = None
) -> Iterator[tuple[str, str | None, dict[str, Any], bool, list[tuple[Any, ...]]]]:
    """Every listing's document (stored, or deleted as it last was; only those of ``listing_ids``, when given) with
    its history entries (:data:`ENTRIES`): both read in the order of their listings in the caller's read transaction,
    so that one listing's entries are held at a time; each document decoded, walked by the caller and dropped, with
    the collector paused (it would walk them again)."""
    named = () if listing_ids is None else (orjson.dumps(listing_ids).decode(),)
    entries = by_listing(db.execute(ENTRIES if listing_ids is None else ENTRIES_OF, named))
    pending = next(entries, None)
    documents = db.execute(DOCUMENTS if listing_ids is None else DOCUMENTS_OF, named)
    while rows := documents.fetchmany(1024):
        with collector_paused():
            for listing, province, blob, deleted in rows:
                listing_id = str(listing)
                while pending is not None and pending[0] < listing_id:  # entries of a listing with no document
                    pending = next(entries, None)
                held = pending[1] if pending is not None and pending[0] == listing_id else []
                yield listing_id, province, decode_document(blob), bool(deleted), held


def build_market_columns(
    db: sqlite3.Connection, listing_ids: list[str] | None = None, times: IntArray | None = None
) -> MarketColumns:
    """The catalogue's market columns (of ``listing_ids`` only, when given; their grid over ``times``, when given:
    see :meth:`_Builder.columns`), read in the caller's read transaction."""
    last_entry = int(db.execute(LAST_ENTRY).fetchone()[0])
    builder = _Builder(_History())
    for listing_id, province, doc, deleted, entries in documents_with_entries(db, listing_ids):
        builder.history = _History().read(entries)
        builder.add(listing_id, province, doc, deleted)
    builder.history = _History()
    return builder.columns(last_entry, times)


class SQLiteMarket(SQLiteCatalogueBase):
    """``market_stats`` of the SQLite store: its columns, and its unit ledger for a ``unitFilter``, each kept per
    generation (:mod:`.generation_held`; the ledger built the first time a request names a ``unitFilter``)."""

    _market: GenerationHeld[Layers[MarketColumns]]
    _ledger: GenerationHeld[Layers[UnitLedger]]

    def market_columns(self) -> Layers[MarketColumns]:
        """The market columns as of this generation (:mod:`..market_layers`)."""
        return self._market.get(self)

    def unit_ledger(self) -> Layers[UnitLedger]:
        """The unit ledger as of this generation (:mod:`..market_units`, :mod:`..market_layers`)."""
        return self._ledger.get(self)

    def market_stats(
        self,
        boundaries: list[int],
        groups: list[MarketGroup],
        units: bool = True,
        provinces: frozenset[str] | None = None,
        unit_filter: Expr | None = None,
    ) -> list[dict[str, Any]]:
        """Each group's points over the intervals between ``boundaries`` (see :mod:`..market_stats`); with
        ``unit_filter``, its unit figures over the units it chooses (:mod:`..market_units`)."""
        if unit_filter is None or not units:
            return market_series(self.market_columns(), boundaries, groups, units, provinces)
        return unit_filtered_series(self.market_columns(), self.unit_ledger(), boundaries, groups, unit_filter,
                                    provinces)  # fmt: skip
