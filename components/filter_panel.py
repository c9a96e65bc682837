"""The search filters as refinement lists: facet values with current counts as checkboxes, a search over every value
of a facet, range sliders bounded by the data, an "available units only" switch, and removable chips.

Every widget shows the :class:`~precon.dashboard.filter_state.FilterState` it is given and, when changed, writes a new
state through :mod:`components.shared_filters`. A widget holds a yes/no or a number, never a label: labels and counts
are drawn afresh on every run from the values and the service's counts, so nothing shown can flow back into the state.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from components import api, shared_filters
from components.facet_search import find_values
from components.filter_chips import bound_text, value_label
from components.formatting import markdown_text
from precon import filters
from precon.dashboard.filter_state import (
    RANGES,
    FacetSpec,
    FilterState,
    RangeSpec,
)

MAX_FACET_VALUES = 100
"""The service returns at most this many values per facet (the most frequent first)."""
FIRST_SHOWN = 5
MORE_STEP = 10
SEARCHABLE_FROM = 8
"""A facet with more values than this offers a search box over all of them."""
BOUND_REFINEMENTS = 8


# -- changing the state -----------------------------------------------------------------------------------------------


def _value_key(param: str, value: str) -> str:
    return f"rf_{param}_{hashlib.sha1(value.encode()).hexdigest()[:12]}"


def _range_key(param: str) -> str:
    return f"rf_range_{param}"


def _on_toggle(param: str, value: str, key: str) -> None:
    chosen = bool(st.session_state.get(key))
    shared_filters.change(lambda state: state.with_value(param, value, chosen))


def _on_range(param: str, options: list[float], key: str) -> None:
    chosen = st.session_state.get(key)
    if not isinstance(chosen, tuple | list) or len(chosen) != 2 or not options:
        return
    low, high = chosen
    shared_filters.change(
        lambda state: state.with_range(param, None if low <= options[0] else low, None if high >= options[-1] else high)
    )


def _on_available(key: str) -> None:
    chosen = bool(st.session_state.get(key))
    shared_filters.change(lambda state: state.with_available(chosen))


def _show_more(param: str) -> None:
    st.session_state[f"rf_more_{param}"] = st.session_state.get(f"rf_more_{param}", FIRST_SHOWN) + MORE_STEP


def _show_fewer(param: str) -> None:
    st.session_state[f"rf_more_{param}"] = FIRST_SHOWN


def set_widget(key: str, value: object) -> None:
    """The widget of ``key`` shows ``value`` on this run (set before it is drawn, so the state is the truth)."""
    if st.session_state.get(key, None) != value:
        st.session_state[key] = value


# -- what the data allows ------------------------------------------------------------------------------------------


def _numbers(keys: Iterable[str]) -> list[float]:
    values = []
    for key in keys:
        try:
            number = float(key)
        except ValueError:
            continue
        if math.isfinite(number):
            values.append(number)
    return values


def _extreme(attr: str, start: float, lowest: bool) -> float:
    """The true min (or max) of a numeric facet whose answer was cut at 100 values: asks again below (above)."""
    current = start
    for _ in range(BOUND_REFINEMENTS):
        beyond = filters.compare(attr, "<" if lowest else ">", int(current) if current.is_integer() else current)
        counts = api.call("facet_counts", facets=[attr], filter=beyond).get(attr, {})
        values = _numbers(counts)
        if not values:
            break
        current = min(values) if lowest else max(values)
        if len(counts) < MAX_FACET_VALUES:
            break
    return current


NUMERIC_ATTRS = sorted({a for r in RANGES for a in (r.low_attr, r.high_attr)})


def numeric_bounds() -> dict[str, tuple[float, float]]:
    """The smallest and largest value of each range's attributes in the sidebar's scope, unfiltered."""
    version, province = api.scope()
    return _numeric_bounds(api.connection().identity, version, province)


@st.cache_data(ttl=api.DATA_TTL_S, show_spinner=False, max_entries=100)
def _numeric_bounds(identity: str, version: str, province: str) -> dict[str, tuple[float, float]]:
    """Read from numeric facets (their keys are the values); a facet with more than 100 values is asked again for
    values beyond the extremes seen until it has them all. Kept whole, so a rerun looks it up once."""
    counts = api.call("facet_counts", facets=NUMERIC_ATTRS)
    bounds: dict[str, tuple[float, float]] = {}
    for attr in NUMERIC_ATTRS:
        keys = counts.get(attr, {})
        values = _numbers(keys)
        if not values:
            continue
        low, high = min(values), max(values)
        if len(keys) >= MAX_FACET_VALUES:
            low, high = _extreme(attr, low, True), _extreme(attr, high, False)
        bounds[attr] = (low, high)
    return bounds


def _nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    if raw <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * magnitude >= raw:
            return factor * magnitude
    return 10 * magnitude


def _price_ladder(low: float, high: float) -> list[float]:
    """Prices to stop at: $10k steps to $1M, $25k to $2M, $50k to $5M, then $250k; about 100–250 stops."""
    steps = ((1_000_000, 10_000), (2_000_000, 25_000), (5_000_000, 50_000), (math.inf, 250_000))
    options: list[float] = []
    value = math.floor(low / 10_000) * 10_000
    while True:
        options.append(float(value))
        if value >= high:
            return options
        step = next(s for limit, s in steps if value < limit)
        value = (math.floor(value / step) + 1) * step


def slider_options(spec: RangeSpec, bounds: Mapping[str, tuple[float, float]]) -> list[float]:
    """The stops of a range slider, from the data's smallest to its largest value (rounded outwards)."""
    low_bound, high_bound = bounds.get(spec.high_attr), bounds.get(spec.low_attr)
    if low_bound is None or high_bound is None:
        return []
    low, high = low_bound[0], high_bound[1]
    if high < low:
        return []
    if spec.unit == "price":
        return _price_ladder(max(low, 0), high)
    if spec.unit == "year":
        return [float(y) for y in range(math.floor(low), math.ceil(high) + 1)]
    step = 0.5 if spec.unit == "count" else _nice_step(high - low, 120)
    first, last = math.floor(low / step), math.ceil(high / step)
    return [round(i * step, 6) for i in range(first, last + 1)]


