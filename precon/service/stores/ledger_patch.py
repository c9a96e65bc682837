"""(ours) The unit ledger (:mod:`.market_units`) moved to a new generation by the listings a write wrote, as the market
columns are (:mod:`.market_patch`): the kept listings' plans, units, entries and counted entries are taken as they
are, the written listings' own ledger put in among them in the order of their ids, rows numbered again.

The fresh ledger codes its statuses and its plans' values on its own: they are coded again as the held ledger codes
them, a status or value it never held given the next code. A code no row holds any longer stays (a whole build would
not give it): the ledger is read through its codes, so the figures are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from precon.service.stores.market_patch import IntArray, ListingOrder, Taken
from precon.service.stores.market_units import UnitLedger, value_key


def combined_ledger(held: UnitLedger, written: Sequence[str], fresh: UnitLedger) -> UnitLedger:
    """``held`` without the listings of ``written``, with ``fresh``'s (those of ``written`` that still exist)."""
    order = ListingOrder(held.listing_codes, set(written), fresh.listing_codes)
    plans = Taken(held.plan_first, fresh.plan_first, order.take)
    units = Taken(held.unit_first, fresh.unit_first, order.take)
    events = Taken(held.event_first, fresh.event_first, order.take)
    status_entries = Taken(held.status_first, fresh.status_first, units.rows)
    price_entries = Taken(held.price_first, fresh.price_first, units.rows)
    statuses = list(held.statuses)
    status_of = _recoded(statuses, fresh.statuses, str)
    plan_of = plans.renumbered()
    after = held.plans
    ledger = UnitLedger(
        listing_ids=order.ids,
        listing_codes=dict(zip(order.ids, range(len(order.ids)), strict=True)),
        listing_provinces=order.picked(held.listing_provinces, fresh.listing_provinces),
        plan_first=plans.first,
        unit_first=units.first,
        event_first=events.first,
        plan_sqft=plans.pick(held.plan_sqft, fresh.plan_sqft),
        statuses=statuses,
        unit_plan=plan_of[units.pick(held.unit_plan, after + fresh.unit_plan)].astype(np.int32),
        unit_floor=units.pick(held.unit_floor, fresh.unit_floor),
        unit_status=units.pick(held.unit_status, status_of[fresh.unit_status].astype(np.int16)),
        unit_price=units.pick(held.unit_price, fresh.unit_price),
        unit_text_price=units.pick(held.unit_text_price, fresh.unit_text_price),
        unit_born=units.pick(held.unit_born, fresh.unit_born),
        listing_gone=order.pick(held.listing_gone, fresh.listing_gone),
        status_first=status_entries.first,
        status_at=status_entries.pick(held.status_at, fresh.status_at),
        status_from=status_entries.pick(held.status_from, status_of[fresh.status_from.astype(np.int64)].astype(float)),
        price_first=price_entries.first,
        price_at=price_entries.pick(held.price_at, fresh.price_at),
        price_from=price_entries.pick(held.price_from, fresh.price_from),
        typed_from=price_entries.pick(held.typed_from, fresh.typed_from),
        event_at=events.pick(held.event_at, fresh.event_at),
        event_kind=events.pick(held.event_kind, fresh.event_kind),
        event_plan=plan_of[events.pick(held.event_plan, _after(fresh.event_plan, after))].astype(np.int32),
        event_floor=events.pick(held.event_floor, fresh.event_floor),
        event_status=events.pick(held.event_status, status_of[fresh.event_status].astype(np.int16)),
        event_price=events.pick(held.event_price, fresh.event_price),
        listing_deleted=order.pick(held.listing_deleted, fresh.listing_deleted),
        history_seq=fresh.history_seq,
    )
    ledger.field_values = {name: list(values) for name, values in held.field_values.items()}
    for name, codes in held.plan_codes.items():
        value_of = _recoded(ledger.field_values[name], fresh.field_values.get(name, []), value_key)
        ledger.plan_codes[name] = plans.pick(codes, value_of[fresh.plan_codes[name]].astype(np.int32))
    return ledger


def _recoded(known: list[Any], values: list[Any], key: Any) -> IntArray:
    """Per code of ``values``, its code among ``known`` (a value not known appended to it), and -1 once more at the end
    (code -1, none, stays -1)."""
    codes = {key(value): code for code, value in enumerate(known)}
    found = []
    for value in values:
        code = codes.get(key(value))
        if code is None:
            code = codes[key(value)] = len(known)
            known.append(value)
        found.append(code)
    return np.array([*found, -1], np.int64)


def _after(plans: IntArray, after: int) -> IntArray:
    """Fresh plan rows numbered after the held ones (-1, none, stays -1)."""
    return np.where(plans < 0, -1, plans.astype(np.int64) + after)
