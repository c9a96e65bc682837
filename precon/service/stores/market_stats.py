"""(ours) ``market_stats``: the market's figures per interval, computed over a catalogue's units and history held as
columns (:class:`MarketColumns`, built per generation by the store), in numpy: no entry is paged in Python per
request.

A unit's state at an interval's end ``E`` (after every entry written before ``E``) is replayed backwards from what
the catalogue holds now: its status (its price) is the ``from`` of its first status (price) entry at or after
``E``, else its current value; it exists at ``E`` when it (its plan, its listing) was created before ``E`` and its
listing was not deleted before ``E``. A deleted listing's units are those of its last document.

The figures of an interval ``[S, E)`` (docs/api.md, "Market statistics"):

* ``unitsSold``: unit ``status`` entries that became ``Sold`` in it (a unit that first appears already sold is not
  one: it was sold before it was seen);
* ``unitsAvailable``, ``medianPrice``, ``medianPricePerSqFt``: over the units existing and ``Available`` at ``E``;
* ``sellThrough``: the units ``Sold`` at ``E`` over those existing at ``E``;
* ``launches``: listings whose ``sellingStatus`` became ``Selling Now`` in it, or that were created so;
* ``priceIncreases``, ``priceCuts``: unit ``price`` entries from a number to a higher, or lower, one.

A group may hold part of its listings' units: those of the floor plans holding one value of a plan attribute
(:data:`PLAN_GROUPS`, ``floorPlans.numberOfBedrooms``). The columns keep each listing's units (and unit entries) by
*part*: the plans of one listing holding the same values of every plan attribute; a listing's group takes all its
parts, a plan value's group the parts holding that value (entries of a plan no longer in the document are in a part
holding no value). Launches stay the listing's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from precon.facet_keys import number_key
from precon.filters import Expr, fold_text
from precon.service.search.arrays import ranges
from precon.service.search.sql_filter import as_number
from precon.service.stores.market_grid import MarketGrid, Runs, medians
from precon.service.stores.market_layers import Layers, as_layers

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]

NEVER = np.iinfo(np.int64).max
"""A time after every interval (a listing not deleted)."""
ALWAYS = np.iinfo(np.int64).min
"""A time before every interval (a record whose creation is not recorded)."""
OTHER, AVAILABLE, SOLD = 0, 1, 2
"""A unit's status as a code: ``Available``, ``Sold``, anything else (``Reserved``, none)."""
STATUS_CODES = {"Available": AVAILABLE, "Sold": SOLD}
SOLD_EVENT, INCREASE, CUT = 0, 1, 2
"""The kinds of counted unit entries."""
PLAN_GROUPS: dict[str, bool] = {
    "floorPlans.numberOfBedrooms": True,
    "floorPlans.numberOfBathrooms": True,
    "floorPlans.floorPlanType": False,
    "floorPlans.planCategory": False,
}
"""The plan attributes a group can be of (whether numeric): a unit counts in the group of its plan's value."""
_PLAN_LEAVES = [(path.split(".", 1)[1], numeric) for path, numeric in PLAN_GROUPS.items()]


