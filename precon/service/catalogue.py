"""A deterministic generator of a realistic catalogue: listings of developments across Canada and the profiles
of the companies behind them.

``generate(listings, seed)`` returns the same bytes for the same arguments on any machine: the only source of
randomness is :class:`random.Random` seeded from text (hashed with SHA-512, independent of ``PYTHONHASHSEED``),
timestamps are built arithmetically from a fixed reference date, and nothing iterates over a set.

Shapes follow docs/api.md (listing, floor plan, profile):

* a listing's keys come in ``schema.LISTING_FIELDS`` order; ``objectID`` equals ``listingId``; ``_score`` is never
  generated (search adds it);
* ``lat``/``long``, ``numberOfUnits``, ``numberOfFloors`` and a floor plan's ``squareFeet`` are numeric *text*;
  a floor plan's ``startPrice`` is a number, or ``""`` when the price is not published;
* numbers are ``int`` when whole and ``float`` only when fractional (``1.5`` baths), as JSON from JavaScript is;
* reference fields hold ``<Collection>/<id>`` paths and every profile's ``listings`` holds exactly the listings
  that refer to it;
* every media URL is a site-relative path under ``/media/`` (``.svg``), served as a generated placeholder.
"""

from __future__ import annotations

import gc
import math
import re
import unicodedata
import zlib
from bisect import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache
from itertools import accumulate
from random import Random
from typing import Any

from precon.models import REFERENCE_FIELDS
from precon.service.canada import (
    POSTAL_LDU_LETTERS,
    PROVINCE_CODES,
    PROVINCE_SHARES,
    City,
    cities_in,
)

# --------------------------------------------------------------------------------------------------- public


REFERENCE_DATE = "2026-11-01T00:00:00.000Z"
"""Every generated timestamp lies in [2021-01-01, this instant)."""

"""The keys of every generated listing, in order (the interface's order; ``salesCentres`` beside the others)."""

FLOOR_PLAN_FIELDS: tuple[str, ...] = (
    "id",
    "name",
    "planCategory",
    "floorPlanType",
    "squareFeet",
    "startPrice",
    "contactForPricing",
    "status",
    "numberOfBedrooms",
    "numberOfBathrooms",
    "exposure",
    "image",
    "createdAt",
    "lastUpdated",
)

PROFILE_FIELDS: tuple[str, ...] = (
    "id",
    "path",
    "name",
    "address",
    "website",
    "email",
    "phone",
    "logo",
    "listings",
    "summary",
    "state",
    "createdAt",
    "updatedAt",
)
"""The keys of every profile, in order; builders add ``yearFounded`` and ``provinces`` after them."""

PROFILE_COLLECTIONS: tuple[str, ...] = (
    "Architects",
    "Builders",
    "InteriorDesigners",
    "Marketers",
    "SalesCentres",
    "SalesCompanies",
    "Owners",
)

"""Listing fields holding reference paths, and the collection each points into."""

BUILDING_TYPES: tuple[str, ...] = (
    "Condo",
    "Townhouse",
    "Detached",
    "Semi-Detached",
    "Stacked Townhouse",
    "Mixed Use",
    "Loft",
)

AMENITIES: tuple[str, ...] = (
    "Gym",
    "Concierge",
    "Rooftop Terrace",
    "Party Room",
    "Pool",
    "Yoga Studio",
    "Co-working Space",
    "Pet Spa",
    "Guest Suites",
    "Bike Storage",
    "EV Charging",
    "Sauna",
    "Theatre Room",
    "Outdoor BBQ Area",
    "Children's Play Area",
    "Games Room",
    "Steam Room",
    "Hot Tub",
    "Parcel Room",
    "Library",
    "Music Room",
    "Dog Run",
    "Landscaped Courtyard",
    "Private Dining Room",
    "Spa",
    "Basketball Court",
    "Golf Simulator",
    "Lounge",
    "Car Wash Bay",
    "Sky Lounge",
    "Smart Home Technology",
    "Outdoor Fitness Area",
    "Security System",
    "Walking Trails",
    "Parks Nearby",
    "Private Backyard",
    "Double Car Garage",
    "Finished Basement Option",
)

_GROUND_ONLY = frozenset(
    {"Walking Trails", "Parks Nearby", "Private Backyard", "Double Car Garage", "Finished Basement Option"}
)
_GROUND_EXTRAS = frozenset(
    {"EV Charging", "Smart Home Technology", "Children's Play Area", "Security System", "Outdoor Fitness Area",
     "Dog Run", "Landscaped Courtyard"}
)  # fmt: skip
_CONDO_AMENITIES: tuple[int, ...] = tuple(k for k, a in enumerate(AMENITIES) if a not in _GROUND_ONLY)
_GROUND_AMENITIES: tuple[int, ...] = tuple(
    k for k, a in enumerate(AMENITIES) if a in _GROUND_ONLY or a in _GROUND_EXTRAS
)

COMPASS: tuple[str, ...] = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")


@dataclass
class Catalogue:
    listings: list[dict[str, Any]]
    profiles: list[dict[str, Any]]
    """Every profile carries ``path`` = ``<Collection>/<id>`` and ``id``; see :data:`PROFILE_COLLECTIONS`."""


def default_profile_count(listings: int) -> int:
    """How many profiles :func:`generate` makes when not told: about 0.4 per listing, at least 70, at most 8,000."""
    return min(8000, max(70, round(listings * 0.4)))


def generate(listings: int = 2500, seed: int = 0, profiles: int | None = None) -> Catalogue:
    """A catalogue of ``listings`` listings and ``profiles`` profiles (default: :func:`default_profile_count`).

    The same arguments give the same catalogue, byte for byte. Listing ids never start with ``S`` (the sandbox's
    ids all do), so no generated catalogue shares an id with :func:`sandbox`.
    """
    if listings < 0:
        raise ValueError("listings must be >= 0")
    count = default_profile_count(listings) if profiles is None else profiles
    if count < 0:
        raise ValueError("profiles must be >= 0")
    return _Generator(seed, sandbox=False).run(listings, count)


SANDBOX_SEED = 20240
"""The seed of the sandbox catalogue (with its own id scheme: listing ids start with ``S``)."""


def sandbox() -> Catalogue:
    """The small fixed catalogue served under ``v1-sandbox``: 40 listings and 60 profiles over all ten provinces.

    It holds every shape a client must handle: a listing with ``constructionStatus`` null, a floor plan with
    ``startPrice`` ``""`` in a priced listing, sold-out, pending, featured and complete listings, a listing without
    floor plans, one with contact-for-pricing (patched in where the seed alone would not give them).
    """
    catalogue = _Generator(SANDBOX_SEED, sandbox=True).run(40, 60)
    _ensure_sandbox_variety(catalogue)
    return catalogue


# --------------------------------------------------------------------------------------------------- time

_START_DAY = date(2021, 1, 1)
_END_DAY = date(2026, 11, 1)
_DAYS: tuple[str, ...] = tuple(
    (_START_DAY + timedelta(days=offset)).isoformat() for offset in range((_END_DAY - _START_DAY).days)
)
_DAY_MS = 86_400_000
_SPAN_MS = len(_DAYS) * _DAY_MS
"""Milliseconds from 2021-01-01T00:00:00Z to the reference date; a time is an offset in [0, _SPAN_MS)."""


def _iso(ms: int) -> str:
    """ISO 8601 UTC with milliseconds of an offset from 2021-01-01, without datetime arithmetic."""
    day, rest = divmod(ms, _DAY_MS)
    seconds, milli = divmod(rest, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return f"{_DAYS[day]}T{hours:02d}:{minutes:02d}:{seconds:02d}.{milli:03d}Z"


_EPOCH_S = 1_609_459_200
"""Unix seconds of 2021-01-01T00:00:00Z, the origin of the offsets."""


def _status_timestamp(lid: str, selling: str, created_ms: int, updated_ms: int) -> int:
    """Unix seconds of the last change of sellingStatus: the creation for a listing still selling, else a moment
    between its creation and its last update (drawn from its id, so the random stream is untouched)."""
    if selling == "Selling Now":
        return _EPOCH_S + created_ms // 1000
    share = zlib.crc32(lid.encode()) % 1000 / 1000
    return _EPOCH_S + (created_ms + int((updated_ms - created_ms) * share)) // 1000


_SEASONS = ("Winter", "Spring", "Summer", "Fall")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_PERIODS = ("Early", "Mid", "Late")


def _date_text(rng: Random, year: int) -> str:
    """Free text for a year the way builders write it: "Fall 2027", "Q2 2028", "2029", "Late 2027"."""
    r = rng.random()
    if r < 0.34:
        return f"{_SEASONS[int(rng.random() * 4)]} {year}"
    if r < 0.58:
        return f"Q{1 + int(rng.random() * 4)} {year}"
    if r < 0.74:
        return str(year)
    if r < 0.87:
        return f"{_PERIODS[int(rng.random() * 3)]} {year}"
    return f"{_MONTHS[int(rng.random() * 12)]} {year}"


# --------------------------------------------------------------------------------------------------- helpers

_ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ID_FIRST = _ID_CHARS.replace("S", "")
_PROFILE_ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _num(value: float) -> int | float:
    """A whole number as int, a fractional one as float (what JSON written by JavaScript looks like)."""
    as_int = int(value)
    return as_int if as_int == value else value


def _slug(text: str) -> str:
    """ASCII lower-case letters and digits only (for domains and file names)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "", folded)


@cache
def _image_name(plan: str) -> str:
    """The file name of a floor plan's image: "The Aspen" -> "the-aspen.svg" (plan names repeat: cached)."""
    folded = unicodedata.normalize("NFKD", plan).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "-", folded).strip("-") + ".svg"


