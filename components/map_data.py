"""The Map page's data, kept small: every listing matching the filters as columns (positions as numpy arrays,
names and statuses as lists), not as listing objects.

The page reruns on every radius step and every click. Listing objects by the ten thousand cost seconds each time
Streamlit's data cache hands back a copy of them (it unpickles what it returns); columns cost milliseconds. So the
listings are fetched once per filter state (a thousand per request, as the API pages them), turned into
:class:`MapPoints`, and only those are cached. The cities' positions (for the labels and the nearest-city heading)
are derived from the unfiltered points, kept longer: the catalogue's cities move rarely.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import streamlit as st

from components import api
from components.formatting import cad
from components.maps import OTHER_COLOUR, STATUS_COLOURS
from components.search_scope import SearchScope
from precon import filters
from precon.dashboard import listing_search

ATTRIBUTES = ("listingId", "name", "cityOrDistrict", "state", "neighbourhood", "sellingStatus", "startPrice", "_geoloc")
"""What the map asks of every matching listing: its place, its status, and what its tooltip says."""
NEIGHBOURHOOD_MIN_LISTINGS = 2
"""A neighbourhood is placed (and can name a centre) once this many listings give its position."""
MAX_POINTS = 50_000
"""More listings than this make the first load slow; the map says when it stops there."""
CITY_POSITIONS_TTL_S = 600
"""The catalogue's cities (the labels) are refetched at most every ten minutes."""
CENTRE_DECIMALS = 5
CLUSTER_CELL_PX = 56
"""The side of a cluster's square cell, in pixels at the map's opening zoom."""
STATUSES = tuple(STATUS_COLOURS)
OTHER = len(STATUSES)
"""The status code of a listing whose status has no colour of its own."""

FAR_CELL_FACTOR = 8
"""Listings beyond the box around the centre are counted in cells this many times wider (see :func:`cluster_rows`)."""

FloatArray = npt.NDArray[np.float64]
CodeArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Near:
    """A box around a centre, ``half_m`` metres each way (north–south and east–west)."""

    lat: float
    lng: float
    half_m: float

    def contains(self, lat: FloatArray, lng: FloatArray) -> npt.NDArray[np.bool_]:
        dlat = self.half_m / 111_320.0
        dlng = self.half_m / (111_320.0 * max(math.cos(math.radians(self.lat)), 0.01))
        return (np.abs(lat - self.lat) <= dlat) & (np.abs(lng - self.lng) <= dlng)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class MapPoints:
    """The listings matching a filter state that have a position, as columns (row *i* is one listing)."""

    ids: list[str]
    names: list[str]
    cities: list[str]
    provinces: list[str]
    neighbourhoods: list[str]
    """Each listing's first neighbourhood, or an empty string."""
    statuses: list[str]
    prices: list[float | None]
    lat: FloatArray
    lng: FloatArray
    matching: int
    """How many listings match (the map holds at most :data:`MAX_POINTS` of them)."""
    fetched: int
    """How many were fetched, with a position or not."""
    status_counts: dict[str, int] = field(default_factory=dict)
    """Over every fetched listing, ``Unknown`` for those without a status."""
    digest: str = ""
    """Names the rows: the chart is keyed by it, so a selection never outlives the rows it picked."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def without_position(self) -> int:
        return self.fetched - len(self.ids)

    def status_codes(self) -> CodeArray:
        index = {status: code for code, status in enumerate(STATUSES)}
        return np.fromiter((index.get(s, OTHER) for s in self.statuses), np.int64, len(self.statuses))


def points_of(listings: list[Any], matching: int) -> MapPoints:
    placed = [x for x in listings if x.geoloc is not None]
    ids = [x.id or "" for x in placed]
    return MapPoints(
        ids=ids,
        names=[x.name or x.id or "" for x in placed],
        cities=[x.cityOrDistrict or "" for x in placed],
        provinces=[getattr(x, "state", None) or "" for x in placed],
        neighbourhoods=[x.neighbourhood[0] if x.neighbourhood else "" for x in placed],
        statuses=[x.sellingStatus or "" for x in placed],
        prices=[x.startPrice for x in placed],
        lat=np.fromiter((x.geoloc.lat for x in placed), np.float64, len(placed)),
        lng=np.fromiter((x.geoloc.lng for x in placed), np.float64, len(placed)),
        matching=matching,
        fetched=len(listings),
        status_counts=dict(Counter(x.sellingStatus or "Unknown" for x in listings)),
        digest=hashlib.sha1("\n".join(ids).encode()).hexdigest()[:12],
    )


class _DirectBackend:
    """The client's listing search in one version and province, outside Streamlit's data cache (the points
    built from its answers are cached instead); the client's HTTP cache still answers repeats."""

    def __init__(self, version: str, province: str) -> None:
        self.version, self.province = version, province

    def search_listings(self, search: str | None = None, **arguments: Any) -> Any:
        client = api.connection().client
        return client.search_listings(search, **arguments, version=self.version, province=self.province)

    def multiple_listings(self, ids: Any, **arguments: Any) -> Any:
        client = api.connection().client
        return client.multiple_listings(list(ids), **arguments, version=self.version, province=self.province)


