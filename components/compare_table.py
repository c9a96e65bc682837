"""The Compare page's pure parts, without Streamlit: the ids in the address, the cheapest unit that meets the unit
filters, the table of listings side by side with each row's best value marked, the distances between them, and
the CSV."""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

import pandas as pd

from components.deposits import dollar_steps, total_percent
from components.formatting import MISSING, cad, completion_said, markdown_text, money, profile_name
from precon import filters
from precon.client.models import FloorPlan, Listing, Unit
from precon.dashboard.completion import completion_passed
from precon.filters import Expr

MIN_COMPARE, MAX_COMPARE = 2, 4
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EARTH_RADIUS_KM = 6371.0088
BEST = "★"
Better = Literal["low", "high"] | None
INCLUDED_FLAGS = (
    ("maintenance", "ccOrMaintFeeIncluded"),
    ("parking", "parkingCostIncluded"),
    ("parking maintenance", "parkingMaintainanceIncluded"),
    ("locker", "storageCostIncluded"),
    ("locker maintenance", "lockerMaintainanceIncluded"),
    ("development levies", "developmentLeviesIncluded"),
    ("utilities", "meteringIncluded"),
)


# -- the ids in the address -----------------------------------------------------------------------------------


def shown_id(text: str) -> str:
    """An id as a message quotes it: NUL and other control characters shown as ``?``, markup escaped, cut short."""
    cleaned = "".join(ch if ch.isprintable() else "?" for ch in text)
    return markdown_text(cleaned[:40] + ("…" if len(cleaned) > 40 else ""))


def parse_ids(text: str | None) -> tuple[list[str], list[str]]:
    """The listing ids of ``ids=A,B,C`` (each once, at most four), and what in it could not be used (sentences)."""
    ids: list[str] = []
    problems: list[str] = []
    for raw in (text or "").split(","):
        candidate = raw.strip()
        if not candidate:
            continue
        if not ID_PATTERN.match(candidate):
            problems.append(f"“{shown_id(candidate)}” is not a listing id (letters, digits, - and _ only): left out.")
        elif candidate in ids:
            problems.append(f"{candidate} is named more than once: compared once.")
        else:
            ids.append(candidate)
    if len(ids) > MAX_COMPARE:
        dropped = ", ".join(ids[MAX_COMPARE:])
        problems.append(
            f"At most {MAX_COMPARE} listings can be compared: the first {MAX_COMPARE} are shown ({dropped} left out)."
        )
        ids = ids[:MAX_COMPARE]
    return ids, problems


# -- the cheapest unit that meets the unit filters --------------------------------------------------------------


@dataclass(frozen=True)
class UnitChoice:
    plan: FloorPlan
    unit: Unit


def unit_meets(unit_filter: Expr | None, plan: FloorPlan, unit: Unit) -> bool:
    """Whether this unit's plan meets the unit filters, the plan's price read as this unit's."""
    if unit_filter is None:
        return True
    record = plan.model_dump(mode="python", by_alias=True)
    if unit.price is not None:
        record["startPrice"] = unit.price
    record["units"] = [unit.model_dump(mode="python", by_alias=True)]
    return filters.plan_matches(unit_filter, record)


def cheapest_unit(listing: Listing, unit_filter: Expr | None) -> UnitChoice | None:
    """The cheapest priced available unit meeting the unit filters (``None``: there is none)."""
    found = [
        UnitChoice(plan, unit)
        for plan in listing.floorPlans or ()
        for unit in plan.available_units
        if unit.price is not None and unit.price > 0 and unit_meets(unit_filter, plan, unit)
    ]
    return min(found, key=lambda choice: choice.unit.price or 0.0) if found else None


def deposit_text(listing: Listing, price: float | None) -> str:
    """The first deposit structure in dollars of ``price``: its steps, then its total."""
    if not listing.paymentStructures or price is None:
        return MISSING
    structure = listing.paymentStructures[0]
    steps = [f"{cad(step.amount)} {step.when}".strip() for step in dollar_steps(structure, price)]
    total = total_percent(structure)
    if total is not None:
        steps.append(f"total {cad(price * total / 100)}")
    return "; ".join(steps) or MISSING


# -- the rows ---------------------------------------------------------------------------------------------------