def _sample(rand: Callable[[], float], population: int, k: int) -> list[int]:
    """``k`` distinct indices below ``population`` (a partial Fisher-Yates shuffle; cheaper than Random.sample)."""
    pool = list(range(population))
    for i in range(k):
        j = i + int(rand() * (population - i))
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:k]


def _apportion(total: int, shares: dict[str, float], at_least_one: bool) -> dict[str, int]:
    """Split ``total`` over the keys by largest remainder; with ``at_least_one`` every key gets one first."""
    keys = list(shares)
    counts = dict.fromkeys(keys, 0)
    if total <= 0:
        return counts
    remaining = total
    if at_least_one and total >= len(keys):
        for key in keys:
            counts[key] = 1
        remaining -= len(keys)
    weight_sum = sum(shares.values())
    quotas = {key: remaining * shares[key] / weight_sum for key in keys}
    for key in keys:
        counts[key] += int(quotas[key])
    left = total - sum(counts.values())
    by_remainder = sorted(keys, key=lambda key: (-(quotas[key] - int(quotas[key])), keys.index(key)))
    for key in by_remainder[:left]:
        counts[key] += 1
    return counts


def _spread(rng: Random, total: int, shares: dict[str, float], at_least_one: bool) -> list[str]:
    """``total`` keys in a shuffled order, each appearing its apportioned number of times."""
    counts = _apportion(total, shares, at_least_one)
    keys = [key for key, count in counts.items() for _ in range(count)]
    rng.shuffle(keys)
    return keys


Pool = tuple[list[int], list[float]]
"""Indices and their cumulative weights, for weighted picks by bisection."""


def _pool(indices: list[int], weights: Sequence[float]) -> Pool:
    return indices, list(accumulate(weights[i] for i in indices))


def _pick(rng: Random, pool: Pool) -> int:
    indices, cumulative = pool
    position = bisect(cumulative, rng.random() * cumulative[-1])
    return indices[min(position, len(indices) - 1)]


def _weighted(rng: Random, options: Sequence[Any], cumulative: Sequence[float]) -> Any:
    position = bisect(cumulative, rng.random() * cumulative[-1])
    return options[min(position, len(options) - 1)]


def _postal_code(rng: Random, fsas: Sequence[str]) -> str:
    letters = POSTAL_LDU_LETTERS
    return (
        f"{fsas[int(rng.random() * len(fsas))]} {int(rng.random() * 10)}"
        f"{letters[int(rng.random() * len(letters))]}{int(rng.random() * 10)}"
    )


# --------------------------------------------------------------------------------------------------- geography

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


@dataclass(frozen=True, slots=True)
class _Hood:
    name: str
    lat: float
    lng: float
    lng_km: float
    """Kilometres per degree of longitude at this latitude."""
    price_factor: float


@dataclass(frozen=True, slots=True)
class _CityTable:
    city: City
    state: str
    abbreviation: str
    municipalities: tuple[str, ...]
    hoods: tuple[_Hood, ...]
    streets: tuple[str, ...]
    short_streets: tuple[str, ...]
    """Street names without their suffix ("King" of "King St W"), for development names; may be empty."""
    fsas: tuple[str, ...]
    type_cumulative: tuple[float, ...]


def _short_street(street: str) -> str:
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


@cache
def _tables() -> dict[str, tuple[list[_CityTable], list[float]]]:
    """Per province code: its city tables and their cumulative weights (for weighted picks)."""
    by_province: dict[str, tuple[list[_CityTable], list[float]]] = {}
    for code in PROVINCE_CODES:
        tables: list[_CityTable] = []
        for city in cities_in(code):
            hoods = tuple(
                _Hood(h.name, h.lat, h.lng, 111.32 * math.cos(math.radians(h.lat)), h.price_factor)
                for h in city.neighbourhoods
            )
            shorts = tuple(dict.fromkeys(s for s in map(_short_street, city.streets) if s))
            table = _CityTable(
                city=city,
                state=city.state,
                abbreviation=city.province_abbreviation,
                municipalities=(city.municipality or city.name,),
                hoods=hoods,
                streets=city.streets,
                short_streets=shorts,
                fsas=city.fsas,
                type_cumulative=tuple(accumulate(_TYPE_WEIGHTS[city.kind])),
            )
            tables.append(table)
        by_province[code] = (tables, list(accumulate(t.city.weight for t in tables)))
    return by_province


# --------------------------------------------------------------------------------------------------- words

_DEV_WORDS = (
    "Mercer", "Harbour", "Maple", "Aspen", "Linden", "Birch", "Cedar", "Willow", "Sterling", "Hudson", "Arden",
    "Belmont", "Carrington", "Davenport", "Ellsworth", "Haven", "Ivy", "Juniper", "Kingsley", "Lumen", "Marlow",
    "Noble", "Oakwood", "Parkside", "Quinn", "Rosewood", "Sage", "Tamarack", "Union", "Vista", "Wexford", "Alder",
    "Beacon", "Citizen", "Dockside", "Elm", "Foundry", "Galleria", "Hearth", "Icon", "Jade", "Keystone",
    "Lighthouse", "Mosaic", "Nova", "Onyx", "Prism", "Reflect", "Summit", "Terrace", "Verde", "Waterview", "Axis",
    "Bloom", "Crest", "Drift", "Echo", "Forma", "Grove", "Horizon", "Indigo", "Luma", "Meridian", "Notting",
    "Orchard", "Pearl", "Radius", "Solstice", "Tide", "Vantage", "Wren", "Arbour", "Bellwood", "Cove", "Everly",
    "Greenwich", "Heritage", "Ironwood", "Kensington", "Landmark", "Millstone", "Northshore", "Oasis", "Pinnacle",
    "Quarry", "Riverside", "Skyline", "Timber", "Uptown", "Westwood", "Harbour Point", "Maple Ridge", "Cedar Grove",
    "Stonegate", "Brookside", "Lakehouse", "Highline", "Parkhill", "Fieldstone", "Westbury", "Ashgrove", "Bayview",
    "Copperstone", "Elmwood", "Foxglove", "Glasshouse", "Hillcrest", "Larkin", "Mapleview", "Northgate", "Oakmont",
    "Pembroke", "Queensbury", "Rockport", "Sandalwood", "Thornhill", "Upperview", "Valour", "Whistler", "Yardley",
    "Aria", "Balsam", "Charlotte", "Dufferin", "Emerald", "Fairview", "Grand", "Halcyon", "Iris", "Jasper", "Kite",
    "Legacy", "Monarch", "Nest", "Olive", "Park Avenue", "Reserve", "Sol", "Talisman", "Unity", "Vivid", "Walden",
)  # fmt: skip
_NAME_FORMS: dict[str, tuple[str, ...]] = {
    "condo": (
        "The {w} Condos", "{w} Condos", "{w} Residences", "{w} Tower", "{w} at {h}", "{w} House", "The {w}",
        "{w} Place", "{w} Condos", "The {w} Residences",
    ),
    "street": ("{w} on {s}", "{n} {s}"),
    "mixed": ("{w} Square", "{w} District", "{w} Commons"),
    "loft": ("{w} Lofts", "The {w} Lofts", "{w} Loft Residences"),
    "towns": ("{w} Towns", "{w} Towns", "{w} Townhomes", "{w} Urban Towns", "{towns}", "{w} Commons"),
    "houses": (
        "{w} Estates", "{w} Ridge", "{w} Heights", "{w} Trails", "{w} Meadows", "{w} Village", "{w} Park Homes",
        "{h} Estates",
    ),
    "qc": ("{a}{f}", "Les Condos {f}", "Quartier {f}", "{a}{f} {h}", "{le}"),
}  # fmt: skip
"""Development name templates: {w} a name word, {h} the neighbourhood, {s} a street, {n} a street number."""
_NAME_STYLE: dict[str, str] = {
    "Loft": "loft",
    "Townhouse": "towns",
    "Stacked Townhouse": "towns",
    "Detached": "houses",
    "Semi-Detached": "houses",
}
_DEV_SECOND_WORDS = (
    "Park", "Square", "Gardens", "Point", "Grove", "Hill", "Yards", "Landing", "Walk", "Crossing", "Common", "Gate",
    "Row", "Green", "Court", "Bay", "Creek", "Station", "Collection", "Mews",
)  # fmt: skip
_DEV_WORDS_FR = (
    ("La ", "Lumière"), ("Les ", "Jardins"), ("Le ", "Riverain"), ("Le ", "Boisé"), ("L'", "Horizon"),
    ("Le ", "Sommet"), ("La ", "Cité"), ("Le ", "Belvédère"), ("Le ", "Rivage"), ("L'", "Hélios"),
    ("La ", "Mosaïque"), ("L'", "Héritage"), ("Le ", "Panorama"), ("Le ", "Faubourg"), ("La ", "Verdure"),
    ("La ", "Promenade"), ("Le ", "Signature"), ("Le ", "Vista"), ("Le ", "Carré"), ("Les ", "Terrasses"),
)  # fmt: skip
"""French names of Quebec developments: article and word."""
_MODEL_NAMES = (
    "Aspen", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Hawthorn", "Juniper", "Laurel", "Magnolia", "Maple", "Oak",
    "Pine", "Redbud", "Spruce", "Sycamore", "Willow", "Alder", "Ash", "Beech", "Chestnut", "Cypress", "Hazel",
    "Hemlock", "Hickory", "Linden", "Poplar", "Rowan", "Sequoia", "Tamarack", "Walnut", "Acacia", "Balsam",
    "Cherry", "Ginkgo", "Holly", "Ironwood", "Jasmine", "Larch", "Mulberry", "Olive", "Sumac", "Trillium",
    "Violet", "Wisteria", "Amber", "Carlton", "Dalton", "Everett", "Fulton", "Grayson", "Harper", "Lennox",
    "Monroe", "Newport", "Oxford", "Preston", "Rutherford", "Sheridan", "Thornton", "Wellington", "Ashford",
)  # fmt: skip
_CO_WORDS = (
    "Lakeview", "Stonebridge", "Northcrest", "Harbourview", "Redwood", "Granite", "Silverleaf", "Bluewater",
    "Crestview", "Oakridge", "Pinecrest", "Riverbend", "Summit", "Westbrook", "Eastgate", "Highland", "Maplewood",
    "Ironstone", "Brightwater", "Clearview", "Fairhaven", "Goldcrest", "Hollybrook", "Kingsbridge", "Larkspur",
    "Meadowbrook", "Northgate", "Parkview", "Queensway", "Rockcliffe", "Shoreline", "Thornbury", "Valleyview",
    "Whitestone", "Amberwood", "Birchwood", "Cobblestone", "Driftwood", "Elmhurst", "Foxhill", "Glenview",
    "Hartwell", "Ivorygate", "Juniper", "Kestrel", "Lionsgate", "Millbrook", "Northview", "Oakhurst", "Pembrook",
    "Ravenwood", "Silverton", "Trailhead", "Upland", "Cardinal", "Heron", "Falcon", "Osprey", "Compass",
    "Keystone", "Cornerstone", "Landmark", "Benchmark", "Paragon", "Vertex", "Meridian", "Horizon", "Apex",
    "Zenith", "Evergreen", "Sterling", "Royal Oak", "Cityscape", "Lakeshore", "Bayfront", "Harbourfront",
    "Prairie", "Chinook", "Rocky Ridge", "Coastal", "Pacific Crest", "Atlantic", "Maritime", "Laurentian",
    "Boreal", "Northern Lights", "Tidewater", "Cascade", "Fraserview", "Bow River", "Red River", "St. Lawrence",
)  # fmt: skip
_SURNAMES = (
    "Abbott", "Baxter", "Castellano", "Delgado", "Esposito", "Fraser", "Gallagher", "Hamilton", "Ishikawa",
    "Jensen", "Kowalski", "Lambert", "MacLeod", "Nakamura", "O'Connell", "Petrov", "Quinlan", "Rossi", "Sandhu",
    "Tremblay", "Underwood", "Vasquez", "Whitfield", "Yamada", "Zimmerman", "Bélanger", "Chen", "Dhillon",
    "Fontaine", "Gagnon", "Huang", "Iverson", "Kaur", "Lavoie", "Moretti", "Novak", "Okafor", "Patel", "Roy",
    "Singh", "Thibodeau", "Vernon", "Walsh", "Bertrand", "Caruso", "DiNardo", "Ferreira", "Grewal", "Hollander",
    "Kim", "Leclerc", "Martel", "Nguyen", "Ouellet", "Pellegrino", "Russo", "Sato", "Tanaka", "Volkov", "Wong",
    "Ahmed", "Bouchard", "Campbell", "Doyle", "Ellison", "Gill", "Harrington", "Ianucci", "Kerr", "Lindqvist",
    "Mancini", "Nash", "Ortiz", "Park", "Romano", "Santos", "Turner", "Vance", "Whitmore", "Sinclair", "Duval",
)  # fmt: skip
_OWNER_FORMS: dict[str, str] = {
    "on": "Ontario Inc.",
    "bc": "B.C. Ltd.",
    "ab": "Alberta Ltd.",
    "qc": "Québec inc.",
    "mb": "Manitoba Ltd.",
    "sk": "Saskatchewan Ltd.",
    "ns": "Nova Scotia Limited",
    "nb": "N.B. Ltd.",
    "nl": "Newfoundland and Labrador Inc.",
    "pe": "P.E.I. Inc.",
}

