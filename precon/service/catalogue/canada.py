"""Reference geography of the generated catalogue: provinces, cities, neighbourhoods, streets, postal areas.

Coordinates are real (approximate city and neighbourhood centres), and so are the street names, the forward
sortation areas (the first three characters of a postal code) and the telephone area codes. The price per
square foot is a plausible asking price for new construction in the city, in Canadian dollars, and the
weights shape how many listings each city gets within its province. Nothing here is random; the generator in
:mod:`precon.service.catalogue` draws from these tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from precon.client.models import PROVINCES

CityKind = Literal["core", "urban", "suburb", "town"]
"""How dense the new-build market is: ``core`` is almost all condos, ``town`` mostly ground-oriented homes."""

PROVINCE_CODES: dict[str, str] = PROVINCES
"""The ``apiProvince`` path segment of each province, and the ``state`` value its listings carry."""

PROVINCE_BY_NAME: dict[str, str] = {name: code for code, name in PROVINCE_CODES.items()}

PROVINCE_ABBREVIATIONS: dict[str, str] = {code: code.upper() for code in PROVINCE_CODES}
"""Canada Post two-letter abbreviations (``ON``, ``BC``...), as written in a postal address."""

PROVINCE_SHARES: dict[str, float] = {
    "on": 0.45,
    "bc": 0.25,
    "ab": 0.10,
    "qc": 0.10,
    "mb": 0.030,
    "sk": 0.022,
    "ns": 0.025,
    "nb": 0.012,
    "nl": 0.006,
    "pe": 0.005,
}
"""Share of new-build listings per province, roughly as in the real pre-construction market (sums to 1)."""

FSA_LETTERS: dict[str, str] = {
    "on": "KLMNP",
    "qc": "GHJ",
    "bc": "V",
    "ab": "T",
    "mb": "R",
    "sk": "S",
    "ns": "B",
    "nb": "E",
    "pe": "C",
    "nl": "A",
}
"""First letters of the postal codes of each province."""

POSTAL_LDU_LETTERS = "ABCEGHJKLMNPRSTVWXYZ"
"""Letters a postal code uses in its last three characters (never D, F, I, O, Q, U)."""


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    name: str
    lat: float
    lng: float
    price_factor: float = 1.0
    """Multiplier on the city's price per square foot (Yorkville is dearer than Scarborough)."""


@dataclass(frozen=True, slots=True)
class City:
    name: str
    province: str
    """Province code, a key of :data:`PROVINCE_CODES`."""
    region: str
    lat: float
    lng: float
    price_per_sqft: int
    """Typical new-build asking price per square foot, CAD."""
    weight: float
    """Relative share of the province's listings."""
    kind: CityKind
    neighbourhoods: tuple[Neighbourhood, ...]
    streets: tuple[str, ...]
    fsas: tuple[str, ...]
    """Real forward sortation areas of the city."""
    area_codes: tuple[str, ...]
    municipality: str = ""
    """The municipality the city belongs to when that is not the city itself (Dartmouth: Halifax)."""

    @property
    def state(self) -> str:
        return PROVINCE_CODES[self.province]

    @property
    def province_abbreviation(self) -> str:
        return PROVINCE_ABBREVIATIONS[self.province]


N = Neighbourhood

_GTA = "Greater Toronto Area"
_TORONTO_CODES = ("416", "647", "437")
_GTA_CODES = ("905", "289", "365")
_SW_ONTARIO_CODES = ("519", "226", "548")
_EAST_ONTARIO_CODES = ("613", "343")
_NORTH_ONTARIO_CODES = ("705", "249")
_LOWER_MAINLAND_CODES = ("604", "778", "236")
_BC_CODES = ("250", "778", "236")
_CALGARY_CODES = ("403", "587", "825")
_EDMONTON_CODES = ("780", "587", "825")
_MARITIME_CODES = ("902", "782")

