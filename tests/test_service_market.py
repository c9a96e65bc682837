"""(ours) ``market_stats``: every figure against a brute-force oracle that replays the units' states from the
entries ``changes`` answers and the listings as they are now, for several filters, groupings and both intervals;
its bad input (400s), ``v1-lite`` and the province scope. Over real HTTP, on a data directory of its own (a
catalogue with a simulated past, and a listing deleted after it)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from precon import filters
from precon.client import Client
from precon.client.market_models import MarketStats
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.records import decode_document
from tests.conftest import KEY_ALL, KEY_LITE, KEY_ONTARIO, Api

MARKET = "/v1/all/market_stats"
CHANGES = "/v1/all/changes"
Window = tuple[str, str]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    data_dir: Path = tmp_path_factory.mktemp("market")
    settings = ServiceSettings(
        data_dir=data_dir, default_listings=120, default_seed=5, default_history_days=420, rate_limit=0, dev=True
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("everything", key=KEY_ALL)
    directory.accounts.create_key("ontario", ["v1"], ["on"], key=KEY_ONTARIO)
    directory.accounts.create_key("lite", ["v1-lite"], key=KEY_LITE)
    with ServerThread(directory.app()) as server, httpx.Client(timeout=60) as http:
        yield Api(server.url, directory, http)
    directory.close()


@pytest.fixture(scope="module")
def window(api: Api) -> Window:
    """From the catalogue's first entry to its last, with a listing that had sales deleted after them (its units
    count until it went). A catalogue without a past (PostgreSQL's, in the suite run there) is given 40 days."""
    sold = api.ok(CHANGES, scope="unit", fields="status", perPage=1000)["results"]
    if not sold:
        from precon.service.stores.simulation import simulate

        simulate(api.directory.live, 40, seed=4)
        sold = api.ok(CHANGES, scope="unit", fields="status", perPage=1000)["results"]
    listing_id = sorted({e["listingId"] for e in sold if e["to"] == "Sold"})[0]
    api.directory.live.delete_listing(listing_id)
    total = api.ok(CHANGES, perPage=1)["total"]
    oldest = api.ok(CHANGES, perPage=1, page=total - 1)["results"][0]["at"]
    return oldest, max(e["at"] for e in api.ok(CHANGES, perPage=1000)["results"])  # the newest written may be older


# -- the oracle ----------------------------------------------------------------------------------------------------


def ms(at: str) -> int:
    return int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)


def keyed(items: Any, key: str) -> dict[str, dict[str, Any]]:
    """The records of a list by ``key``, else by position (as history knows them)."""
    found: dict[str, dict[str, Any]] = {}
    for position, item in enumerate(items if isinstance(items, list) else []):
        name = item.get(key)
        found[str(name) if isinstance(name, str | int) and str(name) else f"#{position}"] = item
    return found


