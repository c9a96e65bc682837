"""Which listing events a filtered subscription hears of, and what they carry (contract.md, "Filtered
subscriptions"; docs/api.md, "Webhooks").

A subscription's :class:`~precon.service.webhooks.model.Selection` narrows the events of its kind:

* with a filter (``filterQuery``, ``unitFilter``), to the listings that match it before or after the write, judged
  as a search judges one listing (:func:`precon.filters.evaluate`, and one floor plan, with one of its units where
  the filter names units, for ``unitFilter``); ``listing.matched`` is the write that makes a listing match when it
  did not before (a new listing included);
* with ``fields``, to the writes whose history entries touch them: an update of one of the fields, or a record
  created or deleted that holds one of them (a listing holds its plans' and units' fields, a plan its units'); the
  delivery's ``data.changes`` are then those entries only.

"Before" is the document the write replaced (:attr:`~precon.service.stores.types.CatalogueChange.before`). Where the
store keeps none (PostgreSQL's), it is the document after the write with the write's history entries undone
(:func:`reverted`): exact but for a plan or unit the write deleted, which cannot be put back; and a deleted listing
reaches no filtered subscription there, nothing telling what it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import orjson

from precon import filters
from precon.record_keys import plans_by_key, units_by_key
from precon.schema import FLOOR_PLAN_RECORD_FIELDS, LISTING_FIELDS, UNIT_RECORD_FIELDS
from precon.service.search.documents import DocumentFilter
from precon.service.search.plans import floor_plans
from precon.service.stores.types import CatalogueChange
from precon.service.webhooks.model import Event, Selection, Subscription

MATCHED = "listing.matched"
FIELDS_OF_SCOPE: dict[str, frozenset[str]] = {
    "listing": frozenset(LISTING_FIELDS),
    "floorPlan": frozenset(FLOOR_PLAN_RECORD_FIELDS),
    "unit": frozenset(UNIT_RECORD_FIELDS),
}
HELD_BY: dict[str, tuple[str, ...]] = {
    "listing": ("listing", "floorPlan", "unit"),
    "floorPlan": ("floorPlan", "unit"),
    "unit": ("unit",),
}
"""The records whose fields a record's creation or deletion brings or takes away: its own and those inside it."""


def relevant(entry: Mapping[str, Any], fields: frozenset[str]) -> bool:
    """Whether a history entry is a change to one of ``fields``: an update of one, or the creation or deletion of
    a record that holds one (a new unit brings its ``price``; a deleted plan takes its units' with it)."""
    name = entry.get("field")
    if name is not None:
        return name in fields
    return any(fields & FIELDS_OF_SCOPE[scope] for scope in HELD_BY.get(str(entry.get("scope")), ()))


