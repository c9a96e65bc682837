"""Fields every stored listing carries that its writer may leave out: floor-plan ids and the time of the last
change of ``sellingStatus``. Every write through the store, the importer and the mirror applies them."""

from __future__ import annotations

import hashlib
import time
from typing import Any

SELLING_STATUS_TIMESTAMP = "sellingStatusUpdateTimestamp"


def plan_id(listing_id: str, index: int, name: Any) -> str:
    """A plan's id from its listing, its position (1-based) and its name: the same file gives the same ids."""
    digest = hashlib.blake2b(f"{index}\x00{name if isinstance(name, str) else ''}".encode(), digest_size=4)
    return f"{listing_id}-{index}-{digest.hexdigest()}"


def _given_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | str):
        text = str(value).strip()
        return text or None
    return None


def with_plan_ids(listing_id: str, plans: Any) -> Any:
    """``floorPlans`` with an ``id`` (a string) on every plan: an incoming id is kept (as text), a plan without
    one gets :func:`plan_id`, made unique within the listing. Anything but a list of objects is left alone."""
    if not isinstance(plans, list):
        return plans
    used = {given for plan in plans if isinstance(plan, dict) and (given := _given_id(plan.get("id")))}
    out: list[Any] = []
    for index, plan in enumerate(plans, start=1):
        if not isinstance(plan, dict):
            out.append(plan)
            continue
        given = _given_id(plan.get("id"))
        if given is None:
            given = base = plan_id(listing_id, index, plan.get("name"))
            extra = 1
            while given in used:
                extra += 1
                given = f"{base}-{extra}"
            used.add(given)
        if plan.get("id") != given:
            plan = {"id": given, **{k: v for k, v in plan.items() if k != "id"}}
        out.append(plan)
    return out


def _timestamp(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def selling_status_timestamp(record: dict[str, Any], old: dict[str, Any] | None, now: float | None = None) -> int:
    """Unix seconds of the last change of ``record``'s sellingStatus, given the stored ``old`` version.

    The record's own value is kept when it carries one (a copy of another deployment), unless the status
    changed and the value is the stale one copied from ``old``; otherwise the stored value is kept while the
    status is unchanged, and a new status (or a new listing) is stamped ``now``.
    """
    current = int(time.time() if now is None else now)
    incoming = _timestamp(record.get(SELLING_STATUS_TIMESTAMP))
    if old is None:
        return incoming if incoming is not None else current
    previous = _timestamp(old.get(SELLING_STATUS_TIMESTAMP))
    changed = old.get("sellingStatus") != record.get("sellingStatus")
    if incoming is not None and not (changed and incoming == previous):
        return incoming
    if not changed and previous is not None:
        return previous
    return current


def complete_listing(record: dict[str, Any], old: dict[str, Any] | None, now: float | None = None) -> dict[str, Any]:
    """``record`` (with its ``listingId``) with plan ids and its sellingStatusUpdateTimestamp."""
    out = dict(record)
    listing_id = str(out.get("listingId") or "")
    if "floorPlans" in out:
        out["floorPlans"] = with_plan_ids(listing_id, out["floorPlans"])
    out[SELLING_STATUS_TIMESTAMP] = selling_status_timestamp(out, old, now)
    return out
