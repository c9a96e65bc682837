"""(ours) Market columns moved to a new generation by the listings a write wrote: :func:`combined` keeps the held
columns of every other listing and puts in the written listings' columns, built on their own over the held grid's
times (:mod:`.sqlite.market_patch` says which listings and reads them). Nothing of the catalogue is read again.

Each listing's part of the columns is its own: its parts (and their rows of the grid's counts, their counted
entries, their available runs) and its launches, numbered after the listings before it. So the combined columns are
the kept listings' and the written ones' taken in the order of their ids, numbered again; the written listings' runs
are merged in among the kept ones by value (their order is the medians'), nothing is sorted again. The tests hold the
result to a whole build (runs of one value may stand in another order: the medians do not see it).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from precon.service.search.arrays import ranges
from precon.service.stores.market_grid import MarketGrid, Runs
from precon.service.stores.market_stats import IntArray, MarketColumns, event_months

T = TypeVar("T", bound=np.generic)
V = TypeVar("V")


def combined(held: MarketColumns, written: Sequence[str], fresh: MarketColumns) -> MarketColumns:
    """``held`` without the listings of ``written``, with ``fresh``'s (those of ``written`` that still exist, built
    over ``held``'s grid times), listings in the order of their ids. Both must have a grid."""
    assert held.grid is not None and fresh.grid is not None
    order = ListingOrder(held.listing_codes, set(written), fresh.listing_codes)
    parts = Taken(held.part_first, fresh.part_first, order.take)
    part_of = parts.renumbered()
    events = Taken(held.event_first, fresh.event_first, parts.rows)
    launches = Taken(held.launch_first, fresh.launch_first, order.take)
    event_at, event_kind = events.pick(held.event_at, fresh.event_at), events.pick(held.event_kind, fresh.event_kind)
    counts = parts.pick(held.grid.counts, fresh.grid.counts)
    after = int(held.part_first[-1])
    grid = MarketGrid(
        held.grid.times,
        counts,
        _runs(held.grid.prices, fresh.grid.prices, after, part_of, parts.rows),
        _runs(held.grid.per_sqft, fresh.grid.per_sqft, after, part_of, parts.rows),
    )
    assert held.listing_counts is not None and fresh.listing_counts is not None
    return MarketColumns(
        listing_codes=dict(zip(order.ids, range(len(order.ids)), strict=True)),
        listing_provinces=order.picked(held.listing_provinces, fresh.listing_provinces),
        part_first=parts.first,
        plan_parts=_plan_parts(held, fresh, part_of),
        grid=grid,
        listing_counts=order.pick(held.listing_counts, fresh.listing_counts),
        event_first=events.first,
        event_at=event_at,
        event_kind=event_kind,
        event_months=event_months(event_at, event_kind),
        launch_first=launches.first,
        launch_at=launches.pick(held.launch_at, fresh.launch_at),
        listing_deleted=order.pick(held.listing_deleted, fresh.listing_deleted),
        history_seq=fresh.history_seq,
    )


class ListingOrder:
    """The combined listings' ids in order (``held`` and ``fresh``: codes by id, in the order of their ids; those of
    ``written`` left out of ``held``), and where each comes from: ``take`` holds a held listing's code, or a fresh
    one's code after the held ones."""

    def __init__(self, held: dict[str, int], written: set[str], fresh: dict[str, int]) -> None:
        kept = [(listing, code) for listing, code in held.items() if listing not in written]
        ids = [listing for listing, _ in kept]
        take = [code for _, code in kept]
        after = len(held)
        for listing, code in fresh.items():  # few, in the order of their ids
            at = bisect.bisect_left(ids, listing)
            ids.insert(at, listing)
            take.insert(at, after + code)
        self.ids = ids
        self.take = np.array(take, np.int64)

    def pick(self, held: npt.NDArray[T], fresh: npt.NDArray[T]) -> npt.NDArray[T]:
        """A per-listing column (``held``'s, then ``fresh``'s) in the combined listings' order."""
        return np.concatenate([held, fresh])[self.take]

    def picked(self, held: list[V], fresh: list[V]) -> list[V]:
        """A per-listing list (``held``'s, then ``fresh``'s) in the combined listings' order."""
        both = [*held, *fresh]
        return [both[source] for source in self.take.tolist()]