@st.cache_data(ttl=api.DATA_TTL_S, max_entries=50, show_spinner=False)
def _fetch(
    identity: str, version: str, province: str, text: str, base: str, unit: str, unit_supported: bool
) -> MapPoints:
    listings, matching = listing_search.all_matching(
        _DirectBackend(version, province), text, filters.parse(base or None), filters.parse(unit or None),
        ATTRIBUTES, unit_supported=unit_supported, limit=MAX_POINTS,
    )  # fmt: skip
    return points_of(listings, matching)


def matching(scope: SearchScope) -> MapPoints:
    """Every listing matching the filters (up to :data:`MAX_POINTS`), a thousand per request, as columns."""
    version, province = api.scope()
    return _fetch(
        api.connection().identity, version, province, scope.text, filters.to_query(scope.filter),
        filters.to_query(scope.unit_filter), scope.unit_supported,
    )  # fmt: skip


Position = tuple[float, float]


@dataclass(frozen=True)
class Places:
    """Where the catalogue's cities and neighbourhoods are: the mean position of their listings."""

    cities: dict[str, Position]
    neighbourhoods: dict[tuple[str, str], Position]
    """By (neighbourhood, city)."""


@st.cache_data(ttl=CITY_POSITIONS_TTL_S, max_entries=20, show_spinner=False)
def _places(identity: str, version: str, province: str) -> Places:
    everything = _fetch(identity, version, province, "", "", "", True)
    return Places(city_positions(everything), neighbourhood_positions(everything))


def catalogue_places() -> Places:
    """The cities and neighbourhoods of the whole catalogue (the labels and the heading that names a centre)."""
    version, province = api.scope()
    return _places(api.connection().identity, version, province)


def _mean(total: list[float]) -> Position:
    return round(float(total[0] / total[2]), CENTRE_DECIMALS), round(float(total[1] / total[2]), CENTRE_DECIMALS)


def _totals(names: list[str], groups: list[str], points: MapPoints) -> dict[tuple[str, str], list[float]]:
    """Per (name, group) with a name and a group: the sum of the latitudes, of the longitudes, and the count."""
    totals: dict[tuple[str, str], list[float]] = {}
    for name, group, lat, lng in zip(names, groups, points.lat, points.lng, strict=True):
        if name and group:
            total = totals.setdefault((name, group), [0.0, 0.0, 0.0])
            total[0] += lat
            total[1] += lng
            total[2] += 1
    return totals


def neighbourhood_positions(points: MapPoints) -> dict[tuple[str, str], Position]:
    """Each (neighbourhood, city)'s mean listing position, where at least :data:`NEIGHBOURHOOD_MIN_LISTINGS` have
    one."""
    totals = _totals(points.neighbourhoods, points.cities, points)
    return {key: _mean(total) for key, total in totals.items() if total[2] >= NEIGHBOURHOOD_MIN_LISTINGS}


def city_positions(points: MapPoints) -> dict[str, Position]:
    """Each city's mean listing position; for a name used in several provinces, that of its largest one."""
    provinces = [province or "?" for province in points.provinces]  # a city with no province is still placed
    best: dict[str, list[float]] = {}
    for (city, _), total in _totals(points.cities, provinces, points).items():
        if total[2] > best.get(city, [0.0, 0.0, 0.0])[2]:
            best[city] = total
    return {city: _mean(total) for city, total in best.items()}