@dataclass
class CompareRow:
    label: str
    texts: list[str]
    values: list[float | None] = field(default_factory=list)
    """What the best is judged on (``None``: no value); empty where no value is better."""
    better: Better = None

    def best(self) -> set[int]:
        """The columns with the best value: none where fewer than two have one, or where all are equal."""
        known = [(i, v) for i, v in enumerate(self.values) if v is not None and not math.isnan(v)]
        if self.better is None or len(known) < 2 or len({v for _, v in known}) == 1:
            return set()
        pick = min if self.better == "low" else max
        target = pick(v for _, v in known)
        return {i for i, v in known if v == target}


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


MONTHS = {name: number for number, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
     "december"), start=1)}  # fmt: skip
SHORT_MONTHS = {name[:3]: number for name, number in MONTHS.items()}
PERIODS = {"q1": 2, "q2": 5, "q3": 8, "q4": 11, "winter": 1, "early": 3, "spring": 4, "mid": 6, "summer": 7,
           "fall": 10, "autumn": 10, "late": 11}  # fmt: skip
"""A period's month, near its middle: "Q4 2030" is later than "Mid 2030", earlier than "2031"."""


def date_key(text: str | None) -> float | None:
    """``Spring 2028``, ``Q4 2030``, ``August 2026``, ``2027-06-30`` or ``2029`` as a year with a fraction."""
    found = re.search(r"\b(\d{4})(?:-(\d{1,2}))?", text or "")
    if not found:
        return None
    month = int(found.group(2)) if found.group(2) else None
    for word in re.findall(r"[a-z0-9]+", (text or "").lower()):
        short = SHORT_MONTHS.get(word[:3]) if len(word) >= 3 and any(n.startswith(word) for n in MONTHS) else None
        month = month or MONTHS.get(word) or short or PERIODS.get(word)
    return int(found.group(1)) + ((month or 6) - 1) / 12


def completion_key(listing: Listing, today: date | None = None) -> float | None:
    """When the listing completes, as a sortable number: its latest estimate, else its completion date or year;
    None where its completion is behind it (complete, or the date passed): that is no "soonest completion"."""
    if completion_passed(listing, today or date.today()):
        return None
    for text in (listing.estimatedCompletionDate, listing.completionDate):
        key = date_key(text)
        if key is not None:
            return key
    return float(listing.completionYear) if listing.completionYear else None


def completion_text(listing: Listing) -> str:
    """``Fall 2028 (estimated Spring 2028)``: the completion date, and the latest estimate where it differs."""
    stated = completion_said(listing)
    estimate = listing.estimatedCompletionDate
    if estimate and not listing.estimatedCompletionDateTBD and estimate != stated:
        return f"{stated} (estimated {estimate})" if stated != MISSING else f"{estimate} (estimated)"
    return stated


def units_with(listing: Listing, status: str) -> int | None:
    units = [unit for plan in listing.floorPlans or () for unit in plan.units]
    return sum(1 for unit in units if unit.status == status) if units else None


def included_text(listing: Listing) -> str:
    flags = [(name, getattr(listing, attr)) for name, attr in INCLUDED_FLAGS]
    if all(flag is None for _, flag in flags):
        return MISSING
    return ", ".join(name for name, flag in flags if flag) or "nothing"


def _row(
    label: str,
    listings: Sequence[Listing],
    read: Callable[[Listing], float | None],
    show: Callable[[float | None], str],
    better: Better = None,
) -> CompareRow:
    values = [read(listing) for listing in listings]
    return CompareRow(label, [show(value) for value in values], values, better)


def count_text(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.0f}"


def compare_rows(listings: Sequence[Listing], unit_filter: Expr | None) -> list[CompareRow]:
    """The rows of the table, one column per listing."""
    return (
        price_rows(listings)
        + unit_rows(listings, unit_filter)
        + [
            CompareRow(
                "Builder", [", ".join(profile_name(b) for b in listing.builders) or MISSING for listing in listings]
            )
        ]
    )


