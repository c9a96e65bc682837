"""The floor plans' index moved to a later generation by the listings written since, not read again whole.

What :mod:`.column_patch` does for the column index, for :class:`~precon.service.search.plans.PlanIndex` (what a
``unitFilter`` is answered from): a write names the listings it wrote in SQLite's ``listing_writes``, and
:func:`plans_patched` reads only their plans, values and units again. The plans of the other listings keep theirs,
at positions moved by as many plans as the written ones gained or lost before them; a value or a unit status the
index never held takes a new code. The old index is not changed (a search may hold it; it may be mapped read-only
from another worker's files).

It answers None, and the index is built whole, where the column index it serves was built whole (its positions
may have moved: a listing deleted), where the held index left out plans of listings its column index lacked, or
where more listings were written than a patch saves time on. The tests hold a patched index to a whole build: the
same plans at the same positions, the same values and units per plan, and the same answers.
"""

from __future__ import annotations

import copy
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from precon.service import metrics
from precon.service.search.arrays import Splice
from precon.service.search.column_patch import WRITTEN_SINCE, too_many_written, written_since
from precon.service.search.columns import ColumnIndex, FloatArray, IntArray, Mask, catalogue_name
from precon.service.search.plan_index import PlanIndex, owners, row_ranges
from precon.service.search.plans import FieldColumns, UnitColumns, field_columns, status_codes, term_codes
from precon.service.search.unit_bounds import ANY_STATUS, StatusBounds, UnitBounds
from precon.service.search.unit_steps import FloorSteps


def plans_patched(held: PlanIndex, db: sqlite3.Connection, index: ColumnIndex) -> PlanIndex | None:
    """``held`` moved to ``index``'s generation by the listings written since its own (``db`` as it stands), or None
    where it must be built whole (see the module's docstring)."""
    started = time.perf_counter()
    listings = len(held.listing_rowids)
    if held.generation >= index.generation or not listings or len(index.rowids) < listings:
        return None
    if not np.array_equal(index.rowids[:listings], held.listing_rowids) or not held.known.all():
        return None
    began = not db.in_transaction
    if began:
        db.execute("BEGIN")  # the rows of one snapshot, whatever is written meanwhile
    try:
        since = (held.generation,)
        written = written_since(db, held.generation)
        if too_many_written(len(written), len(index.rowids)):
            return None
        rows = _Written(
            db.execute(
                f"SELECT listing, count(*) FROM listing_plans WHERE listing IN ({WRITTEN_SINCE}) "
                "GROUP BY listing ORDER BY listing",
                since,
            ).fetchall(),
            db.execute(
                f"SELECT listing, idx, field * 4 + kind, num, term FROM listing_plan_values "
                f"WHERE listing IN ({WRITTEN_SINCE}) ORDER BY rowid",
                since,
            ).fetchall(),
            db.execute(
                f"SELECT listing, idx, status, status_num, price, floor FROM listing_plan_units "
                f"WHERE listing IN ({WRITTEN_SINCE}) ORDER BY rowid",
                since,
            ).fetchall(),
            written,
        )
    finally:
        if began:
            db.execute("COMMIT")
    new = _patch(held, index, rows)
    metrics.plan_index_patched(catalogue_name(db), time.perf_counter() - started)
    return new


class _Written:
    """The written listings' rows as read again."""

    def __init__(
        self, counted: list[tuple[int, int]], values: list[tuple[Any, ...]], units: list[tuple[Any, ...]], ids: IntArray
    ) -> None:
        self.values, self.units, self.ids = values, units, ids
        self.listing = np.array([r[0] for r in counted], dtype=np.int64)
        self.count = np.array([r[1] for r in counted], dtype=np.int64)
        self.first = np.cumsum(self.count) - self.count

    def plans_of(self, rows: list[tuple[Any, ...]], position: IntArray) -> IntArray:
        """The new positions of the plans that ``rows`` (listing, index, ...) belong to (``position``: per plan read
        again, in listing then index order, its position in the new index)."""
        listing = np.array([r[0] for r in rows], dtype=np.int64)
        idx = np.array([r[1] for r in rows], dtype=np.int64)
        return position[self.first[np.searchsorted(self.listing, listing)] + idx] if len(rows) else listing