_INCENTIVES: tuple[tuple[str, str], ...] = (
    ("Free assignment", "Assign your unit before closing at no charge (legal fees not included)."),
    ("Capped development charges", "Development charges and levies capped for all suites."),
    ("Extended deposit structure", "Only 15% down spread over 540 days."),
    ("Right to lease during occupancy", "Lease your suite during the interim occupancy period."),
    ("Free parking", "One parking space included with suites of two bedrooms or more."),
    ("Décor credit", "A $10,000 credit towards upgrades at the design studio."),
    ("Free locker", "A storage locker included with every suite."),
    ("Cash back on closing", "$20,000 cash back on closing for a limited time."),
    ("Maintenance fees paid", "Common-element fees paid for the first year after occupancy."),
    ("Limited-time pricing", "Launch pricing on a limited number of suites."),
    ("Free appliance package", "Stainless-steel appliance package included."),
)
_FINISHES = (
    "Quartz countertops, integrated appliances, wide-plank laminate flooring",
    "Custom Italian cabinetry, porcelain tile backsplash, engineered hardwood floors",
    "Stainless-steel appliances, stone countertops, frameless glass showers",
    "Designer kitchens with quartz islands, matte black fixtures, vinyl plank flooring",
    "Miele appliance package, marble-look porcelain, 9 ft smooth ceilings",
    "Hardwood on main floor, oak staircase, granite kitchen counters, 200 amp service",
    "Energy Star windows, high-efficiency furnace, quartz vanities, ceramic tile baths",
    "Premium laminate throughout, soft-close cabinetry, undermount sinks",
)
_CEILINGS_CONDO = ("9 ft", "9 ft", "9 ft", "9 ft - 10 ft", "10 ft", "8.5 ft", "9 ft (10 ft in penthouses)")
_CEILINGS_GROUND = ("9 ft main floor", "10 ft main, 9 ft second floor", "9 ft", "9 ft - 10 ft")
_METERING_CONDO = ("Hydro, Water", "Hydro", "Hydro, Water, Heat", "Hydro, Water, Heat, Cooling", "")
_METERING_GROUND = ("Hydro, Water, Gas", "Hydro, Water, Gas", "Hydro, Water")
_PARKING_RESTRICTIONS = (
    "Available for units 700 sq ft+",
    "Available for 2 Bed and larger",
    "One space per suite, limited availability",
    "Available for units 800 sq ft+",
)
_STORAGE_RESTRICTIONS = ("Available for units 650 sq ft+", "Limited availability", "Available for 1 Bed + Den+")
_INCENTIVE_ODDS: dict[str, tuple[float, ...]] = {
    "Selling Now": (35, 65, 85, 95, 100),
    "Pending": (60, 90, 100, 100, 100),
    "Sold Out": (80, 100, 100, 100, 100),
}
"""Cumulative odds of 0 to 4 incentives, by selling status."""
_PHOTO_TAGS = ("exterior", "lobby", "amenity", "suite", "kitchen", "bathroom", "view", "rooftop", "streetscape")

_CONDO_LIKE = frozenset({"Condo", "Mixed Use", "Loft", "Stacked Townhouse"})
_PAIRS: dict[str, tuple[str, ...]] = {
    "Condo": ("Townhouse", "Mixed Use", "Loft", "Stacked Townhouse"),
    "Townhouse": ("Detached", "Semi-Detached", "Stacked Townhouse", "Condo"),
    "Detached": ("Townhouse", "Semi-Detached"),
    "Semi-Detached": ("Detached", "Townhouse"),
    "Stacked Townhouse": ("Townhouse", "Condo"),
    "Mixed Use": ("Condo",),
    "Loft": ("Condo",),
}

# label, bedrooms, bathroom choices, smallest and largest size, weight
_CONDO_PLANS: tuple[tuple[str, float, tuple[float, ...], int, int, float], ...] = (
    ("Studio", 0, (1,), 330, 480, 5),
    ("1 Bed", 1, (1,), 450, 620, 17),
    ("1 Bed + Den", 1.5, (1, 1, 1.5, 2), 560, 760, 22),
    ("2 Bed", 2, (2, 2, 1, 1.5), 680, 920, 22),
    ("2 Bed + Den", 2.5, (2, 2, 2.5), 840, 1120, 14),
    ("3 Bed", 3, (2, 2, 2.5, 3), 980, 1450, 12),
    ("3 Bed + Den", 3.5, (2.5, 3), 1250, 1700, 4),
    ("Penthouse", 3, (2.5, 3, 3.5), 1500, 3200, 3),
)
_CONDO_PLAN_CUMULATIVE = tuple(accumulate(p[5] for p in _CONDO_PLANS))
# per ground-oriented type: (bedrooms, bathrooms, smallest size, largest size) options
_GROUND_PLANS: dict[str, tuple[tuple[float, float, int, int], ...]] = {
    "Townhouse": ((2, 1.5, 1050, 1400), (3, 2.5, 1350, 1900), (3, 2.5, 1400, 2000), (4, 3.5, 1800, 2500)),
    "Stacked Townhouse": ((1, 1.5, 700, 900), (2, 2, 850, 1150), (2, 2.5, 950, 1250), (3, 2.5, 1150, 1500)),
    "Detached": ((3, 2.5, 1800, 2400), (4, 3.5, 2300, 3200), (4, 3.5, 2500, 3400), (5, 4.5, 3100, 4400)),
    "Semi-Detached": ((3, 2.5, 1500, 1900), (3, 2.5, 1650, 2100), (4, 3.5, 1900, 2600)),
    "Loft": ((1, 1, 550, 800), (1.5, 1.5, 700, 950), (2, 2, 850, 1400)),
}
_TYPE_PRICE_FACTOR: dict[str, float] = {
    "Condo": 1.0,
    "Mixed Use": 1.0,
    "Loft": 1.02,
    "Stacked Townhouse": 0.84,
    "Townhouse": 0.8,
    "Semi-Detached": 0.74,
    "Detached": 0.7,
}
_UNITS_BY_KIND: dict[str, tuple[int, int]] = {
    "core": (150, 900),
    "urban": (80, 600),
    "suburb": (40, 400),
    "town": (20, 250),
}
_FLOORS_BY_KIND: dict[str, tuple[int, int]] = {
    "core": (18, 75),
    "urban": (8, 48),
    "suburb": (4, 30),
    "town": (4, 16),
}