def price_rows(listings: Sequence[Listing]) -> list[CompareRow]:
    """Prices and fees, and what the price includes."""
    per_month = lambda v: money(v, "/month")  # noqa: E731
    return [
        _row("Start price", listings, lambda x: _positive(x.startPrice), cad, "low"),
        _row("End price", listings, lambda x: _positive(x.endPrice), cad, "low"),
        _row(
            "Price per sq ft",
            listings,
            lambda x: _positive(x.averagePricePerSqFeet),
            lambda v: money(v, "/sq ft"),
            "low",
        ),
        _row(
            "Maintenance fee", listings, lambda x: x.ccOrMaintFee, lambda v: money(v, "/sq ft/month", cents=True), "low"
        ),
        CompareRow("Included in the price", [included_text(listing) for listing in listings]),
        _row("Parking", listings, lambda x: x.parkingCost, money, "low"),
        _row("Parking maintenance", listings, lambda x: x.parkingMaintainance, per_month, "low"),
        _row("Locker", listings, lambda x: x.storageCost, money, "low"),
        _row("Locker maintenance", listings, lambda x: x.lockerMaintainance, per_month, "low"),
    ]


def unit_rows(listings: Sequence[Listing], unit_filter: Expr | None) -> list[CompareRow]:
    """The cheapest unit meeting the unit filters and its deposits, completion, and the units left and sold."""
    choices = [cheapest_unit(listing, unit_filter) for listing in listings]
    return [
        CompareRow(
            "Cheapest unit meeting the filters",
            [
                f"{c.unit.unitNumber or MISSING} · {c.plan.name or MISSING} · {cad(c.unit.price)}" if c else MISSING
                for c in choices
            ],
            [c.unit.price if c else None for c in choices],
            "low",
        ),
        CompareRow(
            "Deposits for that unit",
            [deposit_text(listing, c.unit.price if c else None) for listing, c in zip(listings, choices, strict=True)],
        ),
        CompareRow(
            "Completion",
            [completion_text(listing) for listing in listings],
            [completion_key(listing) for listing in listings],
            "low",
        ),
        _row("Units available", listings, lambda x: units_with(x, "Available"), count_text, "high"),
        _row("Units sold", listings, lambda x: units_with(x, "Sold"), count_text),
    ]


def column_names(listings: Sequence[Listing]) -> list[str]:
    """A header per listing: its name, with its id where two share a name (or it has none)."""
    names = [listing.name or "" for listing in listings]
    return [
        name if name and names.count(name) == 1 else f"{name or 'Listing'} ({listing.id})"
        for name, listing in zip(names, listings, strict=True)
    ]


def table_frame(rows: Sequence[CompareRow], headers: Sequence[str], *, mark: bool = True) -> pd.DataFrame:
    """A row per :class:`CompareRow`, a column per listing; the best values marked with ★ (``mark``)."""
    data = []
    for row in rows:
        best = row.best() if mark else set()
        data.append([f"{text} {BEST}" if i in best else text for i, text in enumerate(row.texts)])
    return pd.DataFrame(data, index=[row.label for row in rows], columns=list(headers))


# -- distances and the CSV ----------------------------------------------------------------------------------------


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def position(listing: Listing) -> tuple[float, float] | None:
    if listing.lat is not None and listing.long is not None:
        return float(listing.lat), float(listing.long)
    if listing.geoloc is not None and listing.geoloc.lat is not None and listing.geoloc.lng is not None:
        return float(listing.geoloc.lat), float(listing.geoloc.lng)
    return None


def distance_frame(listings: Sequence[Listing], headers: Sequence[str]) -> pd.DataFrame:
    """The distance in km between each two listings (blank on the diagonal, a dash without a position)."""
    places = [position(listing) for listing in listings]
    cells = [
        [
            "" if i == j else MISSING if a is None or b is None else f"{haversine_km(*a, *b):,.1f} km"
            for j, b in enumerate(places)
        ]
        for i, a in enumerate(places)
    ]
    return pd.DataFrame(cells, index=list(headers), columns=list(headers))


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(text: object) -> object:
    if isinstance(text, str) and text.startswith(FORMULA_STARTS):
        return "'" + text  # a spreadsheet must not read a listing's text as a formula
    return text


def csv_bytes(table: pd.DataFrame, distances: pd.DataFrame, ids: Sequence[str]) -> bytes:
    """The table (best values marked) and the distances, with the ids as a first row, for a spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([_cell(text) for text in ["", *table.columns]])
    writer.writerow(["Listing id", *ids])
    for label, cells in table.iterrows():
        writer.writerow([_cell(text) for text in [label, *cells]])
    for label, cells in distances.iterrows():
        writer.writerow([_cell(text) for text in [f"Distance from {label}", *cells]])
    return ("\ufeff" + out.getvalue()).encode("utf-8")
