"""(ours) ``market_stats`` under a ``unitFilter``: the filter chooses units, not listings (contract.md, "Market
statistics"). Its plan conditions are tested on the unit's floor plan (as it is now), its ``units.*`` conditions on the
unit's state at the moment counted: at the interval's end for ``unitsAvailable``, ``sellThrough`` and the medians,
just before the entry for ``unitsSold``, ``priceIncreases`` and ``priceCuts``. ``launches`` counts the listings with a
plan that meets the plan conditions (whatever a unit's state: a ``units.*`` test is unknown for a plan).

The market columns (:mod:`.market_stats`) keep units by part and cannot tell one unit from another; this module works
on :class:`UnitLedger`, every unit a row, kept per generation beside them and built only when a request names a
``unitFilter``. Plan conditions are answered by the reference evaluator (:mod:`precon.filters`) on each plan's own
fields, ``units.*`` tests by the unit columns the search's plan index tests (:class:`~precon.service.search.plans.
UnitColumns`), so that a unit meets the filter here exactly when a search would find it in that state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from precon.filters import UNIT_PREFIX, And, Compare, Expr, Not, Or, compile_predicate
from precon.service.search.arrays import ranges
from precon.service.search.plans import Leaf, UnitColumns, combined, status_reading, unit_or_plan
from precon.service.stores.market_layers import Layers, as_layers
from precon.service.stores.market_stats import (
    AVAILABLE,
    CUT,
    INCREASE,
    PLAN_GROUPS,
    SOLD,
    SOLD_EVENT,
    STATUS_CODES,
    FieldReplay,
    MarketColumns,
    MarketGroup,
    group_key,
    launch_counts,
    listing_codes,
    plan_keys,
    state_figures,
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def value_key(value: Any) -> bytes:
    """What tells a plan's value of a field from another (``2``, ``2.0`` and ``"2"`` are three): the ledger codes
    each distinct one once."""
    return orjson.dumps(value) + type(value).__name__.encode()


def _empty_int() -> IntArray:
    return np.zeros(1, np.int64)


@dataclass
class UnitLedger:
    """Every unit of the market's listings (now, and deleted ones' as they last were) as a row, with its plan, and its
    entries: what a ``unitFilter`` is tested on at any moment. Listings are codes, in the order of ``listing_ids``;
    each listing's plans, units and counted entries are a range."""

    listing_ids: list[str] = field(default_factory=list)
    listing_codes: dict[str, int] = field(default_factory=dict)
    """Each listing's code (its position in ``listing_ids``)."""
    listing_provinces: list[str | None] = field(default_factory=list)
    plan_first: IntArray = field(default_factory=_empty_int)
    unit_first: IntArray = field(default_factory=_empty_int)
    event_first: IntArray = field(default_factory=_empty_int)
    plan_codes: dict[str, npt.NDArray[np.int32]] = field(default_factory=dict)
    """Per field of a plan that a unit filter or a group tests, per plan, the code of its value in
    :attr:`field_values` (-1: the plan lacks it): a test of one field is answered once per distinct value."""
    field_values: dict[str, list[Any]] = field(default_factory=dict)
    plan_sqft: FloatArray = field(default_factory=lambda: np.zeros(0))
    """Per plan, its ``squareFeet`` as a number above 0 (NaN: none)."""
    statuses: list[str] = field(default_factory=list)
    """The unit statuses met, by code (-1: no status)."""
    unit_plan: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    unit_floor: FloatArray = field(default_factory=lambda: np.zeros(0))
    unit_status: npt.NDArray[np.int16] = field(default_factory=lambda: np.zeros(0, np.int16))
    unit_price: FloatArray = field(default_factory=lambda: np.zeros(0))
    """Its price as a filter reads it (a number, or numeric text); NaN: none."""
    unit_text_price: Mask = field(default_factory=lambda: np.zeros(0, np.bool_))
    """Whether its price is numeric text (a filter reads it, the medians do not)."""
    unit_born: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    listing_gone: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Per listing, when it was deleted (:data:`~.market_stats.NEVER`: stored now)."""
    status_first: IntArray = field(default_factory=_empty_int)
    """Per unit, its first status entry's row (entries ordered by unit, then time), one more."""
    status_at: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    status_from: FloatArray = field(default_factory=lambda: np.zeros(0))
    price_first: IntArray = field(default_factory=_empty_int)
    price_at: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    price_from: FloatArray = field(default_factory=lambda: np.zeros(0))
    typed_from: FloatArray = field(default_factory=lambda: np.zeros(0))
    event_at: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    event_kind: npt.NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, np.int8))
    event_plan: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    """The plan of the entry's unit (-1: a plan no longer in the listing: it meets no unit filter)."""
    event_floor: FloatArray = field(default_factory=lambda: np.zeros(0))
    event_status: npt.NDArray[np.int16] = field(default_factory=lambda: np.zeros(0, np.int16))
    """The unit's status just before the entry (a code of :attr:`statuses`, -1: none or not known)."""
    event_price: FloatArray = field(default_factory=lambda: np.zeros(0))
    """Its price just before the entry, as a filter reads it."""
    listing_deleted: Mask = field(default_factory=lambda: np.zeros(0, np.bool_))
    """Per listing, whether it is a deleted listing (as it last was)."""
    history_seq: int = 0
    """The last history entry the ledger holds (a store's sequence number: entries after it are news)."""

    def codes(self, listing_ids: Sequence[str], provinces: frozenset[str] | None) -> IntArray:
        """The codes of those of ``listing_ids`` the ledger holds (in ``provinces``, when given), each once."""
        return listing_codes(self.listing_codes, self.listing_provinces, listing_ids, provinces)

    @property
    def plans(self) -> int:
        return int(self.plan_first[-1])