# deposit schedules (percent amounts, summing to the total) by total deposit
_SCHEDULES: dict[int, tuple[tuple[float, ...], ...]] = {
    5: ((5,), (2.5, 2.5)),
    10: ((5, 5), (2.5, 2.5, 5), (10,)),
    15: ((5, 5, 5), (5, 10), (2.5, 2.5, 5, 5)),
    20: ((5, 5, 5, 5), (5, 5, 10), (10, 5, 5), (2.5, 2.5, 5, 5, 5)),
    25: ((5, 5, 5, 5, 5), (5, 5, 5, 10)),
}
_DEPOSIT_BY_PROVINCE: dict[str, tuple[int, ...]] = {
    "on": (20, 20, 15, 25),
    "bc": (10, 15, 20, 10),
    "ab": (10, 5, 15),
    "qc": (10, 15, 10),
}
_MILESTONE_SUFFIXES = (
    "on signing",
    "in 30 days",
    "in 90 days",
    "in 180 days",
    "in 365 days",
    "in 540 days",
    "on occupancy",
)


# --------------------------------------------------------------------------------------------------- profiles

_NEIGHBOURS: dict[str, tuple[str, ...]] = {
    "on": ("qc", "bc", "ab", "mb"),
    "bc": ("ab", "on"),
    "ab": ("bc", "sk", "on"),
    "qc": ("on", "nb"),
    "mb": ("sk", "on"),
    "sk": ("ab", "mb"),
    "ns": ("nb", "pe", "nl"),
    "nb": ("ns", "pe", "qc"),
    "nl": ("ns", "nb"),
    "pe": ("ns", "nb"),
}
"""Provinces a builder based in a province also builds in, when it builds in more than one."""

_COLLECTION_SHARES: dict[str, float] = {
    "Builders": 0.30,
    "Architects": 0.11,
    "InteriorDesigners": 0.10,
    "Marketers": 0.09,
    "SalesCentres": 0.14,
    "SalesCompanies": 0.10,
    "Owners": 0.16,
}
_REFERENCE_ODDS: tuple[tuple[str, str, float], ...] = (
    ("architects", "Architects", 0.78),
    ("interiorDesigners", "InteriorDesigners", 0.58),
    ("marketingCompanies", "Marketers", 0.62),
    ("salesCentres", "SalesCentres", 0.55),
    ("salesCompanies", "SalesCompanies", 0.5),
    ("owners", "Owners", 0.4),
)


def _company_name(rng: Random, collection: str, province: str, table: _CityTable) -> str:
    co = _CO_WORDS[int(rng.random() * len(_CO_WORDS))]
    co2 = _CO_WORDS[int(rng.random() * len(_CO_WORDS))]
    s1 = _SURNAMES[int(rng.random() * len(_SURNAMES))]
    s2 = _SURNAMES[int(rng.random() * len(_SURNAMES))]
    if s2 == s1:
        s2 = _SURNAMES[(_SURNAMES.index(s1) + 1) % len(_SURNAMES)]
    french = province == "qc" and rng.random() < 0.5
    forms: tuple[str, ...]
    if collection == "Builders":
        forms = (
            (f"Groupe {co}", f"Développements {s1}", f"Construction {s1} inc.", f"Habitations {co}")
            if french
            else (
                f"{co} Homes", f"{co} Homes Inc.", f"{co} Developments", f"{co} Group", f"{co} Communities",
                f"{s1} Homes", f"{co} Properties Ltd.", f"{co} Living", f"{s1} Developments Inc.", f"{co} Urban",
                f"{co} Development Corporation", f"{s1} & {s2} Developments", f"{co} {s1} Homes",
                f"{s1} Builders", f"{co} Residential",
            )
        )  # fmt: skip
    elif collection == "Architects":
        forms = (
            (f"{s1} {s2} architectes", f"Atelier {co}", f"{s1} + associés architectes")
            if french
            else (
                f"{s1} {s2} Architects", f"{co} Architecture", f"{s1} + Partners Architects",
                f"{s1} Architects Inc.", f"Studio {co}", f"{co} Design Architects", f"{s1} Associates Architects",
                f"{s1} {s2} Architecture Inc.",
            )
        )  # fmt: skip
    elif collection == "InteriorDesigners":
        forms = (
            f"{s1} {s2}", f"{s1} Interiors", f"Studio {co}", f"{co} Design Group", f"{s1} Design Studio",
            f"{co} Interior Design", f"{s1} + {s2} Design",
        )  # fmt: skip
    elif collection == "Marketers":
        forms = (
            f"{s1} Real Estate", f"{co} Marketing Group", f"{co} Sales & Marketing", f"{co} Creative",
            f"{s1} Brand Agency", f"{co} Communications", f"{s1} {s2} Marketing",
        )  # fmt: skip
    elif collection == "SalesCompanies":
        forms = (
            f"{co} Realty Inc., Brokerage", f"{s1} Sales Group", f"{co} Property Sales", f"{co} New Homes Realty",
            f"{s1} Realty Advisors", f"{s1} {s2} Realty Inc., Brokerage",
        )  # fmt: skip
    elif collection == "SalesCentres":
        word = _DEV_WORDS[int(rng.random() * len(_DEV_WORDS))]
        street = table.streets[int(rng.random() * len(table.streets))]
        hood = table.hoods[int(rng.random() * len(table.hoods))].name
        forms = (
            f"The {word} Presentation Centre", f"{word} Sales Gallery", f"{street} Discovery Centre",
            f"{hood} Sales Centre", f"{word} Experience Centre",
        )  # fmt: skip
    else:  # Owners
        digits = 1_000_000 + int(rng.random() * 9_000_000)
        forms = (
            f"{digits} {_OWNER_FORMS[province]}", f"{digits} {_OWNER_FORMS[province]}", f"{co} Holdings Inc.",
            f"{co} Land Corp.", f"{co2} Capital Partners", f"{s1} Family Holdings Ltd.",
        )  # fmt: skip
    return forms[int(rng.random() * len(forms))]


_PROFILE_SUMMARIES: dict[str, tuple[str, ...]] = {
    "Builders": (
        "{name} is a {adjective} home builder based in {city}, founded in {year}. The company builds across "
        "{provinces}, with a focus on {focus}.",
        "Founded in {year}, {name} has delivered thousands of homes in {provinces}. Its communities are known "
        "for {focus}.",
    ),
    "Architects": (
        "{name} is an architecture practice based in {city}, known for {focus}.",
        "{name} designs residential and mixed-use buildings across {state}, with an emphasis on {focus}.",
    ),
    "InteriorDesigners": (
        "{name} is an interior design studio in {city} creating lobbies, amenity spaces and suites with {focus}.",
        "Based in {city}, {name} designs interiors for condominium and townhome developments across {state}.",
    ),
    "Marketers": (
        "{name} is a real estate marketing agency in {city} specialising in new-home launches, branding and "
        "sales strategy.",
        "{name} plans and runs pre-construction launches for builders across {state}.",
    ),
    "SalesCentres": (
        "{name} is a presentation centre at {address}, where buyers can tour model suites and finishes by appointment.",
        "Visit {name} in {city} to see floor plans, finishes and a scale model of the development.",
    ),
    "SalesCompanies": (
        "{name} is a new-home sales brokerage in {city} representing builders across {state}.",
        "{name} handles VIP launches and on-site sales for pre-construction developments in {state}.",
    ),
    "Owners": (
        "{name} is the land-owning entity of residential developments in {state}.",
        "{name} holds development lands in {city} and partners with builders on new communities.",
    ),
}
_FOCUS = (
    "sustainable design",
    "family-sized suites",
    "transit-oriented communities",
    "timeless architecture",
    "attainable ownership",
    "luxury finishes",
    "mid-rise infill",
    "master-planned communities",
    "award-winning amenity spaces",
    "energy-efficient construction",
)
_ADJECTIVES = ("family-owned", "award-winning", "established", "independent", "fast-growing", "regional")


@dataclass
class _Profiles:
    records: list[dict[str, Any]]
    names: list[str]
    latest_listing_ms: list[int]
    """Per profile, the createdAt of its newest listing (to keep updatedAt after it)."""
    updated_ms: list[int]
    pools: dict[str, dict[str, Pool]]
    """Per collection: per province code, and under "" the whole collection."""
    city_pools: dict[str, Pool]
    """Sales centres per "<code>/<city>"."""


