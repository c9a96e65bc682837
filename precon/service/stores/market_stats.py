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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

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


def empty_int() -> IntArray:
    return np.empty(0, np.int64)


def empty_float() -> FloatArray:
    return np.empty(0, np.float64)


@dataclass
class MarketColumns:
    """A catalogue's units (of its listings now, and of its deleted listings as they last were) and the entries of
    its history the figures need, as columns. Units are contiguous per listing; each listing is a code."""

    listing_codes: dict[str, int] = field(default_factory=dict)
    listing_provinces: list[str | None] = field(default_factory=list)
    """Per listing code, the province it stands in (stood in, deleted)."""
    unit_first: IntArray = field(default_factory=empty_int)
    """Per listing code, its first unit's row (its units are ``unit_first[c]:unit_first[c + 1]``), one more."""
    unit_status: IntArray = field(default_factory=empty_int)
    unit_price: FloatArray = field(default_factory=empty_float)
    """NaN where the unit has no numeric price."""
    unit_sqft: FloatArray = field(default_factory=empty_float)
    """The plan's ``squareFeet`` as a number, NaN where it has none above 0."""
    unit_born: IntArray = field(default_factory=empty_int)
    """Unix ms of the latest creation of the unit, its plan or its listing (:data:`ALWAYS` where none is known)."""
    unit_gone: IntArray = field(default_factory=empty_int)
    """Unix ms of its listing's deletion (:data:`NEVER` for a listing stored now)."""
    unit_last_change: IntArray = field(default_factory=empty_int)
    """Unix ms of the unit's last status or price entry (:data:`ALWAYS` without one)."""
    status_first: IntArray = field(default_factory=empty_int)
    """Per unit, its first status entry's row in the ``status_*`` columns (ordered by unit, then time), one more."""
    status_at: IntArray = field(default_factory=empty_int)
    status_from: IntArray = field(default_factory=empty_int)
    price_first: IntArray = field(default_factory=empty_int)
    price_at: IntArray = field(default_factory=empty_int)
    price_from: FloatArray = field(default_factory=empty_float)
    event_first: IntArray = field(default_factory=empty_int)
    """Per listing code, its first counted unit entry's row (entries ordered by listing, then time), one more."""
    event_at: IntArray = field(default_factory=empty_int)
    event_kind: IntArray = field(default_factory=empty_int)
    launch_first: IntArray = field(default_factory=empty_int)
    """Per listing code, its first launch's row (launches ordered by listing, then time), one more."""
    launch_at: IntArray = field(default_factory=empty_int)

    def codes(self, listing_ids: Sequence[str], provinces: frozenset[str] | None = None) -> IntArray:
        """The codes of those of ``listing_ids`` that the columns know (in ``provinces``, when given), each once."""
        known, where = self.listing_codes, self.listing_provinces
        codes = (known[i] for i in listing_ids if i in known)
        if provinces is not None:
            codes = (code for code in codes if where[code] in provinces)
        return np.unique(np.fromiter(codes, dtype=np.int64))


@dataclass(frozen=True)
class MarketGroup:
    """One series: its value of the grouping attribute (None without one) and the listings it holds."""

    value: str | None
    listing_ids: tuple[str, ...]


class MarketStore(Protocol):
    """What a store answers ``market_stats`` with (the SQLite store, and so a replica's copy)."""

    def market_stats(
        self,
        boundaries: list[int],
        groups: list[MarketGroup],
        units: bool = True,
        provinces: frozenset[str] | None = None,
    ) -> list[dict[str, Any]]: ...


def ranges(starts: IntArray, ends: IntArray) -> IntArray:
    """The concatenation of ``range(start, end)`` for each pair, without a Python loop."""
    counts = ends - starts
    if not len(counts):
        return empty_int()
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return np.arange(int(counts.sum()), dtype=np.int64) + offsets


