"""A stored listing rewritten in place: only the rows that differ between what it was and what it becomes.

:func:`rewrite_in_place` is the part of the write path (:mod:`precon.service.stores.sqlite.writes`) that replaces a
listing already stored, keeping its row id: its typed columns that differ, its document, the term and number rows
that differ, each plan that changed (its value rows where they differ, and of its unit rows only those of the
units that changed, each in its place), its text and place where they changed. A simulated day that sells three
units of a plan of two hundred writes three unit rows, not the listing's hundreds; of its rows in ``listing_values``
only those of the values it lost or gained (:func:`~precon.service.search.path_values.changed_value_pairs`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from precon.schema import SCALAR_ATTRIBUTES, SEARCHABLE_LISTING_FIELDS
from precon.service.search.path_values import DELETE_VALUE, changed_value_pairs, same_json, values_at
from precon.service.search.plans import (
    PLAN_FIELDS,
    PLAN_ROW_DELETES,
    UnitRow,
    ValueRow,
    floor_plans,
    one_plan_rows,
    plan_rows,
)
from precon.service.search.text import searchable_text
from precon.service.stores.records import (
    _NESTED_MULTI,
    _TOP_LEVEL_MULTI,
    ListingIndexRows,
    encode_document,
    geo_point,
    head_columns,
    index_multi,
    indexed_reference_keys,
    once_each,
    province_of,
    scalar_column,
)

LISTING_COLUMNS = ["province", "featured", "updated_at", "geo_lat", "geo_lng", *(a.column for a in SCALAR_ATTRIBUTES)]
"""The typed columns of ``listings`` after its id, in the order :func:`listing_columns` gives their values."""
_HEAD_FIELDS = ("state", "isFeatured", "updatedAt")
"""The fields of the columns before the attributes' (with the place: province, featured, updated_at)."""
_POSITION = {a.path: k for k, a in enumerate(SCALAR_ATTRIBUTES, start=len(_HEAD_FIELDS) + 2)}
"""The position among :data:`LISTING_COLUMNS` of each single-valued attribute's column."""
_SCALAR_PATHS = tuple(a.path for a in SCALAR_ATTRIBUTES)
_ATTRIBUTES = {a.path: a for a in SCALAR_ATTRIBUTES}
_TOP_LEVEL_PATHS = tuple(a.path for a in _TOP_LEVEL_MULTI)


@dataclass
class ListingBatch(ListingIndexRows):
    """A batch of listings' rows, with SQLite's own tables: the documents, the text, the places."""

    docs: list[tuple[int, bytes]] = field(default_factory=list)
    fts_rows: list[tuple[Any, ...]] = field(default_factory=list)
    geo_rows: list[tuple[int, float, float, float, float]] = field(default_factory=list)
    province_pairs: set[tuple[str, str]] = field(default_factory=set)
    """The (province, profile) pairs of the listings a bulk load adds (a rewrite recounts its profiles instead)."""
    replaced: bool = False
    """Whether a listing already stored was rewritten (else the batch only added listings)."""
    existing: dict[str, Any] = field(default_factory=dict)
    """The stored (rowid, document) of each listing id met, as this batch leaves it."""
    created: list[str] = field(default_factory=list)
    """The ids of the listings the batch adds (a listing deleted before is no longer)."""
    history: list[tuple[Any, ...]] = field(default_factory=list)
    """The rows of ``listing_history``: what the batch changed in each listing."""
    statements: list[tuple[str, list[Sequence[Any]]]] = field(default_factory=list)
    """The updates and deletes of rows already stored (each statement, with the parameters of each time it runs),
    run in order before the batch's rows are added: what :func:`rewrite_in_place` decided."""

    def later(self, sql: str, *rows: Sequence[Any]) -> None:
        """``sql`` run once per row of parameters when the batch is written."""
        if rows:
            self.statements.append((sql, list(rows)))

    def run_statements(self, db: sqlite3.Connection) -> None:
        for sql, rows in self.statements:
            db.executemany(sql, rows)

    keep_before: bool = False
    """Whether each change carries the document it replaced (:attr:`CatalogueChange.before`)."""
    index_rows_until: int | None = None
    """The last row id whose index rows (terms, plans, units, values...) the batch makes: those after are made by
    a forked copy of the process (:meth:`~.bulk.SQLiteBulkLoads.add_new_listings`). None: every one."""