def _snap(options: Sequence[float], value: float | None, upward: bool) -> float:
    """The slider stop showing ``value``: the last stop at or below it (first at or above, ``upward``)."""
    if value is None:
        return options[-1] if upward else options[0]
    if upward:
        return next((o for o in options if o >= value), options[-1])
    return next((o for o in reversed(options) if o <= value), options[0])


# -- widgets -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FacetView:
    """What one refinement list shows: counts of its values under the other filters, and the names of paths."""

    spec: FacetSpec
    counts: Mapping[str, int]
    names: Mapping[str, str]


def _checkbox(facet: FacetSpec, value: str, count: int, chosen: bool, names: Mapping[str, str], where: str) -> None:
    key = _value_key(facet.param, value) + where
    set_widget(key, chosen)
    st.checkbox(
        f"{value_label(facet, value, names)} · {count:,}",
        key=key,
        on_change=_on_toggle,
        args=(facet.param, value, key),
    )


def refinement_list(view: FacetView, state: FilterState) -> None:
    """One facet: its chosen values, then the most frequent others, "show more", and a search over all values."""
    with st.container(key=f"rf_list_{view.spec.param}"):
        _refinement_list(view, state)


def _refinement_list(view: FacetView, state: FilterState) -> None:
    facet, counts = view.spec, view.counts
    chosen = list(state.facets.get(facet.param, ()))
    st.markdown(f"**{facet.label}**")
    query = ""
    if len(counts) > SEARCHABLE_FROM or facet.collection:
        query = st.text_input(
            f"Search {facet.label.lower()}",
            key=f"rf_find_{facet.param}",
            placeholder=f"Search {facet.label.lower()}…",
            label_visibility="collapsed",
            icon=":material/search:",
        ).strip()
    for value in chosen:
        _checkbox(facet, value, counts.get(value, 0), True, view.names, "")
    if query:
        hits = find_values(facet, query, state, dict(counts))
        shown = [hit for hit in hits.values if hit.value not in chosen]
        for hit in shown:
            _checkbox(facet, hit.value, hit.count, False, {**view.names, **hits.names}, "_found")
        if not shown:
            st.caption(f"No other {facet.label.lower()} matches “{markdown_text(query)}” here.")
        elif hits.more:
            st.caption(f"The first {len(shown)} of {hits.total:,} matches; type more to narrow.")
        if hits.note:
            st.caption(hits.note)
        return
    limit = st.session_state.get(f"rf_more_{facet.param}", FIRST_SHOWN)
    others = [v for v in counts if v not in chosen]
    for value in others[:limit]:
        _checkbox(facet, value, counts[value], False, view.names, "")
    if not counts and not chosen:
        st.caption("No values here.")
    buttons = st.container(horizontal=True, gap="small")
    if len(others) > limit:
        buttons.button(
            f"Show more ({len(others) - limit:,}{'+' if len(counts) >= MAX_FACET_VALUES else ''})",
            key=f"rf_more_button_{facet.param}", type="tertiary", on_click=_show_more, args=(facet.param,),
        )  # fmt: skip
    if limit > FIRST_SHOWN and others:
        buttons.button(
            "Show fewer", key=f"rf_fewer_button_{facet.param}", type="tertiary", on_click=_show_fewer,
            args=(facet.param,),
        )  # fmt: skip


