"""The search filters a person chooses, as values only, and their one encoding in a page's address.

A :class:`FilterState` holds what was chosen: search words, facet values, numeric ranges and the "available units
only" switch. Labels and counts are never part of it: they are computed for display from the values, so nothing
shown on a page can flow back into the state, the address or a chip. Every change is a pure method returning a new
state, which is what the dashboard's pages call and what the stateful tests drive.

Address parameters (shared by the Search, Map and Facets pages):

================  ==============================  ===============================================
parameter         what                            example
================  ==============================  ===============================================
``q``             search words                    ``q=rooftop terrace``
``type``          type (any of)                   ``type=Condo,Townhouse``
``selling``       selling status (any of)         ``selling=Selling Now``
``construction``  construction status (any of)    ``construction=Pre Construction``
``city``          city or district (any of)       ``city=Toronto,Mississauga``
``hood``          neighbourhood (any of)          ``hood=The Junction``
``amenity``       amenities (any of)              ``amenity=Gym,Rooftop Terrace``
``builder``       builder ids (any of)            ``builder=dckH8MglOSdN23zhhELq``
``beds``          bedrooms of one floor plan      ``beds=2..``
``baths``         bathrooms of one floor plan     ``baths=2..3``
``size``          size of one floor plan, sq ft   ``size=600..1200``
``price``         price of one floor plan, CAD    ``price=..800000``
``available``     only floor plans for sale       ``available=1``
``year``          completion year                 ``year=2026..2028``
================  ==============================  ===============================================

Lists are comma-separated, a comma or backslash inside a value escaped with a backslash (``Oak\\, Maple``);
repeated parameters (``type=A&type=B``) are read too. A range is ``lo..hi`` with either side left out.

Values of one facet are OR-ed, facets are AND-ed. Bedrooms, bathrooms, size, price and "available" are unit-level:
together they ask for one floor plan that satisfies all of them (``unitFilter``), so "2 bedrooms under $800,000"
never matches a listing whose 2-bedroom plans all cost more. Where floor plans are not served (``v1-lite``) they
fall back to the listing's own ranges (:meth:`FilterState.listing_expression` with ``unit_level=False``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from precon import filters
from precon.filters import Expr
from precon.schema import LITE_LEFT_OUT

Range = tuple[float | None, float | None]
RANGE_SEPARATOR = ".."
TEXT_PARAM = "q"
AVAILABLE_PARAM = "available"
AVAILABLE_STATUS = "Available"
SEARCH_MAX_CHARS = 512
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class FacetSpec:
    """A listing attribute offered as a refinement list."""

    param: str
    attr: str
    label: str
    collection: str | None = None
    """For a reference facet: the profile collection its values (paths) point into; the address holds the ids."""

    def to_url(self, value: str) -> str:
        prefix = f"{self.collection}/"
        return value[len(prefix) :] if self.collection and value.startswith(prefix) else value

    def from_url(self, value: str) -> str:
        return f"{self.collection}/{value}" if self.collection and "/" not in value else value


@dataclass(frozen=True)
class RangeSpec:
    """A numeric range filter. ``unit_attr`` is the floor-plan field it constrains (None: a listing field only);
    ``low_attr`` and ``high_attr`` are the listing fields compared when it applies to the listing as a whole
    (``low_attr >= low`` and ``high_attr <= high``: the listing's span overlaps the range)."""

    param: str
    label: str
    low_attr: str
    high_attr: str
    unit: Literal["price", "count", "size", "year"]
    unit_attr: str | None = None


FACETS: tuple[FacetSpec, ...] = (
    FacetSpec("type", "type", "Type"),
    FacetSpec("selling", "sellingStatus", "Selling status"),
    FacetSpec("construction", "constructionStatus", "Construction status"),
    FacetSpec("city", "cityOrDistrict", "City"),
    FacetSpec("hood", "neighbourhood", "Neighbourhood"),
    FacetSpec("amenity", "amenities", "Amenities"),
    FacetSpec("builder", "builders", "Builder", collection="Builders"),
)
RANGES: tuple[RangeSpec, ...] = (
    RangeSpec("beds", "Bedrooms", "maxBeds", "minBeds", "count", "numberOfBedrooms"),
    RangeSpec("baths", "Bathrooms", "maxBaths", "minBaths", "count", "numberOfBathrooms"),
    RangeSpec("size", "Size (sq ft)", "maxSize", "minSize", "size", "squareFeet"),
    RangeSpec("price", "Price", "endPrice", "startPrice", "price", "startPrice"),
    RangeSpec("year", "Completion year", "completionYear", "completionYear", "year"),
)
LITE_VERSION = "v1-lite"


def facets_in(version: str) -> tuple[FacetSpec, ...]:
    """The refinement lists a version can count and filter: ``v1-lite`` hides some attributes (amenities), and
    the service refuses a filter or a facet on a hidden one."""
    return tuple(f for f in FACETS if version != LITE_VERSION or f.attr not in LITE_LEFT_OUT)


FACET_BY_PARAM = {f.param: f for f in FACETS}
RANGE_BY_PARAM = {r.param: r for r in RANGES}
UNIT_RANGES = tuple(r for r in RANGES if r.unit_attr)
FACET_ATTRS = tuple(f.attr for f in FACETS)
PARAMS = (TEXT_PARAM, *FACET_BY_PARAM, *RANGE_BY_PARAM, AVAILABLE_PARAM)
"""Every address parameter a filter state owns, in the order it writes them."""


# -- encodings -------------------------------------------------------------------------------------------------


def encode_list(values: Iterable[str]) -> str:
    """``["Oak, Maple", "Loft"]`` → ``Oak\\, Maple,Loft`` (empty values left out)."""
    return ",".join(v.replace("\\", "\\\\").replace(",", "\\,") for v in values if v)


def decode_list(text: str | None) -> list[str]:
    """The values of :func:`encode_list`'s text, without blanks or duplicates, in their order."""
    if not text:
        return []
    values: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            values.append("".join(current))
            current = []
        else:
            current.append(char)
    values.append("".join(current))
    return list(dict.fromkeys(v.strip() for v in values if v.strip()))


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def encode_range(low: float | None, high: float | None) -> str:
    """``(400000, None)`` → ``400000..``; ``(None, None)`` → ``""``."""
    if low is None and high is None:
        return ""
    left = number_text(low) if low is not None else ""
    right = number_text(high) if high is not None else ""
    return f"{left}{RANGE_SEPARATOR}{right}"


class RangeProblem(ValueError):
    """A range in an address that cannot be read; the message says why, for a person."""


def decode_range(text: str | None) -> Range:
    """``"1.5..3"`` → ``(1.5, 3.0)``; ``"2"`` → ``(2, 2)``; either side may be empty.

    Raises :class:`RangeProblem` for text that is not numbers, or a range whose low end is above its high end.
    """
    raw = (text or "").strip()
    if not raw:
        return (None, None)
    if RANGE_SEPARATOR not in raw:
        single = _number(raw)
        if single is None:
            raise RangeProblem(f"“{raw}” is not a number or a range such as 2..3")
        return (single, single)
    low_text, _, high_text = raw.partition(RANGE_SEPARATOR)
    low = _number(low_text) if low_text.strip() else None
    high = _number(high_text) if high_text.strip() else None
    if (low_text.strip() and low is None) or (high_text.strip() and high is None):
        raise RangeProblem(f"“{raw}” is not a range of numbers such as 2..3, 2.. or ..3")
    if low is not None and high is not None and low > high:
        raise RangeProblem(f"“{raw}” runs backwards: its low end {number_text(low)} is above {number_text(high)}")
    return (low, high)


def _plain(value: float) -> float | int:
    """400000.0 → 400000, so filters read ``startPrice >= 400000``."""
    return int(value) if float(value).is_integer() else float(value)


# -- the state ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterState:
    """What was chosen. Facet values are stored as the service knows them (builders as ``Builders/<id>``)."""

    text: str = ""
    facets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ranges: Mapping[str, Range] = field(default_factory=dict)
    available: bool = False

    # reading and writing the address

    @classmethod
    def from_params(cls, params: Mapping[str, str | Sequence[str]]) -> tuple[FilterState, list[str]]:
        """The state an address names, and what in it could not be used (each a sentence for the page)."""
        problems: list[str] = []

        def texts(name: str) -> list[str]:
            raw = params.get(name)
            if raw is None:
                return []
            return [raw] if isinstance(raw, str) else [str(v) for v in raw]

        text = " ".join(" ".join(texts(TEXT_PARAM)).split())
        if len(text) > SEARCH_MAX_CHARS:
            problems.append(f"The search words were cut to {SEARCH_MAX_CHARS} characters.")
            text = text[:SEARCH_MAX_CHARS]
        facets: dict[str, tuple[str, ...]] = {}
        for spec in FACETS:
            values = [spec.from_url(v) for raw in texts(spec.param) for v in decode_list(raw)]
            if values:
                facets[spec.param] = tuple(dict.fromkeys(values))
        ranges: dict[str, Range] = {}
        for spec in RANGES:
            raw_values = texts(spec.param)
            if not raw_values:
                continue
            try:
                bounds = decode_range(raw_values[0])
            except RangeProblem as problem:
                problems.append(f"{spec.label} (`{spec.param}`): {problem}; this filter was left out.")
                continue
            if bounds != (None, None):
                ranges[spec.param] = bounds
        available = False
        for raw in texts(AVAILABLE_PARAM):
            word = raw.strip().lower()
            if word in TRUE_WORDS:
                available = True
            elif word not in FALSE_WORDS:
                problems.append(f"Available units only (`{AVAILABLE_PARAM}`): “{raw}” is not 1 or 0; left off.")
        return cls(text, facets, ranges, available), problems

    def to_params(self) -> dict[str, str]:
        """The address parameters of this state, in a fixed order; what is not chosen is left out."""
        params: dict[str, str] = {}
        if self.text:
            params[TEXT_PARAM] = self.text
        for spec in FACETS:
            values = self.facets.get(spec.param, ())
            if values:
                params[spec.param] = encode_list(spec.to_url(v) for v in values)
        for spec in RANGES:
            bounds = self.ranges.get(spec.param)
            if bounds and bounds != (None, None):
                params[spec.param] = encode_range(*bounds)
        if self.available:
            params[AVAILABLE_PARAM] = "1"
        return params

    # changes

    def with_text(self, text: str) -> FilterState:
        return replace(self, text=" ".join(text.split())[:SEARCH_MAX_CHARS])

    def with_value(self, param: str, value: str, chosen: bool = True) -> FilterState:
        """``value`` of facet ``param`` added (or, with ``chosen=False``, removed)."""
        spec = FACET_BY_PARAM[param]
        value = spec.from_url(value)
        current = self.facets.get(param, ())
        values = (*current, value) if chosen and value not in current else current
        if not chosen:
            values = tuple(v for v in current if v != value)
        facets = {p: v for p, v in {**self.facets, param: values}.items() if v}
        return replace(self, facets=facets)

    def with_range(self, param: str, low: float | None, high: float | None) -> FilterState:
        if param not in RANGE_BY_PARAM:
            raise KeyError(param)
        if low is not None and high is not None and low > high:
            low, high = high, low
        ranges = {p: r for p, r in self.ranges.items() if p != param}
        if (low, high) != (None, None):
            ranges[param] = (low, high)
        return replace(self, ranges={s.param: ranges[s.param] for s in RANGES if s.param in ranges})

    def with_available(self, available: bool) -> FilterState:
        return replace(self, available=available)

    def without(self, param: str) -> FilterState:
        """Every value of one parameter removed (a facet, a range, the text or the switch)."""
        if param == TEXT_PARAM:
            return replace(self, text="")
        if param == AVAILABLE_PARAM:
            return replace(self, available=False)
        if param in RANGE_BY_PARAM:
            return self.with_range(param, None, None)
        return replace(self, facets={p: v for p, v in self.facets.items() if p != param})

    def cleared(self, keep_text: bool = True) -> FilterState:
        return FilterState(text=self.text if keep_text else "")

    # what it asks of the service

    @property
    def count(self) -> int:
        """How many filters are on: each facet value, each narrowed range, the switch (the words not counted)."""
        return sum(len(v) for v in self.facets.values()) + len(self.ranges) + int(self.available)

    @property
    def has_unit_filter(self) -> bool:
        return self.available or any(s.param in self.ranges for s in UNIT_RANGES)

    def listing_expression(self, *, without: str | None = None, unit_level: bool = True) -> Expr | None:
        """The ``filterQuery``: facets (``without`` leaves one out, for its own counts) and the listing ranges.

        With ``unit_level=False`` (where floor plans are not served) the unit ranges apply to the listing's own
        spans instead, and "available" to nothing.
        """
        facets = {FACET_BY_PARAM[p].attr: list(v) for p, v in self.facets.items() if p != without}
        ranges: dict[str, tuple[float | None, float | None]] = {}
        for param, (low, high) in self.ranges.items():
            spec = RANGE_BY_PARAM[param]
            if spec.unit_attr and unit_level:
                continue
            for attr, bound, side in ((spec.low_attr, low, 0), (spec.high_attr, high, 1)):
                if bound is None:
                    continue
                current = list(ranges.get(attr, (None, None)))
                current[side] = _plain(bound)
                ranges[attr] = (current[0], current[1])
        return filters.from_selection(facets, ranges)

    def unit_expression(self) -> Expr | None:
        """The ``unitFilter``: one floor plan with every unit range, and for sale when "available" is on."""
        clauses: list[Expr | None] = []
        for spec in UNIT_RANGES:
            low, high = self.ranges.get(spec.param, (None, None))
            assert spec.unit_attr is not None
            clauses.append(
                filters.between(
                    spec.unit_attr,
                    None if low is None else _plain(low),
                    None if high is None else _plain(high),
                )
            )
        if self.available:
            clauses.append(filters.eq("status", AVAILABLE_STATUS))
        return filters.and_(*clauses)


def necessary_listing_filter(unit: Expr | None, prefix: str = "floorPlans.") -> Expr | None:
    """A listing-level filter that every listing with a plan satisfying ``unit`` also satisfies.

    Each condition on one plan holds for some plan of the listing, so ``numberOfBedrooms >= 2`` becomes
    ``floorPlans.numberOfBedrooms >= 2``: a superset of the answer that a service without ``unitFilter`` can
    narrow the candidates to. A negation says nothing about the other plans, so it narrows nothing (None).
    """
    if unit is None or isinstance(unit, filters.Not):
        return None
    if isinstance(unit, filters.And):
        return filters.and_(*(necessary_listing_filter(e, prefix) for e in unit.items))
    if isinstance(unit, filters.Or):
        parts = [necessary_listing_filter(e, prefix) for e in unit.items]
        return None if any(p is None for p in parts) else filters.or_(*parts)
    return replace(unit, attr=prefix + unit.attr)
