"""What changed in a listing between two of its records: the entries of its history (contract.md, "History").

An entry is ``{"at", "listingId", "scope", "plan", "unit", "field", "change", "from", "to"}``:

* ``scope`` is ``listing``, ``floorPlan`` (a plan, by its ``id``) or ``unit`` (a unit of a plan, by its
  ``unitNumber``);
* a listing, plan or unit that appears is ``created`` and one that goes ``deleted`` (``field`` null); a field whose
  value differs is ``updated`` with its two values, arrays and objects compared whole;
* ``updatedAt`` alone changing is no change, nor is a plan's ``lastUpdated``.

Plans and units are known by their keys (:mod:`precon.record_keys`): a plan without an ``id`` by its position, a
unit without a ``unitNumber`` by its position in its plan.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from precon.record_keys import plans_by_key, units_by_key

Scope = Literal["listing", "floorPlan", "unit"]
Entry = dict[str, Any]

IGNORED_FIELDS: dict[str, frozenset[str]] = {
    "listing": frozenset({"updatedAt", "floorPlans", "objectID"}),
    "floorPlan": frozenset({"lastUpdated", "units"}),
    "unit": frozenset(),
}
"""Fields whose change is not an entry of their scope (times of the change itself, and the nested records, whose
entries are their own)."""


def listing_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, at: str) -> list[Entry]:
    """The entries that turn ``old`` into ``new`` (either None: the listing created or deleted), at ``at``."""
    listing_id = str((new or old or {}).get("listingId") or "")
    return list(_changes(listing_id, at, old, new))


def _changes(listing_id: str, at: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> Iterator[Entry]:
    def entry(scope: Scope, plan: str | None, unit: str | None, field: str | None, change: str, before: Any = None,
              after: Any = None) -> Entry:  # fmt: skip
        return {
            "at": at, "listingId": listing_id, "scope": scope, "plan": plan, "unit": unit, "field": field,
            "change": change, "from": before, "to": after,
        }  # fmt: skip

    if old is None and new is None:
        return
    if old is None or new is None:
        yield entry("listing", None, None, None, "created" if old is None else "deleted")
        return
    for field, before, after in _fields(old, new, "listing"):
        yield entry("listing", None, None, field, "updated", before, after)
    old_plans, new_plans = plans_by_key(old), plans_by_key(new)
    for plan_key in _union(old_plans, new_plans):
        before_plan, after_plan = old_plans.get(plan_key), new_plans.get(plan_key)
        if before_plan is after_plan or (before_plan == after_plan and _same_types(before_plan, after_plan)):
            continue  # most plans of a write are unchanged: compared whole, in C, before field by field
        if before_plan is None or after_plan is None:
            yield entry("floorPlan", plan_key, None, None, "created" if before_plan is None else "deleted")
            continue
        for field, before, after in _fields(before_plan, after_plan, "floorPlan"):
            yield entry("floorPlan", plan_key, None, field, "updated", before, after)
        old_units, new_units = units_by_key(before_plan), units_by_key(after_plan)
        for unit_key in _union(old_units, new_units):
            before_unit, after_unit = old_units.get(unit_key), new_units.get(unit_key)
            if before_unit is after_unit or (before_unit == after_unit and _same_types(before_unit, after_unit)):
                continue
            if before_unit is None or after_unit is None:
                yield entry("unit", plan_key, unit_key, None, "created" if before_unit is None else "deleted")
                continue
            for field, before, after in _fields(before_unit, after_unit, "unit"):
                yield entry("unit", plan_key, unit_key, field, "updated", before, after)


def _fields(old: Mapping[str, Any], new: Mapping[str, Any], scope: Scope) -> Iterator[tuple[str, Any, Any]]:
    """(field, from, to) of each field whose value differs, in the new record's order, then the ones it lost."""
    ignored = IGNORED_FIELDS[scope]
    for field in _union(old, new):
        if field in ignored:
            continue
        before, after = old.get(field), new.get(field)
        if before is after:  # a field a write kept as it was (most of them): not compared
            continue
        if before != after or isinstance(before, bool) != isinstance(after, bool):  # True == 1, yet it changed
            yield field, before, after


def _same_types(old: Any, new: Any) -> bool:
    """Whether two equal values are alike in their types too (``True == 1``, yet a change): compared field by field
    on their top level. Equal records whose values differ in type only (or come in another order) are then
    compared field by field, which finds what changed, if anything."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return [type(value) for value in old.values()] == [type(value) for value in new.values()]
    return type(old) is type(new)


def _union(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """The keys of ``second`` in its order, then those only ``first`` has."""
    return [*second, *(key for key in first if key not in second)]


HistoryRow = tuple[str, str, str | None, str, str | None, str | None, str | None, str, bytes | None, bytes | None]
"""A row of a store's ``listing_history``: at, listing id, province, scope, plan, unit, field, change, from, to."""

ENTRY_KEYS = ("at", "listingId", "province", "scope", "plan", "unit", "field", "change", "from", "to")


@functools.lru_cache(maxsize=64)
def iso_time(seconds: float) -> str:
    """A time as the API writes times: ``2026-11-27T09:30:00.000Z`` (a write's time, asked for each listing, is
    made once)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def history_rows(entries: Iterable[Entry], province: str | None) -> list[HistoryRow]:
    """The rows that keep ``entries`` of a listing in ``province`` (where a key reads it, even once deleted)."""
    return [(e["at"], e["listingId"], province, *_stored(e)) for e in entries]


def _stored(e: Entry) -> tuple[Any, ...]:
    before = None if e["from"] is None else _json(e["from"])
    after = None if e["to"] is None else _json(e["to"])
    return e["scope"], e["plan"], e["unit"], e["field"], e["change"], before, after


def _json(value: Any) -> bytes:
    """The value's JSON in bytes of its own size: orjson's answer holds a 4 KB buffer whatever its length, which
    a simulated past's million rows would keep."""
    return memoryview(orjson.dumps(value)).tobytes()


def entry_of(row: Iterable[Any]) -> Entry:
    """An entry as the API answers it, from a stored row (the province is the store's, not the answer's)."""
    entry = dict(zip(ENTRY_KEYS, row, strict=True))
    del entry["province"]
    for key in ("from", "to"):
        entry[key] = None if entry[key] is None else orjson.loads(entry[key])
    return entry
