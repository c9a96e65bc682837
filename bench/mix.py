"""The benches' seeded query mix: ``search_listings`` requests built from a catalogue's real values (about a quarter
each of text search, facet counts, filters and distance, a few past page 0), as ``bench/service.py`` describes."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from precon import filters
from precon.service.search.text import WORD
from precon.service.stores.records import province_of

PRODUCT = "bench"
PER_PAGE = 20
CATEGORIES = ("text", "facets", "filters", "geo")
FACETS = "type,sellingStatus,constructionStatus,cityOrDistrict,amenities,builders"
FACET_NAMES = tuple(FACETS.split(","))
CONTRACT_CHAIN = 'startPrice >= 400000  AND startPrice <= 900000 AND type:"Condo" OR type:"Townhouse" AND minBeds >= 1'
SAMPLE_SIZE = 2000
"""Listings the query mix draws its words, values and places from."""

PAGED_SHARE = 0.05
MAX_PAGE = 5
PREFIX_SHARE = 0.4
MIN_PREFIX = 3
FACET_FILTER_SHARE = 0.5
FACET_PROVINCE_SHARE = 0.3
CONTRACT_CHAIN_SHARE = 0.15
GEO_FILTER_SHARE = 0.3
GEO_JITTER_DEG = 0.02
GEO_RADIUS_KM = (2, 30)
MAX_FILTER_CLAUSES = 3

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class BenchRequest:
    category: str
    province: str
    """``all`` or a province code: the path segment."""
    params: dict[str, str]

    @property
    def path(self) -> str:
        return f"/v1/{self.province}/search_listings"

    def query(self) -> dict[str, str]:
        return {"product_id": PRODUCT, "perPage": str(PER_PAGE), **self.params}


@dataclass
class Vocabulary:
    """Real values of the catalogue, drawn from a sample of its listings."""

    sample: list[JsonDict]
    types: list[str]
    selling: list[str]
    construction: list[str]
    amenities: list[str]
    provinces: list[str]
    years: list[int]
    prices: list[float]
    """Sorted start prices: quantiles give realistic price bounds."""
    places: list[tuple[float, float]]
    """Listings' ``_geoloc`` as (lat, lng)."""

    @classmethod
    def of(cls, records: Sequence[JsonDict], rng: random.Random) -> Vocabulary:
        return cls.from_sample(rng.sample(list(records), min(SAMPLE_SIZE, len(records))))

    @classmethod
    def from_sample(cls, sample: list[JsonDict]) -> Vocabulary:
        """From listings already drawn (see :func:`sample_listings`)."""

        def distinct(name: str) -> list[str]:
            found: set[str] = set()
            for record in sample:
                value = record.get(name)
                found.update(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v)
            return sorted(found)

        provinces = sorted({p for r in sample if (p := province_of(r.get("state"))) is not None})
        years = sorted({int(y) for r in sample if isinstance(y := r.get("completionYear"), int | float)})
        prices = sorted(float(p) for r in sample if isinstance(p := r.get("startPrice"), int | float) and p > 0)
        places = [(g["lat"], g["lng"]) for r in sample if isinstance(g := r.get("_geoloc"), dict)]
        return cls(
            sample=sample,
            types=distinct("type"),
            selling=distinct("sellingStatus"),
            construction=distinct("constructionStatus"),
            amenities=distinct("amenities"),
            provinces=provinces,
            years=years,
            prices=prices,
            places=places,
        )

    def price(self, rng: random.Random, low: float, high: float) -> int:
        """A start price between two quantiles, rounded to the nearest 10,000."""
        quantile = rng.uniform(low, high)
        value = self.prices[min(len(self.prices) - 1, int(quantile * len(self.prices)))]
        return int(round(value, -4))


def _cut(word: str, rng: random.Random) -> str:
    """The word typed only partly, as a search-as-you-type prefix."""
    return word if len(word) <= MIN_PREFIX else word[: rng.randint(MIN_PREFIX, len(word) - 1)]


