"""(ours) Filtered webhook subscriptions (contract.md, "Filtered subscriptions"): what a subscription with
``filterQuery``, ``unitFilter`` or ``fields`` hears of, received signed on a loopback receiver; the 400s of bad
ones; the list showing them. tests/test_pg_suite_webhook_filters.py runs them again with everything in PostgreSQL."""

from __future__ import annotations

import copy
import time
from typing import Any

import httpx
import pytest

from precon.client.models import WebhookSubscription
from precon.service.stores.history import listing_changes
from precon.service.webhooks.selection import relevant, reverted
from tests.waiting import wait_until
from tests.webhook_support import KEY_A, KEY_BC, Receiver, Running, verified

TORONTO_TWO_BEDS = {
    "filter_query": "cityOrDistrict:Toronto",
    "unit_filter": "numberOfBedrooms = 2 AND units.price < 700000",
}
"""'2-bedroom units under $700,000 in Toronto'."""


def unit(number: str, price: int, status: str = "Available") -> dict[str, Any]:
    return {"unitNumber": number, "floor": number[0], "status": status, "price": price}


def a_listing(service: Running, listing_id: str, city: str = "Toronto", price: int = 650_000) -> dict[str, Any]:
    """A listing of the catalogue made over: in ``city`` (Ontario's or British Columbia's), with a 2-bedroom plan
    whose units cost ``price`` and ``price + 40,000``, and a 3-bedroom plan at $900,000."""
    store = service.directory.live
    [base] = store.get_listings([store.matching_listing_ids(_any())[0]], None).values()
    record = copy.deepcopy(base)
    for name in ("objectID", "path"):
        record.pop(name, None)
    record.update(
        listingId=listing_id,
        name=f"{listing_id} Towers",
        cityOrDistrict=city,
        state="Ontario" if city == "Toronto" else "British Columbia",
        floorPlans=[
            {"id": "two", "name": "Two", "numberOfBedrooms": 2, "startPrice": price, "status": "Available",
             "units": [unit("101", price), unit("102", price + 40_000)]},
            {"id": "three", "name": "Three", "numberOfBedrooms": 3, "startPrice": 900_000, "status": "Available",
             "units": [unit("201", 900_000)]},
        ],
    )  # fmt: skip
    return record


def _any() -> Any:
    from precon.service.stores.types import ListingQuery

    return ListingQuery(limit=1)


def stored(service: Running, listing_id: str) -> dict[str, Any]:
    """The listing as stored: a change made to it changes only what the test changes."""
    return copy.deepcopy(service.directory.live.get_listings([listing_id], None)[listing_id])


def write(service: Running, *records: dict[str, Any]) -> None:
    service.directory.live.upsert_listings(list(records))


def heard(receiver: Receiver, subscriptions: list[WebhookSubscription]) -> dict[str, list[dict[str, Any]]]:
    """What each subscription has received so far, its signature verified with its own secret."""
    found: dict[str, list[dict[str, Any]]] = {s.id: [] for s in subscriptions}
    for headers, body in list(receiver.received):
        for subscription in subscriptions:
            try:
                found[subscription.id].append(verified(subscription.secret or "", headers, body))
            except Exception:  # another subscription's delivery
                continue
    return found


def settle(
    receiver: Receiver, subscriptions: list[WebhookSubscription], witness: WebhookSubscription, count: int
) -> dict[str, list[dict[str, Any]]]:
    """Waits for ``witness`` (an unfiltered subscription) to have ``count`` deliveries, then a little more: what the
    others were to receive of the same writes has arrived by then."""
    wait_until(lambda: len(heard(receiver, [witness])[witness.id]) >= count, timeout=20)
    time.sleep(1.0)
    return heard(receiver, subscriptions)


def brief(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["scope"], e["plan"], e["unit"], e["field"], e["change"], e["from"], e["to"]) for e in entries]


def records_history(service: Running) -> bool:
    """Whether the store's writes carry their history entries (every store here, once PostgreSQL records them)."""
    write(service, a_listing(service, "probe-history"))
    changed = stored(service, "probe-history")
    changed["name"] = "Probe"
    return service.directory.live.upsert_listings([changed])[0].entries is not None


# -- end to end ------------------------------------------------------------------------------------------------


