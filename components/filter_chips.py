"""The shared filters in force, as the Map and Facets pages show them: removable chips, "Clear filters", and links
that open the other pages on the same filters.

A chip's label is drawn from the :class:`~precon.dashboard.filter_state.FilterState` on every run and never read back: a
chip's button removes a value or a parameter by name (``state.with_value(param, value, False)`` or
``state.without(param)``), so the address only ever holds the values themselves, never a label or a count.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from components import api, shared_filters
from components.formatting import cad, markdown_text
from precon import filters
from precon.client.errors import PreconError
from precon.dashboard.filter_state import AVAILABLE_PARAM, FACETS, RANGES, TEXT_PARAM, FacetSpec, FilterState, RangeSpec

NAME_LOOKUP_CHUNK = 40
"""Paths per name lookup: 40 quoted paths keep the ``filterQuery`` well under its 4,096 characters."""
PAGES = {
    "search": ("views/search.py", "Edit filters on Search", ":material/search:"),
    "map": ("views/map.py", "Show on the map", ":material/map:"),
    "facets": ("views/facets.py", "Count on Facets", ":material/bar_chart:"),
}


# -- labels -----------------------------------------------------------------------------------------------------


@st.cache_data(ttl=api.DATA_TTL_S, show_spinner=False, max_entries=100)
def _collection_names(identity: str, version: str, province: str, collection: str) -> dict[str, str]:
    client = api.connection().client
    names: dict[str, str] = {}
    for profile in client.iter_profiles(
        collection=collection, per_page=1000, retrieve_attributes=["name", "path"], version=version, province=province
    ):
        if profile.path and profile.name:
            names[profile.path] = profile.name
    return names


def collection_names(collection: str) -> dict[str, str]:
    """``Builders/<id>`` → the builder's name, for every profile of a collection in the sidebar's scope: read once a
    minute, so that labelling a page's builders asks the service nothing."""
    version, province = api.scope()
    return _collection_names(api.connection().identity, version, province, collection)


def profile_names(
    paths: Iterable[str], collection: str = "Builders", lookup: Callable[..., Any] | None = None
) -> dict[str, str]:
    """Profile names by path (``Builders/<id>`` → the builder's name): from :func:`collection_names`, or with
    ``lookup`` (a client's ``search_profiles``, where the page's session cannot be read) in chunks."""
    wanted = sorted({p for p in paths if p and p.startswith(f"{collection}/")})
    if lookup is None:
        known = collection_names(collection)
        return {path: known[path] for path in wanted if path in known}
    names: dict[str, str] = {}
    for start in range(0, len(wanted), NAME_LOOKUP_CHUNK):
        chunk = wanted[start : start + NAME_LOOKUP_CHUNK]
        page = lookup(
            collection=collection,
            filter=filters.any_of("path", chunk),
            per_page=len(chunk),
            retrieve_attributes=["name", "path"],
        )
        names.update({p.path: p.name for p in page.results if p.path and p.name})
    return names


def reference_names(state: FilterState) -> dict[str, str]:
    """Names for the state's reference values (builders); ids where the names cannot be fetched."""
    names: dict[str, str] = {}
    for spec in FACETS:
        if spec.collection and state.facets.get(spec.param):
            with contextlib.suppress(PreconError):
                names.update(profile_names(state.facets[spec.param], spec.collection))
    return names


def value_label(spec: FacetSpec, value: str, names: Mapping[str, str]) -> str:
    if spec.collection:
        return names.get(value) or f"{spec.label} {spec.to_url(value)}"
    return value


def bound_text(spec: RangeSpec, value: float) -> str:
    if spec.unit == "price":
        return cad(value)
    if spec.unit == "size":
        return f"{value:,.0f} sq ft"
    if spec.unit == "year":
        return f"{value:.0f}"
    return f"{value:g}"


def range_text(spec: RangeSpec, low: float | None, high: float | None) -> str:
    """``2 – 3``, ``≥ 2``, ``≤ $800,000``."""
    if low is not None and high is not None:
        return bound_text(spec, low) if low == high else f"{bound_text(spec, low)} – {bound_text(spec, high)}"
    if low is not None:
        return f"≥ {bound_text(spec, low)}"
    return f"≤ {bound_text(spec, high)}" if high is not None else "any"


