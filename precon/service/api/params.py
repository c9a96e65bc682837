"""Reading query parameters strictly: every bad value is a 400 that names the parameter and what is wrong."""

from __future__ import annotations

import math
from collections.abc import Mapping

from precon import filters
from precon.filters import Expr
from precon.schema import LISTING_REFERENCE_FIELDS
from precon.service.errors import bad_request
from precon.service.search.text import TextQuery
from precon.service.stores.types import GeoCircle

MAX_PER_PAGE = 1000
MAX_PER_PAGE_EXPANDED = 100
DEFAULT_PER_PAGE = 20
MAX_SEARCH_LENGTH = 512
MAX_IDS = 100
DEFAULT_RADIUS_M = 10_000
MAX_RADIUS_M = 1_000_000
MAX_PAGE = 1_000_000

EXPANDABLE_REFERENCES = frozenset({*LISTING_REFERENCE_FIELDS, "listings"})
"""``referrences`` names that replace paths by records: a listing's companies, a profile's listings."""

ALIASES = {"product_id": ("product_id", "product_Id"), "perPage": ("perPage", "perpage")}
"""Documented misspellings the production service accepts."""

TRUE_WORDS = {"true": True, "1": True, "false": False, "0": False}


class QueryParams:
    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = values

    def text(self, name: str) -> str | None:
        for alias in ALIASES.get(name, (name,)):
            value = self.values.get(alias)
            if value is not None:
                return value
        return None

    def required(self, name: str) -> str:
        value = (self.text(name) or "").strip()
        if not value:
            raise bad_request(f"{name} is required")
        return value

    def integer(self, name: str, default: int, minimum: int, maximum: int) -> int:
        raw = self.text(name)
        if raw is None or raw.strip() == "":
            return default
        try:
            value = int(raw.strip())
        except ValueError:
            raise bad_request(f"{name} must be a whole number, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise bad_request(f"{name} must be between {minimum} and {maximum}, got {value}")
        return value

    def number(self, name: str, default: float, minimum: float, maximum: float) -> float:
        raw = self.text(name)
        if raw is None or raw.strip() == "":
            return default
        try:
            value = float(raw.strip())
        except ValueError:
            raise bad_request(f"{name} must be a number, got {raw!r}") from None
        if not (math.isfinite(value) and minimum <= value <= maximum):
            raise bad_request(f"{name} must be between {minimum:g} and {maximum:g}, got {raw}")
        return value

    def boolean(self, name: str, default: bool = False) -> bool:
        raw = self.text(name)
        if raw is None or raw.strip() == "":
            return default
        value = TRUE_WORDS.get(raw.strip().lower())
        if value is None:
            raise bad_request(f"{name} must be true or false, got {raw!r}")
        return value

    def names(self, name: str) -> list[str]:
        """A comma-separated list, blanks dropped, order kept, duplicates once."""
        raw = self.text(name) or ""
        return list(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))

    def choice(self, name: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
        raw = (self.text(name) or "").strip()
        if not raw:
            return default
        if raw not in allowed:
            raise bad_request(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
        return raw

    def expands_objects(self) -> bool:
        """Whether ``referrences`` names a field whose paths become whole records (profiles, or listings)."""
        return any(name in EXPANDABLE_REFERENCES for name in self.names("referrences"))

    def page(self) -> tuple[int, int]:
        """The page and its size. With objects expanded, a size over 100 is reduced to 100 (the answer's
        ``perPage`` and ``pages`` say so): real clients ask for 1000 with ``referrences`` and page on."""
        page = self.integer("page", 0, 0, MAX_PAGE)
        per_page = self.integer("perPage", DEFAULT_PER_PAGE, 0, MAX_PER_PAGE)
        if self.expands_objects():
            per_page = min(per_page, MAX_PER_PAGE_EXPANDED)
        return page, per_page

    def search(self) -> TextQuery | None:
        raw = self.text("search") or ""
        if len(raw) > MAX_SEARCH_LENGTH:
            raise bad_request(f"search is {len(raw)} characters long; at most {MAX_SEARCH_LENGTH} are allowed")
        return TextQuery.parse(raw)

    def filter_query(self) -> Expr | None:
        try:
            return filters.parse(self.text("filterQuery"))
        except filters.FilterSyntaxError as error:
            raise bad_request(str(error)) from None

    def circle(self) -> GeoCircle | None:
        raw = (self.text("nearby") or "").strip()
        if not raw:
            if (self.text("radius") or "").strip():
                raise bad_request("radius needs nearby: give the centre as nearby=latitude,longitude")
            return None
        parts = raw.split(",")
        try:
            if len(parts) != 2:
                raise ValueError
            lat, lng = float(parts[0]), float(parts[1])
        except ValueError:
            raise bad_request(f"nearby must be 'latitude,longitude', got {raw!r}") from None
        if not (math.isfinite(lat) and math.isfinite(lng) and -90 <= lat <= 90 and -180 <= lng <= 180):
            raise bad_request(
                f"nearby is out of range: latitude must be in [-90, 90] and longitude in [-180, 180], got {raw!r}"
            )
        radius = self.number("radius", DEFAULT_RADIUS_M, 0, MAX_RADIUS_M)
        return GeoCircle(lat, lng, radius)


def pages(total: int, per_page: int) -> int:
    return math.ceil(total / per_page) if per_page > 0 else 0