def price_of(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


PLAN_ATTRIBUTES = ("floorPlans.numberOfBedrooms", "floorPlans.numberOfBathrooms", "floorPlans.floorPlanType")


def plan_holds(plan: dict[str, Any], attribute: str, value: str) -> bool:
    """Whether a floor plan holds a facet key of a plan attribute (a number as facet_counts keys it, a text folded)."""
    held = plan.get(attribute.split(".", 1)[1])
    for one in held if isinstance(held, list) else [held]:
        if isinstance(one, str) and filters.fold_text(one) == filters.fold_text(value):
            return True
        try:
            if not isinstance(one, bool) and float(one) == float(value):
                return True
        except (TypeError, ValueError):
            continue
    return False


@dataclass
class Oracle:
    """The catalogue's units and history as the API shows them, replayed by brute force."""

    entries: list[dict[str, Any]]
    """Oldest first."""
    documents: dict[str, dict[str, Any]]
    """The matching listings' documents: now, or as they last were (deleted)."""

    def born(self) -> dict[tuple[str, ...], int]:
        latest: dict[tuple[str, ...], int] = {}
        for e in self.entries:
            if e["change"] == "created":
                key = {"listing": (e["listingId"],), "floorPlan": (e["listingId"], e["plan"])}.get(
                    e["scope"], (e["listingId"], e["plan"], e["unit"])
                )
                latest[key] = ms(e["at"])
        return latest

    def units(self) -> list[dict[str, Any]]:
        born = self.born()
        ends = [e for e in self.entries if (e["scope"], e["change"]) == ("listing", "deleted")]
        gone = {e["listingId"]: ms(e["at"]) for e in ends}
        units = []
        for listing_id, doc in self.documents.items():
            for plan_key, plan in keyed(doc.get("floorPlans"), "id").items():
                try:
                    sqft = float(plan.get("squareFeet"))
                except (TypeError, ValueError):
                    sqft = 0.0
                for unit_key, unit in keyed(plan.get("units"), "unitNumber").items():
                    keys = [(listing_id,), (listing_id, plan_key), (listing_id, plan_key, unit_key)]
                    units.append(
                        {
                            "key": (listing_id, plan_key, unit_key),
                            "status": unit.get("status"),
                            "price": unit.get("price"),
                            "floor": unit.get("floor"),
                            "sqft": sqft,
                            "born": max((born[k] for k in keys if k in born), default=-(10**18)),
                            "gone": gone.get(listing_id, 10**18) if doc.get("_deleted") else 10**18,
                        }
                    )
        return units

    def unit_entries(self) -> dict[tuple[str, ...], list[dict[str, Any]]]:
        found: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        for position, e in enumerate(self.entries):
            if e["scope"] == "unit" and e["change"] == "updated":
                found[(e["listingId"], e["plan"], e["unit"])].append({**e, "_position": position})
        return found

    def __post_init__(self) -> None:
        self.held = (self.units(), self.unit_entries())
        self.by_key = {unit["key"]: unit for unit in self.held[0]}

    def in_plan(self, listing_id: str, plan_key: str, plan: tuple[str, str] | None) -> bool:
        """Whether a plan of a listing (by its key, as history names it) holds ``plan``'s (attribute, value)."""
        if plan is None:
            return True
        found = keyed(self.documents[listing_id].get("floorPlans"), "id").get(plan_key)
        return found is not None and plan_holds(found, *plan)

    def meets(self, chosen: filters.Expr | None, key: tuple[str, ...], status: Any, price: Any, floor: Any) -> bool:
        """Whether a unit (of a listing's plan, by key) in this state meets a unit filter, as the reference has it: the
        plan with that one unit. A unit of a plan no longer in its listing meets none."""
        if chosen is None:
            return True
        found = keyed(self.documents[key[0]].get("floorPlans"), "id").get(key[1])
        unit = {"status": status, "price": price, "floor": floor}
        return found is not None and filters.plan_matches(chosen, {**found, "units": [unit]})

    def before(self, position: int) -> tuple[Any, Any]:
        """A unit's status and price just before its entry at ``position``: the ``from`` of its next entry of each
        field, else its value now (None: a unit no longer in its listing)."""
        entry = self.entries[position]
        key = (entry["listingId"], entry["plan"], entry["unit"])
        now = self.by_key.get(key, {})
        state = {"status": now.get("status"), "price": now.get("price")}
        for name in state:
            if entry["field"] == name:
                state[name] = entry["from"]
                continue
            later = [e for e in self.held[1].get(key, []) if e["field"] == name and e["_position"] > position]
            if later:
                state[name] = later[0]["from"]
        return state["status"], state["price"]

    def point(self, listings: set[str], start: int, end: int, plan: tuple[str, str] | None = None,
              chosen: filters.Expr | None = None) -> dict[str, Any]:  # fmt: skip
        """Every figure of one interval, over the listings given (the units of their plans holding ``plan``'s value
        alone, when given; those that meet the unit filter ``chosen`` in their state at the moment counted)."""
        every_unit, changes = self.held
        inside = [
            (i, e) for i, e in enumerate(self.entries) if e["listingId"] in listings and start <= ms(e["at"]) < end
        ]
        unit_updates = [
            e
            for i, e in inside
            if e["scope"] == "unit"
            and e["change"] == "updated"
            and self.in_plan(e["listingId"], e["plan"], plan)
            and (chosen is None or self.meets(chosen, self.key_of(e), *self.before(i), self.floor_of(e)))
        ]
        prices = [(price_of(e["from"]), price_of(e["to"])) for e in unit_updates if e["field"] == "price"]
        available, ppsf, existing, sold = [], [], 0, 0
        for unit in every_unit:
            if unit["key"][0] not in listings or not (unit["born"] < end <= unit["gone"]):
                continue
            if not self.in_plan(*unit["key"][:2], plan):
                continue
            state = {"status": unit["status"], "price": unit["price"]}
            for name in state:
                later = [e for e in changes.get(unit["key"], []) if e["field"] == name and ms(e["at"]) >= end]
                if later:
                    state[name] = later[0]["from"]
            if not self.meets(chosen, unit["key"], state["status"], state["price"], unit["floor"]):
                continue
            state["price"] = price_of(state["price"])
            existing += 1
            sold += state["status"] == "Sold"
            if state["status"] == "Available" and state["price"] is not None:
                available.append(state["price"])
                if unit["sqft"] > 0:
                    ppsf.append(state["price"] / unit["sqft"])
            elif state["status"] == "Available":
                available.append(None)
        priced = [p for p in available if p is not None]
        return {
            "unitsSold": sum(1 for e in unit_updates if e["field"] == "status" and e["to"] == "Sold"),
            "unitsAvailable": len(available),
            "sellThrough": sold / existing if existing else None,
            "launches": self.launches({i for i in listings if self.launching(i, plan, chosen)}, start, end),
            "medianPrice": statistics.median(priced) if priced else None,
            "medianPricePerSqFt": statistics.median(ppsf) if ppsf else None,
            "priceIncreases": sum(1 for a, b in prices if a is not None and b is not None and b > a),
            "priceCuts": sum(1 for a, b in prices if a is not None and b is not None and b < a),
        }

    def floor_of(self, entry: dict[str, Any]) -> Any:
        return self.by_key.get(self.key_of(entry), {}).get("floor")

    @staticmethod
    def key_of(entry: dict[str, Any]) -> tuple[str, ...]:
        return entry["listingId"], entry["plan"], entry["unit"]

    def launching(self, listing_id: str, plan: tuple[str, str] | None, chosen: filters.Expr | None) -> bool:
        """Whether a listing's launches count: it has a plan holding the group's value that meets the unit filter's
        plan conditions (the tests' filters are conjunctions: their conditions on the plan itself)."""
        if chosen is None and plan is None:
            return True
        conditions = [c for c in (chosen.items if isinstance(chosen, filters.And) else [chosen]) if c is not None]
        on_plans = [c for c in conditions if not any(n.startswith("units.") for n in filters.attributes(c))]
        test = filters.And(tuple(on_plans)) if len(on_plans) > 1 else on_plans[0] if on_plans else None
        plans = keyed(self.documents[listing_id].get("floorPlans"), "id")
        return any((plan is None or plan_holds(p, *plan)) and filters.evaluate(test, p) for p in plans.values())

    def launches(self, listings: set[str], start: int, end: int) -> int:
        count = 0
        for position, e in enumerate(self.entries):
            if e["listingId"] not in listings or e["scope"] != "listing" or not start <= ms(e["at"]) < end:
                continue
            if e["change"] == "updated" and e["field"] == "sellingStatus" and e["to"] == "Selling Now":
                count += 1
            elif e["change"] == "created":
                later = [
                    f["from"]
                    for f in self.entries[position + 1 :]
                    if f["listingId"] == e["listingId"] and f["field"] == "sellingStatus" and f["scope"] == "listing"
                ]
                count += (later[0] if later else self.documents[e["listingId"]].get("sellingStatus")) == "Selling Now"
        return count


def every_entry(api: Api, path: str, key: str, **asked: Any) -> list[dict[str, Any]]:
    found, page = [], 0
    while True:
        body = api.ok(path, key, page=page, perPage=1000, **asked)
        found += body["results"]
        page += 1
        if page >= body["pages"]:
            return found[::-1]


def oracle_for(api: Api, version: str, province: str, key: str, **asked: Any) -> Oracle:
    """The entries and documents of the listings the filters match (now, or deleted, as ``changes`` judges)."""
    entries = every_entry(api, f"/{version}/{province}/changes", key, **asked)
    current = {}
    page = 0
    while True:
        body = api.ok(f"/{version}/{province}/search_listings", key, page=page, perPage=1000, **asked)
        current.update({doc["listingId"]: doc for doc in body["results"]})
        page += 1
        if page >= body["pages"]:
            break
    db = api.directory.live._db()
    for listing_id, blob in db.execute("SELECT listing_id, doc FROM deleted_listings").fetchall():
        if listing_id not in current and any(e["listingId"] == listing_id for e in entries):
            current[listing_id] = {**decode_document(blob), "_deleted": True}
    return Oracle(entries, current)


def intervals(interval: str, since: str, until: str) -> list[int]:
    months = 1 if interval == "month" else 3
    start, end = datetime.fromisoformat(since.replace("Z", "+00:00")), ms(until)
    year, month = start.year, (start.month - 1) // months * months + 1
    edges = []
    while True:
        edges.append(int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000))
        if edges[-1] > end:
            return edges
        month += months
        if month > 12:
            year, month = year + 1, month - 12