def describe(
    state: FilterState, names: Mapping[str, str] | None = None, *, facet_labels: Mapping[str, str] | None = None
) -> str:
    """The filters in a sentence's words: ``selling status Sold Out and city or district Toronto``.

    ``facet_labels`` names a facet by its attribute (the page's own wording); else the filter's label is used.
    """
    parts = []
    if state.text:
        parts.append(f"the words “{markdown_text(state.text)}”")
    for spec in FACETS:
        values = state.facets.get(spec.param, ())
        if values:
            label = (facet_labels or {}).get(spec.attr, spec.label).lower()
            shown = " or ".join(markdown_text(value_label(spec, v, names or {})) for v in values)
            parts.append(f"{label} {shown}")
    for spec in RANGES:
        if spec.param in state.ranges:
            parts.append(f"{spec.label.lower()} {range_text(spec, *state.ranges[spec.param])}")
    if state.available:
        parts.append("a floor plan for sale")
    return " and ".join(parts)


# -- chips ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chip:
    label: str
    param: str
    value: str | None = None
    """The facet value the chip removes; None: the whole parameter."""

    def removed_from(self, state: FilterState) -> FilterState:
        if self.value is None:
            return state.without(self.param)
        return state.with_value(self.param, self.value, False)


def chips_of(state: FilterState, names: Mapping[str, str], *, with_text: bool = True) -> list[Chip]:
    """The filters in force, one chip per facet value and per other parameter."""
    chips = []
    if with_text and state.text:
        chips.append(Chip(f"Search: {markdown_text(state.text)}", TEXT_PARAM))
    for spec in FACETS:
        for value in state.facets.get(spec.param, ()):
            chips.append(Chip(f"{spec.label}: {markdown_text(value_label(spec, value, names))}", spec.param, value))
    for spec in RANGES:
        if spec.param in state.ranges:
            chips.append(
                Chip(f"{spec.label}: {markdown_text(range_text(spec, *state.ranges[spec.param]))}", spec.param)
            )
    if state.available:
        chips.append(Chip("Available units only", AVAILABLE_PARAM))
    return chips


def chip_key(prefix: str, param: str, value: str | None = None) -> str:
    """A chip's button key: the same for the same filter on every run, whatever the other filters."""
    digest = hashlib.sha1((value or "").encode()).hexdigest()[:10]
    return f"{prefix}_chip_{param}_{digest}"


def clear_key(prefix: str) -> str:
    return f"{prefix}_clear_filters"


def _remove(param: str, value: str | None) -> None:
    shared_filters.change(Chip("", param, value).removed_from)


def _clear(keep_text: bool) -> None:
    shared_filters.change(lambda state: state.cleared(keep_text=keep_text))


def render(
    state: FilterState,
    *,
    prefix: str,
    with_text: bool = True,
    links: Iterable[str] = ("search",),
    names: Mapping[str, str] | None = None,
) -> None:
    """The chips, "Clear filters" and the links to other pages, on one wrapping row.

    With ``with_text=False`` the search words have a box of their own on the page: no chip, and "Clear filters"
    keeps them.
    """
    chips = chips_of(state, reference_names(state) if names is None else names, with_text=with_text)
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key=f"{prefix}_chips"):
        if not chips:
            st.caption("No filters: every listing in view.")
        for chip in chips:
            st.button(
                chip.label,
                key=chip_key(prefix, chip.param, chip.value),
                icon=":material/close:",
                icon_position="right",
                on_click=_remove,
                args=(chip.param, chip.value),
                help="Remove this filter",
            )
        if chips:
            st.button("Clear filters", key=clear_key(prefix), type="tertiary", on_click=_clear, args=(not with_text,))
        params = shared_filters.link_params(state)
        for page in links:
            path, label, icon = PAGES[page]
            st.page_link(path, label=label, icon=icon, query_params=params)
