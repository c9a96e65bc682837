"""What a development is and is called: its building types, its name (unique within the catalogue), its size,
amenities, finishes, ceilings and metering, and the prose summary of the listing."""

from __future__ import annotations

from collections.abc import Callable
from random import Random

from precon.service.catalogue.draws import distinct_indices, weighted
from precon.service.catalogue.places import CityTable
from precon.service.catalogue.text import join_words

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

CONDO_LIKE = frozenset({"Condo", "Mixed Use", "Loft", "Stacked Townhouse"})
"""Building types sold like condominiums (suites in a building, condo deposits)."""
_SECOND_TYPES: dict[str, tuple[str, ...]] = {
    "Condo": ("Townhouse", "Mixed Use", "Loft", "Stacked Townhouse"),
    "Townhouse": ("Detached", "Semi-Detached", "Stacked Townhouse", "Condo"),
    "Detached": ("Townhouse", "Semi-Detached"),
    "Semi-Detached": ("Detached", "Townhouse"),
    "Stacked Townhouse": ("Townhouse", "Condo"),
    "Mixed Use": ("Condo",),
    "Loft": ("Condo",),
}


DEVELOPMENT_WORDS = (
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


def draw_types(rng: Random, table: CityTable) -> list[str]:
    """The building types of a development: one by the city's mix, sometimes a second that goes with it."""
    primary: str = weighted(rng, BUILDING_TYPES, table.type_cumulative)
    types = [primary]
    if rng.random() < 0.15:
        pairs = _SECOND_TYPES[primary]
        types.append(pairs[int(rng.random() * len(pairs))])
    return types


def draw_amenities(rand: Callable[[], float], condo_like: bool) -> list[str]:
    """Five to fourteen amenities of a building, or three to seven of a ground-oriented community, in
    :data:`AMENITIES` order."""
    pool = _CONDO_AMENITIES if condo_like else _GROUND_AMENITIES
    count = 5 + int(rand() * 10) if condo_like else 3 + int(rand() * 5)
    return [AMENITIES[pool[k]] for k in sorted(distinct_indices(rand, len(pool), min(count, len(pool))))]


class DevelopmentNames:
    """Names of the developments of one catalogue, each used once."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.used: dict[str, int] = {}

    def draw(self, table: CityTable, hood: str, types: list[str], province: str) -> str:
        """A realistic name, unique within the catalogue: a name drawn twice becomes "<name> Phase 2"."""
        base = ""
        for _ in range(8):
            base = self._candidate(table, hood, types, province)
            if base not in self.used:
                break
        if self.used.get(base, 0) >= 2:
            # a third "Aria Condos" is more likely "Aria Condos at Yorkville" than "Aria Condos Phase 3"
            base = f"{base} at {hood}" if " at " not in base else f"{base} {table.city.name}"
        seen = self.used.get(base, 0) + 1
        self.used[base] = seen
        return base if seen == 1 else f"{base} Phase {seen}"

    def _candidate(self, table: CityTable, hood: str, types: list[str], province: str) -> str:
        rand = self.rng.random
        word = DEVELOPMENT_WORDS[int(rand() * len(DEVELOPMENT_WORDS))]
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


def _what_it_is(primary: str, units: int, floors: int) -> tuple[str, str]:
    """What the development is ("boutique condominium") and what it calls its homes ("suites")."""
    if primary in ("Condo", "Mixed Use"):
        what = (
            "high-rise condominium tower" if floors >= 25 else "boutique condominium" if units < 150
            else "mid-rise condominium"
        )  # fmt: skip
        if primary == "Mixed Use":
            what = "mixed-use development with retail at grade"
        return what, "suites"
    if primary == "Loft":
        return "loft residence", "lofts"
    if primary in ("Townhouse", "Stacked Townhouse"):
        return ("stacked townhome community" if primary == "Stacked Townhouse" else "townhome community"), "homes"
    return ("community of detached homes" if primary == "Detached" else "community of semi-detached homes"), "homes"


def summary(
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
    """A first sentence saying what and where the development is, then one to three of: size, amenities,
    location, occupancy."""
    primary = types[0]
    what, homes = _what_it_is(primary, units, floors)
    by = f" by {join_words(builders)}" if builders else ""
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
    chosen = sorted(distinct_indices(rng.random, len(extra), keep))
    sentences.extend(extra[k] for k in chosen)
    return " ".join(sentences)


def draw_building_size(rand: Callable[[], float], city_kind: str, primary: str, plan_count: int) -> tuple[int, int]:
    """Units and floors: towers are taller and larger in a city's core; houses have two or three floors. Never
    fewer units than floor plans."""
    if primary in CONDO_LIKE and primary != "Stacked Townhouse":
        low, high = _UNITS_BY_KIND[city_kind]
        units = low + int((high - low) * rand() ** 1.5)
        low, high = _FLOORS_BY_KIND[city_kind]
        floors = low + int((high - low) * rand() ** 1.4)
        if primary == "Loft":
            floors = min(floors, 12)
    elif primary == "Stacked Townhouse":
        units, floors = 24 + int(rand() * 200), 4
    else:
        units = 12 + int(rand() * rand() * 400)
        floors = 3 if primary == "Townhouse" else 2
    return max(units, plan_count), floors


def draw_metering_and_ceilings(rand: Callable[[], float], primary: str) -> tuple[str, bool, str]:
    """The utilities metered per home, whether they are included, and the ceiling heights."""
    if primary in CONDO_LIKE:
        metering = _METERING_CONDO[int(rand() * len(_METERING_CONDO))]
        # the last choice mentions penthouses: towers only
        ceilings = len(_CEILINGS_CONDO) - (0 if primary in ("Condo", "Mixed Use") else 1)
        ceiling = _CEILINGS_CONDO[int(rand() * ceilings)]
    else:
        metering = _METERING_GROUND[int(rand() * len(_METERING_GROUND))]
        ceiling = _CEILINGS_GROUND[int(rand() * len(_CEILINGS_GROUND))]
    return metering, metering == "" or rand() < 0.05, ceiling


def draw_finishes(rand: Callable[[], float]) -> str:
    return _FINISHES[int(rand() * len(_FINISHES))]