class Taken:
    """Rows owned in runs (a listing's parts, a part's entries) taken for the owners ``owners`` (held ones, then
    fresh ones after them, as :class:`ListingOrder` numbers them): the rows (held ones, then fresh ones), and each
    owner's first row in the result, one more."""

    def __init__(self, held_first: IntArray, fresh_first: IntArray, owners: IntArray) -> None:
        starts = np.concatenate([held_first[:-1], held_first[-1] + fresh_first[:-1]])
        ends = np.concatenate([held_first[1:], held_first[-1] + fresh_first[1:]])
        self.sources = int(held_first[-1] + fresh_first[-1])
        self.rows = ranges(starts[owners], ends[owners])
        self.first = np.concatenate([[0], np.cumsum(ends[owners] - starts[owners])]).astype(np.int64)

    def pick(self, held: npt.NDArray[T], fresh: npt.NDArray[T]) -> npt.NDArray[T]:
        """A column of the rows (``held``'s, then ``fresh``'s) as taken."""
        return np.concatenate([held, fresh])[self.rows]

    def renumbered(self) -> IntArray:
        """Per row of the sources (held ones, then fresh ones), its number in the result (-1: not taken), and -1
        once more at the end (so that a row -1, none, stays -1)."""
        found = np.full(self.sources + 1, -1, np.int64)
        found[self.rows] = np.arange(len(self.rows))
        return found


def _runs(held: Runs, fresh: Runs, after: int, part_of: IntArray, parts: IntArray) -> Runs:
    """The kept parts' runs with the fresh ones (their parts numbered from ``after``) merged in by value, the parts
    numbered again (``part_of``; -1: dropped) and taken in the order ``parts`` (held ones, then fresh ones) gives.
    The kept runs keep their order, within the values and within their parts: nothing is sorted again."""
    kept = np.flatnonzero(part_of[held.listing] >= 0)
    at = np.searchsorted(held.value[kept], fresh.value, side="right")  # the kept run each fresh one goes before
    kept_at = np.arange(len(kept)) + np.searchsorted(at, np.arange(len(kept)), side="right")
    fresh_at = at + np.arange(len(at))
    size = len(kept) + len(at)
    merged = []
    for held_column, fresh_column in (
        (part_of[held.listing], part_of[after + fresh.listing.astype(np.int64)]),
        (held.first, fresh.first),
        (held.last, fresh.last),
        (held.value, fresh.value),
    ):
        column = np.empty(size, held_column.dtype)
        column[kept_at] = held_column[kept]
        column[fresh_at] = fresh_column
        merged.append(column)
    held_place = np.full(len(held.value), -1, np.int64)
    held_place[kept] = kept_at
    slots = Taken(held.listing_first, fresh.listing_first, parts)
    places = np.concatenate([held_place[held.by_listing], fresh_at[fresh.by_listing]])[slots.rows]
    return Runs.laid_out(*merged, places, slots.first, held.width)


def _plan_parts(held: MarketColumns, fresh: MarketColumns, part_of: IntArray) -> dict[str, dict[str, IntArray]]:
    """Per plan attribute and key, the parts holding it, numbered again (a key no part holds any longer left out)."""
    after = int(held.part_first[-1])
    found: dict[str, dict[str, IntArray]] = {}
    for path in {*held.plan_parts, *fresh.plan_parts}:
        keys: dict[str, IntArray] = {}
        held_keys, fresh_keys = held.plan_parts.get(path, {}), fresh.plan_parts.get(path, {})
        for key in {*held_keys, *fresh_keys}:
            sources = [held_keys.get(key, np.empty(0, np.int64)), after + fresh_keys.get(key, np.empty(0, np.int64))]
            parts = part_of[np.concatenate(sources)]
            parts = np.sort(parts[parts >= 0])
            if len(parts):
                keys[key] = parts
        found[path] = keys
    return found