class _Statuses:
    """The ledger's status codes read three ways: as ``market_stats`` counts them, folded as a filter matches them
    (codes of ``terms``), and as numbers."""

    def __init__(self, statuses: list[str]) -> None:
        readings = [status_reading(status) for status in statuses]
        self.terms: dict[str, int] = {}
        folded = [self.terms.setdefault(text, len(self.terms)) for text, _ in readings]
        # Code -1 (no status) is the last element of each table.
        self.market = np.array([STATUS_CODES.get(s, 0) for s in statuses] + [0], np.int8)
        self.folded = np.array([*folded, -1], np.int32)
        self.number = np.array([math.nan if n is None else n for _, n in readings] + [math.nan])


class UnitChooser:
    """One request's ``unitFilter`` over a ledger: which plans meet its plan conditions, and which units in a state
    meet it whole. A plan condition names one field: the reference evaluator answers it once per distinct value of
    that field, and each plan takes its value's answer."""

    def __init__(self, ledger: UnitLedger, expr: Expr) -> None:
        self.ledger = ledger
        self.expr = expr
        self.statuses = _Statuses(ledger.statuses)
        self._masks: dict[str, Mask] = {}

    def _by_value(self, key: str, name: str, test: Callable[[dict[str, Any]], bool]) -> Mask:
        """Per plan of the ledger (and one more, for no plan: False), ``test`` of its field ``name`` alone."""
        mask = self._masks.get(key)
        if mask is None:
            codes = self.ledger.plan_codes.get(name)
            if codes is None:  # no field a unit filter names: no plan holds a value of it
                codes = np.full(self.ledger.plans, -1, np.int32)
            values = self.ledger.field_values.get(name, [])
            answers = np.array([test({name: value}) for value in values] + [test({})], np.bool_)
            mask = self._masks[key] = np.concatenate([answers[codes], [False]])
        return mask

    def leaf(self, expr: Expr, plans: IntArray) -> Mask:
        """Per plan in ``plans`` (-1: none), whether its fields meet one plan condition."""
        return self._by_value(repr(expr), expr.attr, compile_predicate(expr))[plans]

    def group(self, plan: tuple[str, str] | None, plans: IntArray) -> Mask:
        """Per plan in ``plans``, whether it holds a group's (attribute, value) (True without one)."""
        if plan is None:
            return plans >= 0
        attribute, value = plan
        position = list(PLAN_GROUPS).index(attribute)
        key = group_key(attribute, value)
        name = attribute.split(".", 1)[1]
        return self._by_value(f"group {attribute} {key}", name, lambda p: key in plan_keys(p)[position])[plans]

    def holds(self, plans: IntArray, units: UnitColumns) -> Mask:
        """Per row (a unit of a plan, in a state), whether the filter holds: the plan conditions on its plan, the
        ``units.*`` tests on its state. A unit of no plan meets nothing."""

        def on_plans(test: Leaf) -> Mask:
            return self.leaf(test, plans)

        return combined(self.expr, lambda leaf: unit_or_plan(leaf, units, on_plans)) & (plans >= 0)

    def plans_may_meet(self, plans: IntArray) -> Mask:
        """Per plan, whether it meets the plan conditions for some state of a unit (a ``units.*`` test unknown):
        Kleene's three values, unknown counted as meeting."""
        return self._three(self.expr, plans)[0]

    def _three(self, expr: Expr, plans: IntArray) -> tuple[Mask, Mask]:
        """(may hold, surely holds) per plan."""
        if isinstance(expr, And | Or):
            parts = [self._three(item, plans) for item in expr.items]
            reduce = np.logical_and.reduce if isinstance(expr, And) else np.logical_or.reduce
            return reduce([p[0] for p in parts]), reduce([p[1] for p in parts])
        if isinstance(expr, Not):
            may, sure = self._three(expr.expr, plans)
            return ~sure, ~may
        if isinstance(expr, Compare) and expr.op == "!=":
            return self._three(Not(Compare(expr.attr, "=", expr.value)), plans)
        if expr.attr.startswith(UNIT_PREFIX):
            return np.ones(len(plans), np.bool_), np.zeros(len(plans), np.bool_)
        held = self.leaf(expr, plans)
        return held, held

    def units(self, plans: IntArray, status: IntArray, price: FloatArray, floor: FloatArray) -> UnitColumns:
        """Rows of units in these states, as the plan index's unit columns hold them."""
        statuses = self.statuses
        return UnitColumns(
            plans, statuses.folded[status], statuses.number[status], price, floor, statuses.terms, np.zeros(0, bool)
        )


