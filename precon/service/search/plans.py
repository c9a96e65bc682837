"""Floor plans as rows of their own: what ``unitFilter`` tests, in SQL and in numpy columns.

A ``unitFilter`` is a filter expression over the fields of one floor plan (:data:`precon.filters.UNIT_FIELDS`);
a listing matches when at least one of its floor plans satisfies the whole expression. The reference is
``any(filters.evaluate(expr, plan) for plan in floor_plans(listing))``, and both engines here give its answers:

* ``listing_plans`` holds one row per floor plan (the listing's rowid and the plan's index among its plans), so
  that ``NOT`` holds for a plan that lacks a field, as the evaluator has it;
* ``listing_plan_values`` holds one row per value of a unit field of a plan (an array field gives one row per
  element), typed as the evaluator reads it: text (folded as :func:`precon.filters.fold_text` folds, with its
  numeric reading, if any, for comparisons), a boolean, or a number.

The floor plans' index (:class:`~precon.service.search.plan_index.PlanIndex`) reads them into numpy, tests every
plan at once and reduces to the listings that own a matching plan. Here: the rows, and the columns of plans and units
that index holds.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import orjson

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
from precon.filters.plans import number_of
from precon.service.search.sql_filter import as_number

Mask = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

PLAN_FIELDS = tuple(name for name in UNIT_FIELDS if not name.startswith(UNIT_PREFIX))
"""The fields of the plan itself; the others (``units.*``) are of one of its units."""
FIELD_CODES: dict[str, int] = {name: code for code, name in enumerate(PLAN_FIELDS)}
TEXT, BOOL, NUMBER = 0, 1, 2
"""The kinds of a stored value: how the evaluator compares it."""

ODD_UNITS = "price_value IS NOT NULL OR status_value IS NOT NULL OR floor_value LIKE '[%'"
"""The units some of whose values the floor plans' index cannot hold as the evaluator reads them: a price kept
whole, a status kept whole, a list of floors (a few, where any: an index of their own finds them)."""
PLAN_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS listing_plans(
  listing INTEGER NOT NULL, idx INTEGER NOT NULL, PRIMARY KEY(listing, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS listing_plan_values(
  listing INTEGER NOT NULL, idx INTEGER NOT NULL, field INTEGER NOT NULL, kind INTEGER NOT NULL, term TEXT, num REAL);
CREATE INDEX IF NOT EXISTS listing_plan_values_by_plan ON listing_plan_values(listing, idx, field);
CREATE TABLE IF NOT EXISTS listing_plan_units(
  listing INTEGER NOT NULL, idx INTEGER NOT NULL, status TEXT, status_num REAL, price REAL, floor REAL,
  number_value TEXT, floor_value TEXT, price_value TEXT, status_value TEXT);
CREATE INDEX IF NOT EXISTS listing_plan_units_by_plan ON listing_plan_units(listing, idx);
CREATE INDEX IF NOT EXISTS listing_plan_units_odd ON listing_plan_units(listing) WHERE {ODD_UNITS};
"""
PLAN_TABLES = ("listing_plan_values", "listing_plan_units", "listing_plans")

PlanRow = tuple[int, int]
ValueRow = tuple[int, int, int, int, str | None, float | None]
UnitRow = tuple[
    int, int, str | None, float | None, float | None, float | None, str | None, str | None, str | None, str | None
]


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
            status, price = unit.get("status"), unit.get("price")
            folded, status_number = status_reading(status) if type(status) is str else (None, None)
            # Whole where a comparison may pass it: a status that is not text, or text that reads as a number.
            status_value = stored_value(status) if type(status) is not str or status_number is not None else None
            floor, number = unit.get("floor"), unit.get("unitNumber")
            # Text floors and numbers (a catalogue holds a few hundred of each) read once each.
            floor_number, floor_value = _text_reading(floor) if type(floor) is str else _reading(floor)
            number_value = _text_reading(number)[1] if type(number) is str else stored_value(number)
            price_value = None if _exact_number(price) else stored_value(price)
            units.append(
                (rowid, index, folded, status_number, number_of(price), floor_number, number_value, floor_value,
                 price_value, status_value)
            )  # fmt: skip


def _exact_number(value: Any) -> bool:
    """Whether a unit's ``price`` column holds ``value`` itself, and SQLite writes it out exactly (a whole number
    under 10**15): any other price, text among them, ``price_value`` keeps whole, as a ``Match`` compares text as
    text and a number to the last digit."""
    kind = type(value)
    return (kind is int or kind is float) and abs(value) < 10**15 and float(value).is_integer()


def stored_value(value: Any) -> str | None:
    """A unit's value as ``listing_plan_units`` keeps it whole (its unit number, its floor): JSON, so that its type
    is kept as the evaluator compares it (``"12"`` is text, ``12`` a number); None where the unit has none."""
    return None if value is None else orjson.dumps(value).decode()