def listing_rows(points: MapPoints) -> list[dict[str, Any]]:
    """What the listings layer draws and its tooltip shows: one row per listing."""
    rows = []
    for i, listing_id in enumerate(points.ids):
        status = points.statuses[i] or "Unknown"
        price = points.prices[i]
        offer = f"from {cad(price)}" if price else "contact for pricing"
        rows.append(
            {
                "id": listing_id,
                "lat": float(points.lat[i]),
                "lng": float(points.lng[i]),
                "colour": STATUS_COLOURS.get(points.statuses[i], OTHER_COLOUR),
                "title": points.names[i],
                "detail": " · ".join(part for part in (points.cities[i], status, offer) if part),
            }
        )
    return rows


def cluster_rows(
    points: MapPoints, lat: float, zoom: float, cell_px: int = CLUSTER_CELL_PX, near: Near | None = None
) -> list[dict[str, Any]]:
    """The listings counted into square cells of ``cell_px`` pixels at ``zoom``: one row per cell that has any,
    at the mean position of its listings, coloured by its commonest status, its radius (metres) growing with the
    square root of its count. In numpy, so 50,000 listings take milliseconds and send a few hundred rows.

    With ``near``, only the listings inside that box are counted in such cells; those beyond it, which the map
    shows only when panned or zoomed out, in cells :data:`FAR_CELL_FACTOR` times wider. A country-wide catalogue
    then sends hundreds of rows on every step, not thousands."""
    if not len(points):
        return []
    metres_per_px = 40_075_016.0 * max(math.cos(math.radians(lat)), 0.05) / (512 * 2**zoom)
    cell_m = np.full(len(points), cell_px * metres_per_px)
    if near is not None:
        cell_m[~near.contains(points.lat, points.lng)] *= FAR_CELL_FACTOR
    dlat = cell_m / 111_320.0
    dlng = cell_m / (111_320.0 * max(math.cos(math.radians(lat)), 0.05))
    far = (cell_m > cell_m.min()).astype(np.int64)
    keys = np.floor(points.lat / dlat).astype(np.int64) * 1_000_003 + np.floor(points.lng / dlng).astype(np.int64)
    cells, which = np.unique(keys * 2 + far, return_inverse=True)
    counts = np.bincount(which, minlength=len(cells))
    sizes = np.bincount(which, cell_m, len(cells)) / counts
    cell_far = cells % 2 == 1
    largest = np.where(cell_far, counts[cell_far].max(initial=1), counts[~cell_far].max(initial=1))
    return _cluster_rows(points, which, counts, sizes, largest)


def _cluster_rows(
    points: MapPoints, which: IndexArray, counts: IndexArray, cell_m: FloatArray, largest: IndexArray
) -> list[dict[str, Any]]:
    """One row per cell: ``which`` names each listing's cell; ``counts``, ``cell_m`` and ``largest`` (the count of
    the largest cell of its size, which a circle's size is relative to) are per cell."""
    mean_lat = np.bincount(which, points.lat, len(counts)) / counts
    mean_lng = np.bincount(which, points.lng, len(counts)) / counts
    by_status = np.zeros((len(counts), OTHER + 1), dtype=np.int64)
    np.add.at(by_status, (which, points.status_codes()), 1)
    colours = [*STATUS_COLOURS.values(), OTHER_COLOUR]
    names = [*STATUSES, "Other"]
    rows = []
    for index in np.argsort(counts, kind="stable"):  # the biggest drawn last, on top
        count = int(counts[index])
        mix = by_status[index]
        rows.append(
            {
                "lat": round(float(mean_lat[index]), CENTRE_DECIMALS),
                "lng": round(float(mean_lng[index]), CENTRE_DECIMALS),
                "count": count,
                "label": f"{count:,}",
                "radius": round(float(cell_m[index]) * (0.18 + 0.27 * math.sqrt(count / largest[index])), 1),
                "colour": colours[int(mix.argmax())],
                "title": f"{count:,} listing{'s' if count != 1 else ''}",
                "detail": " · ".join(f"{int(n):,} {names[i]}" for i, n in enumerate(mix) if n)
                + " (click to centre here)",
            }
        )
    return rows