def market_series(
    columns: MarketColumns,
    boundaries: Sequence[int],
    groups: Sequence[MarketGroup],
    units: bool = True,
    provinces: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """Each group's series over the intervals ``boundaries[k]:boundaries[k + 1]`` (Unix ms): a point per interval,
    over its listings in ``provinces`` (None: wherever they are). Without ``units`` (a version that shows no floor
    plans) the unit figures are null."""
    edges = np.asarray(boundaries, dtype=np.int64)
    series = []
    for group in groups:
        listings = columns.codes(group.listing_ids, provinces)
        launches = _counted(columns.launch_first, columns.launch_at, None, listings, edges, 1)[0]
        points = [{"start": int(edges[k]), "launches": int(launches[k])} for k in range(len(edges) - 1)]
        if units:
            events = _counted(columns.event_first, columns.event_at, columns.event_kind, listings, edges, 3)
            states = _states(columns, listings, edges)
            for k, point in enumerate(points):
                point.update(
                    unitsSold=int(events[SOLD_EVENT][k]),
                    priceIncreases=int(events[INCREASE][k]),
                    priceCuts=int(events[CUT][k]),
                    **states[k],
                )
        else:
            for point in points:
                point.update(dict.fromkeys(UNIT_FIGURES))
        series.append({"group": group.value, "points": points})
    return series


UNIT_FIGURES = (
    "unitsSold",
    "unitsAvailable",
    "sellThrough",
    "medianPrice",
    "medianPricePerSqFt",
    "priceIncreases",
    "priceCuts",
)


def _counted(
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


def _states(columns: MarketColumns, listings: IntArray, edges: IntArray) -> list[dict[str, Any]]:
    """Per interval, the figures of the units' states at its end."""
    rows = ranges(columns.unit_first[listings], columns.unit_first[listings + 1])
    ends = edges[1:]
    first_end, last_end = int(ends[0]), int(ends[-1])
    born, gone = columns.unit_born[rows], columns.unit_gone[rows]
    steady = (columns.unit_last_change[rows] < first_end) & (born < first_end) & (gone >= last_end)
    still, moving = rows[steady], rows[~steady]
    status, price, ppsf = _values(columns, still, columns.unit_status[still], columns.unit_price[still])
    available = status == AVAILABLE
    base = (len(still), int(np.count_nonzero(status == SOLD)), int(np.count_nonzero(available)))
    base_prices = np.sort(price[available & ~np.isnan(price)])
    base_ppsf = np.sort(ppsf[available & ~np.isnan(ppsf)])
    replay = _Replay(columns, moving)
    figures = []
    for end in ends.tolist():
        exists, status, price, ppsf = replay.at(end)
        available = exists & (status == AVAILABLE)
        existing = base[0] + int(np.count_nonzero(exists))
        sold = base[1] + int(np.count_nonzero(exists & (status == SOLD)))
        figures.append(
            {
                "unitsAvailable": base[2] + int(np.count_nonzero(available)),
                "sellThrough": sold / existing if existing else None,
                "medianPrice": _median(base_prices, np.sort(price[available & ~np.isnan(price)])),
                "medianPricePerSqFt": _median(base_ppsf, np.sort(ppsf[available & ~np.isnan(ppsf)])),
            }
        )
    return figures


def _values(
    columns: MarketColumns, rows: IntArray, status: IntArray, price: FloatArray
) -> tuple[IntArray, FloatArray, FloatArray]:
    """The units' status and price as given, and their price per square foot (NaN where either is missing)."""
    return status, price, price / columns.unit_sqft[rows]


class _Replay:
    """The units whose state moves within the intervals (or that appear or go in them), replayed to any time."""

    def __init__(self, columns: MarketColumns, rows: IntArray) -> None:
        self.columns = columns
        self.rows = rows
        self.born, self.gone = columns.unit_born[rows], columns.unit_gone[rows]
        self.status = _Field(columns.status_first, columns.status_at, columns.status_from.astype(np.float64), rows)
        self.price = _Field(columns.price_first, columns.price_at, columns.price_from, rows)
        self.current_status = columns.unit_status[rows].astype(np.float64)
        self.current_price = columns.unit_price[rows]

    def at(self, end: int) -> tuple[Mask, IntArray, FloatArray, FloatArray]:
        """Which exist at ``end``, and their status, price and price per square foot then."""
        exists = (self.born < end) & (self.gone >= end)
        status = self.status.value_at(end, self.current_status).astype(np.int64)
        status, price, ppsf = _values(self.columns, self.rows, status, self.price.value_at(end, self.current_price))
        return exists, status, price, ppsf


class _Field:
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


def _median(base: FloatArray, extra: FloatArray) -> float | None:
    """The median of two sorted arrays together (the mean of the middle two of an even count), None when empty."""
    count = len(base) + len(extra)
    if not count:
        return None
    low, high = _kth(base, extra, (count - 1) // 2), _kth(base, extra, count // 2)
    return (low + high) / 2


def _kth(base: FloatArray, extra: FloatArray, rank: int) -> float:
    """The value of rank ``rank`` (from 0) of two sorted arrays merged."""
    # Where each of ``extra`` lands in the merge (before equal values of ``base``): its rank there.
    placed = np.arange(len(extra)) + np.searchsorted(base, extra, side="left")
    hit = np.searchsorted(placed, rank)
    if hit < len(placed) and placed[hit] == rank:
        return float(extra[hit])
    return float(base[rank - hit])
