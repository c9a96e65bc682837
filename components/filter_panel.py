"""The search filters: facets with counts, range sliders bounded by the data, and removable chips — all kept in the URL.

The filters live in the page's address (see :mod:`components.url_state`), one parameter each:

=============  ==========================  =================================================
parameter      what                        example
=============  ==========================  =================================================
``type``       type (any of)               ``type=Condo,Townhouse``
``selling``    selling status              ``selling=Selling Now``
``construction`` construction status       ``construction=Pre Construction``
``city``       city or district            ``city=Toronto,Mississauga``
``hood``       neighbourhood               ``hood=The Junction``
``amenity``    amenities (any of)          ``amenity=Gym,Rooftop Terrace``
``builder``    builder ids (any of)        ``builder=dckH8MglOSdN23zhhELq``
``price``      starting price, CAD         ``price=400000..900000``
``beds``       bedrooms offered            ``beds=2..3``
``baths``      bathrooms offered           ``baths=2..``
``size``       unit size offered, sq ft    ``size=600..1200``
``year``       completion year             ``year=2026..2028``
=============  ==========================  =================================================

Values of one facet are OR-ed, facets and ranges are AND-ed. Beds, baths and size match a listing that offers any
unit in the chosen range (its ``min``–``max`` overlaps it); price matches the starting price; year the completion
year. A slider left at its full extent sets no filter, so listings without that value stay in the results.

The widgets are controlled by the URL: each run sets their values from it, and their callbacks write it back
(and send the view to the first page of results).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import streamlit as st

from components import api, url_state
from components.formatting import cad, markdown_text
from precon import filters
from precon.filters import Expr

MAX_FACET_VALUES = 100
"""The service returns at most this many values per facet (the most frequent first)."""
RESET_ON_CHANGE = ("page",)
"""Parameters a change of filters removes: the view goes back to the first page of results."""
NAME_LOOKUP_CHUNK = 40
"""Paths per name lookup: 40 quoted paths keep the ``filterQuery`` well under its 4,096 characters."""
BOUND_REFINEMENTS = 8


@dataclass(frozen=True)
class Facet:
    param: str
    attr: str
    label: str
    collection: str | None = None
    """For a reference facet: the profile collection its values (paths) point into; the URL holds the ids."""

    def to_url(self, value: str) -> str:
        prefix = f"{self.collection}/"
        return value[len(prefix) :] if self.collection and value.startswith(prefix) else value

    def from_url(self, value: str) -> str:
        return f"{self.collection}/{value}" if self.collection and "/" not in value else value


@dataclass(frozen=True)
class RangeFilter:
    param: str
    label: str
    low_attr: str
    """Compared with the chosen low end (``low_attr >= low``)."""
    high_attr: str
    """Compared with the chosen high end (``high_attr <= high``)."""
    unit: Literal["price", "count", "size", "year"]
    help: str


FACETS: tuple[Facet, ...] = (
    Facet("type", "type", "Type"),
    Facet("selling", "sellingStatus", "Selling status"),
    Facet("construction", "constructionStatus", "Construction status"),
    Facet("city", "cityOrDistrict", "City"),
    Facet("hood", "neighbourhood", "Neighbourhood"),
    Facet("amenity", "amenities", "Amenities"),
    Facet("builder", "builders", "Builder", collection="Builders"),
)
RANGES: tuple[RangeFilter, ...] = (
    RangeFilter("price", "Starting price", "startPrice", "startPrice", "price", "The price the listing starts at."),
    RangeFilter("beds", "Bedrooms", "maxBeds", "minBeds", "count", "Listings offering any unit in this range."),
    RangeFilter("baths", "Bathrooms", "maxBaths", "minBaths", "count", "Listings offering any unit in this range."),
    RangeFilter("size", "Size (sq ft)", "maxSize", "minSize", "size", "Listings offering any unit in this range."),
    RangeFilter(
        "year",
        "Completion year",
        "completionYear",
        "completionYear",
        "year",
        "Listings without a completion year (TBD) are left out once this is narrowed.",
    ),
)
FACET_BY_PARAM = {f.param: f for f in FACETS}
RANGE_BY_PARAM = {r.param: r for r in RANGES}
FACET_ATTRS = [f.attr for f in FACETS]
FILTER_PARAMS = tuple(f.param for f in FACETS) + tuple(r.param for r in RANGES)
NUMERIC_ATTRS = sorted({a for r in RANGES for a in (r.low_attr, r.high_attr)})


def _plain_number(value: float) -> float | int:
    """400000.0 → 400000, so filters read ``startPrice >= 400000``."""
    return int(value) if float(value).is_integer() else float(value)


# -- the selection --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The chosen facet values (by parameter; builders as paths) and ranges (by parameter, ``(lo, hi)``)."""

    facets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ranges: Mapping[str, url_state.Range] = field(default_factory=dict)

    @classmethod
    def from_url(cls) -> Selection:
        facets = {f.param: tuple(url_state.get_list(f.param, f.from_url)) for f in FACETS}
        ranges = {r.param: url_state.get_range(r.param) for r in RANGES}
        return cls(
            {k: v for k, v in facets.items() if v},
            {k: v for k, v in ranges.items() if v != (None, None)},
        )

    @property
    def count(self) -> int:
        """How many filters are on: each facet value, and each narrowed range."""
        return sum(len(values) for values in self.facets.values()) + len(self.ranges)

    def expression(self, without: str | None = None) -> Expr | None:
        """The ``filterQuery`` of this selection; ``without`` leaves one facet out (for its own counts)."""
        facets = {FACET_BY_PARAM[p].attr: list(v) for p, v in self.facets.items() if p != without}
        ranges: dict[str, tuple[float | None, float | None]] = {}
        for param, (low, high) in self.ranges.items():
            spec = RANGE_BY_PARAM[param]
            for attr, bound, side in ((spec.low_attr, low, 0), (spec.high_attr, high, 1)):
                if bound is None:
                    continue
                current = list(ranges.get(attr, (None, None)))
                current[side] = _plain_number(bound)
                ranges[attr] = (current[0], current[1])
        return filters.from_selection(facets, ranges)


