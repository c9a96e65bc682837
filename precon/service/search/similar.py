"""Similar listings by content: building type, distance, price band, bedrooms and amenities."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from precon.service.search.columns import EARTH_RADIUS_M

WEIGHTS = {"type": 0.25, "distance": 0.25, "price": 0.2, "beds": 0.15, "amenities": 0.15}
DISTANCE_SCALE_M = 15_000.0
"""At this distance the distance term has fallen to 1/e."""
CANDIDATE_RADIUS_M = 50_000.0
CANDIDATE_LIMIT = 1500


@dataclass
class SimilarityFeatures:
    listing_id: str
    lat: float | None
    lng: float | None
    start_price: float | None
    min_beds: float | None
    max_beds: float | None
    types: set[str] = field(default_factory=set)
    amenities: set[str] = field(default_factory=set)


def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 0.5
    return len(a & b) / len(a | b)


def _interval_overlap(a: tuple[float | None, float | None], b: tuple[float | None, float | None]) -> float:
    if None in a or None in b:
        return 0.0
    (a_low, a_high), (b_low, b_high) = sorted(a), sorted(b)  # type: ignore[type-var]
    overlap = min(a_high, b_high) - max(a_low, b_low) + 1  # type: ignore[operator]
    union = max(a_high, b_high) - min(a_low, b_low) + 1  # type: ignore[operator]
    return max(0.0, overlap) / union


def score(target: SimilarityFeatures, other: SimilarityFeatures) -> float:
    terms = {
        "type": _jaccard(target.types, other.types),
        "amenities": _jaccard(target.amenities, other.amenities),
    }
    if None not in (target.lat, target.lng, other.lat, other.lng):
        distance = haversine_m(target.lat, target.lng, other.lat, other.lng)  # type: ignore[arg-type]
        terms["distance"] = math.exp(-distance / DISTANCE_SCALE_M)
    else:
        terms["distance"] = 0.0
    if target.start_price and other.start_price and target.start_price > 0 and other.start_price > 0:
        terms["price"] = max(0.0, 1 - abs(math.log(target.start_price / other.start_price)) / math.log(2))
    else:
        terms["price"] = 0.0
    terms["beds"] = _interval_overlap((target.min_beds, target.max_beds), (other.min_beds, other.max_beds))
    return round(sum(WEIGHTS[name] * value for name, value in terms.items()), 4)


def rank(
    target: SimilarityFeatures, candidates: list[SimilarityFeatures], min_score: float, limit: int
) -> list[tuple[str, float]]:
    scored = [(candidate.listing_id, score(target, candidate)) for candidate in candidates]
    scored = [item for item in scored if item[1] >= min_score]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]
