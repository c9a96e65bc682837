"""(ours) The units' states on a grid of times, for ``market_stats``: built once per catalogue generation, so that a
request adds up listings' rows and finds medians without touching each unit again.

The grid's times are the catalogue's first entry's, then the first instant of every calendar month after it, up to
the first one after its last entry: every interval's end a request can name (a month's or a quarter's start) is one
of them, or lies before the first (the state before any entry) or after the last (the state now). The state at
``times[c]`` is the one after every entry written before it (:mod:`.market_stats` says how it is replayed).

* Per listing and time, how many of its units exist, are ``Sold`` and are ``Available`` (:attr:`MarketGrid.counts`):
  a request's counts are the sums of its listings' rows.
* The runs of an available unit with a price: ``[first, last)`` of the grid's times over which it is available at
  one price, ordered by that price (and again by the price per square foot): a request's median at a time is found
  block by block over its own runs (:func:`medians`), not by sorting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from precon.service.search.arrays import ranges

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]

AVAILABLE, SOLD = 1, 2
SHIFT = 10
BLOCK = 1 << SHIFT
"""Runs counted together when a median is looked for: the median is then found among one block's runs."""
EXISTING, SOLD_ROW, AVAILABLE_ROW = 0, 1, 2


@dataclass
class Runs:
    """Available units' runs, ordered by ``value``: the listing, the first grid time and the one after the last;
    and where each starts and stops holding, by block of that order and grid time, listing by listing."""

    listing: npt.NDArray[np.int32]
    first: npt.NDArray[np.int16]
    last: npt.NDArray[np.int16]
    value: FloatArray
    listing_first: IntArray
    """Per listing, where its runs start in ``starts`` and ``stops``, one more."""
    starts: npt.NDArray[np.int32]
    """Per run, listing by listing: its block (position // :data:`BLOCK`) times the grid's width plus one, plus its
    first grid time; ``stops``: the same with the time after its last. A set of listings' runs are counted by block
    and time from these slices alone."""
    stops: npt.NDArray[np.int32]
    width: int
    """The grid's times (every run's ``last`` is at most it)."""
    every: IntArray
    """:meth:`holding` of every run: the market whole, counted at build."""
    by_listing: npt.NDArray[np.int32]
    """Per run, listing by listing (as ``starts``), its position in the order of values: where a patch
    (:mod:`.market_patch`) finds the kept runs' places without ordering them again."""

    @classmethod
    def ordered(
        cls, listing: IntArray, first: IntArray, last: IntArray, value: FloatArray, listings: int, width: int
    ) -> Runs:
        keep = ~np.isnan(value)
        order = np.flatnonzero(keep)[np.argsort(value[keep], kind="stable")]
        owner = listing[order]
        by_listing = np.argsort(owner, kind="stable")
        listing_first = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=listings))]).astype(np.int64)
        return cls.laid_out(owner, first[order], last[order], value[order], by_listing, listing_first, width)

    @classmethod
    def laid_out(
        cls,
        listing: IntArray,
        first: IntArray,
        last: IntArray,
        value: FloatArray,
        by_listing: IntArray,
        listing_first: IntArray,
        width: int,
    ) -> Runs:
        """Runs already in the order of their values, ``by_listing`` their positions listing by listing (and
        ``listing_first`` where each listing's start)."""
        block = (by_listing.astype(np.int64) >> SHIFT) * (width + 1)
        starts = (block + first[by_listing]).astype(np.int32)
        stops = (block + last[by_listing]).astype(np.int32)
        return cls(
            listing.astype(np.int32),
            first.astype(np.int16),
            last.astype(np.int16),
            value,
            listing_first,
            starts,
            stops,
            width,
            _holding(starts, stops, -(-len(value) // BLOCK), width),
            by_listing.astype(np.int32),
        )

    def holding(self, listings: IntArray) -> IntArray:
        """Per block and grid time, how many runs of these listings hold then."""
        rows = ranges(self.listing_first[listings], self.listing_first[listings + 1])
        return _holding(self.starts[rows], self.stops[rows], len(self.every), self.width)


def _holding(starts: npt.NDArray[np.int32], stops: npt.NDArray[np.int32], blocks: int, width: int) -> IntArray:
    """Per block and grid time, how many of the runs that start and stop at these codes hold then."""
    size = blocks * (width + 1)
    change = np.bincount(starts, minlength=size) - np.bincount(stops, minlength=size)
    return np.cumsum(change.reshape(blocks, width + 1), axis=1)


@dataclass
class MarketGrid:
    times: IntArray
    counts: npt.NDArray[np.int32]
    """(listing, kind: existing, sold, available, grid time)."""
    prices: Runs
    per_sqft: Runs

    def columns(self, ends: IntArray) -> IntArray:
        """The grid time whose state each of ``ends`` has."""
        return np.clip(np.searchsorted(self.times, ends, side="right") - 1, 0, len(self.times) - 1)


def month_times(first: int, last: int) -> IntArray:
    """``first``, then the first instant of each month after it up to the first one after ``last`` (Unix ms)."""
    times = [first]
    moment = datetime.fromtimestamp(first / 1000, UTC)
    year, month = moment.year, moment.month
    while times[-1] <= last:
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        times.append(int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000))
    return np.array(times, np.int64)


@dataclass
class UnitStates:
    """What the grid is built from: every unit now (contiguous per listing) and its status and price entries."""

    listing: npt.NDArray[np.int32]
    status: npt.NDArray[np.int8]
    price: FloatArray
    sqft: FloatArray
    born: IntArray
    gone: IntArray
    moving: Mask
    """The units with status or price entries."""
    listings: int


CHUNK = 65536
"""Units placed on the grid at once: the working arrays (a row of the grid per moving unit) are bounded by it."""


@dataclass
class Placed:
    """The units placed on the grid (:func:`place_units`): its counts, and the available runs with a price, in
    pieces, not yet ordered (:func:`grid_of`)."""

    times: IntArray
    counts: npt.NDArray[np.int32]
    pieces: list[_Pieces]
    listings: int


def place_units(units: UnitStates, times: IntArray, replay: StateReplay) -> Placed:
    """The units on the grid over ``times``, those that move replayed by ``replay``, :data:`CHUNK` units at a time
    (the units' columns can then be let go before the runs are ordered)."""
    counts = np.zeros((units.listings, 3, len(times)), np.int32)
    still: list[_Pieces] = []
    moved: list[_Pieces] = []
    moving = replay.rows
    for start in range(0, len(units.listing), CHUNK):
        stop = min(start + CHUNK, len(units.listing))
        first = np.searchsorted(times, units.born[start:stop], side="right")
        last = np.searchsorted(times, units.gone[start:stop], side="right")
        still.append(_still(units, start, first, last, counts))
        low, high = np.searchsorted(moving, [start, stop])
        if high > low:
            moved.append(_moved(units, times, replay.of(moving[low:high]), first, last, start, counts))
    return Placed(times, counts, still + moved, units.listings)


def grid_of(placed: Placed) -> MarketGrid:
    """The grid of the placed units: their runs ordered (the pieces are let go as they are joined)."""
    columns = []
    while placed.pieces[0]:
        columns.append(np.concatenate([piece.pop(0) for piece in placed.pieces]))
    listing, begin, end, price, sqft = columns
    width = len(placed.times)
    prices = Runs.ordered(listing, begin, end, price, placed.listings, width)
    per_sqft = Runs.ordered(listing, begin, end, price / sqft, placed.listings, width)
    return MarketGrid(placed.times, placed.counts, prices, per_sqft)


_Pieces = list[npt.NDArray[Any]]
"""Available runs with a price: their listing (int32), first and last grid time (one more; int16), price and the
unit's area."""


def _still(units: UnitStates, start: int, first: IntArray, last: IntArray, counts: npt.NDArray[np.int32]) -> _Pieces:
    """Adds to ``counts`` those of the units from ``start`` (``first``, ``last``: theirs) that do not move; their
    available runs (one each at most)."""
    width = counts.shape[2]
    still = np.flatnonzero(~units.moving[start : start + len(first)] & (first < last))
    owner = units.listing[start + still]
    status = units.status[start + still]
    if len(still):
        low, high = int(owner.min()), int(owner.max()) + 1
        size = (high - low) * 3 * (width + 1)
        change = np.zeros(size, np.int64)
        for kind, holds in ((EXISTING, None), (SOLD_ROW, SOLD), (AVAILABLE_ROW, AVAILABLE)):
            rows = slice(None) if holds is None else status == holds
            base = ((owner[rows] - low) * 3 + kind) * (width + 1)
            change += _tally(base + first[still[rows]], size) - _tally(base + last[still[rows]], size)
        held = np.cumsum(change.reshape(high - low, 3, width + 1), axis=2)[:, :, :width]
        counts[low:high] += held.astype(np.int32)
    price = units.price[start + still]
    runs = (status == AVAILABLE) & ~np.isnan(price)
    unit = start + still[runs]
    return [owner[runs].astype(np.int32), first[still[runs]].astype(np.int16), last[still[runs]].astype(np.int16),
            price[runs], units.sqft[unit]]  # fmt: skip


class StateReplay(Protocol):
    """The status and price of the moving units (``rows``) at any time, found for some of them at once."""

    rows: IntArray

    def of(self, rows: IntArray) -> RowsReplay: ...


class RowsReplay(Protocol):
    rows: IntArray

    def at(self, end: int) -> tuple[IntArray, FloatArray]: ...


def _moved(units: UnitStates, times: IntArray, replay: RowsReplay, first: IntArray, last: IntArray, offset: int,
           counts: npt.NDArray[np.int32]) -> _Pieces:  # fmt: skip
    """Adds the moving units to ``counts`` (``first``, ``last``: those of the units from ``offset``); their available
    runs."""
    rows = replay.rows
    local = rows - offset
    width = len(times)
    status = np.empty((len(rows), width), np.int8)
    price = np.empty((len(rows), width), np.float64)
    for column, moment in enumerate(times.tolist()):
        status[:, column], price[:, column] = replay.at(moment)
    columns = np.arange(width)
    exists = (columns >= first[local, None]) & (columns < last[local, None])
    listing = units.listing[rows]
    low, high = int(listing.min()), int(listing.max()) + 1
    owner = np.repeat(listing - low, width).reshape(len(rows), width)
    available = exists & (status == AVAILABLE)
    for kind, holds in ((EXISTING, exists), (SOLD_ROW, exists & (status == SOLD)), (AVAILABLE_ROW, available)):
        at = np.broadcast_to(columns, holds.shape)[holds]
        counts[low:high, kind, :] += _tally(owner[holds] * width + at, (high - low) * width).reshape(-1, width)
    priced = available & ~np.isnan(price)
    same = np.zeros_like(priced)
    same[:, 1:] = priced[:, 1:] & priced[:, :-1] & (price[:, 1:] == price[:, :-1])  # a run goes on
    starts = priced & ~same
    ends = np.zeros_like(priced)
    ends[:, :-1] = same[:, 1:]
    ends = priced & ~ends
    unit_at, begin = np.nonzero(starts)
    _, stop = np.nonzero(ends)
    return [listing[unit_at].astype(np.int32), begin.astype(np.int16), (stop + 1).astype(np.int16),
            price[unit_at, begin], units.sqft[rows[unit_at]]]  # fmt: skip


def _tally(index: IntArray, size: int) -> IntArray:
    return np.bincount(index, minlength=size).astype(np.int64)


def medians(
    runs: Runs,
    groups: list[IntArray],
    listings: int,
    columns: IntArray,
    beside: Sequence[tuple[Runs, list[IntArray], int]] = (),
) -> FloatArray:
    """Per group (the distinct listings of each) and column, the median value of the runs of its listings holding at
    that column (NaN: none). A group's runs are counted by block of the value order and time from its listings'
    slices (the market whole's at build, less those of the listings it leaves out), then each median is found within
    one block. ``beside``: other layers' runs (:mod:`.market_layers`), few, and each group's listings in them, as
    (runs, groups, listings): their runs holding are read whole, and the medians taken over both."""
    found = np.full((len(groups), len(columns)), np.nan)
    for g, members in enumerate(groups):
        holding, member = _group_holding(runs, members, listings)
        others = [_OtherRuns(other, other_groups[g], other_listings) for other, other_groups, other_listings in beside]
        for k, column in enumerate(columns.tolist()):
            prefix = np.cumsum(holding[:, column])
            extra = _merged([other.holding_at(column) for other in others])
            total = (int(prefix[-1]) if len(prefix) else 0) + len(extra)
            if total:
                low = _kth_with(runs, prefix, column, (total - 1) // 2, member, extra)
                found[g, k] = (low + _kth_with(runs, prefix, column, total // 2, member, extra)) / 2
    return found


def _group_holding(runs: Runs, members: IntArray, listings: int) -> tuple[IntArray, Mask | None]:
    """Per block and grid time, how many runs of ``members`` hold then; which listings are members (None: all). A
    group of most listings is counted as the market whole less the others."""
    if len(members) == listings:  # every listing: every run
        return runs.every, None
    member = np.zeros(listings, np.bool_)
    member[members] = True
    if len(members) * 2 > listings:
        return runs.every - runs.holding(np.flatnonzero(~member)), member
    return runs.holding(members), member


class _OtherRuns:
    """A small layer's runs of one group's listings: their values holding at a time, read whole."""

    def __init__(self, runs: Runs, members: IntArray, listings: int) -> None:
        member = np.zeros(listings, np.bool_)
        member[members] = True
        chosen = member[runs.listing] if len(runs.value) else np.zeros(0, np.bool_)
        self.first, self.last, self.value = runs.first[chosen], runs.last[chosen], runs.value[chosen]

    def holding_at(self, column: int) -> FloatArray:
        """The values of the runs holding at ``column``, ascending."""
        return self.value[(self.first <= column) & (column < self.last)]


def _merged(values: list[FloatArray]) -> FloatArray:
    if len(values) == 1:
        return values[0]
    return np.sort(np.concatenate(values)) if values else np.empty(0)


def _kth_with(runs: Runs, prefix: IntArray, column: int, rank: int, member: Mask | None, extra: FloatArray) -> float:
    """The value of ``rank`` (from 0) among the runs holding at ``column`` and the values ``extra`` (ascending). An
    extra value stands, among the runs' values, before those equal to it: the ``j``-th one at the place of the runs
    below it, plus ``j``; those before ``rank`` are found by bisection, and the rest of the rank is the runs'."""
    low, high = 0, len(extra)
    while low < high:
        middle = (low + high) // 2
        place = _below(runs, prefix, column, member, float(extra[middle])) + middle
        if place == rank:
            return float(extra[middle])
        if place < rank:
            low = middle + 1
        else:
            high = middle
    return _kth(runs, prefix, column, rank - low, member)


def _below(runs: Runs, prefix: IntArray, column: int, member: Mask | None, value: float) -> int:
    """How many of the runs holding at ``column`` (of the listings ``member`` marks) are of a value below ``value``."""
    at = int(np.searchsorted(runs.value, value, side="left"))
    block = at >> SHIFT
    before = int(prefix[block - 1]) if block else 0
    span = slice(block * BLOCK, at)
    holds = (runs.first[span] <= column) & (column < runs.last[span])
    if member is not None:
        holds &= member[runs.listing[span]]
    return before + int(np.count_nonzero(holds))


def _kth(runs: Runs, prefix: IntArray, column: int, rank: int, member: Mask | None) -> float:
    """The value of the run of ``rank`` (from 0) among those holding at ``column``."""
    block = int(np.searchsorted(prefix, rank, side="right"))
    before = int(prefix[block - 1]) if block else 0
    span = slice(block * BLOCK, (block + 1) * BLOCK)
    holds = (runs.first[span] <= column) & (column < runs.last[span])
    if member is not None:
        holds &= member[runs.listing[span]]
    return float(runs.value[span][np.flatnonzero(holds)[rank - before]])