def _floats(rows: list[tuple[Any, ...]], at: int) -> FloatArray:
    """Column ``at`` of the rows as numbers (None: NaN)."""
    return np.array([np.nan if r[at] is None else r[at] for r in rows], np.float64)


def _patch(held: PlanIndex, index: ColumnIndex, rows: _Written) -> PlanIndex:
    kept = ~np.isin(held.plan_rowid, rows.ids)
    kept_count = int(kept.sum())
    added = int(rows.count.sum())
    rowid = np.concatenate([held.plan_rowid[kept], np.repeat(rows.listing, rows.count)])
    idx = np.concatenate([held.plan_idx[kept], (np.arange(added) - np.repeat(rows.first, rows.count)).astype(np.int32)])
    order = np.lexsort((idx, rowid))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    moved = np.full(held.size, -1, dtype=np.int64)
    """Per held plan, its position in the new index (-1: its listing was written, its plans read again)."""
    moved[kept] = position[:kept_count]
    added_at = position[kept_count:]
    """Per plan read again (in listing, then index order), its position in the new index."""

    new = copy.copy(held)
    new.generation, new.listings, new.listing_rowids, new.size = index.generation, index.size, index.rowids, len(order)
    new.plan_rowid, new.plan_idx = rowid[order], idx[order]
    new.known, new.owner = owners(new.plan_rowid, index.rowids)
    new.terms = dict(held.terms)
    values = rows.values
    added_fields = field_columns(
        rows.plans_of(values, added_at),
        np.array([r[2] for r in values], dtype=np.int64),
        _floats(values, 3),
        term_codes([r[4] or "" for r in values], new.terms),
        new.terms.get("true", -1),
    )
    new.fields = {name: _merged(old, added_fields[name], moved) for name, old in held.fields.items()}
    _hold(new, held, _units(held.units, rows, added_at, moved, new.size), moved)
    return new


def _merged(old: FieldColumns, added: FieldColumns, moved: IntArray) -> FieldColumns:
    """A field's values of the plans kept (at their new positions), then those of the plans read again."""
    text, boolean, number = moved[old.text_plans], moved[old.bool_plans], moved[old.number_plans]
    text_kept, bool_kept, number_kept = text >= 0, boolean >= 0, number >= 0
    return FieldColumns(
        np.concatenate([text[text_kept], added.text_plans]),
        np.concatenate([old.text_codes[text_kept], added.text_codes]),
        np.concatenate([boolean[bool_kept], added.bool_plans]),
        np.concatenate([old.bool_values[bool_kept], added.bool_values]),
        np.concatenate([number[number_kept], added.number_plans]),
        np.concatenate([old.number_values[number_kept], added.number_values]),
        np.concatenate([old.number_typed[number_kept], added.number_typed]),
    )


@dataclass
class _Merged:
    """The units' rows of a patched index, and how they were made: the held rows kept (``kept``, per held row) at
    ``kept_at``, and the rows read again (``added``, in their order) at ``added_at``."""

    units: UnitColumns
    kept: Mask
    kept_at: IntArray
    added: UnitColumns
    added_at: IntArray


def _units(old: UnitColumns, rows: _Written, position: IntArray, moved: IntArray, plans: int) -> _Merged:
    """The rows of the plans kept (their units, or the row standing for none, as they were) at their new positions,
    and those of the plans read again (``position``: theirs), grouped as a build groups them: plans never share rows,
    so the few rows read again are ordered among themselves and put in at their plans' places, the others not sorted
    again."""
    plan = moved[old.plan]
    kept = plan >= 0
    units = rows.units
    terms = dict(old.terms)
    added_plan = rows.plans_of(units, position)
    listed = np.zeros(plans, dtype=np.bool_)
    listed[plan[kept]] = old.listed[old.plan[kept]]
    listed[added_plan] = True
    bare = position[~listed[position]]
    missing = np.full(len(bare), np.nan)

    def read(at: int) -> Any:
        return np.concatenate([_floats(units, at), missing])

    added_plan = np.concatenate([added_plan, bare])
    status = np.concatenate([status_codes([r[2] or "" for r in units], terms), np.full(len(bare), -1, np.int32)])
    status_num, price, floor = read(3), read(4), read(5)
    order = np.lexsort((price, status, added_plan))
    added = UnitColumns(added_plan[order], status[order], status_num[order], price[order], floor[order], terms, listed)
    at = np.searchsorted(plan[kept], added.plan)
    merged = Splice(kept, at)
    whole = UnitColumns(
        merged(plan, added.plan),
        merged(old.status, added.status),
        merged(old.status_num, added.status_num),
        merged(old.price, added.price),
        merged(old.floor, added.floor),
        terms,
        listed,
    )
    added_at = at + np.arange(len(at))
    kept_rows = np.ones(len(whole.plan), dtype=np.bool_)
    kept_rows[added_at] = False
    return _Merged(whole, kept, np.flatnonzero(kept_rows), added, added_at)


