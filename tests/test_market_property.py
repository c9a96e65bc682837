"""(ours) ``market_stats``' figures over random small histories, against the brute-force oracle of
tests/test_service_market.py: listings written, their units sold, repriced and added, plans added, statuses moved,
listings deleted and created, plans' bedrooms changed, at random times of a year, straight into a SQLite store; the
market whole, grouped by bedrooms, and with unit filters (which the units' ledger answers)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon.filters import Expr, parse
from precon.service.stores.market_stats import MarketGroup
from precon.service.stores.records import decode_document
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import HistoryQuery
from tests.test_service_market import Oracle, intervals, plan_holds

STATUSES = ("Available", "Reserved", "Sold")
PRICES = (None, 400_000, 455_000, 455_000.5, 610_000)
SELLING = ("Selling Now", "Pending", "Sold Out")
START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
DAY = 86_400.0
BEDS = "floorPlans.numberOfBedrooms"

unit = st.fixed_dictionaries({"status": st.sampled_from(STATUSES), "price": st.sampled_from(PRICES)})
BEDROOMS = (0, 1, 2, 2.0, "2", None, [1, 2], True)
"""A plan's numberOfBedrooms, grouped as facet_counts keys it: 2, 2.0 and "2" one group, a list in each, True none."""
plan = st.fixed_dictionaries(
    {
        "squareFeet": st.sampled_from(("700", "850.5", "", None)),
        "numberOfBedrooms": st.sampled_from(BEDROOMS),
        "units": st.lists(unit, min_size=0, max_size=3),
    }
)
listing = st.fixed_dictionaries(
    {"sellingStatus": st.sampled_from(SELLING), "plans": st.lists(plan, min_size=1, max_size=2)}
)
step = st.tuples(
    st.sampled_from(("status", "price", "add_unit", "add_plan", "bedrooms", "selling", "delete", "create")),
    st.integers(0, 3),
    st.integers(0, 10**6),
    listing,
)


def document(listing_id: str, drawn: dict[str, Any]) -> dict[str, Any]:
    plans = []
    for p, drawn_plan in enumerate(drawn["plans"]):
        units = [{"unitNumber": f"{p}{u:02d}", **drawn_unit} for u, drawn_unit in enumerate(drawn_plan["units"])]
        plans.append({"id": f"{listing_id}-{p}", "squareFeet": drawn_plan["squareFeet"],
                      "numberOfBedrooms": drawn_plan["numberOfBedrooms"], "units": units})  # fmt: skip
    return {"listingId": listing_id, "name": listing_id, "state": "Ontario", "cityOrDistrict": "Toronto",
            "sellingStatus": drawn["sellingStatus"], "floorPlans": plans}  # fmt: skip


def moved(doc: dict[str, Any], kind: str, pick: int, drawn: dict[str, Any]) -> dict[str, Any] | None:
    """The listing after one step (None: deleted)."""
    units = [u for p in doc["floorPlans"] for u in p["units"]]
    if kind == "delete":
        return None
    if kind == "selling":
        doc["sellingStatus"] = SELLING[pick % len(SELLING)]
    elif kind == "add_plan":
        extra = document(doc["listingId"], {**drawn, "plans": drawn["plans"][:1]})["floorPlans"][0]
        doc["floorPlans"].append({**extra, "id": f"{doc['listingId']}-{len(doc['floorPlans'])}"})
    elif kind == "bedrooms":  # the plan as it is now decides which group its units (and their past) are in
        doc["floorPlans"][pick % len(doc["floorPlans"])]["numberOfBedrooms"] = BEDROOMS[pick % len(BEDROOMS)]
    elif kind == "add_unit":
        plan = doc["floorPlans"][pick % len(doc["floorPlans"])]
        plan["units"].append({"unitNumber": f"9{len(plan['units'])}", "status": STATUSES[pick % 3], "price": 500_000})
    elif units:
        chosen = units[pick % len(units)]
        if kind == "status":
            chosen["status"] = STATUSES[(STATUSES.index(chosen["status"]) + 1 + pick) % 3]
        else:
            chosen["price"] = PRICES[(pick + 1) % len(PRICES)]
    return doc


EVERY_STATUS = {"sellingStatus": "Selling Now", "plans": [{"squareFeet": "700", "numberOfBedrooms": 1,
                "units": [{"status": status, "price": 400_000} for status in STATUSES]}]}  # fmt: skip
"""The first listing: its units hold every status, so that the ledger reads the plans after it column by column
(a plan with a status not met before is read unit by unit)."""