def plan_keys(plan: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    """Per attribute of :data:`PLAN_GROUPS`, the keys of a plan's values (as the index holds them: a number's facet
    key, a text folded)."""
    found = []
    for leaf, numeric in _PLAN_LEAVES:
        value = plan.get(leaf)
        values = value if isinstance(value, list) else () if value is None else (value,)
        if numeric:
            keys = {number_key(n) for n in map(as_number, values) if n is not None}
        else:
            keys = {fold_text(v) for v in values if isinstance(v, str)}
        found.append(tuple(sorted(keys)))
    return tuple(found)


def group_key(attribute: str, value: str) -> str:
    """A group's value (a facet's key) as :func:`plan_keys` keys it."""
    return number_key(float(value)) if PLAN_GROUPS[attribute] else fold_text(value)


def empty_int() -> IntArray:
    return np.empty(0, np.int64)


def empty_float() -> FloatArray:
    return np.empty(0, np.float64)


def listing_codes(
    known: dict[str, int], where: list[str | None], listing_ids: Sequence[str], provinces: frozenset[str] | None
) -> IntArray:
    """The codes ``known`` gives those of ``listing_ids`` it holds (whose province, ``where[code]``, is one of
    ``provinces``, when given), each once, ascending."""
    codes = [code for code in map(known.get, listing_ids) if code is not None]
    if provinces is not None:
        codes = [code for code in codes if where[code] in provinces]
    return np.unique(np.array(codes, dtype=np.int64))


@dataclass
class MarketColumns:
    """What the figures of a catalogue's generation are computed from: its units' states on a grid of times (of its
    listings now, and of its deleted listings as they last were: :mod:`.market_grid`), and the entries counted
    (sales, price moves, launches), as columns by listing. Each listing is a code."""

    listing_codes: dict[str, int] = field(default_factory=dict)
    listing_provinces: list[str | None] = field(default_factory=list)
    """Per listing code, the province it stands in (stood in, deleted)."""
    part_first: IntArray = field(default_factory=lambda: np.zeros(1, np.int64))
    """Per listing code, its first part (the parts of a listing are numbered in a row), one more."""
    plan_parts: dict[str, dict[str, IntArray]] = field(default_factory=dict)
    """Per attribute of :data:`PLAN_GROUPS`, per key, the parts holding it (ascending)."""
    grid: MarketGrid | None = None
    """The units' states on the grid of times, by part (None: no unit)."""
    listing_counts: npt.NDArray[np.int32] | None = None
    """The grid's counts summed over each listing's parts (:func:`counts_by_listing`)."""
    event_first: IntArray = field(default_factory=empty_int)
    """Per part, its first counted unit entry's row (entries ordered by part, then time), one more."""
    event_at: IntArray = field(default_factory=empty_int)
    event_kind: IntArray = field(default_factory=empty_int)
    event_months: EventMonths = field(default_factory=lambda: event_months(empty_int(), empty_int()))
    """Each counted entry's kind and month as one code (:func:`event_months`)."""
    launch_first: IntArray = field(default_factory=empty_int)
    """Per listing code, its first launch's row (launches ordered by listing, then time), one more."""
    launch_at: IntArray = field(default_factory=empty_int)
    listing_deleted: Mask = field(default_factory=lambda: np.zeros(0, np.bool_))
    """Per listing code, whether it is a deleted listing (as it last was)."""
    history_seq: int = 0
    """The last history entry the columns hold (a store's sequence number: entries after it are news)."""

    def codes(self, listing_ids: Sequence[str], provinces: frozenset[str] | None = None) -> IntArray:
        """The codes of those of ``listing_ids`` that the columns know (in ``provinces``, when given), each once."""
        return listing_codes(self.listing_codes, self.listing_provinces, listing_ids, provinces)

    def parts(self, listings: IntArray, plan: tuple[str, str] | None) -> IntArray:
        """The parts of these listings (ascending): all, or those holding ``plan``'s (attribute, key)."""
        found = ranges(self.part_first[listings], self.part_first[listings + 1])
        if plan is None:
            return found
        holding = self.plan_parts.get(plan[0], {}).get(group_key(*plan), empty_int())
        return found[np.isin(found, holding, assume_unique=True)]


@dataclass(frozen=True)
class MarketGroup:
    """One series: its value of the grouping attribute (None without one) and the listings it holds."""

    value: str | None
    listing_ids: tuple[str, ...]
    plan: tuple[str, str] | None = None
    """(attribute, value) of :data:`PLAN_GROUPS`: only the units of the listings' plans holding it."""


class MarketStore(Protocol):
    """What a store answers ``market_stats`` with (the SQLite store, and so a replica's copy)."""

    def market_stats(
        self,
        boundaries: list[int],
        groups: list[MarketGroup],
        units: bool = True,
        provinces: frozenset[str] | None = None,
        unit_filter: Expr | None = None,
    ) -> list[dict[str, Any]]:
        """With ``unit_filter``, the unit figures count the units it chooses (:mod:`.market_units`)."""
        ...


@dataclass(frozen=True)
class EventMonths:
    """Counted unit entries by kind and month: ``code`` is the kind times ``span`` plus the month from ``first``
    (months since 1970)."""

    code: IntArray
    first: int
    span: int


def event_months(at: IntArray, kind: IntArray) -> EventMonths:
    """The :class:`EventMonths` of entries at these times (Unix ms), of these kinds."""
    months = at.astype("datetime64[ms]").astype("datetime64[M]").astype(np.int64)
    first = int(months.min()) if len(months) else 0
    span = int(months.max()) - first + 1 if len(months) else 1
    return EventMonths(kind * span + (months - first), first, span)


def counts_by_listing(counts: npt.NDArray[np.int32], part_first: IntArray) -> npt.NDArray[np.int32]:
    """A grid's counts (by part) summed over each listing's parts: a group of whole listings sums these."""
    starts = part_first[:-1]
    some = starts < part_first[1:]  # (a listing without floor plans has no part)
    summed = np.zeros((len(starts), *counts.shape[1:]), np.int32)
    if some.any():
        summed[some] = np.add.reduceat(counts, starts[some], axis=0)
    return summed


def market_series(
    columns: MarketColumns | Layers[MarketColumns],
    boundaries: Sequence[int],
    groups: Sequence[MarketGroup],
    units: bool = True,
    provinces: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """Each group's series over the intervals ``boundaries[k]:boundaries[k + 1]`` (Unix ms): a point per interval,
    over its listings in ``provinces`` (None: wherever they are). Without ``units`` (a version that shows no floor
    plans) the unit figures are null. Each layer's listings (:mod:`.market_layers`) are counted on its columns."""
    layered = as_layers(columns)
    edges = np.asarray(boundaries, dtype=np.int64)
    chosen = [layered.codes(group.listing_ids, provinces) for group in groups]
    parts = [
        [layer.parts(codes, group.plan) for layer, codes in zip(layered.layers, found, strict=True)]
        for group, found in zip(groups, chosen, strict=True)
    ]
    whole = [None if group.plan else found for group, found in zip(groups, chosen, strict=True)]
    states = _states(layered.layers, parts, whole, edges[1:]) if units else []
    series = []
    for g, group in enumerate(groups):
        launches = launch_counts(layered.layers, chosen[g], edges)
        points = [{"start": int(edges[k]), "launches": int(launches[k])} for k in range(len(edges) - 1)]
        if units:
            events = sum(_events(layer, found, edges) for layer, found in zip(layered.layers, parts[g], strict=True))
            for k, point in enumerate(points):
                point.update(
                    unitsSold=int(events[SOLD_EVENT][k]),
                    priceIncreases=int(events[INCREASE][k]),
                    priceCuts=int(events[CUT][k]),
                    **states[g][k],
                )
        else:
            for point in points:
                point.update(dict.fromkeys(UNIT_FIGURES))
        series.append({"group": group.value, "points": points})
    return series


def launch_counts(layers: Sequence[MarketColumns], codes: Sequence[IntArray], edges: IntArray) -> IntArray:
    """Per interval, the launches of the listings of ``codes`` (per layer, its listings' codes)."""
    found = np.zeros(len(edges) - 1, np.int64)
    for layer, listings in zip(layers, codes, strict=True):
        found += counted_rows(layer.launch_first, layer.launch_at, None, listings, edges, 1)[0]
    return found


UNIT_FIGURES = (
    "unitsSold",
    "unitsAvailable",
    "sellThrough",
    "medianPrice",
    "medianPricePerSqFt",
    "priceIncreases",
    "priceCuts",
)


def _events(columns: MarketColumns, parts: IntArray, edges: IntArray) -> IntArray:
    """Per kind of counted unit entry, per interval: how many of the parts' entries fall in it. Where every edge
    is a month's first instant (the service's intervals are months and quarters), an entry's month tells its
    interval: a look-up per entry (:attr:`MarketColumns.event_months`) rather than a search."""
    months = _months(edges)
    if months is None:
        return counted_rows(columns.event_first, columns.event_at, columns.event_kind, parts, edges, 3)
    code, first, span = columns.event_months.code, columns.event_months.first, columns.event_months.span
    intervals = len(edges) - 1
    slot = np.searchsorted(months, np.arange(first, first + span), side="right") - 1
    slot = np.where((slot >= 0) & (slot < intervals), slot, -1)
    nowhere = 3 * intervals  # the entries of no interval are counted last, and dropped
    table = np.concatenate([np.where(slot >= 0, kind * intervals + slot, nowhere) for kind in range(3)])
    rows = ranges(columns.event_first[parts], columns.event_first[parts + 1])
    return np.bincount(table[code[rows]], minlength=nowhere + 1)[:nowhere].reshape(3, intervals)


def _months(edges: IntArray) -> IntArray | None:
    """The months (since 1970) of edges that are all a month's first instant (Unix ms), else None."""
    months = edges.astype("datetime64[ms]").astype("datetime64[M]")
    if (months.astype("datetime64[ms]").astype(np.int64) != edges).any():
        return None
    return months.astype(np.int64)


def counted_rows(
    first: IntArray, at: IntArray, kind: IntArray | None, listings: IntArray, edges: IntArray, kinds: int
) -> IntArray:
    """Per kind, per interval: how many of the listings' rows (``first``-delimited per listing) fall in it."""
    rows = ranges(first[listings], first[listings + 1])
    intervals = len(edges) - 1
    slot = np.searchsorted(edges, at[rows], side="right") - 1
    inside = (slot >= 0) & (slot < intervals)
    kind_of = np.zeros(len(rows), np.int64) if kind is None else kind[rows]
    flat = kind_of[inside] * intervals + slot[inside]
    return np.bincount(flat, minlength=kinds * intervals).reshape(kinds, intervals)


def _states(
    layers: Sequence[MarketColumns], parts: list[list[IntArray]], whole: list[list[IntArray] | None], ends: IntArray
) -> list[list[dict[str, Any]]]:
    """Per group, per interval, the figures of the units' states at its end: over its parts in each layer (its
    listings' counts summed where it holds their every part: ``whole``, its listings in each layer)."""
    base = layers[0]
    grid = base.grid
    if grid is None:
        return [[state_figures(0, 0, 0, math.nan, math.nan) for _ in ends] for _ in parts]
    at = grid.columns(ends)
    counts = np.zeros((len(parts), 3, len(at)), np.int64)
    for index, layer in enumerate(layers):
        listings = [None if found is None else found[index] for found in whole]
        counts += _counts(layer, [found[index] for found in parts], listings, at)
    prices, per_sqft = (_medians(layers, parts, at, runs_of) for runs_of in (_prices, _per_sqft))
    return [
        [state_figures(*(int(n) for n in counts[g, :, k]), prices[g, k], per_sqft[g, k]) for k in range(len(at))]
        for g in range(len(parts))
    ]


def _prices(grid: MarketGrid) -> Runs:
    return grid.prices


def _per_sqft(grid: MarketGrid) -> Runs:
    return grid.per_sqft


def _medians(
    layers: Sequence[MarketColumns], parts: list[list[IntArray]], at: IntArray, runs_of: Callable[[MarketGrid], Runs]
) -> FloatArray:
    """Per group and grid time, the median of its parts' runs (``runs_of`` a grid) over every layer."""
    base = layers[0]
    assert base.grid is not None
    beside = [
        (runs_of(layer.grid), [found[index] for found in parts], int(layer.part_first[-1]))
        for index, layer in enumerate(layers)
        if index and layer.grid is not None
    ]
    return medians(runs_of(base.grid), [found[0] for found in parts], int(base.part_first[-1]), at, beside)


def _counts(columns: MarketColumns, parts: list[IntArray], listings: list[IntArray | None], at: IntArray) -> IntArray:
    """Per group, per kind (existing, sold, available) and grid time ``at``: its units in one layer of columns (its
    listings' counts where it holds their every part)."""
    grid = columns.grid
    found = np.zeros((len(parts), 3, len(at)), np.int64)
    if grid is None:
        return found
    for g, codes in enumerate(parts):
        whole = listings[g]
        if whole is not None and columns.listing_counts is not None:
            held, chosen = columns.listing_counts, whole
        else:
            held, chosen = grid.counts, codes
        found[g] = _summed(held, chosen)[:, at]
    return found


def _summed(held: npt.NDArray[np.int32], chosen: IntArray) -> IntArray:
    """The rows ``chosen`` (distinct) of ``held`` summed; most of them: all of them, less the others."""
    if len(chosen) * 2 <= len(held):
        return held[chosen].sum(axis=0, dtype=np.int64)
    every = held.sum(axis=0, dtype=np.int64)
    if len(chosen) == len(held):
        return every
    left = np.ones(len(held), np.bool_)
    left[chosen] = False
    return every - held[left].sum(axis=0, dtype=np.int64)


def state_figures(existing: int, sold: int, available: int, price: float, per_sqft: float) -> dict[str, Any]:
    return {
        "unitsAvailable": available,
        "sellThrough": sold / existing if existing else None,
        "medianPrice": None if math.isnan(price) else float(price),
        "medianPricePerSqFt": None if math.isnan(per_sqft) else float(per_sqft),
    }


class UnitReplay:
    """The units whose status or price moved (``rows``), replayed to any time from their entries, some at a time."""

    def __init__(self, rows: IntArray, status: IntArray, price: FloatArray, entries: tuple[Any, ...]) -> None:
        self.rows = rows
        self._held = (status, price, entries)

    def of(self, rows: IntArray) -> RowsReplay:
        """A replay of those of them."""
        return RowsReplay(rows, *self._held)


class RowsReplay:
    """Some moving units (``rows``), replayed."""

    def __init__(self, rows: IntArray, status: IntArray, price: FloatArray, entries: tuple[Any, ...]) -> None:
        status_first, status_at, status_from, price_first, price_at, price_from = entries
        self.rows = rows
        self.status = FieldReplay(status_first, status_at, status_from.astype(np.float64), rows)
        self.price = FieldReplay(price_first, price_at, price_from, rows)
        self.current_status = status[rows].astype(np.float64)
        self.current_price = price[rows]

    def at(self, end: int) -> tuple[IntArray, FloatArray]:
        """Their status and price at ``end``."""
        status = self.status.value_at(end, self.current_status).astype(np.int64)
        return status, self.price.value_at(end, self.current_price)


class FieldReplay:
    """One field's entries of some units (ordered by unit, then time): its value at a time, replayed."""

    def __init__(self, first: IntArray, at: IntArray, before: FloatArray, rows: IntArray) -> None:
        counts = first[rows + 1] - first[rows]
        entries = ranges(first[rows], first[rows + 1])
        self.owner = np.repeat(np.arange(len(rows)), counts)
        self.times = at[entries]
        self.before = before[entries]
        leading = np.ones(len(entries), np.bool_)
        leading[1:] = self.owner[1:] != self.owner[:-1]
        self.leading = leading
        self.previous = np.concatenate([np.array([ALWAYS], np.int64), self.times[:-1]])[: len(self.times)]

    def value_at(self, end: int, current: FloatArray) -> FloatArray:
        """Each unit's value at ``end``: the ``from`` of its first entry at or after it, else ``current``."""
        values = current.copy()
        first = (self.times >= end) & (self.leading | (self.previous < end))
        values[self.owner[first]] = self.before[first]
        return values
