"""``unitFilter`` (ours): reading it from a request, and ``_matchedFloorPlans``, what it found in each listing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from precon import filters
from precon.filters import UNIT_FIELDS, Expr, plan_and_units
from precon.service.api.visibility import is_visible
from precon.service.errors import bad_request
from precon.service.search.plans import PlanMatch, floor_plans
from precon.service.search.sql_filter import as_number
from precon.service.stores.records import decode_document


def unit_filter(raw: str | None, version: str) -> Expr | None:
    """A ``unitFilter``, parsed and checked: a 400 that names what is wrong and where. It filters floor plans, so
    a version that hides them (``v1-lite``) refuses it: a filter would reveal them."""
    try:
        expr = filters.parse(raw)
    except filters.FilterSyntaxError as error:
        raise bad_request(f"unitFilter: {error.message}") from None
    if expr is None:
        return None
    if not is_visible(version, "floorPlans"):
        raise bad_request(
            "unitFilter: v1-lite has no floor plans; a filter on them would reveal them (use v1 for unitFilter)"
        )
    unknown = sorted(filters.attributes(expr) - set(UNIT_FIELDS))
    if unknown:
        raise bad_request(
            f"unitFilter: {', '.join(repr(name) for name in unknown)} "
            f"{'is not a floor plan field' if len(unknown) == 1 else 'are not floor plan fields'}; "
            f"use {', '.join(UNIT_FIELDS)}"
        )
    return expr


def _price(value: Any) -> int | float | None:
    """A floor plan's price as a number, when it has one above zero (``""`` is no price)."""
    number = as_number(value)
    if number is None or number <= 0:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return int(number) if number.is_integer() else number


def matched_floor_plans(record: dict[str, Any], expr: Expr, found: PlanMatch | None = None) -> dict[str, Any]:
    """``{"count", "of", "minPrice", "names"}``: the listing's floor plans that satisfy ``expr``; with ``units``,
    how many of their units do, where ``expr`` names units. ``found``: which plans and how many units, as the
    search found them (else each plan and unit is tested here)."""
    plans = floor_plans(record)
    if found is not None and found.of == len(plans):
        matching = [plans[index] for index in found.plans]
        units = found.units
    else:
        verdicts = [plan_and_units(expr, plan) for plan in plans]
        matching = [plan for plan, (held, _) in zip(plans, verdicts, strict=True) if held]
        units = sum(count for held, count in verdicts if held)
    prices = [price for price in (_price(plan.get("startPrice")) for plan in matching) if price is not None]
    matched = {
        "count": len(matching),
        "of": len(plans),
        "minPrice": min(prices) if prices else None,
        "names": [plan["name"] for plan in matching if isinstance(plan.get("name"), str)],
    }
    if filters.names_units(expr):
        matched["units"] = units
    return matched


def add_matched_floor_plans(
    results: Sequence[dict[str, Any]],
    records: Sequence[dict[str, Any]],
    expr: Expr | None,
    found: Sequence[PlanMatch] | None = None,
) -> None:
    """Adds ``_matchedFloorPlans`` to each shaped result, from its stored record (whatever was retrieved) and what
    the search found in it (``found``, one per record, where the search gives it)."""
    if expr is None:
        return
    for number, (out, record) in enumerate(zip(results, records, strict=True)):
        out["_matchedFloorPlans"] = matched_floor_plans(record, expr, None if found is None else found[number])


def with_matched_floor_plans(
    answers: list[bytes], blobs: Sequence[tuple[int, bytes]], expr: Expr | None, found: Sequence[PlanMatch] | None
) -> list[bytes]:
    """Listings answered as stored bytes (:mod:`precon.service.api.splice`), each with ``_matchedFloorPlans`` last,
    where the shaper adds it."""
    if expr is None:
        return answers
    marked: list[bytes] = []
    for number, (answer, (_, blob)) in enumerate(zip(answers, blobs, strict=True)):
        matched = matched_floor_plans(decode_document(blob), expr, None if found is None else found[number])
        marked.append(answer[:-1] + b',"_matchedFloorPlans":' + orjson.dumps(matched) + b"}")
    return marked