def clear_filters() -> None:
    url_state.remove(*FILTER_PARAMS, *RESET_ON_CHANGE)


def _remove_value(param: str, value: str) -> None:
    facet = FACET_BY_PARAM[param]
    values = [v for v in url_state.get_list(param, facet.from_url) if v != value]
    url_state.set_list(param, values, facet.to_url)
    url_state.remove(*RESET_ON_CHANGE)


def _remove_range(param: str) -> None:
    url_state.remove(param, *RESET_ON_CHANGE)


# -- what the data allows ---------------------------------------------------------------------------------------


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
        beyond = filters.compare(attr, "<" if lowest else ">", _plain_number(current))
        counts = api.call("facet_counts", facets=[attr], filter=beyond).get(attr, {})
        values = _numbers(counts)
        if not values:
            break
        current = min(values) if lowest else max(values)
        if len(counts) < MAX_FACET_VALUES:
            break
    return current


def numeric_bounds() -> dict[str, tuple[float, float]]:
    """The smallest and largest value of each range filter's attributes in the sidebar's scope, unfiltered.

    Read from numeric facets (their keys are the values); the service returns the 100 most frequent values of a
    facet, so a facet with more is asked again for values beyond the extremes seen until it has them all.
    """
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


def slider_options(spec: RangeFilter, bounds: Mapping[str, tuple[float, float]]) -> list[float]:
    """The stops of a range slider, from the data's smallest to its largest value (rounded outwards)."""
    low_bound = bounds.get(spec.high_attr)
    high_bound = bounds.get(spec.low_attr)
    if low_bound is None or high_bound is None:
        return []
    low, high = low_bound[0], high_bound[1]
    if high < low:
        return []
    if spec.unit == "price":
        return _price_ladder(low, high)
    if spec.unit == "year":
        return [float(y) for y in range(math.floor(low), math.ceil(high) + 1)]
    step = 0.5 if spec.unit == "count" else _nice_step(high - low, 120)
    first, last = math.floor(low / step), math.ceil(high / step)
    return [round(i * step, 6) for i in range(first, last + 1)]


def format_bound(spec: RangeFilter, value: float | None) -> str:
    if value is None:
        return "any"
    if spec.unit == "price":
        return cad(value)
    if spec.unit == "size":
        return f"{value:,.0f} sq ft"
    if spec.unit == "year":
        return f"{value:.0f}"
    return f"{value:g}"