# fmt: off
CITIES: tuple[City, ...] = (
    # ---------------------------------------------------------------- Ontario
    City(
        "Toronto", "on", _GTA, 43.6532, -79.3832, 1300, 40, "core",
        (
            N("King West", 43.6441, -79.4018, 1.05),
            N("Liberty Village", 43.6388, -79.4197, 0.95),
            N("Yorkville", 43.6709, -79.3933, 1.35),
            N("Entertainment District", 43.6465, -79.3894, 1.1),
            N("St. Lawrence", 43.6487, -79.3716, 1.05),
            N("Distillery District", 43.6503, -79.3596, 1.0),
            N("The Annex", 43.6703, -79.4072, 1.1),
            N("Leslieville", 43.6627, -79.3321, 0.95),
            N("Yonge and Eglinton", 43.7069, -79.3983, 1.0),
            N("North York Centre", 43.7686, -79.4128, 0.9),
            N("Humber Bay Shores", 43.6226, -79.4790, 0.85),
            N("Scarborough City Centre", 43.7757, -79.2577, 0.75),
            N("The Junction", 43.6655, -79.4700, 0.9),
            N("Regent Park", 43.6598, -79.3611, 0.9),
            N("Greektown", 43.6777, -79.3509, 0.95),
        ),
        (
            "King St W", "Queen St W", "Yonge St", "Bloor St W", "Front St E", "Spadina Ave", "Bathurst St",
            "Dundas St W", "Eglinton Ave E", "Sheppard Ave E", "Lake Shore Blvd W", "Church St", "Jarvis St",
            "Adelaide St W", "Danforth Ave",
        ),
        ("M5V", "M5A", "M4Y", "M5R", "M6K", "M4M", "M4P", "M2N", "M8V", "M1P", "M5E", "M6J", "M5S", "M4W",
         "M6P", "M5H", "M4S"),
        _TORONTO_CODES,
    ),
    City(
        "Mississauga", "on", _GTA, 43.5890, -79.6441, 1100, 9, "urban",
        (
            N("City Centre", 43.5931, -79.6420, 1.05),
            N("Port Credit", 43.5520, -79.5850, 1.1),
            N("Erin Mills", 43.5560, -79.7100),
            N("Streetsville", 43.5840, -79.7140),
            N("Churchill Meadows", 43.5460, -79.7530, 0.95),
            N("Meadowvale", 43.5950, -79.7500, 0.9),
            N("Cooksville", 43.5790, -79.6180, 0.95),
            N("Lakeview", 43.5770, -79.5590, 1.05),
        ),
        (
            "Hurontario St", "Burnhamthorpe Rd W", "Dundas St E", "Lakeshore Rd E", "Eglinton Ave W",
            "Confederation Pkwy", "Mavis Rd", "Erin Mills Pkwy", "Britannia Rd W", "Square One Dr",
        ),
        ("L5B", "L5M", "L4Z", "L5R", "L5G", "L5N", "L5E", "L5A", "L4T"),
        _GTA_CODES,
    ),
    City(
        "Brampton", "on", _GTA, 43.7315, -79.7624, 900, 4, "suburb",
        (
            N("Downtown Brampton", 43.6850, -79.7590),
            N("Bramalea", 43.7130, -79.7100),
            N("Springdale", 43.7600, -79.7400),
            N("Mount Pleasant", 43.6830, -79.8170),
            N("Heart Lake", 43.7450, -79.7900),
            N("Castlemore", 43.7900, -79.6900, 1.05),
            N("Credit Valley", 43.6570, -79.7740),
        ),
        (
            "Queen St E", "Main St N", "Bovaird Dr W", "Steeles Ave W", "Mississauga Rd", "Sandalwood Pkwy",
            "Bramalea Rd", "Kennedy Rd S", "Williams Pkwy",
        ),
        ("L6Y", "L6P", "L6R", "L7A", "L6T", "L6V", "L6X", "L6Z"),
        _GTA_CODES,
    ),
    City(
        "Vaughan", "on", _GTA, 43.8361, -79.4983, 1050, 5, "urban",
        (
            N("Vaughan Metropolitan Centre", 43.7940, -79.5270, 1.05),
            N("Woodbridge", 43.7800, -79.6000),
            N("Maple", 43.8530, -79.5090),
            N("Kleinburg", 43.8380, -79.6290, 1.1),
            N("Thornhill Woods", 43.8160, -79.4560),
            N("Concord", 43.7990, -79.4890, 0.95),
        ),
        (
            "Highway 7", "Jane St", "Rutherford Rd", "Major Mackenzie Dr W", "Weston Rd", "Keele St",
            "Dufferin St", "Islington Ave", "Bathurst St",
        ),
        ("L4K", "L4L", "L6A", "L4H", "L4J"),
        _GTA_CODES,
    ),
    City(
        "Markham", "on", _GTA, 43.8561, -79.3370, 1050, 5, "urban",
        (
            N("Markham Centre", 43.8570, -79.3320, 1.05),
            N("Unionville", 43.8680, -79.3120, 1.1),
            N("Cornell", 43.8880, -79.2310, 0.95),
            N("Cathedraltown", 43.8940, -79.3840),
            N("Markham Village", 43.8770, -79.2630),
            N("Berczy Village", 43.8850, -79.3040),
        ),
        (
            "Highway 7 E", "Warden Ave", "Kennedy Rd", "McCowan Rd", "Main St Unionville", "Enterprise Blvd",
            "16th Ave", "Major Mackenzie Dr E", "Markham Rd",
        ),
        ("L3R", "L6C", "L6E", "L3P", "L6B", "L6G", "L3S"),
        _GTA_CODES,
    ),
    City(
        "Richmond Hill", "on", _GTA, 43.8828, -79.4403, 1000, 3, "suburb",
        (
            N("Oak Ridges", 43.9460, -79.4560),
            N("Richmond Hill Centre", 43.8420, -79.4240, 1.05),
            N("Bayview Hill", 43.8700, -79.4050, 1.1),
            N("Jefferson", 43.9160, -79.4400),
            N("Mill Pond", 43.8810, -79.4470),
        ),
        ("Yonge St", "Bayview Ave", "Major Mackenzie Dr E", "Elgin Mills Rd E", "Leslie St", "16th Ave",
         "Bathurst St"),
        ("L4C", "L4B", "L4S", "L4E"),
        _GTA_CODES,
    ),
    City(
        "Oakville", "on", _GTA, 43.4675, -79.6877, 1100, 4, "suburb",
        (
            N("Downtown Oakville", 43.4470, -79.6680, 1.15),
            N("Bronte", 43.3980, -79.7150, 1.05),
            N("Glen Abbey", 43.4330, -79.7260),
            N("Joshua Creek", 43.4770, -79.6420),
            N("Uptown Core", 43.4880, -79.7180, 0.95),
            N("North Oakville", 43.4950, -79.7400, 0.95),
        ),
        ("Lakeshore Rd E", "Trafalgar Rd", "Dundas St W", "Cornwall Rd", "Speers Rd", "Rebecca St", "Kerr St",
         "Oak Park Blvd"),
        ("L6H", "L6J", "L6K", "L6M", "L6L"),
        _GTA_CODES,
    ),
    City(
        "Burlington", "on", _GTA, 43.3255, -79.7990, 950, 3, "suburb",
        (
            N("Downtown Burlington", 43.3260, -79.7990, 1.1),
            N("Aldershot", 43.3000, -79.8550),
            N("Alton Village", 43.4100, -79.8150),
            N("Appleby", 43.3600, -79.7600),
            N("Brant Hills", 43.3600, -79.8150),
        ),
        ("Lakeshore Rd", "Brant St", "Plains Rd E", "Appleby Line", "Fairview St", "Dundas St",
         "Walkers Line"),
        ("L7L", "L7M", "L7R", "L7S", "L7N", "L7P", "L7T"),
        _GTA_CODES,
    ),
    City(
        "Hamilton", "on", "Hamilton", 43.2557, -79.8711, 800, 5, "urban",
        (
            N("Downtown Hamilton", 43.2567, -79.8692),
            N("Westdale", 43.2630, -79.9100, 1.05),
            N("Stoney Creek", 43.2170, -79.7610, 0.95),
            N("Ancaster", 43.2180, -79.9870, 1.05),
            N("Waterdown", 43.3350, -79.8930, 1.05),
            N("Hamilton Mountain", 43.2240, -79.8670, 0.9),
            N("Kirkendall", 43.2530, -79.8850),
        ),
        ("King St W", "Main St E", "James St N", "Barton St E", "Upper James St", "Wilson St E", "York Blvd",
         "Queenston Rd"),
        ("L8P", "L8R", "L8L", "L9K", "L8N", "L9G", "L8E", "L9H"),
        _GTA_CODES,
    ),
    City(
        "Oshawa", "on", _GTA, 43.8971, -78.8658, 750, 2.5, "town",
        (
            N("Downtown Oshawa", 43.8975, -78.8636),
            N("Windfields", 43.9490, -78.8980),
            N("Kedron", 43.9540, -78.8650),
            N("Lakeview", 43.8680, -78.8400),
        ),
        ("Simcoe St N", "King St E", "Taunton Rd", "Conlin Rd E", "Ritson Rd S", "Bond St W"),
        ("L1G", "L1H", "L1J", "L1L", "L1K"),
        _GTA_CODES,
    ),
    City(
        "Whitby", "on", _GTA, 43.8975, -78.9429, 800, 2, "town",
        (
            N("Downtown Whitby", 43.8770, -78.9420),
            N("Brooklin", 43.9590, -78.9570),
            N("Port Whitby", 43.8610, -78.9380),
            N("Williamsburg", 43.9140, -78.9650),
        ),
        ("Dundas St W", "Brock St N", "Taunton Rd W", "Rossland Rd", "Garden St", "Winchester Rd"),
        ("L1N", "L1M", "L1R", "L1P"),
        _GTA_CODES,
    ),
    City(
        "Pickering", "on", _GTA, 43.8384, -79.0868, 850, 2, "suburb",
        (
            N("Pickering City Centre", 43.8360, -79.0860),
            N("Seaton", 43.8900, -79.1300, 0.95),
            N("Bay Ridges", 43.8140, -79.0870),
            N("Duffin Heights", 43.8650, -79.0800),
        ),
        ("Kingston Rd", "Liverpool Rd", "Brock Rd", "Pickering Pkwy", "Whites Rd", "Taunton Rd"),
        ("L1V", "L1W", "L1X", "L1Y"),
        _GTA_CODES,
    ),
    City(
        "Ajax", "on", _GTA, 43.8509, -79.0204, 800, 1.5, "town",
        (
            N("Downtown Ajax", 43.8500, -79.0230),
            N("Pickering Village", 43.8600, -79.0380),
            N("South Ajax", 43.8230, -79.0100),
            N("Northeast Ajax", 43.8760, -79.0000),
        ),
        ("Harwood Ave S", "Kingston Rd E", "Salem Rd N", "Rossland Rd W", "Bayly St E"),
        ("L1S", "L1T", "L1Z"),
        _GTA_CODES,
    ),
    City(
        "Milton", "on", _GTA, 43.5183, -79.8774, 900, 2, "town",
        (
            N("Old Milton", 43.5140, -79.8830, 1.05),
            N("Hawthorne Village", 43.5270, -79.8500),
            N("Willmott", 43.5010, -79.8740),
            N("Milton Heights", 43.5180, -79.9100),
        ),
        ("Main St E", "Derry Rd", "Thompson Rd S", "Bronte St S", "Louis St Laurent Ave", "Steeles Ave E"),
        ("L9T", "L9E"),
        _GTA_CODES,
    ),
    City(
        "Newmarket", "on", _GTA, 44.0592, -79.4613, 900, 1.5, "town",
        (
            N("Downtown Newmarket", 44.0510, -79.4620, 1.05),
            N("Yonge and Davis", 44.0530, -79.4760),
            N("Glenway", 44.0450, -79.4850),
            N("Stonehaven", 44.0390, -79.4340),
        ),
        ("Yonge St", "Davis Dr", "Main St S", "Mulock Dr", "Leslie St", "Eagle St"),
        ("L3X", "L3Y"),
        _GTA_CODES,
    ),
    City(
        "Ottawa", "on", "National Capital Region", 45.4215, -75.6972, 800, 7, "urban",
        (
            N("Centretown", 45.4160, -75.6980),
            N("ByWard Market", 45.4290, -75.6920, 1.1),
            N("Little Italy", 45.4040, -75.7110, 1.05),
            N("Westboro", 45.3920, -75.7550, 1.1),
            N("The Glebe", 45.4020, -75.6870, 1.1),
            N("Hintonburg", 45.4030, -75.7300, 1.05),
            N("Kanata", 45.3090, -75.9140, 0.85),
            N("Barrhaven", 45.2730, -75.7360, 0.85),
            N("Orléans", 45.4690, -75.5170, 0.85),
            N("LeBreton Flats", 45.4140, -75.7160, 1.05),
            N("Vanier", 45.4380, -75.6620, 0.9),
        ),
        ("Bank St", "Elgin St", "Rideau St", "Wellington St W", "Preston St", "Richmond Rd", "Carling Ave",
         "Scott St", "Somerset St W", "Montreal Rd", "Innovation Dr", "Strandherd Dr"),
        ("K1P", "K1R", "K1S", "K1N", "K2P", "K1Y", "K2C", "K2J", "K2K", "K1Z", "K1L", "K4A", "K2A"),
        _EAST_ONTARIO_CODES,
    ),
    City(
        "Kitchener", "on", "Waterloo Region", 43.4516, -80.4925, 750, 3, "urban",
        (
            N("Downtown Kitchener", 43.4510, -80.4920, 1.05),
            N("Victoria Park", 43.4470, -80.4990),
            N("Doon", 43.4000, -80.4380, 0.95),
            N("Huron Park", 43.4000, -80.4800, 0.9),
            N("Forest Heights", 43.4340, -80.5170),
        ),
        ("King St W", "Victoria St N", "Charles St W", "Weber St E", "Fairway Rd S", "Ottawa St S",
         "Homer Watson Blvd"),
        ("N2G", "N2H", "N2M", "N2E", "N2A", "N2P", "N2R"),
        _SW_ONTARIO_CODES,
    ),
    City(
        "Waterloo", "on", "Waterloo Region", 43.4643, -80.5204, 800, 2.5, "urban",
        (
            N("Uptown Waterloo", 43.4650, -80.5230, 1.05),
            N("University District", 43.4720, -80.5400),
            N("Laurelwood", 43.4760, -80.5750),
            N("Columbia Forest", 43.4530, -80.5750),
        ),
        ("King St N", "Columbia St W", "University Ave W", "Erb St W", "Albert St", "Phillip St",
         "Weber St N"),
        ("N2L", "N2J", "N2T", "N2V"),
        _SW_ONTARIO_CODES,
    ),
    City(
        "Cambridge", "on", "Waterloo Region", 43.3616, -80.3144, 700, 1.5, "town",
        (
            N("Galt", 43.3570, -80.3150),
            N("Preston", 43.3960, -80.3520),
            N("Hespeler", 43.4310, -80.3140),
        ),
        ("Hespeler Rd", "Water St N", "King St E", "Queen St W", "Franklin Blvd", "Main St"),
        ("N1R", "N1S", "N3H", "N3C", "N1T"),
        _SW_ONTARIO_CODES,
    ),
    City(
        "Guelph", "on", "Wellington County", 43.5448, -80.2482, 750, 1.5, "town",
        (
            N("Downtown Guelph", 43.5440, -80.2480, 1.05),
            N("South End", 43.5050, -80.2080),
            N("The Ward", 43.5410, -80.2380),
            N("Exhibition Park", 43.5550, -80.2580),
            N("Westminster Woods", 43.5000, -80.1900),
        ),
        ("Gordon St", "Wyndham St N", "Woolwich St", "Stone Rd W", "Victoria Rd S", "Wellington St E"),
        ("N1H", "N1G", "N1E", "N1L", "N1K"),
        _SW_ONTARIO_CODES,
    ),
    City(
        "London", "on", "Southwestern Ontario", 42.9849, -81.2453, 650, 3, "suburb",
        (
            N("Downtown London", 42.9840, -81.2460, 1.05),
            N("Old East Village", 42.9910, -81.2250, 0.95),
            N("Masonville", 43.0260, -81.2800, 1.05),
            N("Byron", 42.9600, -81.3340),
            N("Wortley Village", 42.9710, -81.2490, 1.05),
            N("Hyde Park", 43.0110, -81.3300),
            N("Summerside", 42.9440, -81.1800, 0.9),
        ),
        ("Richmond St", "Dundas St", "Wellington Rd", "Oxford St W", "Fanshawe Park Rd W", "Wonderland Rd S",
         "Horton St E", "Hyde Park Rd"),
        ("N6A", "N6B", "N6G", "N6H", "N5X", "N5V", "N6K", "N6C"),
        _SW_ONTARIO_CODES,
    ),
    City(
        "Barrie", "on", "Simcoe County", 44.3894, -79.6903, 750, 2, "town",
        (
            N("Downtown Barrie", 44.3890, -79.6880, 1.05),
            N("Allandale", 44.3740, -79.6820),
            N("Painswick", 44.3480, -79.6530),
            N("Ardagh", 44.3700, -79.7280),
        ),
        ("Dunlop St W", "Bayfield St", "Essa Rd", "Mapleview Dr E", "Yonge St", "Lakeshore Dr"),
        ("L4M", "L4N", "L9J"),
        _NORTH_ONTARIO_CODES,
    ),
    City(
        "Niagara Falls", "on", "Niagara Region", 43.0896, -79.0849, 650, 1.5, "town",
        (
            N("Clifton Hill", 43.0910, -79.0760, 1.1),
            N("Chippawa", 43.0570, -79.0520),
            N("Lundy's Lane", 43.0880, -79.1200, 0.95),
            N("Thundering Waters", 43.0620, -79.0940),
        ),
        ("Lundy's Ln", "Portage Rd", "Victoria Ave", "Drummond Rd", "Thorold Stone Rd", "Montrose Rd"),
        ("L2E", "L2G", "L2H", "L2J"),
        _GTA_CODES,
    ),
    City(
        "St. Catharines", "on", "Niagara Region", 43.1594, -79.2469, 650, 1.5, "town",
        (
            N("Downtown St. Catharines", 43.1590, -79.2450),
            N("Port Dalhousie", 43.2000, -79.2650, 1.1),
            N("Grantham", 43.1900, -79.2300),
            N("Merritton", 43.1360, -79.2080, 0.95),
        ),
        ("St Paul St", "Ontario St", "Lake St", "Welland Ave", "Geneva St", "Glendale Ave"),
        ("L2R", "L2S", "L2M", "L2N", "L2T"),
        _GTA_CODES,
    ),
    City(
        "Kingston", "on", "Eastern Ontario", 44.2312, -76.4860, 700, 1.5, "town",
        (
            N("Downtown Kingston", 44.2310, -76.4820, 1.1),
            N("Williamsville", 44.2360, -76.5000),
            N("Cataraqui", 44.2600, -76.5700, 0.95),
            N("Portsmouth", 44.2250, -76.5150),
        ),
        ("Princess St", "King St E", "Ontario St", "Bath Rd", "Division St", "Brock St"),
        ("K7L", "K7K", "K7M", "K7P"),
        _EAST_ONTARIO_CODES,
    ),
    City(
        "Windsor", "on", "Windsor-Essex", 42.3149, -83.0364, 550, 1.5, "town",
        (
            N("Downtown Windsor", 42.3170, -83.0380),
            N("Walkerville", 42.3200, -83.0100, 1.05),
            N("Riverside", 42.3340, -82.9600, 1.05),
            N("South Windsor", 42.2700, -83.0100),
        ),
        ("Ouellette Ave", "Riverside Dr W", "Wyandotte St E", "Tecumseh Rd E", "Walker Rd", "Howard Ave"),
        ("N9A", "N8X", "N9B", "N8Y", "N9E"),
        _SW_ONTARIO_CODES,
    ),
    City(
        "Sudbury", "on", "Northern Ontario", 46.4917, -80.9930, 450, 0.7, "town",
        (
            N("Downtown Sudbury", 46.4910, -80.9930),
            N("New Sudbury", 46.5130, -80.9580),
            N("South End", 46.4600, -80.9800, 1.05),
            N("Minnow Lake", 46.4880, -80.9460),
        ),
        ("Elm St", "Lasalle Blvd", "Regent St", "Paris St", "Kingsway", "Notre Dame Ave"),
        ("P3A", "P3E", "P3B", "P3C"),
        _NORTH_ONTARIO_CODES,
    ),
    City(
        "Thunder Bay", "on", "Northern Ontario", 48.3809, -89.2477, 400, 0.5, "town",
        (
            N("Port Arthur", 48.4380, -89.2240),
            N("Fort William", 48.3810, -89.2470),
            N("Current River", 48.4630, -89.2000),
            N("Westfort", 48.3670, -89.2800),
        ),
        ("Red River Rd", "Memorial Ave", "Arthur St W", "Algoma St N", "May St", "Harbour Expy"),
        ("P7B", "P7A", "P7C", "P7E"),
        ("807",),
    ),
    # ---------------------------------------------------------------- British Columbia
    City(
        "Vancouver", "bc", "Metro Vancouver", 49.2827, -123.1207, 1450, 30, "core",
        (
            N("Downtown", 49.2820, -123.1180, 1.1),
            N("Yaletown", 49.2760, -123.1200, 1.15),
            N("Coal Harbour", 49.2900, -123.1250, 1.3),
            N("West End", 49.2850, -123.1330, 1.1),
            N("Mount Pleasant", 49.2630, -123.1000),
            N("Kitsilano", 49.2680, -123.1650, 1.15),
            N("Fairview", 49.2640, -123.1300, 1.05),
            N("Olympic Village", 49.2705, -123.1080, 1.05),
            N("Oakridge", 49.2330, -123.1170),
            N("Marpole", 49.2100, -123.1300, 0.9),
            N("Grandview-Woodland", 49.2700, -123.0690, 0.95),
            N("Kerrisdale", 49.2340, -123.1550, 1.1),
        ),
        ("W Georgia St", "Granville St", "Robson St", "Davie St", "Main St", "Cambie St", "W Broadway",
         "Kingsway", "Commercial Dr", "Burrard St", "Hornby St", "W 4th Ave", "E Hastings St",
         "SW Marine Dr"),
        ("V6B", "V6E", "V6G", "V5T", "V6J", "V5Z", "V6K", "V5K", "V6A", "V6Z", "V6C", "V6P", "V5L", "V6M"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Burnaby", "bc", "Metro Vancouver", 49.2488, -122.9805, 1200, 12, "urban",
        (
            N("Metrotown", 49.2270, -123.0020, 1.05),
            N("Brentwood", 49.2670, -123.0000, 1.05),
            N("Lougheed", 49.2486, -122.8966, 0.95),
            N("Edmonds", 49.2120, -122.9600, 0.9),
            N("Burnaby Heights", 49.2810, -123.0150),
            N("Capitol Hill", 49.2870, -122.9880),
        ),
        ("Kingsway", "Willingdon Ave", "Lougheed Hwy", "Hastings St", "Beresford St", "Imperial St",
         "Edmonds St", "Gilmore Ave", "Sperling Ave"),
        ("V5H", "V5C", "V5G", "V5A", "V5J", "V5E", "V3N"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Surrey", "bc", "Metro Vancouver", 49.1913, -122.8490, 900, 12, "suburb",
        (
            N("Surrey City Centre", 49.1880, -122.8470, 1.05),
            N("Guildford", 49.1900, -122.8030),
            N("Fleetwood", 49.1480, -122.7750),
            N("Cloverdale", 49.1050, -122.7270, 0.95),
            N("South Surrey", 49.0480, -122.8000, 1.1),
            N("Newton", 49.1320, -122.8450, 0.9),
        ),
        ("King George Blvd", "104 Ave", "Fraser Hwy", "152 St", "160 St", "64 Ave", "96 Ave", "Scott Rd",
         "72 Ave"),
        ("V3T", "V3S", "V4N", "V3R", "V4A", "V3W", "V3V", "V4P", "V3X"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Richmond", "bc", "Metro Vancouver", 49.1666, -123.1336, 1150, 8, "urban",
        (
            N("Richmond City Centre", 49.1700, -123.1370, 1.05),
            N("Steveston", 49.1260, -123.1830, 1.1),
            N("Capstan Village", 49.1770, -123.1290),
            N("Bridgeport", 49.1930, -123.1270, 0.95),
            N("Terra Nova", 49.1760, -123.1910),
            N("Ironwood", 49.1450, -123.0950, 0.95),
        ),
        ("No. 3 Rd", "Westminster Hwy", "Granville Ave", "Alderbridge Way", "Cambie Rd", "Steveston Hwy",
         "Garden City Rd", "Minoru Blvd"),
        ("V6X", "V6Y", "V7A", "V7C", "V7E", "V6V"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Coquitlam", "bc", "Metro Vancouver", 49.2838, -122.7932, 1050, 7, "suburb",
        (
            N("Burquitlam", 49.2620, -122.8860, 1.05),
            N("Coquitlam Town Centre", 49.2860, -122.7920),
            N("Burke Mountain", 49.3000, -122.7500, 0.95),
            N("Maillardville", 49.2400, -122.8600, 0.95),
            N("Westwood Plateau", 49.2970, -122.7800),
        ),
        ("Lougheed Hwy", "Pinetree Way", "North Rd", "Austin Ave", "Guildford Way", "Clarke Rd",
         "Como Lake Ave", "David Ave"),
        ("V3B", "V3K", "V3E", "V3J", "V3C"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "North Vancouver", "bc", "Metro Vancouver", 49.3200, -123.0724, 1250, 5, "urban",
        (
            N("Lower Lonsdale", 49.3120, -123.0790, 1.1),
            N("Central Lonsdale", 49.3210, -123.0720),
            N("Lynn Valley", 49.3400, -123.0380),
            N("Lynn Creek", 49.3100, -123.0230, 0.95),
            N("Moodyville", 49.3110, -123.0550),
        ),
        ("Lonsdale Ave", "Esplanade Ave", "Marine Dr", "Keith Rd", "Lynn Valley Rd", "Mountain Hwy"),
        ("V7L", "V7M", "V7J", "V7P", "V7K", "V7G"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "New Westminster", "bc", "Metro Vancouver", 49.2057, -122.9110, 1000, 4, "urban",
        (
            N("Downtown New Westminster", 49.2010, -122.9120),
            N("Sapperton", 49.2250, -122.8900),
            N("Queensborough", 49.1900, -122.9500, 0.9),
            N("Uptown", 49.2120, -122.9200),
        ),
        ("Columbia St", "Royal Ave", "Carnarvon St", "Brunette Ave", "E Columbia St", "Ewen Ave"),
        ("V3M", "V3L"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Langley", "bc", "Metro Vancouver", 49.1044, -122.6604, 850, 6, "suburb",
        (
            N("Willoughby", 49.1300, -122.6600),
            N("Walnut Grove", 49.1620, -122.6430),
            N("Langley City", 49.1040, -122.6600, 0.95),
            N("Brookswood", 49.0580, -122.6380),
        ),
        ("Fraser Hwy", "200 St", "208 St", "Glover Rd", "72 Ave", "80 Ave", "64 Ave"),
        ("V2Y", "V3A", "V2Z", "V4W", "V1M"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Port Moody", "bc", "Metro Vancouver", 49.2849, -122.8677, 1050, 3, "suburb",
        (
            N("Moody Centre", 49.2780, -122.8460),
            N("Suter Brook", 49.2810, -122.8260, 1.05),
            N("Klahanie", 49.2870, -122.8700),
            N("Heritage Mountain", 49.2950, -122.8390),
        ),
        ("St Johns St", "Murray St", "Clarke St", "Ioco Rd", "Barnet Hwy"),
        ("V3H",),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Victoria", "bc", "Capital Region", 48.4284, -123.3656, 1000, 6, "urban",
        (
            N("Downtown Victoria", 48.4270, -123.3670, 1.05),
            N("James Bay", 48.4170, -123.3740, 1.1),
            N("Harris Green", 48.4270, -123.3560),
            N("Fernwood", 48.4310, -123.3450),
            N("Fairfield", 48.4150, -123.3510, 1.05),
            N("Vic West", 48.4300, -123.3850),
        ),
        ("Douglas St", "Yates St", "Fort St", "Johnson St", "Pandora Ave", "Blanshard St", "Quadra St",
         "Cook St", "Government St"),
        ("V8W", "V8V", "V8T", "V9A", "V8R", "V8S"),
        _BC_CODES,
    ),
    City(
        "Kelowna", "bc", "Okanagan", 49.8880, -119.4960, 750, 5, "suburb",
        (
            N("Downtown Kelowna", 49.8860, -119.4950, 1.1),
            N("Pandosy Village", 49.8630, -119.4890, 1.05),
            N("Glenmore", 49.9000, -119.4500),
            N("Lower Mission", 49.8400, -119.4900),
            N("Rutland", 49.8880, -119.3970, 0.9),
        ),
        ("Bernard Ave", "Water St", "Pandosy St", "Ellis St", "Harvey Ave", "Lakeshore Rd", "Gordon Dr",
         "Sutherland Ave"),
        ("V1Y", "V1W", "V1V", "V1P", "V1X"),
        _BC_CODES,
    ),
    City(
        "Abbotsford", "bc", "Fraser Valley", 49.0504, -122.3045, 700, 3, "town",
        (
            N("Historic Downtown", 49.0440, -122.2930),
            N("West Abbotsford", 49.0460, -122.3560),
            N("Clearbrook", 49.0480, -122.3300),
            N("Auguston", 49.0650, -122.2550),
        ),
        ("South Fraser Way", "Essendene Ave", "Marshall Rd", "McCallum Rd", "Gladwin Rd", "Clearbrook Rd"),
        ("V2S", "V2T", "V4X"),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Squamish", "bc", "Sea-to-Sky", 49.7016, -123.1558, 850, 1.5, "town",
        (
            N("Downtown Squamish", 49.7000, -123.1550),
            N("Garibaldi Estates", 49.7300, -123.1370),
            N("Valleycliffe", 49.6900, -123.1400),
            N("Brackendale", 49.7700, -123.1450),
        ),
        ("Cleveland Ave", "Loggers Ln", "Pemberton Ave", "Government Rd", "Garibaldi Way"),
        ("V8B",),
        _LOWER_MAINLAND_CODES,
    ),
    City(
        "Nanaimo", "bc", "Vancouver Island", 49.1659, -123.9401, 650, 2, "town",
        (
            N("Downtown Nanaimo", 49.1660, -123.9370),
            N("Departure Bay", 49.1950, -123.9650, 1.05),
            N("North Nanaimo", 49.2200, -124.0200),
            N("Harewood", 49.1450, -123.9600, 0.9),
        ),
        ("Terminal Ave", "Commercial St", "Front St", "Wallace St", "Bowen Rd", "Hammond Bay Rd",
         "Metral Dr"),
        ("V9R", "V9T", "V9S", "V9V"),
        _BC_CODES,
    ),
    # ---------------------------------------------------------------- Alberta
    City(
        "Calgary", "ab", "Calgary Region", 51.0447, -114.0719, 600, 50, "urban",
        (
            N("Beltline", 51.0390, -114.0730, 1.05),
            N("Downtown Commercial Core", 51.0460, -114.0680),
            N("East Village", 51.0460, -114.0530, 1.05),
            N("Mission", 51.0310, -114.0670, 1.1),
            N("Kensington", 51.0530, -114.0900, 1.1),
            N("Inglewood", 51.0370, -114.0280),
            N("University District", 51.0800, -114.1430, 1.05),
            N("Seton", 50.8800, -113.9500, 0.85),
            N("Mahogany", 50.8960, -113.9340, 0.9),
            N("Bridgeland", 51.0540, -114.0440),
            N("Marda Loop", 51.0210, -114.1070, 1.05),
            N("Livingston", 51.1750, -114.0700, 0.8),
        ),
        ("17 Ave SW", "Macleod Trl SE", "4 St SW", "10 Ave SW", "1 St SW", "Centre St N", "9 Ave SE",
         "Kensington Rd NW", "33 Ave SW", "14 St SW", "Seton Blvd SE", "Edmonton Trl NE"),
        ("T2P", "T2R", "T2G", "T3H", "T2S", "T3M", "T3N", "T2E", "T3R", "T2T", "T2N", "T3P"),
        _CALGARY_CODES,
    ),
    City(
        "Edmonton", "ab", "Edmonton Metropolitan Region", 53.5461, -113.4938, 450, 28, "urban",
        (
            N("Downtown Edmonton", 53.5440, -113.4910),
            N("Oliver", 53.5420, -113.5150, 1.05),
            N("Ice District", 53.5470, -113.4970, 1.1),
            N("Old Strathcona", 53.5190, -113.4970, 1.05),
            N("Garneau", 53.5210, -113.5140),
            N("Windermere", 53.4350, -113.6110, 0.95),
            N("Blatchford", 53.5700, -113.5100),
            N("The Quarters", 53.5440, -113.4800, 0.95),
            N("Glenora", 53.5430, -113.5550, 1.1),
            N("Ellerslie", 53.4200, -113.4700, 0.85),
        ),
        ("Jasper Ave", "104 Ave NW", "109 St NW", "82 Ave NW", "124 St NW", "Gateway Blvd NW",
         "Windermere Blvd SW", "Kingsway NW"),
        ("T5J", "T5K", "T6E", "T6W", "T5N", "T6X", "T5H", "T6G", "T5G"),
        _EDMONTON_CODES,
    ),
    City(
        "Airdrie", "ab", "Calgary Region", 51.2917, -114.0144, 450, 6, "town",
        (
            N("Kings Heights", 51.2700, -113.9970),
            N("Cooper's Crossing", 51.2830, -114.0480),
            N("Downtown Airdrie", 51.2900, -114.0140),
            N("Bayside", 51.2700, -114.0300),
        ),
        ("Main St N", "Yankee Valley Blvd", "Veterans Blvd NE", "Big Springs Dr NE", "Kingsview Blvd SE"),
        ("T4B", "T4A"),
        _CALGARY_CODES,
    ),
    City(
        "Cochrane", "ab", "Calgary Region", 51.1894, -114.4680, 500, 4, "town",
        (
            N("Historic Downtown", 51.1900, -114.4680),
            N("Sunset Ridge", 51.2040, -114.4940),
            N("Fireside", 51.1700, -114.4400),
            N("Riversong", 51.1800, -114.4500),
        ),
        ("1 St W", "Railway St", "Griffin Rd", "Fireside Dr", "Sunset Blvd"),
        ("T4C",),
        _CALGARY_CODES,
    ),
    City(
        "Canmore", "ab", "Bow Valley", 51.0884, -115.3479, 1000, 4, "town",
        (
            N("Town Centre", 51.0890, -115.3480),
            N("Spring Creek", 51.0820, -115.3490, 1.05),
            N("Three Sisters", 51.0700, -115.3300, 1.1),
            N("Silvertip", 51.0960, -115.3700, 1.1),
        ),
        ("Main St", "Railway Ave", "Bow Valley Trl", "Spring Creek Dr", "Three Sisters Dr"),
        ("T1W",),
        _CALGARY_CODES,
    ),
    City(
        "St. Albert", "ab", "Edmonton Metropolitan Region", 53.6305, -113.6256, 450, 4, "town",
        (
            N("Downtown St. Albert", 53.6330, -113.6280),
            N("Erin Ridge", 53.6500, -113.6100),
            N("Oakmont", 53.6400, -113.6500),
            N("Riverside", 53.6150, -113.5800),
        ),
        ("St Albert Trl", "Perron St", "Boudreau Rd", "Ray Gibbon Dr", "Campbell Rd"),
        ("T8N",),
        _EDMONTON_CODES,
    ),
    City(
        "Red Deer", "ab", "Central Alberta", 52.2681, -113.8112, 380, 4, "town",
        (
            N("Downtown Red Deer", 52.2690, -113.8110),
            N("Clearview", 52.2850, -113.7700),
            N("Timberlands", 52.2900, -113.7600),
            N("Vanier Woods", 52.2400, -113.7700),
        ),
        ("Gaetz Ave", "Ross St", "67 St", "32 St", "Taylor Dr"),
        ("T4N", "T4P", "T4R"),
        _CALGARY_CODES,
    ),
    # ---------------------------------------------------------------- Quebec
    City(
        "Montreal", "qc", "Greater Montreal", 45.5019, -73.5674, 750, 50, "core",
        (
            N("Griffintown", 45.4930, -73.5600, 1.05),
            N("Ville-Marie", 45.5050, -73.5650, 1.15),
            N("Old Montreal", 45.5070, -73.5540, 1.25),
            N("Plateau-Mont-Royal", 45.5220, -73.5810, 1.05),
            N("Verdun", 45.4590, -73.5700, 0.9),
            N("Saint-Henri", 45.4780, -73.5850, 0.95),
            N("Rosemont", 45.5450, -73.5850, 0.9),
            N("Villeray", 45.5420, -73.6230, 0.9),
            N("Mile End", 45.5250, -73.6000, 1.05),
            N("Côte-des-Neiges", 45.4950, -73.6250, 0.95),
            N("Saint-Laurent", 45.5100, -73.6900, 0.85),
            N("Pointe-Saint-Charles", 45.4830, -73.5580),
        ),
        ("Rue Sainte-Catherine O", "Boulevard René-Lévesque O", "Rue Notre-Dame O", "Rue Saint-Denis",
         "Boulevard Saint-Laurent", "Rue Peel", "Rue de la Montagne", "Avenue du Parc", "Rue Wellington",
         "Rue Ottawa", "Rue Sherbrooke O", "Boulevard De Maisonneuve O"),
        ("H3B", "H2X", "H3C", "H2L", "H2T", "H4C", "H3A", "H2J", "H1V", "H3H", "H3G", "H4G", "H3J", "H2G",
         "H2R", "H4S", "H3T"),
        ("514", "438"),
    ),
    City(
        "Laval", "qc", "Greater Montreal", 45.6066, -73.7124, 600, 12, "suburb",
        (
            N("Chomedey", 45.5400, -73.7500),
            N("Centre-Ville de Laval", 45.5580, -73.7200, 1.05),
            N("Sainte-Dorothée", 45.5300, -73.8150),
            N("Vimont", 45.6100, -73.7200, 0.95),
            N("Sainte-Rose", 45.6100, -73.7800),
        ),
        ("Boulevard Le Corbusier", "Boulevard de l'Avenir", "Boulevard Saint-Martin O",
         "Boulevard Curé-Labelle", "Boulevard Daniel-Johnson", "Boulevard des Laurentides"),
        ("H7N", "H7T", "H7V", "H7S", "H7W", "H7L"),
        ("450", "579"),
    ),
    City(
        "Longueuil", "qc", "Greater Montreal", 45.5312, -73.5181, 580, 8, "suburb",
        (
            N("Vieux-Longueuil", 45.5370, -73.5090, 1.05),
            N("Saint-Hubert", 45.4970, -73.4100, 0.9),
            N("Greenfield Park", 45.4850, -73.4740),
            N("Centre-ville de Longueuil", 45.5250, -73.5210, 1.05),
        ),
        ("Boulevard La Fayette", "Rue Saint-Charles O", "Chemin de Chambly", "Boulevard Taschereau",
         "Boulevard Roland-Therrien"),
        ("J4H", "J4K", "J4J", "J4L", "J3Y"),
        ("450", "579"),
    ),
    City(
        "Brossard", "qc", "Greater Montreal", 45.4583, -73.4658, 650, 8, "urban",
        (
            N("Quartier DIX30", 45.4440, -73.4400, 1.05),
            N("Solar Uniquartier", 45.4460, -73.4320, 1.05),
            N("Brossard Centre", 45.4600, -73.4700),
            N("Panama", 45.4700, -73.4750, 0.95),
        ),
        ("Boulevard Leduc", "Boulevard Taschereau", "Boulevard Rome", "Boulevard du Quartier",
         "Boulevard Lapinière"),
        ("J4W", "J4Z", "J4Y", "J4X"),
        ("450", "579"),
    ),
    City(
        "Quebec City", "qc", "Capitale-Nationale", 46.8139, -71.2080, 500, 14, "urban",
        (
            N("Saint-Roch", 46.8160, -71.2240),
            N("Vieux-Québec", 46.8120, -71.2060, 1.2),
            N("Montcalm", 46.8030, -71.2250, 1.05),
            N("Limoilou", 46.8300, -71.2200, 0.9),
            N("Sainte-Foy", 46.7800, -71.2900),
            N("Lebourgneuf", 46.8400, -71.2900, 0.9),
            N("Saint-Sauveur", 46.8120, -71.2400),
        ),
        ("Boulevard Charest E", "Rue Saint-Joseph E", "Grande Allée E", "Boulevard Laurier",
         "Chemin Sainte-Foy", "Rue de la Couronne", "Boulevard Lebourgneuf", "1re Avenue"),
        ("G1R", "G1K", "G1S", "G1V", "G2J", "G1L", "G1N"),
        ("418", "581"),
    ),
    City(
        "Gatineau", "qc", "Outaouais", 45.4765, -75.7013, 480, 6, "suburb",
        (
            N("Hull", 45.4280, -75.7130, 1.05),
            N("Aylmer", 45.3950, -75.8450),
            N("Le Plateau", 45.4530, -75.7900),
            N("Secteur Gatineau", 45.4850, -75.6500, 0.95),
        ),
        ("Boulevard Maisonneuve", "Rue Laurier", "Boulevard des Allumettières", "Boulevard du Plateau",
         "Chemin d'Aylmer", "Boulevard Saint-Joseph"),
        ("J8X", "J8Y", "J9H", "J9J", "J8T"),
        ("819", "873"),
    ),
    City(
        "Sherbrooke", "qc", "Estrie", 45.4042, -71.8929, 420, 4, "town",
        (
            N("Centre-ville de Sherbrooke", 45.4010, -71.8900),
            N("Fleurimont", 45.4050, -71.8450),
            N("Jacques-Cartier", 45.3950, -71.9200),
            N("Rock Forest", 45.3600, -71.9800),
            N("Lennoxville", 45.3700, -71.8600),
        ),
        ("Rue King O", "Rue Wellington N", "Boulevard de Portland", "Rue Galt O",
         "Boulevard Jacques-Cartier S", "Boulevard de l'Université"),
        ("J1H", "J1J", "J1K", "J1E", "J1L"),
        ("819", "873"),
    ),
    # ---------------------------------------------------------------- Manitoba
    City(
        "Winnipeg", "mb", "Winnipeg Metropolitan Region", 49.8951, -97.1384, 450, 90, "urban",
        (
            N("Exchange District", 49.9000, -97.1380, 1.05),
            N("Downtown Winnipeg", 49.8920, -97.1430),
            N("Osborne Village", 49.8780, -97.1440, 1.05),
            N("St. Boniface", 49.8880, -97.1150),
            N("Crescentwood", 49.8680, -97.1620, 1.1),
            N("Sage Creek", 49.8200, -97.0500, 0.95),
            N("Bridgwater", 49.7920, -97.1900),
            N("Waverley West", 49.7950, -97.1700),
            N("The Forks", 49.8870, -97.1310, 1.1),
            N("St. Vital", 49.8400, -97.1100, 0.9),
        ),
        ("Portage Ave", "Main St", "Broadway", "Osborne St", "Corydon Ave", "Pembina Hwy", "Provencher Blvd",
         "Waterfront Dr", "Kenaston Blvd", "Bishop Grandin Blvd"),
        ("R3C", "R3B", "R3L", "R3M", "R3T", "R2M", "R3P", "R3G", "R2H", "R3Y"),
        ("204", "431"),
    ),
    City(
        "Brandon", "mb", "Westman", 49.8485, -99.9501, 350, 10, "town",
        (
            N("Downtown Brandon", 49.8460, -99.9530),
            N("South End", 49.8250, -99.9500),
            N("North Hill", 49.8650, -99.9550),
            N("West End", 49.8450, -99.9800),
        ),
        ("Rosser Ave", "18th St", "Princess Ave", "Victoria Ave", "1st St"),
        ("R7A", "R7B", "R7C"),
        ("204", "431"),
    ),
    # ---------------------------------------------------------------- Saskatchewan
    City(
        "Regina", "sk", "Regina Region", 50.4452, -104.6189, 400, 45, "suburb",
        (
            N("Downtown Regina", 50.4480, -104.6150),
            N("Cathedral", 50.4460, -104.6330, 1.05),
            N("Harbour Landing", 50.4090, -104.6690),
            N("The Greens on Gardiner", 50.4250, -104.5300, 1.05),
            N("Lakeview", 50.4300, -104.6200, 1.1),
            N("Warehouse District", 50.4560, -104.6100),
        ),
        ("Albert St", "Victoria Ave", "Broad St", "13th Ave", "Saskatchewan Dr", "Dewdney Ave", "Gordon Rd",
         "Arcola Ave"),
        ("S4P", "S4T", "S4S", "S4V", "S4X", "S4R", "S4W"),
        ("306", "639"),
    ),
    City(
        "Saskatoon", "sk", "Saskatoon Region", 52.1332, -106.6700, 420, 55, "suburb",
        (
            N("Downtown Saskatoon", 52.1300, -106.6600, 1.05),
            N("Broadway", 52.1190, -106.6500, 1.05),
            N("Riversdale", 52.1250, -106.6750),
            N("Stonebridge", 52.0950, -106.6300),
            N("Evergreen", 52.1800, -106.6000),
            N("Brighton", 52.1150, -106.5800),
        ),
        ("2nd Ave N", "Broadway Ave", "20th St W", "8th St E", "Spadina Cres E", "Idylwyld Dr N",
         "Clarence Ave S"),
        ("S7K", "S7N", "S7H", "S7T", "S7W", "S7M", "S7J"),
        ("306", "639"),
    ),
    # ---------------------------------------------------------------- Nova Scotia
    City(
        "Halifax", "ns", "Halifax Regional Municipality", 44.6488, -63.5752, 550, 60, "urban",
        (
            N("Downtown Halifax", 44.6470, -63.5730, 1.1),
            N("North End", 44.6620, -63.5930),
            N("South End", 44.6350, -63.5770, 1.1),
            N("Quinpool", 44.6450, -63.5950),
            N("Clayton Park", 44.6600, -63.6400, 0.95),
            N("Spryfield", 44.6150, -63.6150, 0.9),
            N("Fairview", 44.6600, -63.6200, 0.9),
        ),
        ("Barrington St", "Spring Garden Rd", "Quinpool Rd", "Gottingen St", "Agricola St", "Robie St",
         "Lower Water St", "Dunbrack St", "Herring Cove Rd", "South Park St"),
        ("B3J", "B3H", "B3K", "B3L", "B3M", "B3N", "B3R"),
        _MARITIME_CODES,
    ),
    City(
        "Dartmouth", "ns", "Halifax Regional Municipality", 44.6713, -63.5772, 500, 25, "suburb",
        (
            N("Downtown Dartmouth", 44.6660, -63.5680, 1.05),
            N("Dartmouth Crossing", 44.7000, -63.5600),
            N("Woodside", 44.6550, -63.5450, 0.95),
            N("Portland Hills", 44.6780, -63.5050),
        ),
        ("Portland St", "Alderney Dr", "Prince Albert Rd", "Wyse Rd", "Main St", "Baker Dr"),
        ("B2Y", "B3A", "B2W", "B2V"),
        _MARITIME_CODES,
        municipality="Halifax",
    ),
    City(
        "Bedford", "ns", "Halifax Regional Municipality", 44.7326, -63.6594, 520, 15, "suburb",
        (
            N("Bedford West", 44.7200, -63.6900),
            N("Sunnyside", 44.7250, -63.6550),
            N("Bedford South", 44.7050, -63.6750),
        ),
        ("Bedford Hwy", "Larry Uteck Blvd", "Hammonds Plains Rd", "Southgate Dr", "Kearney Lake Rd"),
        ("B4A", "B4B"),
        _MARITIME_CODES,
        municipality="Halifax",
    ),
    # ---------------------------------------------------------------- New Brunswick
    City(
        "Moncton", "nb", "Greater Moncton", 46.0878, -64.7782, 400, 40, "suburb",
        (
            N("Downtown Moncton", 46.0900, -64.7760, 1.05),
            N("North End", 46.1100, -64.8000),
            N("West End", 46.0900, -64.8200, 0.95),
            N("Lewisville", 46.0950, -64.7400),
        ),
        ("Main St", "Mountain Rd", "St George Blvd", "Elmwood Dr", "Vaughan Harvey Blvd", "Killam Dr"),
        ("E1C", "E1E", "E1G"),
        ("506",),
    ),
    City(
        "Dieppe", "nb", "Greater Moncton", 46.0784, -64.6876, 400, 15, "town",
        (
            N("Dieppe Centre", 46.0990, -64.7220),
            N("Dieppe Boulevard", 46.0840, -64.7000),
            N("Saint-Anselme", 46.0500, -64.7300),
        ),
        ("Champlain St", "Dieppe Blvd", "Acadie Ave", "Amirault St", "Paul St"),
        ("E1A",),
        ("506",),
    ),
    City(
        "Fredericton", "nb", "Greater Fredericton", 45.9636, -66.6431, 380, 25, "town",
        (
            N("Downtown Fredericton", 45.9610, -66.6420, 1.05),
            N("College Hill", 45.9460, -66.6430),
            N("Nashwaaksis", 45.9800, -66.6700),
            N("Skyline Acres", 45.9400, -66.6800),
        ),
        ("Queen St", "King St", "Regent St", "Prospect St", "Smythe St", "Main St"),
        ("E3B", "E3A", "E3C", "E3G"),
        ("506",),
    ),
    City(
        "Saint John", "nb", "Greater Saint John", 45.2733, -66.0633, 350, 20, "town",
        (
            N("Uptown Saint John", 45.2730, -66.0620, 1.05),
            N("West Side", 45.2600, -66.0900),
            N("North End", 45.2880, -66.0700),
            N("East Side", 45.2950, -66.0100),
        ),
        ("King St", "Prince William St", "Union St", "Rothesay Ave", "Charlotte St", "Main St"),
        ("E2L", "E2K", "E2J", "E2M"),
        ("506",),
    ),
    # ---------------------------------------------------------------- Newfoundland and Labrador
    City(
        "St. John's", "nl", "Northeast Avalon", 47.5615, -52.7126, 400, 70, "suburb",
        (
            N("Downtown St. John's", 47.5660, -52.7080, 1.05),
            N("Georgestown", 47.5700, -52.7170, 1.05),
            N("Churchill Square", 47.5790, -52.7320),
            N("Kenmount Terrace", 47.5350, -52.7900, 0.95),
            N("East End", 47.5850, -52.6900),
            N("Southlands", 47.5150, -52.7950, 0.95),
        ),
        ("Water St", "Duckworth St", "Elizabeth Ave", "Kenmount Rd", "Torbay Rd", "Topsail Rd",
         "LeMarchant Rd"),
        ("A1C", "A1B", "A1E", "A1A", "A1G"),
        ("709",),
    ),
    City(
        "Mount Pearl", "nl", "Northeast Avalon", 47.5189, -52.8058, 350, 15, "town",
        (
            N("Mount Pearl Square", 47.5230, -52.8000),
            N("Power's Pond", 47.5150, -52.8150),
            N("Westgate", 47.5170, -52.8250),
        ),
        ("Topsail Rd", "Commonwealth Ave", "Park Ave", "Ruth Ave", "Old Placentia Rd"),
        ("A1N",),
        ("709",),
    ),
    City(
        "Paradise", "nl", "Northeast Avalon", 47.5333, -52.8733, 340, 15, "town",
        (
            N("Elizabeth Park", 47.5320, -52.8700),
            N("Karwood", 47.5400, -52.8600),
            N("Octagon Pond", 47.5250, -52.8900),
        ),
        ("Paradise Rd", "Topsail Rd", "McNamara Dr", "Karwood Dr", "Kenmount Rd"),
        ("A1L",),
        ("709",),
    ),
    # ---------------------------------------------------------------- Prince Edward Island
    City(
        "Charlottetown", "pe", "Queens County", 46.2382, -63.1311, 450, 70, "suburb",
        (
            N("Downtown Charlottetown", 46.2350, -63.1270, 1.1),
            N("Brighton", 46.2450, -63.1400, 1.05),
            N("Sherwood", 46.2700, -63.1350),
            N("West Royalty", 46.2600, -63.1700),
            N("East Royalty", 46.2700, -63.1000, 0.95),
        ),
        ("Queen St", "Grafton St", "University Ave", "Kent St", "Great George St", "Water St",
         "Belvedere Ave"),
        ("C1A", "C1E", "C1C"),
        _MARITIME_CODES,
    ),
    City(
        "Summerside", "pe", "Prince County", 46.3959, -63.7876, 350, 15, "town",
        (
            N("Downtown Summerside", 46.3930, -63.7900),
            N("Wilmot", 46.4000, -63.7500),
            N("St. Eleanors", 46.4200, -63.8150),
        ),
        ("Water St", "Granville St", "Central St", "Harbour Dr", "Pope Rd"),
        ("C1N",),
        _MARITIME_CODES,
    ),
    City(
        "Stratford", "pe", "Queens County", 46.2167, -63.0893, 400, 15, "town",
        (
            N("Stratford Town Centre", 46.2170, -63.0890),
            N("Cross Roads", 46.2250, -63.0500),
            N("Southport", 46.2250, -63.1000),
        ),
        ("Mason Rd", "Kinlock Rd", "Stratford Rd", "Bunbury Rd", "Keppoch Rd"),
        ("C1B",),
        _MARITIME_CODES,
    ),
)
# fmt: on
"""Every city the catalogue builds in, grouped by province (largest markets first)."""

CITY_BY_NAME: dict[tuple[str, str], City] = {(city.province, city.name): city for city in CITIES}
"""Cities by (province code, name): names can repeat across provinces, so the province is part of the key."""


def cities_in(province: str) -> tuple[City, ...]:
    """The cities of one province (by code), in table order."""
    return tuple(city for city in CITIES if city.province == province)


def _check() -> None:
    """The tables are consistent: every province has cities, every FSA matches its province's letters."""
    assert abs(sum(PROVINCE_SHARES.values()) - 1.0) < 1e-9
    assert set(PROVINCE_SHARES) == set(PROVINCE_CODES) == set(FSA_LETTERS)
    for code in PROVINCE_CODES:
        assert cities_in(code), code
    for city in CITIES:
        assert city.neighbourhoods and city.streets and city.fsas and city.area_codes, city.name
        for fsa in city.fsas:
            assert len(fsa) == 3 and fsa[0] in FSA_LETTERS[city.province], (city.name, fsa)


_check()
