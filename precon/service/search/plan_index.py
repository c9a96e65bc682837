"""The floor plans of one store generation in numpy columns: what a ``unitFilter`` is answered from in the service.

:class:`PlanIndex` reads every plan's rows (:mod:`.plans` says which) in one scan and tests every plan at once,
reducing to the listings that own a matching plan; :mod:`.plan_patch` moves one to a later generation.
"""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import numpy.typing as npt

from precon.filters import Expr, Match, names_units, numeric_bounds
from precon.service.search.arrays import ranges
from precon.service.search.column_patch import WRITTEN_SINCE
from precon.service.search.plans import (
    PLAN_FIELDS,
    UNIT_COLUMNS_SQL,
    IntArray,
    Leaf,
    Mask,
    PlanMatch,
    UnitColumns,
    combined,
    field_code,
    field_columns,
    joined_numbers,
    match_targets,
    term_codes,
    unit_or_plan,
)
from precon.service.search.unit_bounds import Candidates, UnitBounds
from precon.service.search.unit_steps import FloorSteps


def _stepped(candidates: Candidates) -> bool:
    """Whether the unit conditions are one status, a price under a bound and a floor from one up (and no more): what
    :class:`FloorSteps` answers exactly."""
    (price_low, price_high), (floor_low, floor_high) = candidates.price, candidates.floor
    return (
        candidates.status is not None
        and candidates.status >= 0
        and price_low == -math.inf
        and price_high < math.inf
        and floor_low > -math.inf
        and floor_high == math.inf
    )


SPARSE_SHARE = 16
"""A unit filter whose candidate plans hold under a sixteenth of the units tests only theirs (gathering them costs
five times a test of every unit)."""


def owners(plan_rowid: IntArray, listing_rowids: IntArray) -> tuple[Mask, IntArray]:
    """Per plan, whether the column index holds its listing (one written after it was built is left out), and the
    position of its listing there (0 where it is not held)."""
    position = np.searchsorted(listing_rowids, plan_rowid)
    known = position < len(listing_rowids)
    known[known] = listing_rowids[position[known]] == plan_rowid[known]
    return known, np.where(known, position, 0)


def row_ranges(plan: IntArray, plans: int) -> tuple[IntArray, IntArray]:
    """Each plan's first row and the row after its last, of rows grouped by plan (in plan order)."""
    counts = np.bincount(plan, minlength=plans)[:plans]
    end = np.cumsum(counts)
    return end - counts, end


