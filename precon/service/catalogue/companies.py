"""Companies: the profiles of the builders, architects, designers, marketers, sales centres, sales companies and
owners behind the listings (names, addresses, web sites, summaries, the provinces they work in), and the choice
of the companies of each listing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from random import Random
from typing import Any

from precon.client.models import PROFILE_COLLECTIONS, REFERENCE_FIELDS
from precon.service.catalogue.canada import PROVINCE_CODES, PROVINCE_SHARES
from precon.service.catalogue.dates import SPAN_MS, iso
from precon.service.catalogue.developments import DEVELOPMENT_WORDS
from precon.service.catalogue.draws import Pool, apportion, make_pool, pick, spread, weighted
from precon.service.catalogue.places import CityTable, city_tables, postal_code
from precon.service.catalogue.text import join_words, slug

_PROFILE_ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

COMPANY_WORDS = (
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


def company_name(rng: Random, collection: str, province: str, table: CityTable) -> str:
    co = COMPANY_WORDS[int(rng.random() * len(COMPANY_WORDS))]
    co2 = COMPANY_WORDS[int(rng.random() * len(COMPANY_WORDS))]
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
        word = DEVELOPMENT_WORDS[int(rng.random() * len(DEVELOPMENT_WORDS))]
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
class Profiles:
    """The profiles of a catalogue, and what choosing the companies of a listing needs."""

    records: list[dict[str, Any]]
    names: list[str]
    latest_listing_ms: list[int]
    """Per profile, the createdAt of its newest listing (to keep updatedAt after it)."""
    updated_ms: list[int]
    pools: dict[str, dict[str, Pool]]
    """Per collection: per province code, and under "" the whole collection."""
    city_pools: dict[str, Pool]
    """Sales centres per "<code>/<city>"."""

    def finish(self) -> list[dict[str, Any]]:
        """The records, with ``updatedAt`` after both their own last change and their newest listing."""
        for i, record in enumerate(self.records):
            record["updatedAt"] = iso(max(self.updated_ms[i], self.latest_listing_ms[i]))
        return self.records


@dataclass(frozen=True, slots=True)
class _Company:
    """One profile as drawn, with what the pools of its collection need."""

    record: dict[str, Any]
    name: str
    weight: float
    """How often listings pick it, relative to the others of its collection."""
    provinces: list[str]
    city_key: str
    created_ms: int
    updated_ms: int


def _unique_profile_id(rng: Random, used_ids: set[str]) -> str:
    while True:
        pid = "".join(rng.choices(_PROFILE_ID_CHARS, k=20))
        if pid not in used_ids:
            used_ids.add(pid)
            return pid


def _unique_company_name(rng: Random, collection: str, province: str, table: CityTable, seen: set[str]) -> str:
    """A name not yet used in the collection (case-insensitive); after 30 tries, one made unique by a suffix."""
    name = company_name(rng, collection, province, table)
    tries = 0
    while name.lower() in seen:
        tries += 1
        name = company_name(rng, collection, province, table)
        if tries > 30:
            name = f"{name} {table.city.name}" if tries == 31 else f"{name} {tries}"
    seen.add(name.lower())
    return name


def _draw_reach(rng: Random, collection: str, province: str) -> tuple[float, list[str]]:
    """How often listings pick the company, and the provinces it works in (its own first). Builders are
    regional: most build in one province, some in a neighbouring one, the biggest in three."""
    if collection == "Builders":
        weight = min(rng.paretovariate(1.4), 20.0)
    elif collection == "SalesCentres":
        weight = 0.5 + rng.random()
    else:
        weight = min(rng.paretovariate(1.6), 30.0)
    provinces = [province]
    if collection == "Builders":
        extra = 2 if weight > 10 else 1 if weight > 4 or rng.random() < 0.2 else 0
        neighbours = list(_NEIGHBOURS[province])
        for _ in range(extra):
            provinces.append(neighbours.pop(int(rng.random() * len(neighbours))))
    return weight, provinces


def _contact_details(rng: Random, collection: str, name: str, table: CityTable) -> dict[str, str]:
    """Address, web site, e-mail and phone (a 555-01xx number, reserved for fiction)."""
    city = table.city
    street = table.streets[int(rng.random() * len(table.streets))]
    address = (
        f"{1 + int(rng.random() * 2400)} {street}, {city.name}, {table.abbreviation} {postal_code(rng, table.fsas)}"
    )
    domain = slug(re.sub(r"\b(inc|ltd|limited|corp|brokerage)\b\.?", "", name, flags=re.IGNORECASE))
    tld = "ca" if rng.random() < 0.75 else "com"
    numbered = name[:1].isdigit()
    website = "" if numbered else f"https://www.{domain}.{tld}"
    email = f"info@{domain[:40]}.{tld}" if not numbered else f"legal{domain[:7]}@ownersmail.ca"
    if collection == "SalesCentres":
        email = f"sales@{domain[:40]}.{tld}"
    phone = f"({city.area_codes[int(rng.random() * len(city.area_codes))]}) 555-01{int(rng.random() * 100):02d}"
    return {"address": address, "website": website, "email": email, "phone": phone}


def _draw_company(rng: Random, collection: str, province: str, used_ids: set[str], seen_names: set[str]) -> _Company:
    tables, cumulative = city_tables()[province]
    table: CityTable = weighted(rng, tables, cumulative)
    pid = _unique_profile_id(rng, used_ids)
    name = _unique_company_name(rng, collection, province, table, seen_names)
    weight, provinces = _draw_reach(rng, collection, province)
    city = table.city
    contact = _contact_details(rng, collection, name, table)
    created_ms = int(rng.random() * SPAN_MS * 0.5)
    updated_ms = created_ms + int((SPAN_MS - 1 - created_ms) * rng.random())
    year = 1955 + int(rng.random() * 66)
    summary = _PROFILE_SUMMARIES[collection][int(rng.random() * 2)].format(
        name=name,
        city=city.name,
        state=city.state,
        address=contact["address"],
        year=year,
        adjective=_ADJECTIVES[int(rng.random() * len(_ADJECTIVES))],
        focus=_FOCUS[int(rng.random() * len(_FOCUS))],
        provinces=join_words([PROVINCE_CODES[p] for p in provinces]),
    )
    record: dict[str, Any] = {
        "id": pid,
        "path": f"{collection}/{pid}",
        "name": name,
        **contact,
        "logo": f"/media/profiles/{pid}/logo.svg",
        "listings": [],
        "summary": summary,
        "state": city.state,
        "createdAt": iso(created_ms),
        "updatedAt": "",
    }
    if collection == "Builders":
        record["yearFounded"] = year
        record["provinces"] = [PROVINCE_CODES[p] for p in provinces]
    return _Company(record, name, weight, provinces, f"{city.province}/{city.name}", created_ms, updated_ms)


def make_profiles(rng: Random, total: int, used_ids: set[str]) -> Profiles:
    """``total`` profiles apportioned over the collections, and in each collection over the provinces."""
    counts = apportion(total, _COLLECTION_SHARES, at_least_one=total >= len(_COLLECTION_SHARES))
    companies: list[_Company] = []
    collection_of: list[str] = []
    for collection in PROFILE_COLLECTIONS:
        count = counts[collection]
        seen_names: set[str] = set()
        for province in spread(rng, count, PROVINCE_SHARES, at_least_one=count >= 10):
            companies.append(_draw_company(rng, collection, province, used_ids, seen_names))
            collection_of.append(collection)
    weights = [company.weight for company in companies]
    pools: dict[str, dict[str, Pool]] = {}
    for collection in PROFILE_COLLECTIONS:
        members = [i for i, c in enumerate(collection_of) if c == collection]
        per: dict[str, Pool] = {}
        if members:
            per[""] = make_pool(members, weights)
            for code in PROVINCE_CODES:
                local = [i for i in members if code in companies[i].provinces]
                if local:
                    per[code] = make_pool(local, weights)
        pools[collection] = per
    city_members: dict[str, list[int]] = {}
    for i, collection in enumerate(collection_of):
        if collection == "SalesCentres":
            city_members.setdefault(companies[i].city_key, []).append(i)
    city_pools = {key: make_pool(members, weights) for key, members in city_members.items()}
    return Profiles(
        records=[company.record for company in companies],
        names=[company.name for company in companies],
        latest_listing_ms=[company.created_ms for company in companies],
        updated_ms=[company.updated_ms for company in companies],
        pools=pools,
        city_pools=city_pools,
    )


def _pick_builders(rng: Random, profiles: Profiles, province: str) -> list[int]:
    """One builder, mostly from the province; sometimes a second, a joint venture."""
    builders = profiles.pools["Builders"]
    pool = builders.get(province) or builders.get("")
    picks: list[int] = []
    if pool is not None:
        picks.append(pick(rng, pool))
        if rng.random() < 0.18 and len(pool[0]) > 1:
            for _ in range(4):
                second = pick(rng, pool)
                if second != picks[0]:
                    picks.append(second)
                    break
    return picks


def choose_references(
    rng: Random, profiles: Profiles, listing: tuple[str, str, str], created_ms: int, selling: str
) -> tuple[dict[str, list[str]], list[str]]:
    """Paths of the profiles of each reference field of the listing ``(id, province, "<code>/<city>")``, mostly
    from its province, and the builders' names; registers the listing on every profile chosen."""
    lid, province, city_key = listing
    chosen: dict[str, list[int]] = {"builders": _pick_builders(rng, profiles, province)}
    for field, collection, odds in _REFERENCE_ODDS:
        if collection == "SalesCentres" and selling == "Sold Out":
            odds *= 0.5
        per = profiles.pools[collection]
        if not per or rng.random() >= odds:
            chosen[field] = []
            continue
        if collection == "SalesCentres" and city_key in profiles.city_pools and rng.random() < 0.9:
            pool = profiles.city_pools[city_key]
        elif province in per and rng.random() < 0.88:
            pool = per[province]
        else:
            pool = per[""]
        chosen[field] = [pick(rng, pool)]
    path = f"Listings/{lid}"
    records = profiles.records
    latest = profiles.latest_listing_ms
    paths: dict[str, list[str]] = {}
    for field in REFERENCE_FIELDS:
        indices = chosen[field]
        for index in indices:
            records[index]["listings"].append(path)
            if created_ms > latest[index]:
                latest[index] = created_ms
        paths[field] = [records[index]["path"] for index in indices]
    return paths, [profiles.names[index] for index in chosen["builders"]]