def test_a_unit_that_sells_is_heard_with_its_change_and_a_renaming_is_not(service: Running, receiver: Receiver) -> None:
    if not records_history(service):
        pytest.skip("this store records no history: a fields subscription hears of no update")
    write(service, a_listing(service, "sells-1"))
    with service.client() as client:
        chosen = client.create_webhook(
            receiver.url + "?units", "listing.updated", fields=["status", "price"], **TORONTO_TWO_BEDS
        )
        everything = client.create_webhook(receiver.url + "?all", "listing.updated")
    sold = stored(service, "sells-1")
    sold["floorPlans"][0]["units"][0]["status"] = "Sold"
    write(service, sold)
    got = settle(receiver, [chosen, everything], everything, 1)
    [delivery] = got[chosen.id]
    assert delivery["type"] == "listing.updated" and delivery["data"]["listing"]["listingId"] == "sells-1"
    assert brief(delivery["data"]["changes"]) == [("unit", "two", "101", "status", "updated", "Available", "Sold")]

    renamed = stored(service, "sells-1")
    renamed["name"] = "Renamed Towers"
    write(service, renamed)
    got = settle(receiver, [chosen, everything], everything, 2)
    assert len(got[chosen.id]) == 1, "a change of another field: nothing"
    assert [d["data"]["changes"][0]["field"] for d in got[everything.id]] == ["status", "name"], "unfiltered: both"

    both = stored(service, "sells-1")
    both["name"] = "Twice Renamed"
    both["floorPlans"][0]["units"][1]["price"] = 695_000
    write(service, both)
    got = settle(receiver, [chosen, everything], everything, 3)
    assert brief(got[chosen.id][1]["data"]["changes"]) == [("unit", "two", "102", "price", "updated", 690_000, 695_000)]
    assert len(got[everything.id][2]["data"]["changes"]) == 2, "the unfiltered one hears of both changes"


def test_matching_stopping_and_the_provinces_of_the_key(service: Running, receiver: Receiver) -> None:
    with service.client() as client:
        matched = client.create_webhook(receiver.url + "?matched", "listing.matched", **TORONTO_TWO_BEDS)
        updates = client.create_webhook(receiver.url + "?updates", "listing.updated", **TORONTO_TWO_BEDS)
        witness = client.create_webhook(receiver.url + "?all", "listing.updated")
        created = client.create_webhook(receiver.url + "?created", "listing.created")
    with service.client(KEY_BC, province="bc") as bc_only:
        bc_matched = bc_only.create_webhook(
            receiver.url + "?bc", "listing.matched", filter_query="cityOrDistrict:Toronto"
        )
    subscriptions = [matched, updates, witness, created, bc_matched]

    write(service, a_listing(service, "new-1"), a_listing(service, "elsewhere-1", city="Vancouver"))
    wait_until(lambda: len(heard(receiver, [created])[created.id]) >= 2, timeout=20)
    time.sleep(1.0)
    got = heard(receiver, subscriptions)
    assert [(d["type"], d["data"]["listing"]["listingId"]) for d in got[matched.id]] == [("listing.matched", "new-1")]
    assert got[bc_matched.id] == [], "a key granted only bc hears of no Toronto listing"

    moved = stored(service, "elsewhere-1")
    moved.update(cityOrDistrict="Toronto", state="Ontario")
    too_dear = stored(service, "new-1")
    for each in too_dear["floorPlans"][0]["units"]:
        each["price"] = 800_000
    write(service, moved)
    write(service, too_dear)
    got = settle(receiver, subscriptions, witness, 2)
    assert [d["data"]["listing"]["listingId"] for d in got[matched.id]] == ["new-1", "elsewhere-1"]
    assert sorted(d["data"]["listing"]["listingId"] for d in got[updates.id]) == ["elsewhere-1", "new-1"], (
        "matched after (the move), matched before (the dearer units)"
    )

    other = stored(service, "new-1")
    other["name"] = "Out of the filter"
    write(service, other)
    got = settle(receiver, subscriptions, witness, 3)
    assert len(got[updates.id]) == 2, "matching neither before nor after: nothing"
    assert got[bc_matched.id] == []


def test_a_filtered_deletion_is_heard_where_the_listing_matched(service: Running, receiver: Receiver) -> None:
    write(service, a_listing(service, "gone-1"), a_listing(service, "gone-2", price=750_000))
    with service.client() as client:
        filtered = client.create_webhook(receiver.url + "?f", "listing.deleted", **TORONTO_TWO_BEDS)
        everything = client.create_webhook(receiver.url + "?all", "listing.deleted")
    service.directory.live.delete_listing("gone-2")
    service.directory.live.delete_listing("gone-1")
    got = settle(receiver, [filtered, everything], everything, 2)
    assert [d["data"]["listing"]["listingId"] for d in got[filtered.id]] == ["gone-1"]


# -- what a subscription may be ----------------------------------------------------------------------------------


def post(service: Running, body: dict[str, Any], version: str = "v1") -> httpx.Response:
    full = {"env": "live", "targetUrl": "https://1.1.1.1/h", "event": "listing.updated", **body}
    return httpx.post(f"{service.url}/{version}/all/webhooks", json=full, headers={"x-api-key": KEY_A}, timeout=30)