def range_widget(spec: RangeSpec, state: FilterState, bounds: Mapping[str, tuple[float, float]], help: str) -> None:
    options = slider_options(spec, bounds)
    if len(options) < 2:
        st.caption(f"{spec.label}: no values to choose from here.")
        return
    low, high = state.ranges.get(spec.param, (None, None))
    key = _range_key(spec.param)
    shown = (_snap(options, low, False), _snap(options, high, True))
    set_widget(key, shown)
    st.select_slider(
        spec.label,
        options=options,
        value=shown,  # a pair makes it a range slider; the state set above is what it shows
        format_func=lambda v: bound_text(spec, v),
        key=key,
        on_change=_on_range,
        args=(spec.param, options, key),
        help=help,
    )


def units_panel(state: FilterState, bounds: Mapping[str, tuple[float, float]], unit_level: bool) -> None:
    """Bedrooms, bathrooms, size, price and "available units only": one floor plan must meet them all."""
    help_text = (
        "Together with the other unit filters, one floor plan must match."
        if unit_level
        else "This version of the API has no floor plans: matches the listing's own range."
    )
    unit_specs = [s for s in RANGES if s.unit_attr]
    for column, spec in zip(st.columns(len(unit_specs) + 1, gap="medium"), [*unit_specs, None], strict=True):
        with column:
            if spec is not None:
                range_widget(spec, state, bounds, help_text)
            else:
                key = "rf_available"
                set_widget(key, state.available)
                st.toggle(
                    "Available units only",
                    key=key,
                    on_change=_on_available,
                    args=(key,),
                    disabled=not unit_level,
                    help="Only floor plans still for sale count." if unit_level else help_text,
                )


def render_panel(
    state: FilterState,
    views: Sequence[FacetView],
    bounds: Mapping[str, tuple[float, float]],
    *,
    unit_level: bool = True,
    facets_per_row: int = 4,
) -> None:
    """The whole panel: refinement lists in rows, then the units and the completion year."""
    for start in range(0, len(views), facets_per_row):
        row = views[start : start + facets_per_row]
        for column, view in zip(st.columns(facets_per_row, gap="medium"), row, strict=False):
            with column:
                refinement_list(view, state)
    st.markdown("**Units** — " + ("one floor plan that meets all of these" if unit_level else "the listing's ranges"))
    units_panel(state, bounds, unit_level)
    year = next(s for s in RANGES if s.param == "year")
    left, _ = st.columns([1, 3])
    with left:
        range_widget(
            year, state, bounds, "Listings without a completion year (TBD) are left out once this is narrowed."
        )
    st.caption(
        "Values of one filter are combined with OR, different filters with AND. Counts show how many results each "
        "value gives with the other filters. A slider left at its full span filters nothing."
    )