def _make_profiles(rng: Random, total: int, used_ids: set[str]) -> _Profiles:
    by_province = _tables()
    counts = _apportion(total, _COLLECTION_SHARES, at_least_one=total >= len(_COLLECTION_SHARES))
    records: list[dict[str, Any]] = []
    names: list[str] = []
    weights: list[float] = []
    provinces_of: list[list[str]] = []
    city_keys: list[str] = []
    created: list[int] = []
    updated: list[int] = []
    collection_of: list[str] = []
    for collection in PROFILE_COLLECTIONS:
        count = counts[collection]
        homes = _spread(rng, count, PROVINCE_SHARES, at_least_one=count >= 10)
        seen: set[str] = set()
        for province in homes:
            tables, cumulative = by_province[province]
            table: _CityTable = _weighted(rng, tables, cumulative)
            while True:
                pid = "".join(rng.choices(_PROFILE_ID_CHARS, k=20))
                if pid not in used_ids:
                    used_ids.add(pid)
                    break
            name = _company_name(rng, collection, province, table)
            tries = 0
            while name.lower() in seen:
                tries += 1
                name = _company_name(rng, collection, province, table)
                if tries > 30:
                    name = f"{name} {table.city.name}" if tries == 31 else f"{name} {tries}"
            seen.add(name.lower())
            if collection == "Builders":
                weight = min(rng.paretovariate(1.4), 20.0)
            elif collection == "SalesCentres":
                weight = 0.5 + rng.random()
            else:
                weight = min(rng.paretovariate(1.6), 30.0)
            provinces = [province]
            if collection == "Builders":
                # regional: most build in one province, some in a neighbouring one, the biggest in three
                extra = 2 if weight > 10 else 1 if weight > 4 or rng.random() < 0.2 else 0
                neighbours = list(_NEIGHBOURS[province])
                for _ in range(extra):
                    other = neighbours.pop(int(rng.random() * len(neighbours)))
                    provinces.append(other)
            city = table.city
            street = table.streets[int(rng.random() * len(table.streets))]
            address = (
                f"{1 + int(rng.random() * 2400)} {street}, {city.name}, {table.abbreviation} "
                f"{_postal_code(rng, table.fsas)}"
            )
            slug = _slug(re.sub(r"\b(inc|ltd|limited|corp|brokerage)\b\.?", "", name, flags=re.IGNORECASE))
            tld = "ca" if rng.random() < 0.75 else "com"
            numbered = name[:1].isdigit()
            website = "" if numbered else f"https://www.{slug}.{tld}"
            email = f"info@{slug[:40]}.{tld}" if not numbered else f"legal{slug[:7]}@ownersmail.ca"
            if collection == "SalesCentres":
                email = f"sales@{slug[:40]}.{tld}"
            phone = f"({city.area_codes[int(rng.random() * len(city.area_codes))]}) 555-01{int(rng.random() * 100):02d}"
            created_ms = int(rng.random() * _SPAN_MS * 0.5)
            updated_ms = created_ms + int((_SPAN_MS - 1 - created_ms) * rng.random())
            year = 1955 + int(rng.random() * 66)
            summary = _PROFILE_SUMMARIES[collection][int(rng.random() * 2)].format(
                name=name,
                city=city.name,
                state=city.state,
                address=address,
                year=year,
                adjective=_ADJECTIVES[int(rng.random() * len(_ADJECTIVES))],
                focus=_FOCUS[int(rng.random() * len(_FOCUS))],
                provinces=_join([PROVINCE_CODES[p] for p in provinces]),
            )
            record: dict[str, Any] = {
                "id": pid,
                "path": f"{collection}/{pid}",
                "name": name,
                "address": address,
                "website": website,
                "email": email,
                "phone": phone,
                "logo": f"/media/profiles/{pid}/logo.svg",
                "listings": [],
                "summary": summary,
                "state": city.state,
                "createdAt": "",
                "updatedAt": "",
            }
            if collection == "Builders":
                record["yearFounded"] = year
                record["provinces"] = [PROVINCE_CODES[p] for p in provinces]
            records.append(record)
            names.append(name)
            weights.append(weight)
            provinces_of.append(provinces)
            city_keys.append(f"{city.province}/{city.name}")
            created.append(created_ms)
            updated.append(updated_ms)
            collection_of.append(collection)
    pools: dict[str, dict[str, Pool]] = {}
    for collection in PROFILE_COLLECTIONS:
        members = [i for i, c in enumerate(collection_of) if c == collection]
        per: dict[str, Pool] = {}
        if members:
            per[""] = _pool(members, weights)
            for code in PROVINCE_CODES:
                local = [i for i in members if code in provinces_of[i]]
                if local:
                    per[code] = _pool(local, weights)
        pools[collection] = per
    city_members: dict[str, list[int]] = {}
    for i, collection in enumerate(collection_of):
        if collection == "SalesCentres":
            city_members.setdefault(city_keys[i], []).append(i)
    city_pools = {key: _pool(members, weights) for key, members in city_members.items()}
    for i, record in enumerate(records):
        record["createdAt"] = _iso(created[i])
    return _Profiles(records, names, created, updated, pools, city_pools)


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


# --------------------------------------------------------------------------------------------------- listings