def text_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    """1-3 words from one listing's name, city, street and amenities (so something matches)."""
    record = rng.choice(vocabulary.sample)
    sources = [record.get("name"), record.get("cityOrDistrict"), record.get("streetName"), *record.get("amenities", [])]
    phrases = [WORD.findall(s) for s in sources if isinstance(s, str)]
    phrases = [p for p in phrases if p]
    chosen = rng.sample(phrases, min(len(phrases), rng.randint(1, 2)))
    query = [w for phrase in chosen for w in phrase][: rng.randint(1, 3)]
    if rng.random() < PREFIX_SHARE:
        query[-1] = _cut(query[-1], rng)
    return BenchRequest("text", "all", {"search": " ".join(query)})


def _clause_makers(vocabulary: Vocabulary) -> list[Callable[[random.Random], filters.Expr | None]]:
    v = vocabulary
    return [
        lambda rng: filters.between("startPrice", v.price(rng, 0.05, 0.4), v.price(rng, 0.5, 0.95)),
        lambda rng: filters.between("startPrice", high=v.price(rng, 0.2, 0.8)),
        lambda rng: filters.any_of("type", rng.sample(v.types, rng.randint(1, 2))),
        lambda rng: filters.compare("minBeds", ">=", rng.randint(1, 3)),
        lambda rng: filters.eq("sellingStatus", rng.choice(v.selling)),
        lambda rng: filters.eq("constructionStatus", rng.choice(v.construction)),
        lambda rng: filters.compare("completionYear", ">=", rng.choice(v.years)),
        lambda rng: filters.compare("floorPlans.startPrice", "<", v.price(rng, 0.1, 0.6)),
        lambda rng: filters.eq("amenities", rng.choice(v.amenities)),
    ]


def filter_query(rng: random.Random, vocabulary: Vocabulary) -> str:
    """1-3 clauses ANDed, built with the ``precon.filters`` builders."""
    makers = rng.sample(_clause_makers(vocabulary), rng.randint(1, MAX_FILTER_CLAUSES))
    return filters.to_query(filters.and_(*(make(rng) for make in makers)))


def facet_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    params = {"facets": FACETS}
    if rng.random() < FACET_FILTER_SHARE:
        params["filterQuery"] = filter_query(rng, vocabulary)
    province = rng.choice(vocabulary.provinces) if rng.random() < FACET_PROVINCE_SHARE else "all"
    return BenchRequest("facets", province, params)


def filters_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    chain = CONTRACT_CHAIN if rng.random() < CONTRACT_CHAIN_SHARE else filter_query(rng, vocabulary)
    return BenchRequest("filters", "all", {"filterQuery": chain})


def geo_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    """Around a real listing's ``_geoloc``, jittered; a radius of 2-30 km; sometimes filtered."""
    lat, lng = rng.choice(vocabulary.places)
    lat += rng.uniform(-GEO_JITTER_DEG, GEO_JITTER_DEG)
    lng += rng.uniform(-GEO_JITTER_DEG, GEO_JITTER_DEG)
    params = {"nearby": f"{lat:.6f},{lng:.6f}", "radius": str(rng.randint(*GEO_RADIUS_KM) * 1000)}
    if rng.random() < GEO_FILTER_SHARE:
        params["filterQuery"] = filter_query(rng, vocabulary)
    return BenchRequest("geo", "all", params)


MAKERS: dict[str, Callable[[random.Random, Vocabulary], BenchRequest]] = {
    "text": text_request,
    "facets": facet_request,
    "filters": filters_request,
    "geo": geo_request,
}


def build_mix(count: int, vocabulary: Vocabulary, rng: random.Random) -> list[BenchRequest]:
    """``count`` requests, a quarter of each category in a shuffled order, a few past page 0."""
    categories = [CATEGORIES[i % len(CATEGORIES)] for i in range(count)]
    rng.shuffle(categories)
    mix = []
    for category in categories:
        request = MAKERS[category](rng, vocabulary)
        if rng.random() < PAGED_SHARE:
            request = replace(request, params={**request.params, "page": str(rng.randint(1, MAX_PAGE))})
        mix.append(request)
    return mix
