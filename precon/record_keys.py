"""How a listing's floor plans and units are known across writes: by their keys (contract.md, "History").

A floor plan is known by its ``id``, a unit by its plan and its ``unitNumber``; one without (or with an empty one) by
its position, ``#0``, ``#1``, ... in its list. The one home of this: history names its entries by these keys, the
market's columns find the unit an entry is of, and webhook selection finds the unit an entry names, all through
:func:`plans_by_key` and :func:`units_by_key`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PLAN_KEY = "id"
UNIT_KEY = "unitNumber"


def key_of(item: Mapping[str, Any], key: str, position: int) -> str:
    """The key of a record at ``position`` of its list: its ``key`` field as text (a number's text too), or
    ``#position`` where it has none."""
    name = item.get(key)
    return str(name) if isinstance(name, str | int) and str(name) else f"#{position}"


def keyed(items: Any, key: str) -> dict[str, Mapping[str, Any]]:
    """The records of a list (one record counts as a list of it) by their key, in order; anything not a record is
    skipped. Where two records share a key, the later one is found under it."""
    if isinstance(items, Mapping):
        items = [items]
    if not isinstance(items, list):
        return {}
    try:  # the usual list: records each with a text key of its own, keyed in C
        found: dict[str, Mapping[str, Any]] = {item[key]: item for item in items}
        if len(found) == len(items) and all(type(name) is str and name for name in found):
            return found
    except (TypeError, KeyError):
        pass
    return {key_of(item, key, position): item for position, item in enumerate(items) if isinstance(item, Mapping)}


def plans_by_key(listing: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A listing's floor plans by their keys, in order."""
    return keyed(listing.get("floorPlans"), PLAN_KEY)


def units_by_key(plan: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A floor plan's units by their keys (unit numbers), in order."""
    return keyed(plan.get("units"), UNIT_KEY)