def unit_filtered_series(
    columns: MarketColumns | Layers[MarketColumns],
    ledger: UnitLedger | Layers[UnitLedger],
    boundaries: Sequence[int],
    groups: Sequence[MarketGroup],
    unit_filter: Expr,
    provinces: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """Each group's series, its unit figures over the units ``unit_filter`` chooses (see the module's docstring),
    each layer of the ledger (:mod:`.market_layers`) read on its own and the figures taken over both."""
    edges = np.asarray(boundaries, dtype=np.int64)
    market, ledgers = as_layers(columns), as_layers(ledger)
    choosers = [UnitChooser(layer, unit_filter) for layer in ledgers.layers]
    series = []
    for group in groups:
        codes = ledgers.codes(group.listing_ids, provinces)
        launching = [
            chooser.ledger.listing_ids[code]
            for chooser, found in zip(choosers, codes, strict=True)
            for code in _launching(chooser, found, group.plan).tolist()
        ]
        launches = launch_counts(market.layers, market.codes(launching, provinces), edges)
        events = sum(_events(chooser, found, group.plan, edges) for chooser, found in zip(choosers, codes, strict=True))
        states = _figures(
            [_states(chooser, found, group.plan, edges[1:]) for chooser, found in zip(choosers, codes, strict=True)]
        )
        points = []
        for k in range(len(edges) - 1):
            points.append(
                {
                    "start": int(edges[k]),
                    "launches": int(launches[k]),
                    "unitsSold": int(events[SOLD_EVENT][k]),
                    "priceIncreases": int(events[INCREASE][k]),
                    "priceCuts": int(events[CUT][k]),
                    **states[k],
                }
            )
        series.append({"group": group.value, "points": points})
    return series


def _launching(chooser: UnitChooser, codes: IntArray, plan: tuple[str, str] | None) -> IntArray:
    """The listings (codes) with a plan that may meet the filter's plan conditions (and holds the group's value)."""
    ledger = chooser.ledger
    plans = ranges(ledger.plan_first[codes], ledger.plan_first[codes + 1])
    meets = chooser.plans_may_meet(plans) & chooser.group(plan, plans)
    owner = np.repeat(codes, ledger.plan_first[codes + 1] - ledger.plan_first[codes])
    return np.unique(owner[meets])


def _events(chooser: UnitChooser, codes: IntArray, plan: tuple[str, str] | None, edges: IntArray) -> IntArray:
    """Per kind of counted entry, per interval: the entries whose unit met the filter just before them."""
    ledger = chooser.ledger
    rows = ranges(ledger.event_first[codes], ledger.event_first[codes + 1])
    plans = ledger.event_plan[rows].astype(np.int64)
    units = chooser.units(plans, ledger.event_status[rows].astype(np.int64), ledger.event_price[rows],
                          ledger.event_floor[rows])  # fmt: skip
    kept = rows[chooser.holds(plans, units) & chooser.group(plan, plans)]
    intervals = len(edges) - 1
    slot = np.searchsorted(edges, ledger.event_at[kept], side="right") - 1
    inside = (slot >= 0) & (slot < intervals)
    flat = ledger.event_kind[kept][inside].astype(np.int64) * intervals + slot[inside]
    return np.bincount(flat, minlength=3 * intervals).reshape(3, intervals)


def _states(chooser: UnitChooser, codes: IntArray, plan: tuple[str, str] | None, ends: IntArray) -> list[_State]:
    """Per interval's end, the figures of the units that exist then and meet the filter in their state then. A unit
    with no status or price entry is in one state throughout: whether it meets the filter is decided once, and only
    whether it exists is asked at each end; the others (a few in ten) are replayed end by end."""
    ledger = chooser.ledger
    rows = ranges(ledger.unit_first[codes], ledger.unit_first[codes + 1])
    gone = np.repeat(ledger.listing_gone[codes], ledger.unit_first[codes + 1] - ledger.unit_first[codes])
    plans = ledger.unit_plan[rows].astype(np.int64)
    may = chooser.plans_may_meet(plans) & chooser.group(plan, plans)  # the others meet it in no state
    rows, plans, gone = rows[may], plans[may], gone[may]
    moves = (ledger.status_first[rows + 1] > ledger.status_first[rows]) | (
        ledger.price_first[rows + 1] > ledger.price_first[rows]
    )
    still = _still_states(chooser, rows[~moves], plans[~moves], gone[~moves], ends)
    moving = _moving_states(chooser, rows[moves], plans[moves], gone[moves], ends)
    return [_State.joined(pair) for pair in zip(still, moving, strict=True)]


def _still_states(
    chooser: UnitChooser, rows: IntArray, plans: IntArray, gone: IntArray, ends: IntArray
) -> list[_State]:
    """:func:`_states` of units with no entry: those that meet the filter, counted where they exist."""
    ledger = chooser.ledger
    status = ledger.unit_status[rows].astype(np.int64)
    meets = chooser.holds(plans, chooser.units(plans, status, ledger.unit_price[rows], ledger.unit_floor[rows]))
    rows, plans, gone, status = rows[meets], plans[meets], gone[meets], status[meets]
    market = chooser.statuses.market[status]
    sold, available = market == SOLD, market == AVAILABLE
    born = ledger.unit_born[rows]
    typed = np.where(ledger.unit_text_price[rows], math.nan, ledger.unit_price[rows])
    sqft = ledger.plan_sqft[np.maximum(plans, 0)]
    found = []
    for end in ends.tolist():
        exists = (born < end) & (gone >= end)
        on_sale = exists & available
        found.append(_State.of(exists, exists & sold, on_sale, typed[on_sale], sqft[on_sale]))
    return found


def _moving_states(
    chooser: UnitChooser, rows: IntArray, plans: IntArray, gone: IntArray, ends: IntArray
) -> list[_State]:
    """:func:`_states` of units with entries: each replayed to each end, and tested in its state then."""
    ledger = chooser.ledger
    status_now = ledger.unit_status[rows].astype(np.float64)
    status = FieldReplay(ledger.status_first, ledger.status_at, ledger.status_from, rows)
    price = FieldReplay(ledger.price_first, ledger.price_at, ledger.price_from, rows)
    typed = FieldReplay(ledger.price_first, ledger.price_at, ledger.typed_from, rows)
    typed_now = np.where(ledger.unit_text_price[rows], math.nan, ledger.unit_price[rows])
    floor, born = ledger.unit_floor[rows], ledger.unit_born[rows]
    sqft = ledger.plan_sqft[np.maximum(plans, 0)]
    found = []
    for end in ends.tolist():
        codes_then = status.value_at(end, status_now).astype(np.int64)
        units = chooser.units(plans, codes_then, price.value_at(end, ledger.unit_price[rows]), floor)
        chosen = (born < end) & (gone >= end) & chooser.holds(plans, units)
        market = chooser.statuses.market[codes_then]
        available = chosen & (market == AVAILABLE)
        found.append(_State.of(chosen, chosen & (market == SOLD), available, typed.value_at(end, typed_now)[available],
                               sqft[available]))  # fmt: skip
    return found


@dataclass
class _State:
    """The units of one layer at an interval's end: how many exist, are sold, are available; their prices and prices
    per square foot."""

    existing: int
    sold: int
    available: int
    prices: FloatArray
    per_sqft: FloatArray

    @classmethod
    def of(cls, existing: Mask, sold: Mask, available: Mask, prices: FloatArray, sqft: FloatArray) -> _State:
        """The state of units marked existing, sold and available (``prices`` and ``sqft``: the available ones')."""
        ratios = prices / sqft
        return cls(int(existing.sum()), int(sold.sum()), int(available.sum()), prices[~np.isnan(prices)],
                   ratios[~np.isnan(ratios)])  # fmt: skip

    @classmethod
    def joined(cls, states: Sequence[_State]) -> _State:
        """The state of the units of ``states`` together."""
        return cls(
            sum(state.existing for state in states),
            sum(state.sold for state in states),
            sum(state.available for state in states),
            np.concatenate([state.prices for state in states]),
            np.concatenate([state.per_sqft for state in states]),
        )


def _figures(layers: list[list[_State]]) -> list[dict[str, Any]]:
    """Per interval's end, the figures of the units of every layer."""
    found = []
    for states in zip(*layers, strict=True):
        state = _State.joined(states)
        prices, per_sqft = state.prices, state.per_sqft
        found.append(
            state_figures(
                state.existing,
                state.sold,
                state.available,
                float(np.median(prices)) if len(prices) else math.nan,
                float(np.median(per_sqft)) if len(per_sqft) else math.nan,
            )
        )
    return found
