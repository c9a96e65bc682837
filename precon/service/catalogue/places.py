"""Where things are: per-city tables (neighbourhoods, streets, postal areas, the mix of building types), postal
codes, and a listing's address and coordinates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from random import Random
from typing import Any

from precon.service.catalogue.canada import POSTAL_LDU_LETTERS, PROVINCE_CODES, City, cities_in
from precon.service.catalogue.land import bundled_mask

_STREET_PREFIXES = ("Rue ", "Boulevard ", "Avenue ", "Chemin ")
_STREET_SUFFIXES = frozenset(
    {
        "St",
        "Ave",
        "Rd",
        "Blvd",
        "Dr",
        "Pkwy",
        "Ln",
        "Trl",
        "Way",
        "Cres",
        "Hwy",
        "Expy",
        "Line",
        "W",
        "E",
        "N",
        "S",
        "O",
        "NW",
        "NE",
        "SW",
        "SE",
    }
)

_TYPE_WEIGHTS: dict[str, tuple[float, ...]] = {
    #          Condo Town Det  Semi Stack Mixed Loft
    "core": (80, 6, 1, 1, 4, 5, 3),
    "urban": (62, 14, 6, 2, 8, 5, 3),
    "suburb": (38, 26, 17, 6, 9, 3, 1),
    "town": (25, 30, 28, 9, 6, 1, 1),
}
"""Per kind of city, the weights of the building types, in ``developments.BUILDING_TYPES`` order."""


@dataclass(frozen=True, slots=True)
class Hood:
    name: str
    lat: float
    lng: float
    lng_km: float
    """Kilometres per degree of longitude at this latitude."""
    price_factor: float


@dataclass(frozen=True, slots=True)
class CityTable:
    city: City
    state: str
    abbreviation: str
    municipalities: tuple[str, ...]
    hoods: tuple[Hood, ...]
    streets: tuple[str, ...]
    short_streets: tuple[str, ...]
    """Street names without their suffix ("King" of "King St W"), for development names; may be empty."""
    fsas: tuple[str, ...]
    type_cumulative: tuple[float, ...]


def short_street(street: str) -> str:
    """The one-word name of a street ("King" of "King St W", "Sherbrooke" of "Rue Sherbrooke O"), or ""."""
    for prefix in _STREET_PREFIXES:
        if street.startswith(prefix):
            street = street[len(prefix) :]
    words = street.split()
    while words and words[-1] in _STREET_SUFFIXES:
        words.pop()
    short = " ".join(words)
    if not short or not short[0].isalpha() or not short[0].isupper() or " " in short.strip():
        return ""
    return short


def _city_table(city: City) -> CityTable:
    hoods = tuple(
        Hood(h.name, h.lat, h.lng, 111.32 * math.cos(math.radians(h.lat)), h.price_factor) for h in city.neighbourhoods
    )
    return CityTable(
        city=city,
        state=city.state,
        abbreviation=city.province_abbreviation,
        municipalities=(city.municipality or city.name,),
        hoods=hoods,
        streets=city.streets,
        short_streets=tuple(dict.fromkeys(s for s in map(short_street, city.streets) if s)),
        fsas=city.fsas,
        type_cumulative=tuple(accumulate(_TYPE_WEIGHTS[city.kind])),
    )


@cache
def city_tables() -> dict[str, tuple[list[CityTable], list[float]]]:
    """Per province code: its city tables and their cumulative weights (for weighted picks)."""
    by_province: dict[str, tuple[list[CityTable], list[float]]] = {}
    for code in PROVINCE_CODES:
        tables = [_city_table(city) for city in cities_in(code)]
        by_province[code] = (tables, list(accumulate(t.city.weight for t in tables)))
    return by_province


def postal_code(rng: Random, fsas: Sequence[str]) -> str:
    """A postal code in one of the forward sortation areas ``fsas``: "M5V 2T6"."""
    letters = POSTAL_LDU_LETTERS
    return (
        f"{fsas[int(rng.random() * len(fsas))]} {int(rng.random() * 10)}"
        f"{letters[int(rng.random() * len(letters))]}{int(rng.random() * 10)}"
    )


@dataclass(frozen=True, slots=True)
class Location:
    """A listing's place: its street address and its coordinates as text (6 or 7 decimals)."""

    street: str
    street_number: int | None
    postal_code: str
    full_address: str
    geographic_address: str
    lat: str
    lng: str

    def fields(self, table: CityTable, hood: Hood) -> dict[str, Any]:
        """The listing's keys from ``country`` to ``_geoloc``, in order."""
        city = table.city
        return {
            "country": "Canada",
            "state": table.state,
            "region": city.region,
            "cityOrDistrict": city.name,
            "streetName": self.street,
            "streetNumber": self.street_number,
            "postalCode": self.postal_code,
            "neighbourhood": [hood.name],
            "municipalities": list(table.municipalities),
            "fullAddress": self.full_address,
            "geographicAddress": self.geographic_address,
            "lat": self.lat,
            "long": self.lng,
            "_geoloc": {"lat": float(self.lat), "lng": float(self.lng)},
        }


LAND_TRIES = 24
"""Points tried around the neighbourhood, then as many around the city's centre, before a point is left in water."""


def on_land(lat: float, lng: float, hood: Hood, city: City) -> tuple[float, float]:
    """The point where it stands on land on the dashboard's map; else another one near the neighbourhood (the
    city's centre, failing that), drawn from a generator of the point's own so that no other draw moves."""
    mask = bundled_mask()
    if mask is None or mask.on_land(lat, lng):
        return lat, lng
    rand = Random(f"precon/land/{lat:.7f},{lng:.7f}").random
    lng_km = hood.lng_km
    for (centre_lat, centre_lng), reach in (((hood.lat, hood.lng), 2.0), ((city.lat, city.lng), 5.0)):
        for _ in range(LAND_TRIES):
            distance, bearing = 0.25 + reach * math.sqrt(rand()), rand() * math.tau
            moved = (
                centre_lat + distance * math.cos(bearing) / 111.32,
                centre_lng + distance * math.sin(bearing) / lng_km,
            )
            if mask.on_land(*moved):
                return moved
    return lat, lng


def draw_location(rng: Random, table: CityTable, hood: Hood) -> Location:
    """An address on one of the city's streets, and a point a quarter to two and a quarter km from the middle of
    the neighbourhood."""
    rand = rng.random
    city = table.city
    street = table.streets[int(rand() * len(table.streets))]
    street_number = None if rand() < 0.05 else 1 + int(rand() * rand() * 3000)
    postal = postal_code(rng, table.fsas)
    number_part = f"{street_number} " if street_number is not None else ""
    full_address = f"{number_part}{street}, {city.name}, {table.abbreviation} {postal}, Canada"
    geographic_address = f"{street}, {hood.name}, {city.name}, {table.state}, Canada"
    distance = 0.25 + 2.0 * math.sqrt(rand())
    bearing = rand() * math.tau
    lat = hood.lat + distance * math.cos(bearing) / 111.32
    lng = hood.lng + distance * math.sin(bearing) / hood.lng_km
    lat, lng = on_land(lat, lng, hood, table.city)
    if rand() < 0.5:
        lat_text, lng_text = f"{lat:.6f}", f"{lng:.6f}"
    else:
        lat_text, lng_text = f"{lat:.7f}", f"{lng:.7f}"
    return Location(street, street_number, postal, full_address, geographic_address, lat_text, lng_text)