class PlanIndex:
    """Every floor plan of one store generation in columns: plans ordered by listing rowid, then index."""

    known: Mask
    """Plans of listings the column index holds (one written after it was built is left out)."""
    owner: IntArray
    """Per plan, the position of its listing in the column index."""

    def __init__(
        self, db: sqlite3.Connection, listing_rowids: IntArray, generation: int, written_since: int | None = None
    ) -> None:
        """Every plan of the listings of ``listing_rowids`` (the column index's), read in ``db``; with
        ``written_since``, only the plans of the listings written after that generation (a layer: see
        :mod:`.plan_layers`)."""
        self.generation = generation
        self.listings = len(listing_rowids)
        only, since = "", ()
        if written_since is not None:
            only, since = f" WHERE listing IN ({WRITTEN_SINCE})", (written_since,)
        began = not db.in_transaction
        if began:
            db.execute("BEGIN")  # both reads from one snapshot, whatever is written meanwhile
        try:
            per_listing = db.execute(
                f"SELECT listing, count(*) FROM listing_plans{only} GROUP BY listing ORDER BY listing", since
            )
            counted = per_listing.fetchall()
            # Values come back as comma-joined columns of one scan: millions of rows, parsed in C. quote() writes
            # a REAL with the digits it takes to read back the same double.
            values = db.execute(
                "SELECT group_concat(listing), group_concat(idx), group_concat(field * 4 + kind), "
                "group_concat(CASE WHEN num IS NULL THEN 'nan' ELSE quote(num) END), "
                f"group_concat(ifnull(term, ''), char(31)) FROM listing_plan_values{only}",
                since,
            ).fetchone()
            units = [db.execute(UNIT_COLUMNS_SQL + only, since).fetchone()]  # handed over: its text freed once read
        finally:
            if began:
                db.execute("COMMIT")
        plan_listing = np.array([row[0] for row in counted], dtype=np.int64)
        plan_count = np.array([row[1] for row in counted], dtype=np.int64)
        self.size = int(plan_count.sum())
        first_plan = np.cumsum(plan_count) - plan_count
        self.listing_rowids = listing_rowids
        """The column index's listings (by position) this index was made for."""
        self.plan_rowid: IntArray = np.repeat(plan_listing, plan_count)
        """Per plan, its listing's row id (what a patch, :mod:`.plan_patch`, finds a listing's plans by)."""
        self.plan_idx: npt.NDArray[np.int32] = (np.arange(self.size) - np.repeat(first_plan, plan_count)).astype(
            np.int32
        )
        """Per plan, its position among its listing's plans."""
        self.known, self.owner = owners(self.plan_rowid, listing_rowids)

        value_listing = joined_numbers(values[0], np.int64)
        value_plan = first_plan[np.searchsorted(plan_listing, value_listing)] + joined_numbers(values[1], np.int64)
        field_kind = joined_numbers(values[2], np.int64)
        num = joined_numbers(values[3], np.float64)
        lookup: dict[str, int] = {}
        codes = term_codes((values[4] or "").split("\x1f") if len(value_listing) else [], lookup)
        del values, value_listing  # their text and copies, before the units are read
        self.terms = lookup
        """Every folded text value (and ``true``/``false``), by code."""
        self.fields = field_columns(value_plan, field_kind, num, codes, lookup.get("true", -1))
        self.hold_units(UnitColumns.of(units.pop(), plan_listing, first_plan, self.size))

    @property
    def first_row(self) -> IntArray:
        """Per plan, its first unit row (a plan without units has one row standing for none)."""
        return self._first_row

    def hold_units(self, units: UnitColumns, bounds: UnitBounds | None = None, steps: FloorSteps | None = None) -> None:
        """The unit rows, each plan's range of them, and each plan's bounds (made from the rows unless given)."""
        self.units = units
        self._first_row, self._end_row = row_ranges(units.plan, self.size)
        self.bounds = bounds or UnitBounds(units.status, units.price, units.floor, self._first_row, units.terms)
        self.steps = steps or FloorSteps(units.plan, units.status, units.floor)
        # Each listing's plans are a range (plans are ordered by listing): where it starts, and how many.
        held = np.flatnonzero(self.known)
        self._plan_count: IntArray = np.bincount(self.owner[held], minlength=self.listings)
        starts = np.searchsorted(self.owner[held], np.arange(self.listings))
        self._plan_start: IntArray = held[np.minimum(starts, len(held) - 1)] if len(held) else self._plan_count

    def page_matches(self, expr: Expr, positions: IntArray) -> list[PlanMatch]:
        """For each listing (by position in the column index), the plans ``expr`` holds for and how many of their
        units: ``_matchedFloorPlans`` from the page's few plans, without reading their documents."""
        first, count = self._plan_start[positions], self._plan_count[positions]
        plans = ranges(first, first + count)
        held: Mask = np.zeros(len(plans), dtype=np.bool_)
        units: IntArray = np.zeros(len(plans), dtype=np.int64)
        if len(plans) and names_units(expr):
            rows = self._end_row[plans] - self._first_row[plans]  # one at least: a plan without units has its row
            taken = self.units.take(ranges(self._first_row[plans], self._end_row[plans]))
            matched = self._rows(expr, taken)
            starts = np.cumsum(rows) - rows
            held = np.logical_or.reduceat(matched, starts)
            units = np.add.reduceat((matched & taken.listed[taken.plan]).astype(np.int64), starts)
        elif len(plans):
            held = self._plans(expr)[plans]
        local = plans - np.repeat(first, count)
        found: list[PlanMatch] = []
        for start, size in zip((np.cumsum(count) - count).tolist(), count.tolist(), strict=True):
            mine = slice(start, start + size)
            found.append(PlanMatch(local[mine][held[mine]].tolist(), int(units[mine][held[mine]].sum()), size))
        return found

    def none(self) -> Mask:
        return np.zeros(self.size, dtype=np.bool_)

    def listings_matching(self, expr: Expr, among: Mask | None = None) -> Mask:
        """Per listing position, whether one of its plans satisfies ``expr``; with ``among``, only those listings
        are asked about (the others are False). Where the plans that may hold such a unit (:mod:`.unit_bounds`) among
        them are few, only their units are tested, not millions."""
        result = np.zeros(self.listings, dtype=np.bool_)
        if names_units(expr):
            candidates = self.bounds.candidates(expr, self.size)
            asked = self.known if among is None else self.known & among[self.owner]
            if candidates is not None and (candidates.exact or _stepped(candidates)):
                for condition in candidates.on_plans:
                    asked = asked & self._plans(condition)
                if candidates.exact:
                    result[self.owner[asked & candidates.plans]] = True
                else:  # a status, a price under a bound and a floor from one up: each candidate plan's steps answer
                    plans = np.flatnonzero(asked & candidates.plans)
                    result[self.owner[plans[self._by_steps(candidates, plans)]]] = True
                return result
            plans = np.flatnonzero(asked if candidates is None else asked & candidates.plans)
            rows = int((self._end_row[plans] - self._first_row[plans]).sum())
            if rows * SPARSE_SHARE < len(self.units.plan):
                units = self.units.take(ranges(self._first_row[plans], self._end_row[plans]))
                result[self.owner[units.plan[self._rows(expr, units)]]] = True
                return result
        result[self.owner[self.plans_matching(expr) & self.known]] = True
        return result & among if among is not None else result

    def _by_steps(self, candidates: Candidates, plans: IntArray) -> Mask:
        """Per plan, whether it holds a unit of the candidates' status priced under their price bound on their floor
        or higher: where every priced unit of that status is under the price, its highest priced one says; else its
        steps (:class:`FloorSteps`) over its units of that status, a range of its rows by price."""
        assert candidates.status is not None
        found = self.bounds.by_status[candidates.status]
        most, least = candidates.price[1], candidates.floor[0]
        under = found.high_price[plans] <= most
        result: Mask = under & (found.priced_floor[plans] >= least)
        straddle = plans[~under]
        first, count = found.first[straddle], found.units[straddle]
        result[~under] = self.steps.any_unit(self.units.price, first, count, most, least)
        return result

    def plans_matching(self, expr: Expr) -> Mask:
        if not names_units(expr):
            return self._plans(expr)
        rows = self._rows(expr, self.units)
        if not self.size:
            return self.none()
        # Every plan holds a range of rows (one with no unit where it lists none): whether any of a plan's rows
        # holds, range by range, costs a fifth of gathering the matched rows' plans.
        any_row: Mask = np.logical_or.reduceat(rows, self._first_row)
        return any_row

    def _rows(self, expr: Expr, units: UnitColumns) -> Mask:
        """Per row of ``units`` (a unit with its plan), whether ``expr`` holds for it."""
        return combined(expr, lambda leaf: unit_or_plan(leaf, units, lambda test: self._plans(test)[units.plan]))

    def _plans(self, expr: Expr) -> Mask:
        return combined(expr, self._plan_test)

    def _plan_test(self, expr: Leaf) -> Mask:
        """Per plan, whether it meets one test of a field of its own."""
        columns = self.fields[PLAN_FIELDS[field_code(expr.attr)]]
        result = self.none()
        if isinstance(expr, Match):
            folded, word, number = match_targets(expr)
            code = self.terms.get(folded)
            if code is not None:
                result[columns.text_plans[columns.text_codes == code]] = True
            if word is not None:
                result[columns.bool_plans[columns.bool_values == (word == "true")]] = True
            if number is not None:
                hit = (columns.number_values == number) & columns.number_typed
                result[columns.number_plans[hit]] = True
            return result
        low, high = numeric_bounds(expr)
        values = columns.number_values
        result[columns.number_plans[(values >= low) & (values <= high)]] = True
        return result