@dataclass
class _Places:
    """Where plans and their rows go: the held plans kept (``kept_old`` in the held index, ``kept_new`` in the new
    one) and the plans read again (``added``, in the new one, whose rows were bounded from ``part_first``)."""

    size: int
    kept_old: IntArray
    kept_new: IntArray
    added: IntArray
    part_first: IntArray
    first_row: IntArray
    end_row: IntArray
    held_first_row: IntArray

    def column(self, before: Any, now: Any, absent: float, dtype: Any) -> Any:
        out = np.empty(self.size, dtype=dtype)
        out[self.kept_new] = absent if before is None else before[self.kept_old]
        out[self.added] = absent if now is None else now
        return out

    def first(self, before: StatusBounds | None, now: StatusBounds | None) -> IntArray:
        """The first row of a status in each plan: at the same offset from the plan's first row as it was; for a
        status no held unit had, after all of a held plan's rows (its code is the highest)."""
        first: IntArray = np.empty(self.size, dtype=np.int64)
        kept_old, kept_new = self.kept_old, self.kept_new
        first[kept_new] = self.end_row[kept_new] if before is None else (
            before.first[kept_old] - self.held_first_row[kept_old] + self.first_row[kept_new])  # fmt: skip
        if now is not None:
            first[self.added] = now.first - self.part_first + self.first_row[self.added]
        return first


def _hold(new: PlanIndex, held: PlanIndex, merged: _Merged, moved: IntArray) -> None:
    """The patched index's units, with each plan's bounds and each row's floor steps: those of the plans kept
    carried over to their new positions, those of the plans read again made from their rows alone."""
    units, added = merged.units, merged.added
    first_row, end_row = row_ranges(units.plan, new.size)
    added_plans = np.unique(added.plan)
    part_first = np.searchsorted(added.plan, added_plans, side="left")
    part = UnitBounds(added.status, added.price, added.floor, part_first, units.terms)
    kept_old = np.flatnonzero(moved >= 0)
    places = _Places(new.size, kept_old, moved[kept_old], added_plans, part_first, first_row, end_row, held.first_row)
    by_status: dict[int, StatusBounds] = {}
    for code in (ANY_STATUS, *sorted(units.terms.values())):
        before, now = held.bounds.by_status.get(code), part.by_status.get(code)

        def column(name: str, absent: float, dtype: Any, before: Any = before, now: Any = now) -> Any:
            return places.column(getattr(before, name, None), getattr(now, name, None), absent, dtype)

        by_status[code] = StatusBounds(
            column("units", 0, np.int64),
            column("low_price", np.inf, np.float64),
            column("high_price", -np.inf, np.float64),
            column("low_floor", np.inf, np.float64),
            column("high_floor", -np.inf, np.float64),
            places.first(before, now),
            column("priced_floor", -np.inf, np.float64),
        )
    new.hold_units(units, UnitBounds.of_statuses(units.terms, by_status), _steps(held.steps, merged))


def _steps(held: FloorSteps, merged: _Merged) -> FloorSteps:
    """Each row's floor steps: the kept rows' as they were, the rows read again ranked by the same floors (a floor
    no unit was on changes every rank: then all are made again)."""
    added, units = merged.added, merged.units
    floors = np.unique(added.floor[~np.isnan(added.floor)])
    if not np.isin(floors, held.floors).all():
        return FloorSteps(units.plan, units.status, units.floor)
    part = FloorSteps(added.plan, added.status, added.floor, floors=held.floors)
    steps = copy.copy(held)
    steps.highest = np.empty(len(units.plan), dtype=held.highest.dtype)
    steps.highest[merged.kept_at] = held.highest[merged.kept]
    steps.highest[merged.added_at] = part.highest
    return steps