def reverted(after: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The listing before a write, from what it is after and the write's entries (where the store kept no earlier
    document): each update undone, each plan or unit the write created taken out. A plan or unit it deleted cannot
    be put back (its entry holds nothing of it)."""
    before = {**after, "floorPlans": [{**plan} for plan in floor_plans(dict(after))]}
    plans = cast(dict[str, dict[str, Any]], plans_by_key(before))  # the copies just made
    for plan in plans.values():  # units copied too: what the entries undo is changed in the copies
        if isinstance(plan.get("units"), list):
            plan["units"] = [{**unit} if isinstance(unit, dict) else unit for unit in plan["units"]]
        elif isinstance(plan.get("units"), dict):
            plan["units"] = {**plan["units"]}
    created: list[Any] = []
    for entry in entries:
        scope, change, name = entry.get("scope"), entry.get("change"), entry.get("field")
        plan = plans.get(str(entry.get("plan")))
        record = before if scope == "listing" else plan
        if scope == "unit" and plan is not None:
            record = cast(dict[str, Any] | None, units_by_key(plan).get(str(entry.get("unit"))))
        if record is None:
            continue
        if change == "created" and record is not before:
            created.append(record)
        elif change == "updated" and name is not None and entry.get("from") is None:
            record.pop(name, None)
        elif change == "updated" and name is not None:
            record[name] = entry["from"]
    taken = {id(record) for record in created}
    for plan in before["floorPlans"]:
        if isinstance(plan.get("units"), list):
            plan["units"] = [unit for unit in plan["units"] if id(unit) not in taken]
    before["floorPlans"] = [plan for plan in before["floorPlans"] if id(plan) not in taken]
    return before


@lru_cache(maxsize=1024)
def filter_of(filter_query: str | None, unit_filter: str | None) -> DocumentFilter | None:
    """The filters of a subscription, or None if one no longer parses (the grammar changed since): it matches
    nothing then, rather than everything."""
    try:
        return DocumentFilter(filters.parse(filter_query), filters.parse(unit_filter))
    except filters.FilterSyntaxError:
        return None


@dataclass
class Write:
    """One listing's change, as filtered subscriptions judge it: the listing before and after (decoded once), and
    each filter's verdicts (judged once, however many subscriptions share it)."""

    change: CatalogueChange
    after: dict[str, Any] | None
    before: dict[str, Any] | None
    _verdicts: dict[tuple[str | None, str | None], tuple[bool, bool]] = field(default_factory=dict)

    @classmethod
    def of(cls, change: CatalogueChange, after: dict[str, Any] | None) -> Write:
        if change.action == "created":
            return cls(change, after, None)
        if change.before is not None:
            return cls(change, after, orjson.loads(change.before))
        if after is not None and change.entries is not None:
            return cls(change, after, reverted(after, change.entries))
        return cls(change, after, after)  # nothing tells what it was: judged on what it is now

    def matched(self, selection: Selection) -> tuple[bool, bool]:
        """Whether the listing matched the selection's filter before the write, and after it."""
        key = (selection.filter_query, selection.unit_filter)
        if key not in self._verdicts:
            judge = filter_of(*key)
            self._verdicts[key] = (
                (False, False) if judge is None else (judge.matches(self.before), judge.matches(self.after))
            )
        return self._verdicts[key]

    def entries(self, selection: Selection) -> list[dict[str, Any]] | None:
        """The write's entries this selection hears of (all without ``fields``); None if it hears of none. A store
        that records no entries: a listing created or deleted is heard of (every field came or went), an update
        is not (which fields it touched is not known)."""
        if selection.fields is None:
            return self.change.entries or []
        if self.change.entries is None:
            return [] if self.change.action != "updated" else None
        fields = frozenset(selection.fields)
        kept = [entry for entry in self.change.entries if relevant(entry, fields)]
        return kept or None

    def hears(self, subscription: Subscription) -> list[dict[str, Any]] | None:
        """The entries a subscription to this write's event (or to ``listing.matched``) is sent, or None when it
        hears nothing of it."""
        selection = subscription.selection
        if subscription.event == MATCHED:
            if not selection.filtered or self.after is None or self.matched(selection) != (False, True):
                return None
        elif selection.filtered and not any(self.matched(selection)):
            return None
        return self.entries(selection)


def selected_events(
    write: Write, event_type: str, env: str, data: dict[str, Any], subscribers: Sequence[Subscription]
) -> list[Event]:
    """The events of selective subscribers (to ``event_type`` or ``listing.matched``): one per event type and set of
    entries carried, each to the subscribers that hear of exactly that."""
    groups: dict[tuple[str, tuple[int, ...]], list[Subscription]] = {}
    carried: dict[tuple[str, tuple[int, ...]], list[dict[str, Any]]] = {}
    for subscription in subscribers:
        entries = write.hears(subscription)
        if entries is None:
            continue
        kind = MATCHED if subscription.event == MATCHED else event_type
        key = (kind, tuple(id(entry) for entry in entries))
        groups.setdefault(key, []).append(subscription)
        carried[key] = entries
    events = []
    for (kind, _), group in groups.items():
        shown = dict(data)
        if "changes" in data:
            shown["changes"] = carried[(kind, _)]
        events.append(Event(kind, env, shown, group))
    return events