def member(doc: dict[str, Any], attribute: str, value: str) -> bool:
    if attribute in PLAN_ATTRIBUTES:
        plans = doc.get("floorPlans")
        return any(plan_holds(plan, attribute, value) for plan in plans if isinstance(plan, dict)) if isinstance(
            plans, list) else False  # fmt: skip
    return filters.evaluate(filters.Match(attribute, value), doc)


def assert_matches_oracle(api: Api, window: Window, version: str = "v1", province: str = "all", key: str = KEY_ALL,
                          **asked: Any) -> dict[str, Any]:  # fmt: skip
    interval = asked.pop("interval", "month")
    unit_filter = asked.pop("unitFilter", None)  # it chooses units, not listings
    chosen = filters.parse(unit_filter) if unit_filter else None
    group_by, limit = asked.pop("groupBy", None), asked.pop("groupLimit", 10)
    since, until = window
    grouped = {"groupBy": group_by, "groupLimit": limit} if group_by else {}
    answer = api.ok(f"/{version}/{province}/market_stats", key, interval=interval, since=since, until=until,
                    **grouped, **asked, **({"unitFilter": unit_filter} if unit_filter else {}))  # fmt: skip
    oracle = oracle_for(api, version, province, key, **asked)
    assert answer["interval"] == interval and answer["groupBy"] == group_by
    edges = intervals(interval, since, until)
    groups: list[tuple[str | None, set[str]]] = [(None, set(oracle.documents))]
    if group_by:
        counts = api.ok(f"/{version}/{province}/facet_counts", key, facets=group_by, format="list", **asked)
        values = [hit["value"] for hit in counts[group_by][:limit]]
        groups = [(v, {i for i, doc in oracle.documents.items() if member(doc, group_by, v)}) for v in values]
    plan_group = group_by in PLAN_ATTRIBUTES
    assert [s["group"] for s in answer["series"]] == [g for g, _ in groups]
    for series, (value, listings) in zip(answer["series"], groups, strict=True):
        plan = (group_by, value) if plan_group and value is not None else None
        assert [p["start"] for p in series["points"]] == [
            datetime.fromtimestamp(e / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z") for e in edges[:-1]
        ]
        for point, start, end in zip(series["points"], edges, edges[1:], strict=False):
            expected = oracle.point(listings, start, end, plan, chosen)
            for name, value in expected.items():
                assert point[name] == (pytest.approx(value, rel=1e-9) if isinstance(value, float) else value), (
                    series["group"], point["start"], name
                )  # fmt: skip
    return answer


# -- the figures ---------------------------------------------------------------------------------------------------


def test_every_figure_of_the_whole_market_by_month_matches_the_oracle(api: Api, window: Window) -> None:
    answer = assert_matches_oracle(api, window)
    (series,) = answer["series"]
    assert series["group"] is None and len(series["points"]) == len(intervals("month", *window)) - 1 > 1
    assert sum(p["unitsSold"] for p in series["points"]) > 0
    assert any(p["priceIncreases"] or p["priceCuts"] for p in series["points"])


def test_grouped_by_city_by_quarter_matches_the_oracle(api: Api, window: Window) -> None:
    answer = assert_matches_oracle(api, window, interval="quarter", groupBy="cityOrDistrict")
    assert len(answer["series"]) > 1


def test_filtered_and_grouped_by_an_array_attribute_matches_the_oracle(api: Api, window: Window) -> None:
    assert_matches_oracle(api, window, groupBy="type", filterQuery='sellingStatus:"Selling Now" OR minBeds >= 2')


def test_words_narrow_the_listings_as_changes_does(api: Api, window: Window) -> None:
    word = api.all_listings()[0]["cityOrDistrict"].split()[0]
    assert_matches_oracle(api, window, search=word, groupBy="sellingStatus")


def test_a_unit_filter_chooses_units_each_in_its_state_at_the_moment_counted(api: Api, window: Window) -> None:
    """The plan conditions on the unit's plan, ``units.*`` on its state at the interval's end (the units left) or
    just before the entry (sales, price moves): a unit sold at $850,000 after a rise from $800,000 counts under
    ``units.price < 900000`` whatever it costs now."""
    answer = assert_matches_oracle(api, window, unitFilter="numberOfBedrooms >= 2 AND units.price < 900000")
    whole = api.ok(MARKET, since=window[0], until=window[1])["series"][0]["points"]
    points = answer["series"][0]["points"]
    assert 0 < sum(p["unitsSold"] for p in points) < sum(p["unitsSold"] for p in whole)
    assert all(p["unitsAvailable"] <= w["unitsAvailable"] for p, w in zip(points, whole, strict=True))


def test_a_unit_filter_of_any_shape_matches_the_oracle(api: Api, window: Window) -> None:
    assert_matches_oracle(api, window, interval="quarter", groupBy="cityOrDistrict",
                          unitFilter="NOT units.status:Sold OR squareFeet >= 900")  # fmt: skip
    assert_matches_oracle(api, window, interval="quarter", unitFilter="units.floor >= 10 AND units.status:Available")
    assert_matches_oracle(api, window, interval="quarter", province="on", key=KEY_ONTARIO, groupBy="neighbourhood",
                          unitFilter="numberOfBathrooms >= 2")  # fmt: skip
    assert_matches_oracle(api, window, interval="quarter", groupBy="floorPlans.numberOfBedrooms",
                          unitFilter="units.price < 800000", filterQuery='sellingStatus:"Selling Now"')  # fmt: skip


def test_a_unit_filter_on_bedrooms_is_the_bedrooms_group(api: Api, window: Window) -> None:
    """contract.md: ``unitFilter=numberOfBedrooms = 2`` is the same figure as the ``2`` group of
    ``groupBy=floorPlans.numberOfBedrooms``, in every interval, every figure."""
    for interval in ("month", "quarter"):
        asked = {"since": window[0], "until": window[1], "interval": interval}
        grouped = api.ok(MARKET, groupBy="floorPlans.numberOfBedrooms", **asked)["series"]
        (filtered,) = api.ok(MARKET, unitFilter="numberOfBedrooms = 2", **asked)["series"]
        assert filtered["points"] == next(s for s in grouped if s["group"] == "2")["points"]
        whole = api.ok(MARKET, **asked)["series"][0]["points"]
        assert sum(p["unitsSold"] for p in filtered["points"]) < sum(p["unitsSold"] for p in whole)


def test_the_province_scopes_the_listings(api: Api, window: Window) -> None:
    assert_matches_oracle(api, window, province="on", key=KEY_ONTARIO, groupBy="neighbourhood")


def test_a_unit_that_first_appears_sold_is_no_sale(api: Api, window: Window) -> None:
    listing = next(
        doc
        for doc in api.all_listings()
        if doc["floorPlans"] and any(u["status"] == "Available" for u in doc["floorPlans"][0].get("units") or [])
    )
    changed = {**listing, "floorPlans": [dict(plan) for plan in listing["floorPlans"]]}
    plan = changed["floorPlans"][0]
    plan["units"] = [*plan["units"], {**plan["units"][0], "unitNumber": "9999", "status": "Sold"}]
    now = datetime.now(UTC).isoformat()
    asked = {"filterQuery": f"listingId:{listing['listingId']}", "since": now, "until": now}
    (before,) = api.ok(MARKET, **asked)["series"][0]["points"]
    api.directory.live.upsert_listings([changed])
    (after,) = api.ok(MARKET, **asked)["series"][0]["points"]
    created = api.ok(CHANGES, filterQuery=asked["filterQuery"], since=now, change="created", scope="unit")["results"]
    assert [e["unit"] for e in created] == ["9999"]
    assert after["unitsSold"] == before["unitsSold"] and after["unitsAvailable"] == before["unitsAvailable"]
    assert after["sellThrough"] > before["sellThrough"]  # it exists, sold: one more of each


def patches() -> float:
    """Market columns and unit ledgers patched so far, in this process (the service runs in it)."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "precon_market_patches"
        for sample in metric.samples
        if sample.name == "precon_market_patches_total"
    )


def test_after_a_day_of_sales_the_figures_match_the_oracle(api: Api, window: Window) -> None:
    """A day's sales and a price rise in a few listings, then market_stats with and without a unitFilter: the
    figures are the oracle's, and the columns and ledger held were patched with the written listings, not built
    whole (on PostgreSQL, a replica's copy)."""
    until = datetime.now(UTC).isoformat()
    for unit_filter in ("", "units.price < 900000"):  # the columns and the ledger held, as when serving
        api.ok(MARKET, since=window[0], until=until, **({"unitFilter": unit_filter} if unit_filter else {}))
    changed = []
    for listing in api.all_listings():
        units = [u for plan in listing.get("floorPlans") or [] for u in plan.get("units") or []]
        available = [u for u in units if u.get("status") == "Available" and price_of(u.get("price"))]
        if len(available) >= 2:
            available[0]["status"] = "Sold"
            available[1]["price"] = price_of(available[1]["price"]) + 15_000
            changed.append(listing)
        if len(changed) == 3:
            break
    before = patches()
    api.directory.live.upsert_listings(changed)
    now = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    answer = assert_matches_oracle(api, (window[0], now))
    assert sum(p["unitsSold"] for p in answer["series"][0]["points"]) > 0
    assert_matches_oracle(api, (window[0], now), unitFilter="units.price < 900000 AND NOT units.status:Reserved")
    assert patches() >= before + 2  # on PostgreSQL, by the replica whose copy answers


def test_the_client_reads_it(api: Api, window: Window) -> None:
    with Client(api.url, api_key=KEY_ALL) as client:
        stats = client.market_stats(group_by="cityOrDistrict", interval="quarter", since=window[0], until=window[1])
    assert isinstance(stats, MarketStats) and stats.groupBy == "cityOrDistrict"
    raw = api.ok(MARKET, groupBy="cityOrDistrict", interval="quarter", since=window[0], until=window[1])
    assert stats.model_dump(exclude_unset=True) == raw


def test_defaults_are_twelve_months_or_eight_quarters_up_to_now(api: Api) -> None:
    months = api.ok(MARKET)["series"][0]["points"]
    quarters = api.ok(MARKET, interval="quarter")["series"][0]["points"]
    assert len(months) == 12 and len(quarters) == 8
    now = datetime.now(UTC)
    assert months[-1]["start"].startswith(f"{now.year}-{now.month:02d}-01")


def test_lite_shows_launches_and_hides_what_units_tell(api: Api, window: Window) -> None:
    lite = api.ok("/v1-lite/all/market_stats", KEY_LITE, since=window[0], until=window[1], groupBy="cityOrDistrict")
    full = api.ok(MARKET, since=window[0], until=window[1], groupBy="cityOrDistrict")
    assert [s["group"] for s in lite["series"]] == [s["group"] for s in full["series"]]
    for mine, theirs in zip(lite["series"], full["series"], strict=True):
        assert [p["launches"] for p in mine["points"]] == [p["launches"] for p in theirs["points"]]
        assert all(p["unitsSold"] is None and p["medianPrice"] is None for p in mine["points"])
    for hidden in ("amenities", "floorPlans.numberOfBedrooms", "floorPlans.floorPlanType"):
        response = api.get("/v1-lite/all/market_stats", KEY_LITE, groupBy=hidden)
        assert response.status_code == 400 and "groupBy" in response.json()["message"], hidden


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        ({"interval": "week"}, "interval"),
        ({"since": "2026-05-01", "until": "2026-01-01"}, "since"),
        ({"since": "2010-01-01", "until": "2026-01-01"}, "10 years"),
        ({"since": "yesterday"}, "since"),
        ({"groupBy": "bogus"}, "groupBy"),
        ({"groupBy": "floorPlans.squareFeet"}, "groupBy"),
        ({"groupBy": "cityOrDistrict,type"}, "groupBy"),
        ({"groupLimit": "0"}, "groupLimit"),
        ({"filterQuery": "type:"}, "filterQuery"),
        ({"unitFilter": "beds > 2"}, "unitFilter"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(api: Api, asked: dict[str, str], named: str) -> None:
    response = api.get(MARKET, **asked)
    assert response.status_code == 400, response.text
    assert named in response.json()["message"]


def test_numbers_and_booleans_group_as_facet_counts_keys_them(api: Api, window: Window) -> None:
    assert_matches_oracle(api, window, interval="quarter", groupBy="completionYear")
    answer = assert_matches_oracle(api, window, interval="quarter", groupBy="isFeatured")
    assert {s["group"] for s in answer["series"]} <= {"true", "false"}


@pytest.mark.parametrize("attribute", PLAN_ATTRIBUTES)
def test_grouped_by_a_plan_attribute_counts_each_unit_in_its_plan_s_group(api: Api, window: Window, attribute: str
                                                                         ) -> None:  # fmt: skip
    answer = assert_matches_oracle(api, window, interval="quarter", groupBy=attribute)
    assert len(answer["series"]) > 1


def test_grouped_by_bedrooms_with_a_filter_by_month_matches_the_oracle(api: Api, window: Window) -> None:
    answer = assert_matches_oracle(
        api, window, groupBy="floorPlans.numberOfBedrooms", groupLimit=3, filterQuery='sellingStatus:"Selling Now"'
    )
    whole = assert_matches_oracle(api, window, filterQuery='sellingStatus:"Selling Now"')
    assert "2" in [s["group"] for s in answer["series"]] and len(answer["series"]) == 3
    assert whole["series"][0]["points"]


def test_group_limit_keeps_the_most_frequent_values(api: Api, window: Window) -> None:
    since, until = window
    counts = api.ok("/v1/all/facet_counts", facets="neighbourhood", format="list")["neighbourhood"]
    answer = api.ok(MARKET, groupBy="neighbourhood", groupLimit=3, since=since, until=until)
    assert [s["group"] for s in answer["series"]] == [c["value"] for c in counts[:3]]