def describe_range(spec: RangeFilter, low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{format_bound(spec, low)} – {format_bound(spec, high)}"
    if low is not None:
        return f"≥ {format_bound(spec, low)}"
    return f"≤ {format_bound(spec, high)}"


def _snap(options: Sequence[float], value: float | None, upward: bool) -> float:
    """The slider stop showing ``value``: the last stop at or below it (first at or above, ``upward``)."""
    if value is None:
        return options[-1] if upward else options[0]
    if upward:
        return next((o for o in options if o >= value), options[-1])
    return next((o for o in reversed(options) if o <= value), options[0])


# -- names of builders --------------------------------------------------------------------------------------------


def profile_names(paths: Iterable[str], collection: str = "Builders") -> dict[str, str]:
    """Profile names by path (``Builders/<id>`` → ``Aspen Ridge Homes``), looked up in cached chunks."""
    wanted = sorted({p for p in paths if p and p.startswith(f"{collection}/")})
    names: dict[str, str] = {}
    for start in range(0, len(wanted), NAME_LOOKUP_CHUNK):
        chunk = wanted[start : start + NAME_LOOKUP_CHUNK]
        page = api.call(
            "search_profiles",
            collection=collection,
            filter=filters.any_of("path", chunk),
            per_page=len(chunk),
            retrieve_attributes=["name", "path"],
        )
        for profile in page.results:
            if profile.path and profile.name:
                names[profile.path] = profile.name
    return names


def value_label(facet: Facet, value: str, names: Mapping[str, str]) -> str:
    if facet.collection:
        return names.get(value) or f"{facet.label} {facet.to_url(value)}"
    return value


# -- widgets -----------------------------------------------------------------------------------------------------


def _facet_key(param: str) -> str:
    return f"search_facet_{param}"


def _range_key(param: str) -> str:
    return f"search_range_{param}"


def show_in_widget(key: str, value: Any) -> None:
    """Makes the widget of ``key`` show ``value`` (read from the URL) when it holds something else, as after a chip
    was removed. A widget not made yet shows its default, which its caller sets to the URL's value too."""
    if key not in st.session_state:
        return
    current = st.session_state[key]
    if isinstance(current, tuple | list) and isinstance(value, tuple | list):
        same = list(current) == list(value)
    else:
        same = current == value
    if not same:
        st.session_state[key] = value


def _on_facet_change(param: str) -> None:
    facet = FACET_BY_PARAM[param]
    url_state.set_list(param, st.session_state.get(_facet_key(param)) or [], facet.to_url)
    url_state.remove(*RESET_ON_CHANGE)


def _on_range_change(param: str, options: list[float]) -> None:
    chosen = st.session_state.get(_range_key(param))
    if not isinstance(chosen, tuple | list) or len(chosen) != 2 or not options:
        return
    low, high = chosen
    url_state.set_range(param, None if low <= options[0] else low, None if high >= options[-1] else high)
    url_state.remove(*RESET_ON_CHANGE)


def facet_widget(facet: Facet, selection: Selection, counts: Mapping[str, int], names: Mapping[str, str]) -> None:
    chosen = list(selection.facets.get(facet.param, ()))
    options = chosen + [v for v in counts if v not in chosen]
    key = _facet_key(facet.param)
    show_in_widget(key, chosen)

    def label(value: str) -> str:
        return f"{value_label(facet, value, names)} ({counts.get(value, 0):,})"

    st.multiselect(
        facet.label,
        options,
        default=chosen,
        format_func=label,
        key=key,
        on_change=_on_facet_change,
        args=(facet.param,),
        placeholder="Any" if options else "No values here",
        disabled=not options,
    )


def range_widget(spec: RangeFilter, selection: Selection, bounds: Mapping[str, tuple[float, float]]) -> None:
    options = slider_options(spec, bounds)
    if len(options) < 2:
        st.caption(f"{spec.label}: no values to choose from here.")
        return
    low, high = selection.ranges.get(spec.param, (None, None))
    key = _range_key(spec.param)
    shown = (_snap(options, low, False), _snap(options, high, True))
    show_in_widget(key, shown)
    st.select_slider(
        spec.label,
        options=options,
        value=shown,
        format_func=lambda v: format_bound(spec, v),
        key=key,
        on_change=_on_range_change,
        args=(spec.param, options),
        help=spec.help,
    )


def render_panel(
    selection: Selection,
    counts: Mapping[str, Mapping[str, int]],
    bounds: Mapping[str, tuple[float, float]],
    names: Mapping[str, str],
    *,
    facets_per_row: int = 4,
) -> None:
    """The filter panel, as rows across the page: facets (each value counted as it would be with the other
    filters), then the range sliders."""
    for start in range(0, len(FACETS), facets_per_row):
        row = FACETS[start : start + facets_per_row]
        for column, facet in zip(st.columns(facets_per_row), row, strict=False):
            with column:
                facet_widget(facet, selection, counts.get(facet.attr, {}), names)
    for column, spec in zip(st.columns(len(RANGES), gap="medium"), RANGES, strict=True):
        with column:
            range_widget(spec, selection, bounds)
    st.caption(
        "Values of one filter are combined with OR, different filters with AND. Counts show how many results each "
        "value gives with the other filters. Bedrooms, bathrooms and size match a listing offering any unit in "
        "the range; a slider left at its full span filters nothing."
    )


# -- chips ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chip:
    label: str
    on_click: Callable[..., Any]
    args: tuple[Any, ...] = ()


def chips_for(selection: Selection, names: Mapping[str, str]) -> list[Chip]:
    chips = []
    for facet in FACETS:
        for value in selection.facets.get(facet.param, ()):
            text = markdown_text(value_label(facet, value, names))
            chips.append(Chip(f"{facet.label}: {text}", _remove_value, (facet.param, value)))
    for spec in RANGES:
        if spec.param in selection.ranges:
            low, high = selection.ranges[spec.param]
            text = markdown_text(describe_range(spec, low, high))
            chips.append(Chip(f"{spec.label}: {text}", _remove_range, (spec.param,)))
    return chips


def render_chips(chips: Sequence[Chip], *, clear_all: Callable[[], None] | None = clear_filters) -> None:
    """The active filters as buttons that remove themselves, and "Clear all"."""
    if not chips:
        return
    with st.container(horizontal=True, gap="small", key="search_chips"):
        for index, chip in enumerate(chips):
            st.button(
                chip.label,
                key=f"search_chip_{index}",
                icon=":material/close:",
                icon_position="right",
                on_click=chip.on_click,
                args=chip.args,
                help="Remove this filter",
            )
        if clear_all is not None and len(chips) > 1:
            st.button("Clear all", key="search_clear_all", type="tertiary", on_click=clear_all)