def _reading(value: Any) -> tuple[float | None, str | None]:
    """A value's numeric reading and its JSON."""
    return number_of(value), stored_value(value)


_text_reading = functools.lru_cache(maxsize=8192)(_reading)
""":func:`_reading` of a text, remembered."""


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


UNIT_PATHS = {"floorPlans.units.price": "units.price", "floorPlans.units.floor": "units.floor"}
"""The paths of a unit's price and floor in a listing, and their names in a ``unitFilter``."""


def as_unit_comparison(expr: Expr) -> Compare | Range | None:
    """A ``filterQuery`` comparison of units' prices or floors (``floorPlans.units.price < 700000``) as the unit
    test it is (``units.price < 700000``): a listing meets it where one of its units does, the value read as a number
    as the evaluator reads one (:func:`~precon.filters.plans.number_of`). None for anything else: a ``Match``
    also compares a value's text (``floorPlans.units.floor:PH``), which the floor plans' index does not hold."""
    if not isinstance(expr, Compare | Range) or expr.attr not in UNIT_PATHS:
        return None
    if isinstance(expr, Compare) and expr.op == "!=":
        return None  # NOT of "=": the caller's to negate, over listings
    return replace(expr, attr=UNIT_PATHS[expr.attr])


def match_targets(expr: Match) -> tuple[str, str | None, float | None]:
    """What a Match compares each kind of value with: folded text, ``true``/``false``, a number."""
    folded = fold_text(expr.value)
    word = {"true": "true", "1": "true", "false": "false", "0": "false"}.get(folded)
    number = parse_number(expr.value.strip())
    return folded, word, None if number is None else float(number)


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


def joined_numbers(text: str | None, dtype: type[np.generic]) -> npt.NDArray[Any]:
    """A column SQLite joined with commas, parsed in C rather than one Python object per row."""
    return np.fromstring(text, dtype=dtype, sep=",") if text else np.empty(0, dtype)  # type: ignore[call-overload]


UNIT_COLUMNS_SQL = (
    "SELECT group_concat(listing), group_concat(idx), group_concat(ifnull(status, ''), char(31)), "
    "group_concat(CASE WHEN status_num IS NULL THEN 'nan' ELSE quote(status_num) END), "
    "group_concat(CASE WHEN price IS NULL THEN 'nan' ELSE quote(price) END), "
    "group_concat(CASE WHEN floor IS NULL THEN 'nan' ELSE quote(floor) END) FROM listing_plan_units"
)


def term_codes(texts: list[str], lookup: dict[str, int]) -> npt.NDArray[np.int32]:
    """Each text's code in ``lookup``, a new one given where it has none (in the order first met)."""
    return np.fromiter((lookup.setdefault(t, len(lookup)) for t in texts), dtype=np.int32, count=len(texts))


def status_codes(texts: list[str], lookup: dict[str, int]) -> npt.NDArray[np.int32]:
    """Each unit status's code in ``lookup`` (a new one where it has none), -1 for none."""
    codes = (lookup.setdefault(t, len(lookup)) if t else -1 for t in texts)
    return np.fromiter(codes, dtype=np.int32, count=len(texts))


def field_columns(
    value_plan: IntArray, field_kind: IntArray, num: FloatArray, codes: npt.NDArray[np.int32], true_code: int
) -> dict[str, FieldColumns]:
    """Each plan field's columns, from value rows: their plan, ``field * 4 + kind``, number and term code."""
    field, kind = field_kind // 4, field_kind % 4
    fields: dict[str, FieldColumns] = {}
    for name, code in FIELD_CODES.items():
        mine = field == code
        text, booleans = mine & (kind == TEXT), mine & (kind == BOOL)
        numbers = mine & ~np.isnan(num)
        fields[name] = FieldColumns(
            value_plan[text],
            codes[text],
            value_plan[booleans],
            codes[booleans] == true_code,
            value_plan[numbers],
            num[numbers],
            kind[numbers] == NUMBER,
        )
    return fields


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
        listing = joined_numbers(row[0], np.int64)
        plan = (
            first_plan[np.searchsorted(plan_listing, listing)] + joined_numbers(row[1], np.int64)
            if len(listing)
            else listing
        )
        terms: dict[str, int] = {}
        status = status_codes((row[2] or "").split("\x1f") if len(listing) else [], terms)
        numbers = [joined_numbers(row[column], np.float64) for column in (3, 4, 5)]  # status_num, price, floor
        del row, listing  # the text read (hundreds of megabytes), once parsed
        return cls.arranged(plan, status, numbers, terms, plans)

    @classmethod
    def arranged(
        cls,
        plan: IntArray,
        status: npt.NDArray[np.int32],
        numbers: list[FloatArray],
        terms: dict[str, int],
        plans: int,
    ) -> UnitColumns:
        """From the units' rows in any order (their plan, status code, and ``numbers``: status_num, price and
        floor), of ``plans`` plans: a row with no unit added for each plan without any, all grouped as they are
        read."""
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
