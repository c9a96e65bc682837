"""The catalogue's records as every store writes and reads them, whatever the engine.

How a listing or profile record becomes what a store keeps (its document, its typed columns, its terms, numbers
and floor plans, the profiles it refers to), the geometry of a distance search, profile facet counting, the profile
order, similarity features, the typo retry of a text search and the per-generation cache: one copy, used by the
SQLite store (:mod:`precon.service.stores.sqlite.store`) and the PostgreSQL store
(:mod:`precon.service.stores.postgres.store`)
alike, so that the two answer alike. It imports neither store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson

from precon.client.models import PROVINCES
from precon.facet_keys import facet_key, top
from precon.filters import fold_text
from precon.schema import (
    LISTING_REFERENCE_FIELDS,
    MULTI_ATTRIBUTES,
    SCALAR_ATTRIBUTES,
    IndexedAttribute,
)
from precon.service.collector import collector_paused
from precon.service.search.columns import EARTH_RADIUS_M
from precon.service.search.path_values import value_pairs, values_at
from precon.service.search.plans import UnitRow, floor_plans, plan_rows
from precon.service.search.sql_filter import as_number
from precon.service.search.text import TextQuery, TypoIndex
from precon.service.stores.types import GeoCircle, ProfileQuery, SearchHits, SimilarityFeatures
from precon.words import fold

_PROVINCE_BY_NAME = {name.casefold(): code for code, name in PROVINCES.items()} | {code: code for code in PROVINCES}


def province_of(state: Any) -> str | None:
    """The province code of a listing's ``state`` (full name or two-letter code), or None."""
    return _PROVINCE_BY_NAME.get(state.strip().casefold()) if isinstance(state, str) else None


def encode_document(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record)


def nul_in(value: Any, where: str = "") -> str | None:
    """Where in a record (``"name"``, ``"floorPlans.2.id"``, ``"the key 'x'"``) a NUL character is, or None.
    PostgreSQL refuses them in text, so neither store takes a record holding one."""
    if isinstance(value, str):
        return (where or "the value") if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and "\x00" in key:
                return f"the key {inner.replace(chr(0), '%00')!r}"
            found = nul_in(item, inner)
            if found is not None:
                return found
    elif isinstance(value, list):
        for position, item in enumerate(value):
            found = nul_in(item, f"{where}.{position}" if where else str(position))
            if found is not None:
                return found
    return None


def decode_document(blob: bytes) -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads(blob)
    return result


def decode_documents(blobs: Iterable[bytes]) -> list[dict[str, Any]]:
    """Many documents decoded at once (a page of a search), with the collector of reference cycles paused: JSON
    makes none, and its passes over a growing page are most of the time otherwise."""
    with collector_paused():
        return [decode_document(blob) for blob in blobs]


def once_each(values: list[Any]) -> list[Any]:
    """The scalar values each once, in the order they first come, ``True`` and ``1`` kept apart (lists and objects
    left out: no test passes them): a plan's hundreds of units hold a few statuses, told apart in C where they are
    all text."""
    if set(map(type, values)) <= {str}:
        return list(dict.fromkeys(values))
    return [value for _, value in dict.fromkeys((type(value), value) for value in values
                                                 if isinstance(value, str | int | float))]  # fmt: skip


