"""The naive baseline of ``bench/service.py``: every listing record in memory, each request answered by a full scan
in Python (text words, ``precon.filters`` predicates, haversine, facet counting, sort, page)."""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from precon import filters
from precon.schema import SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS
from precon.service.search.text import MIN_PREFIX_LENGTH, searchable_text, words
from precon.service.stores.records import province_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import Sample
from mix import PER_PAGE, BenchRequest, JsonDict

EARTH_RADIUS_M = 6_371_000.0
MAX_FACET_VALUES = 100


@dataclass
class NaiveRecord:
    doc: JsonDict
    province: str | None
    rank: int
    """Position in the default order: featured first, then newest ``updatedAt``, then ``listingId``."""
    lat: float | None
    lng: float | None
    field_words: tuple[frozenset[str], ...]
    all_words: frozenset[str]


def _naive_record(doc: JsonDict, rank: int) -> NaiveRecord:
    geoloc = doc.get("_geoloc") if isinstance(doc.get("_geoloc"), dict) else {}
    field_words = tuple(frozenset(words(column)) for column in searchable_text(doc, SEARCHABLE_LISTING_FIELDS))
    return NaiveRecord(
        doc=doc,
        province=province_of(doc.get("state")),
        rank=rank,
        lat=geoloc.get("lat"),
        lng=geoloc.get("lng"),
        field_words=field_words,
        all_words=frozenset().union(*field_words),
    )


def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    h = (
        math.sin((phi2 - phi1) / 2) ** 2
        + math.cos(phi1) * math.cos(phi2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def _word_matches(query_word: str, found: frozenset[str], prefix: bool) -> bool:
    return query_word in found or (prefix and any(w.startswith(query_word) for w in found))


class NaiveCatalogue:
    """Every listing in a Python list; each request a full scan. Per-record word sets and the default order are
    prepared once at load (as a naive server would), so the baseline is, if anything, on the fast side."""

    def __init__(self, docs: Sequence[JsonDict]) -> None:
        order = sorted(range(len(docs)), key=lambda i: str(docs[i].get("listingId")))
        order.sort(key=lambda i: str(docs[i].get("updatedAt") or ""), reverse=True)
        order.sort(key=lambda i: docs[i].get("isFeatured") is True, reverse=True)
        rank = {index: position for position, index in enumerate(order)}
        self.records = [_naive_record(doc, rank[i]) for i, doc in enumerate(docs)]

    def text_score(self, record: NaiveRecord, query: list[str]) -> float | None:
        """None unless every word matches (the last also as a prefix); else a field-weighted match count."""
        last = len(query) - 1 if len(query[-1]) >= MIN_PREFIX_LENGTH else -1
        if not all(_word_matches(w, record.all_words, i == last) for i, w in enumerate(query)):
            return None
        return sum(
            weight
            for weight, found in zip(SEARCHABLE_LISTING_WEIGHTS, record.field_words, strict=True)
            for i, w in enumerate(query)
            if _word_matches(w, found, i == last)
        )

    def answer(self, request: BenchRequest) -> tuple[bytes, int, tuple[str, ...]]:
        """The response body, the total and the page's ids."""
        params = request.params
        predicate = filters.compile_predicate(filters.parse(params.get("filterQuery")))
        query = words(params.get("search", ""))
        circle = None
        if "nearby" in params:
            lat, lng = (float(part) for part in params["nearby"].split(","))
            circle = (lat, lng, float(params.get("radius", "10000")))
        province = None if request.province == "all" else request.province
        keyed: list[tuple[float, int, NaiveRecord]] = []
        for record in self.records:
            if province is not None and record.province != province:
                continue
            if not predicate(record.doc):
                continue
            key = 0.0
            if query:
                score = self.text_score(record, query)
                if score is None:
                    continue
                key = -score
            elif circle is not None:
                if record.lat is None or record.lng is None:
                    continue
                key = haversine_m(circle[0], circle[1], record.lat, record.lng)
                if key > circle[2]:
                    continue
            keyed.append((key, record.rank, record))
        keyed.sort(key=lambda item: (item[0], item[1]))
        page = int(params.get("page", "0"))
        results = [item[2].doc for item in keyed[page * PER_PAGE : (page + 1) * PER_PAGE]]
        body: JsonDict = {
            "results": results,
            "total": len(keyed),
            "page": page,
            "pages": math.ceil(len(keyed) / PER_PAGE),
            "perPage": PER_PAGE,
        }
        if "facets" in params:
            body["facets"] = count_facets([item[2].doc for item in keyed], params["facets"].split(","))
        ids = tuple(str(doc.get("listingId")) for doc in results)
        return orjson.dumps(body), len(keyed), ids


def count_facets(docs: Sequence[JsonDict], names: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per facet, value counts over every matching record, highest first, ties by value, at most 100."""
    out: dict[str, dict[str, int]] = {}
    for name in names:
        counts: Counter[str] = Counter()
        for doc in docs:
            value = doc.get(name)
            for item in value if isinstance(value, list) else [value]:
                if item is not None:
                    counts[str(item)] += 1
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FACET_VALUES]
        out[name] = dict(ranked)
    return out


def run_baseline(naive: NaiveCatalogue, mix: Sequence[BenchRequest]) -> list[tuple[Sample, tuple[str, ...]]]:
    measured = []
    for request in mix:
        started = time.perf_counter()
        _, total, ids = naive.answer(request)
        latency_ms = (time.perf_counter() - started) * 1000
        measured.append((Sample(request.category, latency_ms, 200, total), ids))
    return measured