@pytest.mark.parametrize(
    ("body", "version", "fragments"),
    [
        ({"filterQuery": "city:Toronto AND ("}, "v1", ["filterQuery", "position 18"]),
        ({"unitFilter": "numberOfBedrooms >"}, "v1", ["unitFilter", "position"]),
        ({"unitFilter": "cityOrDistrict:Toronto"}, "v1", ["unitFilter", "'cityOrDistrict' is not a floor plan field"]),
        ({"fields": ["status", "bogus"]}, "v1", ["fields: 'bogus' is not a field"]),
        ({"fields": ["a"] * 10_000}, "v1", ["fields: 10000 names given; at most"]),
        ({"fields": []}, "v1", ["fields: name at least one field"]),
        ({"filterQuery": "amenities:Gym"}, "v1-lite", ["filterQuery: 'amenities' is not an attribute of a v1-lite"]),
        ({"unitFilter": "numberOfBedrooms = 2"}, "v1-lite", ["unitFilter: v1-lite has no floor plans"]),
        ({"fields": ["price"]}, "v1-lite", ["fields: 'price' is not an attribute of a v1-lite listing"]),
        ({"event": "profile.updated", "fields": ["name"]}, "v1", ["profile.updated takes none of them"]),
        ({"event": "listing.matched", "fields": ["name"]}, "v1", ["listing.matched needs filterQuery or unitFilter"]),
    ],
)
def test_a_bad_selection_is_a_400_naming_the_parameter(
    service: Running, body: dict[str, Any], version: str, fragments: list[str]
) -> None:
    response = post(service, body, version)
    assert response.status_code == 400, response.text
    for fragment in fragments:
        assert fragment in response.json()["message"]


def test_the_list_shows_the_selection_and_plain_subscriptions_as_before(service: Running) -> None:
    assert post(service, {"filterQuery": "name:Towers", "fields": ["name"]}, "v1-lite").status_code == 200
    with service.client() as client:
        fields = ["price", "startPrice"]
        made = client.create_webhook("https://1.1.1.1/f", "listing.updated", fields=fields, **TORONTO_TWO_BEDS)
        plain = client.create_webhook("https://1.1.1.1/p", "listing.created")
        listed = {s.id: s for s in client.list_webhooks()}
    assert (made.filterQuery, made.unitFilter, made.fields) == (*TORONTO_TWO_BEDS.values(), fields)
    assert listed[made.id].fields == ["price", "startPrice"] and listed[made.id].filterQuery == "cityOrDistrict:Toronto"
    assert listed[made.id].secret is None
    raw = httpx.get(f"{service.url}/v1/all/webhooks", headers={"x-api-key": KEY_A}).json()["results"]
    shown = {s["id"]: s for s in raw}
    assert set(shown[plain.id]) == {"id", "env", "targetUrl", "event", "createdAt"}
    assert set(shown[made.id]) == {
        "id",
        "env",
        "targetUrl",
        "event",
        "createdAt",
        "filterQuery",
        "unitFilter",
        "fields",
    }


# -- the rules, on records -------------------------------------------------------------------------------------


def test_a_created_or_deleted_record_counts_for_the_fields_it_holds() -> None:
    def entry(scope: str, field: str | None) -> dict[str, Any]:
        return {"scope": scope, "field": field, "change": "updated" if field else "created"}

    units, plans, names = frozenset({"price"}), frozenset({"startPrice"}), frozenset({"cityOrDistrict"})
    assert relevant(entry("unit", None), units) and relevant(entry("floorPlan", None), units)
    assert relevant(entry("listing", None), units) and relevant(entry("listing", None), names)
    assert not relevant(entry("unit", None), plans) and not relevant(entry("floorPlan", None), names)
    assert relevant(entry("unit", "price"), units) and not relevant(entry("unit", "status"), units)


def test_the_listing_before_a_write_is_its_entries_undone() -> None:
    before = {
        "listingId": "r1", "name": "Old", "cityOrDistrict": "Toronto",
        "floorPlans": [{"id": "a", "status": "Available", "units": [unit("101", 600_000), unit("102", 610_000)]}],
    }  # fmt: skip
    after = copy.deepcopy(before)
    after["name"] = "New"
    after.pop("cityOrDistrict")
    after["floorPlans"][0]["units"][0]["status"] = "Sold"
    after["floorPlans"][0]["units"].append(unit("103", 620_000))
    after["floorPlans"].append({"id": "b", "units": [unit("201", 1)]})
    assert reverted(after, listing_changes(before, after, "2026-01-01T00:00:00.000Z")) == before