def _last_of_each(records: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> list[dict[str, Any]]:
    """A batch with one record per key: when a key comes twice, the later record wins."""
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        identity = key(record)
        latest.pop(identity, None)
        latest[identity] = record
    return list(latest.values())


def _scalar_value(attribute: IndexedAttribute, value: Any) -> Any:
    if value is None:
        return None
    if attribute.kind == "text":
        return fold_text(value) if isinstance(value, str) else None
    if attribute.kind == "bool":
        return int(value) if isinstance(value, bool) else None
    return as_number(value)


def geo_point(record: dict[str, Any]) -> tuple[float | None, float | None]:
    """The position a store indexes: ``_geoloc``, else ``lat``/``long``; (None, None) without one or out of range."""
    geoloc = record.get("_geoloc")
    if isinstance(geoloc, dict):
        lat, lng = as_number(geoloc.get("lat")), as_number(geoloc.get("lng"))
    else:
        lat, lng = as_number(record.get("lat")), as_number(record.get("long"))
    if lat is None or lng is None or not (-90 <= lat <= 90 and -180 <= lng <= 180):
        return None, None
    return lat, lng


BOX_MARGIN_DEG = 1e-9
"""Widens the bounding box by rounding's worth, so that a listing on the circle's edge is measured, not dropped."""


def _bounding_box(circle: GeoCircle) -> tuple[float, float, float, float]:
    lat_span = math.degrees(circle.radius_m / EARTH_RADIUS_M)
    min_lat, max_lat = max(-90.0, circle.lat - lat_span), min(90.0, circle.lat + lat_span)
    cos_lat = min(math.cos(math.radians(min_lat)), math.cos(math.radians(max_lat)))
    if cos_lat < 1e-6 or lat_span * 2 >= 180:
        return min_lat, max_lat, -180.0, 180.0
    lng_span = min(180.0, lat_span / cos_lat)
    return min_lat, max_lat, circle.lng - lng_span, circle.lng + lng_span


def count_profile_facets(
    documents: Iterable[tuple[str, dict[str, Any]]], names: Sequence[str]
) -> dict[str, list[tuple[str, int]]]:
    """Facet counts over profiles given as (collection, document), keyed and ranked as the client counts listings
    (:mod:`precon.facet_keys`): each store reads its documents its own way, and counts them here."""
    counters: dict[str, dict[str, int]] = {name: {} for name in names}
    for collection, document in documents:
        document["collection"] = collection
        for name in names:
            counter = counters[name]
            for value in values_at(document, name):
                key = facet_key(value)
                if key is not None:
                    counter[key] = counter.get(key, 0) + 1
    return {name: top(counter.items()) for name, counter in counters.items()}


_TOP_LEVEL_MULTI = [a for a in MULTI_ATTRIBUTES if "." not in a.path]
_DEEP_MULTI = [a for a in MULTI_ATTRIBUTES if a.path.count(".") > 1]
_NESTED_MULTI: dict[str, list[tuple[IndexedAttribute, str]]] = {}
for _attribute in MULTI_ATTRIBUTES:
    if "." in _attribute.path:
        _parent, _leaf = _attribute.path.split(".", 1)
        _NESTED_MULTI.setdefault(_parent, []).append((_attribute, _leaf))


def listing_key(record: dict[str, Any]) -> str:
    """The id a listing record is stored under (``listingId``, else ``objectID``), or ``""``."""
    return str(record.get("listingId") or record.get("objectID") or "").strip()


def as_stored_listing(record: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The listing's id and the record as stored: ``listingId`` set, no ``objectID``, a ``path`` by default."""
    listing_id = listing_key(record)
    if not listing_id:
        raise ValueError("a listing needs a listingId")
    record = {**record, "listingId": listing_id}
    record.pop("objectID", None)
    record.setdefault("path", f"Listings/{listing_id}")
    return listing_id, record


def listing_columns(
    record: dict[str, Any], lat: float | None, lng: float | None, labels: dict[tuple[str, str], str]
) -> list[Any]:
    """A listing's typed columns after its id: province, featured, updated_at, geo_lat, geo_lng, then one per
    single-valued attribute; the labels (first spelling) of its faceted text values are added to ``labels``."""
    values = head_columns(record, lat, lng)
    for attribute in SCALAR_ATTRIBUTES:
        values.append(scalar_column(attribute, record.get(attribute.path), labels))
    return values


def head_columns(record: dict[str, Any], lat: float | None, lng: float | None) -> list[Any]:
    """The first of :func:`listing_columns`: province, featured, updated_at, geo_lat, geo_lng."""
    return [province_of(record.get("state")), int(record.get("isFeatured") is True), str(record.get("updatedAt") or ""),
            lat, lng]  # fmt: skip


def scalar_column(attribute: IndexedAttribute, raw: Any, labels: dict[tuple[str, str], str]) -> Any:
    """The column of a single-valued attribute of value ``raw``; its label (first spelling) added to ``labels``
    where it is faceted text."""
    if attribute.kind == "text" and isinstance(raw, str) and attribute.facet_by_default:
        labels.setdefault((attribute.path, fold_text(raw)), raw)
    return _scalar_value(attribute, raw)


def index_multi(
    record: dict[str, Any],
    rowid: int,
    terms: set[tuple[str, str, int]],
    numbers: set[tuple[str, float, int]],
    labels: dict[tuple[str, str], str],
    only: Container[str] | None = None,
) -> None:
    """Adds the listing's multi-valued attributes to ``terms`` and ``numbers`` (the term and number tables' rows);
    ``only``: those of these attributes (by path) alone."""

    def add(attribute: IndexedAttribute, value: Any) -> None:
        if attribute.kind == "number":
            number = as_number(value)
            if number is not None:
                numbers.add((attribute.path, number, rowid))
        elif attribute.kind == "bool":
            if isinstance(value, bool):
                terms.add((attribute.path, "true" if value else "false", rowid))
        elif isinstance(value, str):
            term = fold_text(value)
            terms.add((attribute.path, term, rowid))
            labels.setdefault((attribute.path, term), value)

    for attribute in _TOP_LEVEL_MULTI:
        if only is not None and attribute.path not in only:
            continue
        values = record.get(attribute.path)
        if isinstance(values, list):
            for value in values:
                add(attribute, value)
        elif values is not None:
            add(attribute, values)
    for attribute in _DEEP_MULTI:  # floorPlans.units.status: every value at the path, through the arrays, once
        if only is None or attribute.path in only:
            for element in once_each(values_at(record, attribute.path)):
                if isinstance(element, str | int | float):  # (True and 1 kept apart)
                    add(attribute, element)
    for parent, children in _NESTED_MULTI.items():
        if only is not None and not (children := [child for child in children if child[0].path in only]):
            continue
        items = record.get(parent)
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            continue
        for item in items:
            if not isinstance(item, dict):
                continue
            for attribute, leaf in children:
                if "." in leaf:  # deeper: above, over every item at once
                    continue
                value = item.get(leaf)
                if isinstance(value, list):
                    for element in value:
                        add(attribute, element)
                elif value is not None:
                    add(attribute, value)


def reference_values(value: Any) -> list[Any]:
    """A reference field's values: a list's elements, one value alone (a single path), nothing for none."""
    return value if isinstance(value, list) else [] if value is None else [value]


def indexed_reference_keys(record: dict[str, Any]) -> set[str]:
    """The folded paths of the profiles a listing refers to, as listing_terms indexes them (a single path as well
    as a list): what puts a profile in the listing's province."""
    keys = set()
    for name in set(LISTING_REFERENCE_FIELDS.values()):
        for path in reference_values(record.get(name)):
            if isinstance(path, str):
                keys.add(fold_text(path))
    return keys


def province_pairs(record: dict[str, Any]) -> set[tuple[str, str]]:
    """(province, profile path key) for every profile the listing refers to, as listing_terms indexes them."""
    province = province_of(record.get("state"))
    if province is None:
        return set()
    return {(province, key) for key in indexed_reference_keys(record)}


@dataclass
class ListingIndexRows:
    """What a batch of listings adds beside their columns, gathered listing by listing and written at the end."""

    labels: dict[tuple[str, str], str] = field(default_factory=dict)
    attribute_names: set[str] = field(default_factory=set)
    terms: set[tuple[str, str, int]] = field(default_factory=set)
    numbers: set[tuple[str, float, int]] = field(default_factory=set)
    plans: list[tuple[int, int]] = field(default_factory=list)
    plan_values: list[tuple[int, int, int, int, str | None, float | None]] = field(default_factory=list)
    plan_units: list[UnitRow] = field(default_factory=list)
    plan_ids: set[tuple[str, int]] = field(default_factory=set)
    values: list[tuple[str, int, str]] = field(default_factory=list)
    """Rows of ``listing_values`` to add: (path, listing row id, value's JSON)."""
    touched_profiles: set[str] = field(default_factory=set)
    """The path keys of the profiles the batch's listings refer to, before and after: their provinces change."""

    def add(self, record: dict[str, Any], rowid: int) -> None:
        """The rows of one listing, stored as ``rowid``."""
        index_multi(record, rowid, self.terms, self.numbers, self.labels)
        record_plans, record_plan_values, record_plan_units = plan_rows(record, rowid)
        self.plans += record_plans
        self.plan_values += record_plan_values
        self.plan_units += record_plan_units
        self.plan_ids.update((plan["id"], rowid) for plan in floor_plans(record) if isinstance(plan.get("id"), str))
        self.values += [(path, rowid, value) for path, value in value_pairs(record)]
        self.attribute_names.update(record)
        self.touched_profiles.update(indexed_reference_keys(record))


@dataclass
class StoredProfile:
    """A profile record as stored, with the columns that find and order it."""

    path: str
    collection: str
    profile_id: str
    record: dict[str, Any]
    name_key: str
    """The name folded as search folds words: profiles sort by it accent- and case-insensitively."""
    listing_count: int

    def columns(self) -> tuple[str, str, str, str, str, int]:
        """The columns of ``profiles`` that find and order it: profile_id, collection, path, path_key, name_key,
        listing_count."""
        return (
            self.profile_id,
            self.collection,
            self.path,
            fold_text(self.path),
            self.name_key,
            self.listing_count,
        )


def stored_profile(record: dict[str, Any]) -> StoredProfile:
    """The profile as stored: ``id`` first (the part of the path after the collection), no ``objectID``."""
    path = str(record.get("path") or "").strip()
    if "/" not in path:
        raise ValueError("a profile needs a path '<Collection>/<id>'")
    collection, profile_id = path.split("/", 1)
    record = {k: v for k, v in record.items() if k not in ("objectID", "id")}
    record = {"id": profile_id, **record}
    name, listings = record.get("name"), record.get("listings")
    return StoredProfile(
        path,
        collection,
        profile_id,
        record,
        fold(name) if isinstance(name, str) else "",
        len(listings) if isinstance(listings, list) else 0,
    )


def similarity_rows(rows: Iterable[Sequence[Any]]) -> dict[int, SimilarityFeatures]:
    """Rows of (rowid, listing_id, geo_lat, geo_lng, start price, min beds, max beds) as features, by rowid."""
    return {row[0]: SimilarityFeatures(row[1], row[2], row[3], row[4], row[5], row[6]) for row in rows}


def add_similarity_terms(features: dict[int, SimilarityFeatures], terms: Iterable[tuple[int, str, str]]) -> None:
    """Adds (rowid, attribute, term) rows of ``listing_terms`` (``type`` and ``amenities``) to the features."""
    for listing, attr, term in terms:
        feature = features[listing]
        (feature.types if attr == "type" else feature.amenities).add(term)


def profile_lookup(
    document: str, mark: str, in_province: str, profile_id: str, collection: str | None, province: str | None
) -> tuple[str, list[Any]]:
    """The statement reading the profile with this id (in ``collection``), in ``province`` when given, for either
    store: ``mark`` is its placeholder, ``document`` the column read, ``in_province`` its test that one of the
    listings naming the profile is in a province (with ``mark`` for the province)."""
    sql = f"SELECT {document} FROM profiles p WHERE p.profile_id = {mark}"
    params: list[Any] = [profile_id]
    if collection:
        sql += f" AND p.collection = {mark}"
        params.append(collection)
    if province is not None:
        sql += f" AND {in_province}"
        params.append(province)
    return sql + " ORDER BY p.path LIMIT 1", params


def profile_order(
    query: ProfileQuery, mark: str = "?", listings_directions: tuple[str, str] = ("DESC", "ASC")
) -> tuple[str, list[Any]]:
    """The ORDER BY of a profile page without relevance, and its parameters: by number of listings (in the
    query's province when given; ``listings_directions``: the SQL of most and of fewest first) when asked, then by
    name. ``mark``: the engine's placeholder."""
    if query.sort_by_name:
        direction = "DESC" if query.sort_by_name == "dsc" else "ASC"
        order = f"p.name_key {direction}, p.path {direction}"
    else:
        order = "p.name_key, p.path"
    order_params: list[Any] = []
    if query.sort_by_listings:
        direction = listings_directions[0] if query.sort_by_listings == "desc" else listings_directions[1]
        if query.province is None:
            order = f"p.listing_count {direction}, {order}"
        else:
            count = f"(SELECT pp.listings FROM profile_provinces pp WHERE pp.province = {mark} AND pp.profile = p.id)"
            order = f"{count} {direction}, {order}"
            order_params.append(query.province)
    return order, order_params


def with_typo_retry(
    search: Callable[[TextQuery | None], SearchHits], text: TextQuery | None, typos: Callable[[], TypoIndex]
) -> SearchHits:
    """``search`` for ``text``; when nothing matches, again with the words one typo away that the catalogue holds
    (``typos``: its vocabulary), if there are any."""
    hits = search(text)
    if text is not None and hits.total == 0:
        expanded = typos().expand(text)
        if any(expanded.typo_variants.values()):
            hits = search(expanded)
    return hits


T = TypeVar("T")


class PerGeneration(Generic[T]):
    """A value read from the catalogue (a vocabulary, the labels), kept until the catalogue's generation changes."""

    def __init__(self) -> None:
        self._cached: tuple[int, T] | None = None

    def get(self, generation: int, build: Callable[[], T]) -> T:
        """The value of ``generation``: the kept one if it is of that generation, else ``build()``'s, then kept."""
        cached = self._cached
        if cached is None or cached[0] != generation:
            cached = (generation, build())
            self._cached = cached
        return cached[1]

    def latest(self) -> T | None:
        """The kept value, of whichever generation it is (None before the first)."""
        cached = self._cached
        return None if cached is None else cached[1]

    def holds(self, generation: int) -> bool:
        """Whether the kept value is of ``generation``: :meth:`get` would answer it without building."""
        cached = self._cached
        return cached is not None and cached[0] == generation