class _Generator:
    def __init__(self, seed: int, sandbox: bool) -> None:
        tag = "sandbox" if sandbox else "catalogue"
        self.profile_rng = Random(f"precon/{tag}/{seed}/profiles")
        self.rng = Random(f"precon/{tag}/{seed}/listings")
        self.sandbox = sandbox
        self.used_names: dict[str, int] = {}
        self.used_ids: set[str] = set()

    def run(self, listings: int, profiles: int) -> Catalogue:
        # Millions of small containers and no cycles: the cyclic collector would only rescan them, again and again.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.profiles = _make_profiles(self.profile_rng, profiles, set())
            provinces = _spread(self.rng, listings, PROVINCE_SHARES, at_least_one=listings >= len(PROVINCE_SHARES))
            records = [self._listing(province) for province in provinces]
        finally:
            if collecting:
                gc.enable()
        prof = self.profiles
        for i, record in enumerate(prof.records):
            record["updatedAt"] = _iso(max(prof.updated_ms[i], prof.latest_listing_ms[i]))
        return Catalogue(records, prof.records)

    # ------------------------------------------------------------------ one listing

    def _listing_id(self) -> str:
        rng = self.rng
        while True:
            first = "S" if self.sandbox else _ID_FIRST[int(rng.random() * len(_ID_FIRST))]
            lid = first + "".join(rng.choices(_ID_CHARS, k=5))
            if lid not in self.used_ids:
                self.used_ids.add(lid)
                return lid

    def _listing(self, province: str) -> dict[str, Any]:
        rng = self.rng
        rand = rng.random
        by_province = _tables()
        tables, cumulative = by_province[province]
        table: _CityTable = _weighted(rng, tables, cumulative)
        city = table.city
        hood = table.hoods[int(rand() * len(table.hoods))]
        lid = self._listing_id()
        path = f"Listings/{lid}"

        # --- type and statuses
        primary: str = _weighted(rng, BUILDING_TYPES, table.type_cumulative)
        types = [primary]
        if rand() < 0.15:
            pairs = _PAIRS[primary]
            types.append(pairs[int(rand() * len(pairs))])
        condo_like = primary in _CONDO_LIKE
        r = rand()
        selling = "Selling Now" if r < 0.55 else "Pending" if r < 0.75 else "Sold Out"
        r = rand()
        if selling == "Sold Out":
            construction = "Complete" if r < 0.4 else "Pre Construction" if r < 0.9 else None
        elif selling == "Selling Now":
            construction = "Complete" if r < 0.14 else "Pre Construction" if r < 0.9 else None
        else:
            construction = "Pre Construction" if r < 0.9 else None
        featured = rand() < 0.05

        # --- time
        created_ms = int(rand() * (_SPAN_MS - 1))
        updated_ms = created_ms + int((_SPAN_MS - 1 - created_ms) * rand() ** 0.6)
        created_at = _iso(created_ms)
        updated_at = _iso(updated_ms)
        plans_ms = min(created_ms + int(rand() * 3 * _DAY_MS), updated_ms)
        plans_created = _iso(plans_ms)
        revisions = [plans_created]
        if updated_ms > plans_ms:
            revisions.append(updated_at)
            revisions.append(_iso(plans_ms + int((updated_ms - plans_ms) * rand())))

        # --- dates as builders publish them
        if construction == "Complete":
            completion = 2021 + int(rand() * 6)
            construction_year = completion - 2 - int(rand() * 3)
            sales_year = construction_year - int(rand() * 2)
            tbd = (False, False, rand() < 0.02, False, False)
        else:
            sales_year = (2026 + int(rand() * 2)) if selling == "Pending" else 2021 + int(rand() * 6)
            construction_year = sales_year + int(rand() * 3)
            completion = construction_year + (2 + int(rand() * 3) if condo_like else 1 + int(rand() * 3))
            tbd = (
                rand() < 0.12,
                rand() < 0.07,
                rand() < 0.18,
                rand() < (0.25 if construction_year >= 2026 else 0.05),
                rand() < (0.35 if selling == "Pending" else 0.04),
            )
        estimated = completion + (1 if rand() < 0.2 and construction != "Complete" else 0)
        occupancy = max(completion - (int(rand() * 2) if condo_like else 0), construction_year + 1)
        years = (completion, estimated, occupancy, construction_year, sales_year)
        texts = [None if tbd[k] else _date_text(rng, years[k]) for k in range(5)]
        year_values = [None if tbd[k] else years[k] for k in range(5)]

        # --- location
        street = table.streets[int(rand() * len(table.streets))]
        street_number = None if rand() < 0.05 else 1 + int(rand() * rand() * 3000)
        postal = _postal_code(rng, table.fsas)
        number_part = f"{street_number} " if street_number is not None else ""
        full_address = f"{number_part}{street}, {city.name}, {table.abbreviation} {postal}, Canada"
        geographic_address = f"{street}, {hood.name}, {city.name}, {table.state}, Canada"
        distance = 0.25 + 2.0 * math.sqrt(rand())
        bearing = rand() * math.tau
        lat = hood.lat + distance * math.cos(bearing) / 111.32
        lng = hood.lng + distance * math.sin(bearing) / hood.lng_km
        if rand() < 0.5:
            lat_text, lng_text = f"{lat:.6f}", f"{lng:.6f}"
        else:
            lat_text, lng_text = f"{lat:.7f}", f"{lng:.7f}"

        # --- companies
        refs, builder_names = self._references(province, f"{province}/{city.name}", lid, created_ms, selling)

        # --- floor plans and the numbers that come from them
        listing_psf = city.price_per_sqft * hood.price_factor * (0.9 + 0.22 * rand())
        psf_scale = min(1.0, city.price_per_sqft / 1000)
        contact = rand() < 0.05
        # a building faces an arc of directions: N, NE, E... or every other one (N, E, S)
        first, step = int(rand() * 8), 1 + int(rand() * 2)
        exposures = [COMPASS[k] for k in sorted({(first + step * j) % 8: None for j in range(1 + int(rand() * 4))})]
        rounding = rand()
        has_plans = rand() >= 0.02
        plans: list[dict[str, Any]] | None
        if has_plans:
            plans = self._floor_plans(
                lid, types, listing_psf, psf_scale, contact, selling, exposures, rounding, plans_created, revisions
            )
            priced = [(p["startPrice"], int(p["squareFeet"])) for p in plans if p["startPrice"] != ""]
            beds = [p["numberOfBedrooms"] for p in plans]
            baths = [p["numberOfBathrooms"] for p in plans]
            sizes = [int(p["squareFeet"]) for p in plans]
            min_beds, max_beds = min(beds), max(beds)
            min_baths, max_baths = min(baths), max(baths)
            min_size, max_size = min(sizes), max(sizes)
        else:
            plans = None
            priced = []
            if not contact and rand() < 0.5:
                low = 450 if condo_like else 1400
                high = low + 400 + int(rand() * 1200)
                factor = 1 - (1 - _TYPE_PRICE_FACTOR[primary]) * psf_scale
                priced = [
                    (_round_price(low * listing_psf * factor, rounding), low),
                    (_round_price(high * listing_psf * factor, rounding), high),
                ]
                min_beds, max_beds = (1, 3) if condo_like else (3, 4)
                min_baths, max_baths = (1, 2) if condo_like else (2.5, 3.5)
                min_size, max_size = low, high
            else:
                min_beds = max_beds = min_baths = max_baths = min_size = max_size = None
        if priced:
            prices = [price for price, _ in priced]
            psfs = [price / size for price, size in priced]
            start_price: int | None = min(prices)
            end_price: int | None = max(prices)
            average_psf = round(sum(psfs) / len(psfs))
            end_psf = round(max(psfs))
        else:
            contact = True
            start_price = end_price = None
            average_psf = end_psf = 0

        # --- money around the price
        incentive_count: int = _weighted(rng, (0, 1, 2, 3, 4), _INCENTIVE_ODDS[selling])
        incentives = [
            {"title": title, "description": text}
            for title, text in (_INCENTIVES[k] for k in sorted(_sample(rand, len(_INCENTIVES), incentive_count)))
        ]
        assignment_free = any(item["title"] == "Free assignment" for item in incentives)
        assignment_fee = None if assignment_free or rand() < 0.3 else (5000, 7500, 10000, 15000)[int(rand() * 4)]
        ground_fee: float | None = None
        if primary in ("Condo", "Mixed Use", "Loft"):
            ground_fee = round(0.55 + 0.30 * rand(), 2)
        elif primary == "Stacked Townhouse":
            ground_fee = round(0.40 + 0.20 * rand(), 2)
        elif primary == "Townhouse" and rand() < 0.4:
            ground_fee = round(0.25 + 0.20 * rand(), 2)
        cc_fee = ground_fee
        r = rand()
        levy_base = 8000 + int(city.price_per_sqft * 12 / 500) * 500
        if r < 0.2:
            levies, levies_included = None, True
        elif r < 0.62:
            levies, levies_included = f"Capped at ${levy_base:,}", False
        elif r < 0.72:
            levies, levies_included = (
                f"Capped at ${levy_base - 3000:,} for 1 Bed, ${levy_base + 2000:,} for 2 Bed+",
                False,
            )
        elif r < 0.85:
            levies, levies_included = "Uncapped", False
        else:
            levies, levies_included = None, False
        if condo_like:
            has_parking = rand() < 0.85
            parking_cost = (
                round(city.price_per_sqft * (65 + 25 * rand()), -3) if has_parking and rand() >= 0.1 else None
            )
            parking_fee = 45 + int(rand() * 50) if has_parking else None
            parking_included = parking_fee_included = False
            parking_restriction = (
                _PARKING_RESTRICTIONS[int(rand() * len(_PARKING_RESTRICTIONS))] if has_parking and rand() < 0.5 else ""
            )
            has_locker = rand() < 0.7
            storage_cost = round(city.price_per_sqft * (5 + 7 * rand()), -2) if has_locker else None
            locker_fee = 15 + int(rand() * 25) if has_locker else None
            storage_restriction = (
                _STORAGE_RESTRICTIONS[int(rand() * len(_STORAGE_RESTRICTIONS))] if has_locker and rand() < 0.35 else ""
            )
            metering = _METERING_CONDO[int(rand() * len(_METERING_CONDO))]
            # the last choice mentions penthouses: towers only
            ceilings = len(_CEILINGS_CONDO) - (0 if primary in ("Condo", "Mixed Use") else 1)
            ceiling = _CEILINGS_CONDO[int(rand() * ceilings)]
        else:
            has_parking, has_locker = True, False
            parking_cost = parking_fee = storage_cost = locker_fee = None
            parking_included = parking_fee_included = True
            parking_restriction = storage_restriction = ""
            metering = _METERING_GROUND[int(rand() * len(_METERING_GROUND))]
            ceiling = _CEILINGS_GROUND[int(rand() * len(_CEILINGS_GROUND))]
        metering_included = metering == "" or rand() < 0.05

        # --- size of the building
        if condo_like and primary != "Stacked Townhouse":
            low, high = _UNITS_BY_KIND[city.kind]
            units = low + int((high - low) * rand() ** 1.5)
            low, high = _FLOORS_BY_KIND[city.kind]
            floors = low + int((high - low) * rand() ** 1.4)
            if primary == "Loft":
                floors = min(floors, 12)
        elif primary == "Stacked Townhouse":
            units, floors = 24 + int(rand() * 200), 4
        else:
            units = 12 + int(rand() * rand() * 400)
            floors = 3 if primary == "Townhouse" else 2
        if plans is not None:
            units = max(units, len(plans))

        # --- words
        amenity_pool = _CONDO_AMENITIES if condo_like else _GROUND_AMENITIES
        amenity_count = 5 + int(rand() * 10) if condo_like else 3 + int(rand() * 5)
        amenities = [
            AMENITIES[amenity_pool[k]]
            for k in sorted(_sample(rand, len(amenity_pool), min(amenity_count, len(amenity_pool))))
        ]
        name = self._development_name(table, hood.name, types, province)
        summary = _summary(
            rng, name, types, builder_names, hood.name, city.name, street, units, floors, min_size, max_size,
            amenities, texts[2],
        )  # fmt: skip
        slug = _slug(name)[:40] or lid.lower()
        media = f"/media/listings/{lid}"
        photo_count = 3 + int(rand() * 10)
        photos = []
        for k in range(1, photo_count + 1):
            tags = ["exterior", "rendering"] if k == 1 else [_PHOTO_TAGS[int(rand() * len(_PHOTO_TAGS))]]
            svg = k > 2 and rand() < 0.12
            photos.append(
                {
                    "createdAt": revisions[0] if k <= 3 else revisions[int(rand() * len(revisions))],
                    "name": f"site-plan-{k}.svg" if svg else f"{tags[0]}-{k}.jpg",
                    "tags": ["site plan"] if svg else tags,
                    "type": "image/svg+xml" if svg else "image/jpeg",
                    "url": f"{media}/photo-{k}.svg",
                }
            )
        payment = self._payment_structures(province, types, start_price)
        brokerages = (
            []
            if rand() < 0.8
            else [{"name": f"{_CO_WORDS[int(rand() * len(_CO_WORDS))]} Realty Inc., Brokerage",
                   "commission": ("2.5%", "3%", "4%", "5%")[int(rand() * 4)]}]
        )  # fmt: skip
        videos = [] if rand() < 0.85 else [f"https://www.{slug}.ca/video"]
        virtual = "" if rand() < 0.7 else f"https://www.{slug}.ca/virtual-tour"

        return {
            "listingId": lid,
            "objectID": lid,
            "path": path,
            "name": name,
            "summary": summary,
            "mode": "live",
            "sellingStatus": selling,
            "sellingStatusUpdateTimestamp": _status_timestamp(lid, selling, created_ms, updated_ms),
            "constructionStatus": construction,
            "type": types,
            "isFeatured": featured,
            "createdAt": created_at,
            "updatedAt": updated_at,
            "country": "Canada",
            "state": table.state,
            "region": city.region,
            "cityOrDistrict": city.name,
            "streetName": street,
            "streetNumber": street_number,
            "postalCode": postal,
            "neighbourhood": [hood.name],
            "municipalities": list(table.municipalities),
            "fullAddress": full_address,
            "geographicAddress": geographic_address,
            "lat": lat_text,
            "long": lng_text,
            "_geoloc": {"lat": float(lat_text), "lng": float(lng_text)},
            "completionDate": texts[0],
            "estimatedCompletionDate": texts[1],
            "firstOccupancyDate": texts[2],
            "constructionStarted": texts[3],
            "salesStarted": texts[4],
            "completionDateTBD": tbd[0],
            "estimatedCompletionDateTBD": tbd[1],
            "firstOccupancyDateTBD": tbd[2],
            "constructionStartedTBD": tbd[3],
            "salesStartedTBD": tbd[4],
            "completionYear": year_values[0],
            "estimatedCompletionYear": year_values[1],
            "firstOccupancyYear": year_values[2],
            "constructionStartedYear": year_values[3],
            "salesStartedYear": year_values[4],
            "startPrice": start_price,
            "endPrice": end_price,
            "averagePricePerSqFeet": average_psf,
            "endPricePerSqFeet": end_psf,
            "contactForPricing": contact,
            "assignmentFee": assignment_fee,
            "assignmentFeeFree": assignment_free,
            "ccOrMaintFee": cc_fee,
            "ccOrMaintFeeIncluded": cc_fee is not None and rand() < 0.03,
            "developmentLevies": levies,
            "developmentLeviesIncluded": levies_included,
            "parkingCost": _num(parking_cost) if parking_cost is not None else None,
            "parkingMaintainance": parking_fee,
            "storageCost": _num(storage_cost) if storage_cost is not None else None,
            "lockerMaintainance": locker_fee,
            "parkingCostIncluded": parking_included,
            "parkingMaintainanceIncluded": parking_fee_included,
            "storageCostIncluded": False,
            "lockerMaintainanceIncluded": False,
            "parkingRestriction": parking_restriction,
            "storageRestriction": storage_restriction,
            "hasParking": has_parking,
            "hasLocker": has_locker,
            "metering": metering,
            "meteringIncluded": metering_included,
            "minBeds": min_beds,
            "maxBeds": max_beds,
            "minBaths": min_baths,
            "maxBaths": max_baths,
            "minSize": min_size,
            "maxSize": max_size,
            "numberOfUnits": str(units),
            "numberOfFloors": str(floors),
            "numberOfFloorPlans": len(plans) if plans is not None else 0,
            "numberOfIncentives": len(incentives),
            "ceilingHeights": ceiling,
            "finishes": _FINISHES[int(rand() * len(_FINISHES))],
            "virtualShowing": virtual,
            "exposures": exposures,
            "amenities": amenities,
            "incentives": incentives,
            "brokerages": brokerages,
            "videos": videos,
            "logo": ({"name": "logo.svg", "url": f"{media}/logo.svg"} if rand() >= 0.12 else {"name": "", "url": None}),
            "coverPhoto": {"name": "cover.svg", "url": f"{media}/cover.svg"},
            "photos": photos,
            "paymentStructures": payment,
            "architects": refs["architects"],
            "builders": refs["builders"],
            "interiorDesigners": refs["interiorDesigners"],
            "marketingCompanies": refs["marketingCompanies"],
            "salesCentres": refs["salesCentres"],
            "salesCompanies": refs["salesCompanies"],
            "owners": refs["owners"],
            "floorPlans": plans,
        }

    # ------------------------------------------------------------------ parts of a listing

    def _references(
        self, province: str, city_key: str, lid: str, created_ms: int, selling: str
    ) -> tuple[dict[str, list[str]], list[str]]:
        """Paths of the profiles of each reference field, mostly from the listing's province, and the builders'
        names; registers the listing on every profile chosen."""
        rng = self.rng
        prof = self.profiles
        chosen: dict[str, list[int]] = {}
        builders = prof.pools["Builders"]
        pool = builders.get(province) or builders.get("")
        picks: list[int] = []
        if pool is not None:
            picks.append(_pick(rng, pool))
            if rng.random() < 0.18 and len(pool[0]) > 1:
                for _ in range(4):
                    second = _pick(rng, pool)
                    if second != picks[0]:
                        picks.append(second)
                        break
        chosen["builders"] = picks
        for field, collection, odds in _REFERENCE_ODDS:
            if collection == "SalesCentres" and selling == "Sold Out":
                odds *= 0.5
            per = prof.pools[collection]
            if not per or rng.random() >= odds:
                chosen[field] = []
                continue
            if collection == "SalesCentres" and city_key in prof.city_pools and rng.random() < 0.9:
                pool = prof.city_pools[city_key]
            elif province in per and rng.random() < 0.88:
                pool = per[province]
            else:
                pool = per[""]
            chosen[field] = [_pick(rng, pool)]
        path = f"Listings/{lid}"
        records = prof.records
        latest = prof.latest_listing_ms
        paths: dict[str, list[str]] = {}
        for field in REFERENCE_FIELDS:
            indices = chosen[field]
            for index in indices:
                records[index]["listings"].append(path)
                if created_ms > latest[index]:
                    latest[index] = created_ms
            paths[field] = [records[index]["path"] for index in indices]
        return paths, [prof.names[index] for index in chosen["builders"]]

    def _floor_plans(
        self,
        lid: str,
        types: list[str],
        listing_psf: float,
        psf_scale: float,
        contact: bool,
        selling: str,
        exposures: list[str],
        rounding: float,
        created_at: str,
        revisions: list[str],
    ) -> list[dict[str, Any]]:
        rng = self.rng
        rand = rng.random
        primary = types[0]
        ground_count = 2 + min(int(rng.expovariate(0.25)), 18)
        condo_count = 2 + min(int(rng.expovariate(0.1)), 38)
        specs: list[tuple[str, float, float, int, float]] = []  # label, beds, baths, size, price factor
        for kind in types:
            count = condo_count if kind in ("Condo", "Mixed Use") else ground_count
            if len(types) > 1 and kind != primary:
                count = max(1, count // 3)
            factor = 1 - (1 - _TYPE_PRICE_FACTOR[kind]) * psf_scale
            if kind in ("Condo", "Mixed Use"):
                cumulative, total, last = _CONDO_PLAN_CUMULATIVE, _CONDO_PLAN_CUMULATIVE[-1], len(_CONDO_PLANS) - 1
                for _ in range(count):
                    position = bisect(cumulative, rand() * total)
                    label, beds, bath_options, low, high, _ = _CONDO_PLANS[min(position, last)]
                    size = low + int((high - low) * rand())
                    baths = bath_options[int(rand() * len(bath_options))]
                    premium = 1.2 if label == "Penthouse" else 1.0
                    adjust = (700 / size) ** 0.12
                    specs.append((label, beds, baths, size, factor * premium * adjust))
            else:
                options = _GROUND_PLANS[kind]
                for _ in range(count):
                    beds, baths, low, high = options[int(rand() * len(options))]
                    size = low + int((high - low) * rand())
                    adjust = (2000 / size) ** 0.08 if kind != "Loft" else (700 / size) ** 0.12
                    specs.append((kind, beds, baths, size, factor * adjust))
        del specs[40:]
        specs.sort(key=lambda spec: (spec[3], spec[1]))
        names = _plan_names(rng, len(specs), primary in _CONDO_LIKE)
        media = f"/media/listings/{lid}/plans"
        plans: list[dict[str, Any]] = []
        exposure_count = len(exposures)
        for index, (label, beds, baths, size, factor) in enumerate(specs, start=1):
            no_price = contact or rand() < 0.035
            if selling == "Sold Out":
                status = "Sold Out"
            elif selling == "Selling Now":
                status = "Sold Out" if rand() < 0.2 else "Available"
            else:
                status = "Available"
            start = exposures[int(rand() * exposure_count)]
            exposure = [start] if exposure_count == 1 or rand() < 0.6 else [start, exposures[-1]]
            if len(exposure) == 2 and exposure[0] == exposure[1]:
                exposure.pop()
            name = names[index - 1]
            plans.append(
                {
                    "id": f"{lid}-{index}",
                    "name": name,
                    "planCategory": "floorPlan",
                    "floorPlanType": [label],
                    "squareFeet": str(size),
                    "startPrice": ""
                    if no_price
                    else _round_price(size * listing_psf * factor * (0.97 + 0.06 * rand()), rounding),
                    "contactForPricing": no_price,
                    "status": status,
                    "numberOfBedrooms": beds,
                    "numberOfBathrooms": baths,
                    "exposure": exposure,
                    "image": {"name": _image_name(name), "url": f"{media}/{index}.svg"},
                    "createdAt": created_at,
                    "lastUpdated": revisions[int(rand() * len(revisions))],
                }
            )
        return plans

    def _development_name(self, table: _CityTable, hood: str, types: list[str], province: str) -> str:
        """A realistic name, unique within the catalogue: a name drawn twice becomes "<name> Phase 2"."""
        base = ""
        for _ in range(8):
            base = self._name_candidate(table, hood, types, province)
            if base not in self.used_names:
                break
        if self.used_names.get(base, 0) >= 2:
            # a third "Aria Condos" is more likely "Aria Condos at Yorkville" than "Aria Condos Phase 3"
            base = f"{base} at {hood}" if " at " not in base else f"{base} {table.city.name}"
        seen = self.used_names.get(base, 0) + 1
        self.used_names[base] = seen
        return base if seen == 1 else f"{base} Phase {seen}"

    def _name_candidate(self, table: _CityTable, hood: str, types: list[str], province: str) -> str:
        rng = self.rng
        rand = rng.random
        word = _DEV_WORDS[int(rand() * len(_DEV_WORDS))]
        if rand() < 0.4:
            word = f"{word} {_DEV_SECOND_WORDS[int(rand() * len(_DEV_SECOND_WORDS))]}"
        shorts = table.short_streets
        short = shorts[int(rand() * len(shorts))] if shorts else ""
        primary = types[0]
        article = french = ""
        number = 0
        if province == "qc" and rand() < 0.4:
            article, french = _DEV_WORDS_FR[int(rand() * len(_DEV_WORDS_FR))]
            forms = _NAME_FORMS["qc"]
        elif primary in ("Condo", "Mixed Use"):
            forms = _NAME_FORMS["condo"]
            if short:
                number = 1 + int(rand() * rand() * 900)
                forms += _NAME_FORMS["street"]
            if primary == "Mixed Use":
                forms += _NAME_FORMS["mixed"]
        else:
            forms = _NAME_FORMS[_NAME_STYLE[primary]]
        template = forms[int(rand() * len(forms))]
        return template.format(
            w=word,
            h=hood,
            s=short,
            n=number,
            a=article,
            f=french,
            le=f"L'{word}" if word[0] in "AEIOUH" else f"Le {word}",
            towns=f"Towns at {hood}" if hood.startswith("The ") else f"The Towns at {hood}",
        )

    def _payment_structures(self, province: str, types: list[str], start_price: int | None) -> list[dict[str, Any]]:
        rng = self.rng
        rand = rng.random
        kinds: list[str] = []
        for kind in types:
            label = "Condo" if kind in _CONDO_LIKE else "Freehold"
            if label not in kinds:
                kinds.append(label)
        if len(kinds) == 1 and rand() < 0.1:
            kinds.append("International Buyers")
        structures: list[dict[str, Any]] = []
        options = _DEPOSIT_BY_PROVINCE.get(province, (5, 10, 10))
        for label in kinds:
            total = options[int(rand() * len(options))]
            if label == "Freehold":
                total = min(total, 15) if total >= 10 else 10
            elif label == "International Buyers":
                total = min(total + 10, 25)
            schedule = _SCHEDULES[total]
            amounts = schedule[int(rand() * len(schedule))]
            signing = 5000 if (start_price or 0) < 700_000 else 10000 if (start_price or 0) < 1_500_000 else 20000
            milestones = []
            for k, amount in enumerate(amounts):
                suffix = _MILESTONE_SUFFIXES[0] if k == 0 else _MILESTONE_SUFFIXES[min(k + 1, 5)]
                if k == len(amounts) - 1 and k > 0 and label == "Freehold":
                    suffix = "in 180 days"
                if k == 0:
                    prefix, text = f"${signing:,}", f"${signing:,} on signing, balance to {_num(amount)}% in 30 days"
                else:
                    prefix, text = "", f"{_num(amount)}% {suffix}"
                milestones.append(
                    {"amount": _num(amount), "prefix": prefix, "suffix": suffix, "text": text, "type": "percentage"}
                )
            structures.append({"type": label, "totalDeposit": total, "milestones": milestones})
        return structures


def _round_price(price: float, style: float) -> int:
    thousands = round(price / 1000) * 1000
    if style < 0.6:
        return thousands - 10
    if style < 0.85:
        return thousands - 100
    return thousands


def _plan_names(rng: Random, count: int, condo: bool) -> list[str]:
    r = rng.random()
    if condo and r < 0.35:
        return [f"Suite {k // 4 + 1}{'ABCD'[k % 4]}" for k in range(count)]
    if condo and r < 0.55:
        return [f"Plan {101 + k}" for k in range(count)]
    if condo and r < 0.65:
        return [f"Unit {'ABCDEFGH'[k % 8]}{k // 8 + 1}" for k in range(count)]
    if count <= len(_MODEL_NAMES):
        return [f"The {_MODEL_NAMES[k]}" for k in _sample(rng.random, len(_MODEL_NAMES), count)]
    return [f"The {_MODEL_NAMES[k % len(_MODEL_NAMES)]}{' II' if k >= len(_MODEL_NAMES) else ''}" for k in range(count)]


def _summary(
    rng: Random,
    name: str,
    types: list[str],
    builders: list[str],
    hood: str,
    city: str,
    street: str,
    units: int,
    floors: int,
    min_size: int | None,
    max_size: int | None,
    amenities: list[str],
    occupancy: str | None,
) -> str:
    primary = types[0]
    if primary in ("Condo", "Mixed Use"):
        what = (
            "high-rise condominium tower" if floors >= 25 else "boutique condominium" if units < 150
            else "mid-rise condominium"
        )  # fmt: skip
        if primary == "Mixed Use":
            what = "mixed-use development with retail at grade"
        homes = "suites"
    elif primary == "Loft":
        what, homes = "loft residence", "lofts"
    elif primary in ("Townhouse", "Stacked Townhouse"):
        what = "stacked townhome community" if primary == "Stacked Townhouse" else "townhome community"
        homes = "homes"
    else:
        what = "community of detached homes" if primary == "Detached" else "community of semi-detached homes"
        homes = "homes"
    by = f" by {_join(builders)}" if builders else ""
    sentences = [f"{name} is a new {what}{by} in {hood}, {city}."]
    extra: list[str] = []
    if min_size is not None and max_size is not None:
        storeys = f" across {floors} storeys" if primary in ("Condo", "Mixed Use", "Loft") else ""
        extra.append(f"It will offer {units} {homes}{storeys}, from {min_size:,} to {max_size:,} sq ft.")
    if len(amenities) >= 3:
        extra.append(f"Amenities include {amenities[0]}, {amenities[1]} and {amenities[2]}.")
    extra.append(f"Located on {street}, it is steps from transit, shopping and parks.")
    if occupancy:
        extra.append(f"First occupancy is expected in {occupancy}.")
    keep = 1 + int(rng.random() * min(3, len(extra)))
    chosen = sorted(_sample(rng.random, len(extra), keep))
    sentences.extend(extra[k] for k in chosen)
    return " ".join(sentences)


# --------------------------------------------------------------------------------------------------- sandbox


def _ensure_sandbox_variety(catalogue: Catalogue) -> None:
    """Patch the sandbox so that every shape a client must handle occurs, keeping every listing consistent."""
    listings = catalogue.listings
    if not any(item["constructionStatus"] is None for item in listings):
        listings[1]["constructionStatus"] = None
    if not any(item["sellingStatus"] == "Sold Out" for item in listings):
        target = listings[2]
        target["sellingStatus"] = "Sold Out"
        for plan in target["floorPlans"] or []:
            plan["status"] = "Sold Out"
    if not any(item["isFeatured"] for item in listings):
        listings[0]["isFeatured"] = True
    if not any(
        plan["startPrice"] == "" for item in listings if item["floorPlans"] and not item["contactForPricing"]
        for plan in item["floorPlans"]
    ):  # fmt: skip
        target = next(item for item in listings if item["floorPlans"] and len(item["floorPlans"]) >= 3)
        plan = target["floorPlans"][1]
        plan["startPrice"] = ""
        plan["contactForPricing"] = True
        _reprice(target)
    if not any(item["floorPlans"] is None for item in listings):
        target = listings[3]
        target["floorPlans"] = None
        target["numberOfFloorPlans"] = 0
        _reprice(target)
    if not any(item["contactForPricing"] and item["floorPlans"] for item in listings):
        target = listings[4]
        for plan in target["floorPlans"] or []:
            plan["startPrice"] = ""
            plan["contactForPricing"] = True
        _reprice(target)


def _reprice(listing: dict[str, Any]) -> None:
    """Recompute a listing's prices, beds, baths and sizes from its floor plans."""
    plans = listing["floorPlans"]
    if not plans:
        for key in ("startPrice", "endPrice", "minBeds", "maxBeds", "minBaths", "maxBaths", "minSize", "maxSize"):
            listing[key] = None
        listing["averagePricePerSqFeet"] = listing["endPricePerSqFeet"] = 0
        listing["contactForPricing"] = True
        return
    priced = [(p["startPrice"], int(p["squareFeet"])) for p in plans if p["startPrice"] != ""]
    if priced:
        psfs = [price / size for price, size in priced]
        listing["startPrice"] = min(price for price, _ in priced)
        listing["endPrice"] = max(price for price, _ in priced)
        listing["averagePricePerSqFeet"] = round(sum(psfs) / len(psfs))
        listing["endPricePerSqFeet"] = round(max(psfs))
    else:
        listing["startPrice"] = listing["endPrice"] = None
        listing["averagePricePerSqFeet"] = listing["endPricePerSqFeet"] = 0
        listing["contactForPricing"] = True