def rewrite_in_place(
    db: sqlite3.Connection, rowid: int, old: dict[str, Any], new: dict[str, Any], batch: ListingBatch
) -> bytes:
    """A stored listing rewritten where it stands (its row id kept): only the rows that differ between ``old`` and
    ``new`` are deleted, updated or added, so a write that sells a unit replaces that unit's row, not the
    listing's hundreds. The new document's bytes.

    ``db`` is only read (the rows stored for the listing, to compare): what changes is gathered in ``batch``, its
    updates and deletes in :attr:`ListingBatch.statements`, so that the rewrite can be decided on a read of the
    catalogue and written in a transaction afterwards (a simulation decides a day while the day before is written:
    :mod:`precon.service.stores.simulated_days`)."""
    lat, lng = geo_point(new)
    _update_columns(rowid, old, new, batch)
    document = encode_document(new)
    batch.later("UPDATE listing_docs SET doc = ? WHERE id = ?", (document, rowid))
    _rewrite_terms(db, rowid, old, new, batch)
    _rewrite_plans(db, rowid, floor_plans(old), floor_plans(new), batch)
    lost, gained = changed_value_pairs(old, new)
    batch.later(DELETE_VALUE, *((path, rowid, value) for path, value in sorted(lost)))
    batch.values += [(path, rowid, value) for path, value in sorted(gained)]
    text = searchable_text(new, SEARCHABLE_LISTING_FIELDS)
    if text != searchable_text(old, SEARCHABLE_LISTING_FIELDS):
        batch.later("DELETE FROM listing_fts WHERE rowid = ?", (rowid,))
        batch.fts_rows.append((rowid, *text))
    if geo_point(old) != (lat, lng):
        batch.later("DELETE FROM listing_geo WHERE id = ?", (rowid,))
        if lat is not None and lng is not None:
            batch.geo_rows.append((rowid, lat, lat, lng, lng))
    batch.attribute_names.update(new)
    # A profile's provinces are counted again only where the listing's companies or province changed.
    keys_before, keys_after = indexed_reference_keys(old), indexed_reference_keys(new)
    if keys_before != keys_after or province_of(old.get("state")) != province_of(new.get("state")):
        batch.touched_profiles |= keys_before | keys_after
    return document


def _update_columns(rowid: int, old: dict[str, Any], new: dict[str, Any], batch: ListingBatch) -> None:
    """The listing's typed columns that differ between ``old`` and ``new`` set (those of the fields that differ, and
    the listing's province, time and place), the others left as they are stored: an index of ``listings`` on
    columns that did not change is not touched (a day's write changes a listing's time and a few of its prices)."""
    heads = zip(LISTING_COLUMNS, head_columns(old, *geo_point(old)), head_columns(new, *geo_point(new)), strict=False)
    updated = [(column, value) for column, before, value in heads if before != value]
    for path in sorted(_changed_fields(old, new, _SCALAR_PATHS), key=_POSITION.__getitem__):
        attribute = _ATTRIBUTES[path]
        value = scalar_column(attribute, new.get(path), batch.labels)
        if scalar_column(attribute, old.get(path), {}) != value:  # 500000 and 500000.0 are the same in a REAL column
            updated.append((LISTING_COLUMNS[_POSITION[path]], value))
    if updated:
        assignments = ", ".join(f"{column} = ?" for column, _ in updated)
        batch.later(f"UPDATE listings SET {assignments} WHERE id = ?", [*(value for _, value in updated), rowid])


def _rewrite_terms(
    db: sqlite3.Connection, rowid: int, old: dict[str, Any], new: dict[str, Any], batch: ListingBatch
) -> None:
    """The listing's term and number rows that differ from the stored ones, of the attributes whose values differ
    between ``old`` and ``new`` (what is stored is read back by the indexes on its row id, not derived from the old
    document again)."""
    changed = _changed_attributes(old, new)
    if not changed:
        return
    attributes = sorted(changed)
    which = f"WHERE listing = ? AND attr IN ({', '.join('?' * len(attributes))})"
    terms = db.execute(f"SELECT attr, term FROM listing_terms {which}", (rowid, *attributes))
    terms_before = {(a, t, rowid) for a, t in terms}
    numbers = db.execute(f"SELECT attr, num FROM listing_numbers {which}", (rowid, *attributes))
    numbers_before = {(a, n, rowid) for a, n in numbers}
    terms_after: set[tuple[str, str, int]] = set()
    numbers_after: set[tuple[str, float, int]] = set()
    index_multi(new, rowid, terms_after, numbers_after, batch.labels, changed)
    batch.later("DELETE FROM listing_terms WHERE attr = ? AND term = ? AND listing = ?", *(terms_before - terms_after))
    batch.later(
        "DELETE FROM listing_numbers WHERE attr = ? AND num = ? AND listing = ?", *(numbers_before - numbers_after)
    )
    batch.terms |= terms_after - terms_before
    batch.numbers |= numbers_after - numbers_before


def _changed_attributes(old: dict[str, Any], new: dict[str, Any]) -> set[str]:
    """The multi-valued attributes (by path) whose values may differ between the two records: those of a plan
    (or another nested record) only where that plan changed, so that a sale in one plan indexes the listing's
    unit statuses again, not its plans' sizes and prices."""
    changed = _changed_fields(old, new, _TOP_LEVEL_PATHS)
    for parent, children in _NESTED_MULTI.items():
        was, now = old.get(parent), new.get(parent)
        if was is now:
            continue
        items_before, items_after = _items(was), _items(now)
        if len(items_before) != len(items_after):
            changed.update(attribute.path for attribute, _ in children)
            continue
        for before, after in zip(items_before, items_after, strict=True):
            if before is after:
                continue
            if not (isinstance(before, dict) and isinstance(after, dict)):
                changed.update(attribute.path for attribute, _ in children)
                break
            for attribute, leaf in children:
                if attribute.path not in changed and not same_json(*_leaf_values(before, after, leaf)):
                    changed.add(attribute.path)
    return changed