def replay(store: SQLiteStore, first: list[dict[str, Any]], steps: list[tuple[Any, ...]]) -> None:
    docs: dict[str, dict[str, Any] | None] = {}
    store.upsert_listings([document("A00000", EVERY_STATUS)], at=START - DAY)
    for k, drawn in enumerate(first):
        listing_id = f"L{k:05d}"
        docs[listing_id] = document(listing_id, drawn)
        store.upsert_listings([docs[listing_id]], at=START + k * 3600)
    moment = START + DAY
    for kind, which, offset, drawn in steps:
        moment += 1 + offset % (40 * DAY)
        if kind == "create":
            listing_id = f"L{len(docs):05d}"
            docs[listing_id] = document(listing_id, drawn)
            store.upsert_listings([docs[listing_id]], at=moment)
            continue
        listing_id = sorted(docs)[which % len(docs)]
        doc = docs[listing_id]
        if doc is None:
            continue
        after = moved(copy.deepcopy(doc), kind, offset, drawn)
        docs[listing_id] = after
        if after is None:
            store.delete_listing(listing_id, at=moment)
        else:
            store.upsert_listings([after], at=moment)


UNIT_FILTERS = (parse("units.status:Available"), parse("numberOfBedrooms = 2 OR units.price >= 455000"))


def assert_points(oracle: Oracle, series: dict[str, Any], edges: list[int], listings: set[str],
                  plan: tuple[str, str] | None, chosen: Expr | None = None) -> None:  # fmt: skip
    for point, start, end in zip(series["points"], edges, edges[1:], strict=False):
        expected = oracle.point(listings, start, end, plan, chosen)
        for name, value in expected.items():
            want = pytest.approx(value, rel=1e-9) if isinstance(value, float) else value
            assert point[name] == want, (name, point["start"], plan, chosen)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(listing, min_size=1, max_size=3), st.lists(step, max_size=14), st.sampled_from(("month", "quarter")))
def test_random_histories_match_the_oracle(first: list[dict[str, Any]], steps: list[tuple[Any, ...]],
                                           interval: str) -> None:  # fmt: skip
    with TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "catalogue.sqlite3")
        try:
            replay(store, first, steps)
            entries = store.listing_history(HistoryQuery(limit=10**6)).entries[::-1]
            db = store._db()
            documents = {lid: decode_document(blob) for lid, blob in db.execute("SELECT listing_id, doc FROM "
                         "listings l JOIN listing_docs d ON d.id = l.id")}  # fmt: skip
            for lid, blob in db.execute("SELECT listing_id, doc FROM deleted_listings").fetchall():
                documents.setdefault(lid, {**decode_document(blob), "_deleted": True})
            oracle = Oracle(entries, documents)
            edges = intervals(interval, "2024-12-20T00:00:00Z", "2026-03-01T00:00:00Z")
            groups = [(None, set(documents), None)]
            for value in ("1", "2"):
                holding = {
                    lid for lid, doc in documents.items() if any(plan_holds(p, BEDS, value) for p in doc["floorPlans"])
                }
                groups.append((value, holding, (BEDS, value)))
            found = store.market_stats(edges, [MarketGroup(v, tuple(ids), plan) for v, ids, plan in groups])
            for series, (_, listings, plan) in zip(found, groups, strict=True):
                assert_points(oracle, series, edges, listings, plan)
            whole = [MarketGroup(None, tuple(documents), None)]
            for unit_filter in UNIT_FILTERS:  # the units' own ledger: each unit from its creation, in its states
                (series,) = store.market_stats(edges, whole, unit_filter=unit_filter)
                assert_points(oracle, series, edges, set(documents), None, unit_filter)
        finally:
            store.close()


def test_a_unit_added_to_a_plan_counts_from_its_creation(tmp_path: Path) -> None:
    """A unit added to a plan months after it exists from then on, for a unit filter too, whether the ledger reads
    its plan column by column (its statuses met before: here) or unit by unit."""
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    try:
        store.upsert_listings([document("A00000", EVERY_STATUS)], at=START - DAY)
        one = {"squareFeet": "700", "numberOfBedrooms": 2, "units": [{"status": "Available", "price": 400_000}]}
        doc = document("L00000", {"sellingStatus": "Selling Now", "plans": [one]})
        store.upsert_listings([doc], at=START)
        store.upsert_listings([moved(copy.deepcopy(doc), "add_unit", 0, doc)], at=START + 100 * DAY)
        edges = intervals("month", "2024-12-20T00:00:00Z", "2025-06-01T00:00:00Z")
        for unit_filter in (None, *UNIT_FILTERS):
            (series,) = store.market_stats(edges, [MarketGroup(None, ("L00000",), None)], unit_filter=unit_filter)
            assert [p["unitsAvailable"] for p in series["points"]] == [0, 1, 1, 1, 2, 2, 2], unit_filter
    finally:
        store.close()
