"""Floor plans as rows of their own: what ``unitFilter`` tests, in SQL and in numpy columns.

A ``unitFilter`` is a filter expression over the fields of one floor plan (:data:`precon.filters.UNIT_FIELDS`);
a listing matches when at least one of its floor plans satisfies the whole expression. The reference is
``any(filters.evaluate(expr, plan) for plan in floor_plans(listing))``, and both engines here give its answers:

* ``listing_plans`` holds one row per floor plan (the listing's rowid and the plan's index among its plans), so
  that ``NOT`` holds for a plan that lacks a field, as the evaluator has it;
* ``listing_plan_values`` holds one row per value of a unit field of a plan (an array field gives one row per
  element), typed as the evaluator reads it: text (folded as :func:`precon.filters.fold_text` folds, with its
  numeric reading, if any, for comparisons), a boolean, or a number.

The SQL engine tests a listing with ``EXISTS`` over its plans; the column engine (:class:`PlanIndex`) tests
every plan at once in numpy and reduces to the listings that own a matching plan.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from precon.filters import (
    UNIT_FIELDS,
    UNIT_PREFIX,
    And,
    Compare,
    Expr,
    Match,
    Not,
    Or,
    Range,
    fold_text,
    numeric_bounds,
)
from precon.filters.parsing import parse_number
from precon.filters.plans import names_units, number_of
from precon.service.search.arrays import ranges
from precon.service.search.sql_filter import as_number
from precon.service.search.unit_bounds import Candidates, UnitBounds
from precon.service.search.unit_steps import FloorSteps

Fragment = tuple[str, list[Any]]
Mask = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

PLAN_FIELDS = tuple(name for name in UNIT_FIELDS if not name.startswith(UNIT_PREFIX))
"""The fields of the plan itself; the others (``units.*``) are of one of its units."""
FIELD_CODES: dict[str, int] = {name: code for code, name in enumerate(PLAN_FIELDS)}
TEXT, BOOL, NUMBER = 0, 1, 2
"""The kinds of a stored value: how the evaluator compares it."""

PLAN_SCHEMA = """
CREATE TABLE IF NOT EXISTS listing_plans(
  listing INTEGER NOT NULL, idx INTEGER NOT NULL, PRIMARY KEY(listing, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS listing_plan_values(
  listing INTEGER NOT NULL, idx INTEGER NOT NULL, field INTEGER NOT NULL, kind INTEGER NOT NULL, term TEXT, num REAL);
CREATE INDEX IF NOT EXISTS listing_plan_values_by_plan ON listing_plan_values(listing, idx, field);
CREATE TABLE IF NOT EXISTS listing_plan_units(
  listing INTEGER NOT NULL, idx INTEGER NOT NULL, status TEXT, status_num REAL, price REAL, floor REAL);
CREATE INDEX IF NOT EXISTS listing_plan_units_by_plan ON listing_plan_units(listing, idx);
"""
PLAN_TABLES = ("listing_plan_values", "listing_plan_units", "listing_plans")

PlanRow = tuple[int, int]
ValueRow = tuple[int, int, int, int, str | None, float | None]
UnitRow = tuple[int, int, str | None, float | None, float | None, float | None]


def floor_plans(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A listing's floor plans: the objects of its ``floorPlans`` (one object counts as one plan)."""
    plans = record.get("floorPlans")
    if isinstance(plans, dict):
        return [plans]
    if isinstance(plans, list):
        return [plan for plan in plans if isinstance(plan, dict)]
    return []


def _value_row(rowid: int, index: int, field: int, value: Any) -> ValueRow | None:
    if isinstance(value, str):
        return (rowid, index, field, TEXT, fold_text(value), as_number(value))
    if isinstance(value, bool):
        return (rowid, index, field, BOOL, "true" if value else "false", None)
    if isinstance(value, int | float):
        return (rowid, index, field, NUMBER, None, as_number(value))
    return None  # objects, nested arrays: the evaluator matches nothing in them


def plan_rows(record: dict[str, Any], rowid: int) -> tuple[list[PlanRow], list[ValueRow], list[UnitRow]]:
    """The rows of ``listing_plans``, ``listing_plan_values`` and ``listing_plan_units`` for one stored listing."""
    plans: list[PlanRow] = []
    values: list[ValueRow] = []
    units: list[UnitRow] = []
    for index, plan in enumerate(floor_plans(record)):
        plans.append((rowid, index))
        one_plan_rows(plan, rowid, index, values, units)
    return plans, values, units


def one_plan_rows(plan: dict[str, Any], rowid: int, index: int, values: list[ValueRow], units: list[UnitRow]) -> None:
    """Adds the rows of ``listing_plan_values`` and ``listing_plan_units`` of the listing's plan ``index``."""
    for name, field in FIELD_CODES.items():
        raw = plan.get(name)
        for value in raw if isinstance(raw, list | tuple) else () if raw is None else (raw,):
            row = _value_row(rowid, index, field, value)
            if row is not None:
                values.append(row)
    listed = plan.get("units")
    for unit in listed if isinstance(listed, list) else ():
        if isinstance(unit, dict):
            status = unit.get("status")
            folded, status_number = status_reading(status) if isinstance(status, str) else (None, None)
            units.append(
                (rowid, index, folded, status_number, number_of(unit.get("price")), number_of(unit.get("floor")))
            )


def status_reading(status: str) -> tuple[str, float | None]:
    """A unit status as ``listing_plan_units`` stores it: folded, and its numeric reading. A plan's hundreds of
    units share a few statuses, so the short ones are read once (:func:`_short_status_reading`)."""
    if len(status) <= _CACHED_STATUS_LENGTH:
        return _short_status_reading(status)
    return fold_text(status), as_number(status)


_CACHED_STATUS_LENGTH = 64


@functools.lru_cache(maxsize=512)
def _short_status_reading(status: str) -> tuple[str, float | None]:
    return fold_text(status), as_number(status)


PLAN_ROW_DELETES = (
    "DELETE FROM listing_plans WHERE listing = ?",
    "DELETE FROM listing_plan_values WHERE listing = ?",
    "DELETE FROM listing_plan_units WHERE listing = ?",
)
"""The statements that delete a listing's plan rows, given its row id."""


def delete_plan_rows(db: sqlite3.Connection, rowid: int) -> None:
    for sql in PLAN_ROW_DELETES:
        db.execute(sql, (rowid,))


def field_code(name: str) -> int:
    code = FIELD_CODES.get(name)
    if code is None:
        raise ValueError(f"{name!r} is not a floor plan field; use one of {', '.join(UNIT_FIELDS)}")
    return code


def unit_column(name: str) -> str:
    """The column of ``listing_plan_units`` (and of :class:`UnitColumns`) a ``units.*`` field is."""
    column = name[len(UNIT_PREFIX) :]
    if column not in ("status", "price", "floor"):
        raise ValueError(f"{name!r} is not a unit field; use one of units.price, units.floor, units.status")
    return column


def match_targets(expr: Match) -> tuple[str, str | None, float | None]:
    """What a Match compares each kind of value with: folded text, ``true``/``false``, a number."""
    folded = fold_text(expr.value)
    word = {"true": "true", "1": "true", "false": "false", "0": "false"}.get(folded)
    number = parse_number(expr.value.strip())
    return folded, word, None if number is None else float(number)


# ----------------------------------------------------------------------------------------------------------
# SQL
# ----------------------------------------------------------------------------------------------------------


class UnitFilterCompiler:
    """Turns a unit expression into SQL over one floor plan ``p`` (a row of ``listing_plans``)."""

    def listing_clause(self, expr: Expr) -> Fragment:
        """The listings ``l`` with at least one floor plan (and, where ``expr`` names units, one unit ``u`` of it;
        a plan without units once, its ``u`` null) for which ``expr`` holds."""
        sql, params = self.compile(expr)
        if names_units(expr):
            rows = "listing_plans p LEFT JOIN listing_plan_units u ON u.listing = p.listing AND u.idx = p.idx"
            return f"EXISTS (SELECT 1 FROM {rows} WHERE p.listing = l.id AND ({sql}))", params
        return f"EXISTS (SELECT 1 FROM listing_plans p WHERE p.listing = l.id AND ({sql}))", params

    def compile(self, expr: Expr) -> Fragment:
        if isinstance(expr, And | Or):
            parts, params = [], []
            for item in expr.items:
                sql, item_params = self.compile(item)
                parts.append(f"({sql})")
                params += item_params
            return (" AND " if isinstance(expr, And) else " OR ").join(parts), params
        if isinstance(expr, Not):
            sql, params = self.compile(expr.expr)
            return f"NOT ({sql})", params
        if isinstance(expr, Compare) and expr.op == "!=":
            return self.compile(Not(Compare(expr.attr, "=", expr.value)))
        if expr.attr.startswith(UNIT_PREFIX):
            return self._unit_test(expr)
        field = field_code(expr.attr)
        if isinstance(expr, Match):
            folded, word, number = match_targets(expr)
            tests, params = [f"v.kind = {TEXT} AND v.term = ?"], [folded]
            if word is not None:
                tests.append(f"v.kind = {BOOL} AND v.term = ?")
                params.append(word)
            if number is not None:
                tests.append(f"v.kind = {NUMBER} AND v.num = ?")
                params.append(number)
            return self._exists(field, " OR ".join(f"({t})" for t in tests), params)
        low, high = numeric_bounds(expr)
        return self._exists(field, "v.num BETWEEN ? AND ?", [low, high])

    @staticmethod
    def _unit_test(expr: Match | Compare | Range) -> Fragment:
        """A test of unit ``u``'s field: false where the plan has no unit (``u`` null), as a missing field is."""
        column = unit_column(expr.attr)
        if isinstance(expr, Match):
            folded, _, number = match_targets(expr)
            if column == "status":
                return "coalesce(u.status = ?, 0)", [folded]
            if number is None:
                return "0", []
            return f"coalesce(u.{column} = ?, 0)", [number]
        low, high = numeric_bounds(expr)
        numeric = "u.status_num" if column == "status" else f"u.{column}"
        return f"coalesce({numeric} BETWEEN ? AND ?, 0)", [low, high]

    @staticmethod
    def _exists(field: int, test: str, params: list[Any]) -> Fragment:
        return (
            "EXISTS (SELECT 1 FROM listing_plan_values v WHERE v.listing = p.listing AND v.idx = p.idx "
            f"AND v.field = ? AND ({test}))",
            [field, *params],
        )


# ----------------------------------------------------------------------------------------------------------
# Columns
# ----------------------------------------------------------------------------------------------------------


@dataclass
class FieldColumns:
    """One unit field's values over every plan: each value with the plan (position) holding it."""

    text_plans: IntArray
    text_codes: npt.NDArray[np.int32]
    """The code of each text value's folded form in :attr:`PlanIndex.terms`."""
    bool_plans: IntArray
    bool_values: Mask
    number_plans: IntArray
    number_values: FloatArray
    """Numbers and the numeric readings of text (``"750"``), as the evaluator compares them."""
    number_typed: Mask
    """True where the value is a number (what ``field:750`` matches); False where it is numeric text."""


def _numbers(text: str | None, dtype: type[np.generic]) -> npt.NDArray[Any]:
    """A column SQLite joined with commas, parsed in C rather than one Python object per row."""
    return np.fromstring(text, dtype=dtype, sep=",") if text else np.empty(0, dtype)  # type: ignore[call-overload]


_UNIT_COLUMNS_SQL = (
    "SELECT group_concat(listing), group_concat(idx), group_concat(ifnull(status, ''), char(31)), "
    "group_concat(CASE WHEN status_num IS NULL THEN 'nan' ELSE quote(status_num) END), "
    "group_concat(CASE WHEN price IS NULL THEN 'nan' ELSE quote(price) END), "
    "group_concat(CASE WHEN floor IS NULL THEN 'nan' ELSE quote(floor) END) FROM listing_plan_units"
)


@dataclass
class UnitColumns:
    """Every unit of every plan as a row, and one row with no unit for each plan that lists none: what a
    ``unitFilter`` naming ``units.*`` is tested on, one row at a time."""

    plan: IntArray
    """The plan (position) of each row."""
    status: npt.NDArray[np.int32]
    """The code of the row's folded status in :attr:`terms`, -1 for none."""
    status_num: FloatArray
    price: FloatArray
    floor: FloatArray
    terms: dict[str, int]
    listed: Mask
    """Per plan (not per row), whether it lists units: its rows are units, not the one row standing for none."""

    @classmethod
    def of(cls, row: tuple[Any, ...], plan_listing: IntArray, first_plan: IntArray, plans: int) -> UnitColumns:
        listing = _numbers(row[0], np.int64)
        plan = (
            first_plan[np.searchsorted(plan_listing, listing)] + _numbers(row[1], np.int64) if len(listing) else listing
        )
        terms: dict[str, int] = {}
        texts = (row[2] or "").split("\x1f") if len(listing) else []
        status = np.fromiter(
            (terms.setdefault(t, len(terms)) if t else -1 for t in texts), dtype=np.int32, count=len(texts)
        )
        numbers = [_numbers(row[column], np.float64) for column in (3, 4, 5)]  # status_num, price, floor
        del texts, row, listing  # the text read (hundreds of megabytes), once parsed
        listed = np.bincount(plan, minlength=plans) > 0 if plans else np.zeros(0, np.bool_)
        bare = np.flatnonzero(~listed)
        plan = np.concatenate([plan, bare]).astype(np.int64)
        missing = np.full(len(bare), np.nan)
        status = np.concatenate([status, np.full(len(bare), -1, np.int32)])
        # Rows grouped by plan (a plan's rows are a range), then by status, then by price (NaN last), as
        # :class:`FloorSteps` reads them. Each column is ordered in turn, so that few are held twice.
        order = np.lexsort((np.concatenate([numbers[1], missing]), status, plan))

        def ordered(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
            return np.concatenate([values, missing])[order]

        plan, status = plan[order], status[order]
        status_num, price, floor = (ordered(numbers.pop(0)) for _ in range(3))
        return cls(plan, status, status_num, price, floor, terms, listed)

    def take(self, rows: IntArray) -> UnitColumns:
        """These rows only (in this order)."""
        return UnitColumns(
            self.plan[rows],
            self.status[rows],
            self.status_num[rows],
            self.price[rows],
            self.floor[rows],
            self.terms,
            self.listed,
        )

    def matching(self, expr: Match | Compare | Range) -> Mask:
        """Per row, whether its unit meets a test of a ``units.*`` field (never, for a row with no unit)."""
        column = unit_column(expr.attr)
        if isinstance(expr, Match):
            folded, _, number = match_targets(expr)
            if column == "status":
                return self.status == self.terms.get(folded, -2)
            values: FloatArray = getattr(self, column)
            return values == number if number is not None else np.zeros(len(self.plan), dtype=np.bool_)
        low, high = numeric_bounds(expr)
        values = self.status_num if column == "status" else getattr(self, column)
        # One comparison where a bound is open ("under $700,000"): each is a pass over millions of units.
        if low == -math.inf:
            return values <= high
        if high == math.inf:
            return values >= low
        return (values >= low) & (values <= high)


Leaf = Match | Compare | Range
"""One test of one field: what :func:`combined` combines."""


def combined(expr: Expr, leaf: Callable[[Leaf], Mask]) -> Mask:
    """``expr``'s mask from its tests' (``leaf``): AND, OR and NOT over them, ``a != v`` as NOT ``a = v`` (as the
    evaluator defines it)."""
    if isinstance(expr, And | Or):
        combine: Callable[[Mask, Mask], Mask] = np.logical_and if isinstance(expr, And) else np.logical_or
        result = combined(expr.items[0], leaf)
        for item in expr.items[1:]:
            result = combine(result, combined(item, leaf))
        return result
    if isinstance(expr, Not):
        return ~combined(expr.expr, leaf)
    if isinstance(expr, Compare) and expr.op == "!=":
        return ~combined(Compare(expr.attr, "=", expr.value), leaf)
    return leaf(expr)


def unit_or_plan(expr: Leaf, units: UnitColumns, plan_test: Callable[[Leaf], Mask]) -> Mask:
    """Per row of ``units``, one test: of its unit's field (``units.*``), else of its plan's (``plan_test``)."""
    return units.matching(expr) if expr.attr.startswith(UNIT_PREFIX) else plan_test(expr)


class PlanMatch(NamedTuple):
    """What a unit filter found in one listing: the indexes (among :func:`floor_plans`) of the plans it holds for,
    how many of their units it holds for (where it names units), and how many plans the listing has."""

    plans: list[int]
    units: int
    of: int


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


class PlanIndex:
    """Every floor plan of one store generation in columns: plans ordered by listing rowid, then index."""

    def __init__(self, db: sqlite3.Connection, listing_rowids: IntArray, generation: int) -> None:
        self.generation = generation
        self.listings = len(listing_rowids)
        began = not db.in_transaction
        if began:
            db.execute("BEGIN")  # both reads from one snapshot, whatever is written meanwhile
        try:
            per_listing = db.execute("SELECT listing, count(*) FROM listing_plans GROUP BY listing ORDER BY listing")
            counted = per_listing.fetchall()
            # Values come back as comma-joined columns of one scan: millions of rows, parsed in C. quote() writes
            # a REAL with the digits it takes to read back the same double.
            values = db.execute(
                "SELECT group_concat(listing), group_concat(idx), group_concat(field * 4 + kind), "
                "group_concat(CASE WHEN num IS NULL THEN 'nan' ELSE quote(num) END), "
                "group_concat(ifnull(term, ''), char(31)) FROM listing_plan_values"
            ).fetchone()
            units = [db.execute(_UNIT_COLUMNS_SQL).fetchone()]  # handed over, so that its text is freed once read
        finally:
            if began:
                db.execute("COMMIT")
        plan_listing = np.array([row[0] for row in counted], dtype=np.int64)
        plan_count = np.array([row[1] for row in counted], dtype=np.int64)
        self.size = int(plan_count.sum())
        first_plan = np.cumsum(plan_count) - plan_count
        position = np.searchsorted(listing_rowids, plan_listing)
        held = position < self.listings
        held[held] = listing_rowids[position[held]] == plan_listing[held]
        self.known: Mask = np.repeat(held, plan_count)
        """Plans of listings the column index holds (one written after it was built is left out)."""
        self.owner: IntArray = np.repeat(np.where(held, position, 0), plan_count)
        """Per plan, the position of its listing in the column index."""

        value_listing = _numbers(values[0], np.int64)
        value_plan = first_plan[np.searchsorted(plan_listing, value_listing)] + _numbers(values[1], np.int64)
        field_kind = _numbers(values[2], np.int64)
        field, kind = field_kind // 4, field_kind % 4
        num = _numbers(values[3], np.float64)
        lookup: dict[str, int] = {}
        terms = (values[4] or "").split("\x1f") if len(value_listing) else []
        codes = np.fromiter((lookup.setdefault(t, len(lookup)) for t in terms), dtype=np.int32, count=len(terms))
        del values, terms, value_listing, field_kind  # their text and copies, before the units are read
        self.terms = lookup
        """Every folded text value (and ``true``/``false``), by code."""
        true_code = lookup.get("true", -1)
        self.fields: dict[str, FieldColumns] = {}
        for name, code in FIELD_CODES.items():
            mine = field == code
            text, booleans = mine & (kind == TEXT), mine & (kind == BOOL)
            numbers = mine & ~np.isnan(num)
            self.fields[name] = FieldColumns(
                value_plan[text],
                codes[text],
                value_plan[booleans],
                codes[booleans] == true_code,
                value_plan[numbers],
                num[numbers],
                kind[numbers] == NUMBER,
            )
        self._hold_units(UnitColumns.of(units.pop(), plan_listing, first_plan, self.size))

    def _hold_units(self, units: UnitColumns) -> None:
        """The unit rows, each plan's range of them, and each plan's bounds."""
        self.units = units
        plan_numbers = np.arange(self.size)
        self._first_row = np.searchsorted(units.plan, plan_numbers, side="left")
        self._end_row = np.searchsorted(units.plan, plan_numbers, side="right")
        self.bounds = UnitBounds(units.status, units.price, units.floor, self._first_row, units.terms)
        self.steps = FloorSteps(units.plan, units.status, units.floor)
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
