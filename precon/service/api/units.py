"""``unitFilter`` (ours): reading it from a request, and ``_matchedFloorPlans``, what it found in each listing."""

from __future__ import annotations

import threading
from collections import OrderedDict
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


PLAN_LABELS_KEPT = 4096
"""Listings whose floor plans' names and prices each process keeps (a few hundred bytes each): the first pages of
many searches show the same listings, whose documents are then not decoded again for ``_matchedFloorPlans``."""


class PlanLabels:
    """Per stored document (its source and rowid, as :class:`~precon.service.api.splice.Splicer` names it), each
    floor plan's name (where it is text) and price (:func:`_price`): what ``_matchedFloorPlans`` says of them."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, int], list[tuple[str | None, int | float | None]]] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, source: str, rowid: int, blob: bytes) -> list[tuple[str | None, int | float | None]]:
        key = (source, rowid)
        labels = self._kept.get(key)
        if labels is None:
            labels = [
                (name if isinstance(name := plan.get("name"), str) else None, _price(plan.get("startPrice")))
                for plan in floor_plans(decode_document(blob))
            ]
            with self._lock:
                self._kept[key] = labels
                while len(self._kept) > PLAN_LABELS_KEPT:
                    self._kept.popitem(last=False)
        return labels


PLAN_LABELS = PlanLabels()


def _matched_by_labels(
    labels: list[tuple[str | None, int | float | None]], found: PlanMatch, expr: Expr
) -> dict[str, Any]:
    """What :func:`matched_floor_plans` says, from the plans' labels and what the search found."""
    matching = [labels[index] for index in found.plans]
    prices = [price for _, price in matching if price is not None]
    matched = {
        "count": len(matching),
        "of": len(labels),
        "minPrice": min(prices) if prices else None,
        "names": [name for name, _ in matching if name is not None],
    }
    if filters.names_units(expr):
        matched["units"] = found.units
    return matched


def with_matched_floor_plans(
    answers: list[bytes],
    blobs: Sequence[tuple[int, bytes]],
    source: str,
    expr: Expr | None,
    found: Sequence[PlanMatch] | None,
) -> list[bytes]:
    """Listings answered as stored bytes (:mod:`precon.service.api.splice`, ``source`` naming the catalogue and
    generation they come from), each with ``_matchedFloorPlans`` last, where the shaper adds it."""
    if expr is None:
        return answers
    marked: list[bytes] = []
    for number, (answer, (rowid, blob)) in enumerate(zip(answers, blobs, strict=True)):
        plan_match = None if found is None else found[number]
        labels = None if plan_match is None else PLAN_LABELS.of(source, rowid, blob)
        if plan_match is not None and labels is not None and plan_match.of == len(labels):
            matched = _matched_by_labels(labels, plan_match, expr)
        else:
            matched = matched_floor_plans(decode_document(blob), expr, plan_match)
        marked.append(answer[:-1] + b',"_matchedFloorPlans":' + orjson.dumps(matched) + b"}")
    return marked