def _items(value: Any) -> list[Any]:
    """The nested records of a field as :func:`index_multi` walks them."""
    return [value] if isinstance(value, dict) else value if isinstance(value, list) else []


def _leaf_values(before: dict[str, Any], after: dict[str, Any], leaf: str) -> tuple[Any, Any]:
    if "." in leaf:  # deeper (units.status): the values at the path, each once, as index_multi adds them
        return _distinct(values_at(before, leaf)), _distinct(values_at(after, leaf))
    return before.get(leaf), after.get(leaf)


def _distinct(values: list[Any]) -> set[tuple[type, Any]]:
    """Each value (of a type indexed) once, ``True`` and ``1`` apart: a sale in a plan that still has units
    available and already had one sold leaves its statuses as they were."""
    return {(type(value), value) for value in once_each(values) if isinstance(value, str | int | float)}


def _changed_fields(old: dict[str, Any], new: dict[str, Any], fields: tuple[str, ...]) -> set[str]:
    """Those of ``fields`` whose values differ (most are the same object in both: not compared)."""
    return {name for name in fields if (was := old.get(name)) is not (now := new.get(name)) and not same_json(was, now)}


def _rewrite_plans(
    db: sqlite3.Connection, rowid: int, old: list[dict[str, Any]], new: list[dict[str, Any]], batch: ListingBatch
) -> None:
    """The plan rows of a listing rewritten in place: those of each plan that changed (all when plans came or
    went), and its plan ids that differ."""
    if len(old) != len(new):
        for sql in PLAN_ROW_DELETES:
            batch.later(sql, (rowid,))
        plans, values, units = plan_rows({"floorPlans": new}, rowid)
        batch.plans += plans
        batch.plan_values += values
        batch.plan_units += units
    else:
        for index, (was, now) in enumerate(zip(old, new, strict=True)):
            if was is not now and was != now:
                _rewrite_plan(db, rowid, index, was, now, batch)
    ids_before = {(plan["id"], rowid) for plan in old if isinstance(plan.get("id"), str)}
    ids_after = {(plan["id"], rowid) for plan in new if isinstance(plan.get("id"), str)}
    batch.later("DELETE FROM plan_ids WHERE plan_id = ? AND listing = ?", *(ids_before - ids_after))
    batch.plan_ids |= ids_after - ids_before


def _rewrite_plan(
    db: sqlite3.Connection, rowid: int, index: int, was: dict[str, Any], now: dict[str, Any], batch: ListingBatch
) -> None:
    """One plan of a listing rewritten: its value rows when they differ; the unit rows of the units that changed,
    each updated where it stands (the rows of a plan are its units in order), or all of them when units came or
    went."""
    if not all(same_json(was.get(name), now.get(name)) for name in PLAN_FIELDS):
        values_after = _value_rows(now, rowid, index)
        if _value_rows(was, rowid, index) != values_after:
            batch.later("DELETE FROM listing_plan_values WHERE listing = ? AND idx = ?", (rowid, index))
            batch.plan_values += values_after
    units_before, units_after = _units(was), _units(now)
    changed: list[tuple[int, UnitRow]] = []
    if len(units_before) == len(units_after):
        for position, (before, after) in enumerate(zip(units_before, units_after, strict=True)):
            if before is not after and before != after:
                row = unit_row(after, rowid, index)
                if row != unit_row(before, rowid, index):
                    changed.append((position, row))
        if not changed:
            return
        stored = [
            row[0]
            for row in db.execute(
                "SELECT rowid FROM listing_plan_units WHERE listing = ? AND idx = ? ORDER BY rowid", (rowid, index)
            )
        ]
        if len(stored) == len(units_after):
            batch.later(
                "UPDATE listing_plan_units SET status = ?, status_num = ?, price = ?, floor = ?, number_value = ?, "
                "floor_value = ?, price_value = ?, status_value = ? WHERE rowid = ?",
                *[(*row[2:], stored[position]) for position, row in changed],
            )
            return
    batch.later("DELETE FROM listing_plan_units WHERE listing = ? AND idx = ?", (rowid, index))
    batch.plan_units += [unit_row(unit, rowid, index) for unit in units_after]


def _value_rows(plan: dict[str, Any], rowid: int, index: int) -> list[ValueRow]:
    """The rows of ``listing_plan_values`` of the listing's plan ``index`` (not its units')."""
    values: list[ValueRow] = []
    one_plan_rows({name: value for name, value in plan.items() if name != "units"}, rowid, index, values, [])
    return values


def unit_row(unit: dict[str, Any], rowid: int, index: int) -> UnitRow:
    """The row of ``listing_plan_units`` of one unit of the listing's plan ``index``."""
    rows: list[UnitRow] = []
    one_plan_rows({"units": [unit]}, rowid, index, [], rows)
    return rows[0]


def _units(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """A plan's units that have rows (its objects), in order."""
    listed = plan.get("units")
    return [unit for unit in listed if isinstance(unit, dict)] if isinstance(listed, list) else []
