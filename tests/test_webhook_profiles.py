"""Profile events reach only the keys that may read the profile, and only with the listings they may read."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from precon.client.models import PROVINCES
from precon.service.accounts.sqlite import AccountStore
from precon.service.stores.types import CatalogueChange
from precon.service.webhooks.model import (
    Event,
    Subscription,
)
from precon.service.webhooks.notify import CatalogueNotifier

if TYPE_CHECKING:
    pass
from tests.webhook_support import ProfileWorld, _deliveries_by_key


def test_a_profile_event_reaches_only_keys_granted_one_of_its_provinces(profile_world: ProfileWorld) -> None:
    world = profile_world
    world.store.upsert_listings(
        [
            {"listingId": "L1", "state": "Ontario", "builders": ["Builders/b1"]},
            {"listingId": "L2", "state": "British Columbia", "builders": ["Builders/b1"]},
        ]
    )
    record = {"path": "Builders/b1", "name": "B One", "listings": ["Listings/L1", "Listings/L2", "Listings/Gone"]}
    world.store.upsert_profiles([record])
    world.store.upsert_profiles([{"path": "Builders/lonely", "name": "Nobody's Builder", "listings": []}])
    got = _deliveries_by_key(world.webhooks)
    keys = world.keys

    def profiles(name: str) -> list[tuple[str, str, list[str]]]:
        return [
            (e["type"], e["data"]["profile"]["id"], e["data"]["profile"].get("listings"))
            for e in got.get(keys[name], [])
        ]

    assert profiles("on") == [("profile.created", "b1", ["Listings/L1"])]
    assert profiles("bc-lite") == [("profile.created", "b1", ["Listings/L2"])]
    assert profiles("ab") == []  # granted no province the profile is in
    assert profiles("sandbox") == []  # no live grant at all
    assert profiles("everywhere") == [
        ("profile.created", "b1", ["Listings/L1", "Listings/L2"]),  # a listing not found is in no province
        ("profile.created", "lonely", []),  # a profile in no province is read under "all" only
    ]
    # A deletion says only which profile it was, to every key with a live grant.
    world.store.delete_profile("Builders/b1")
    deleted = [e for es in _deliveries_by_key(world.webhooks).values() for e in es if e["type"] == "profile.deleted"]
    assert {e["data"]["profile"]["id"] for e in deleted} == {"b1"}
    assert all(set(e["data"]["profile"]) == {"id", "path"} for e in deleted)


class _FakeCatalogue:
    """A profile named by listings in given provinces: as much of a store as the notifier reads."""

    def __init__(self, listing_provinces: dict[str, str | None]) -> None:
        self.listing_provinces = listing_provinces
        self.listeners: list[Any] = []
        self.record = {
            "id": "p1",
            "path": "Builders/p1",
            "name": "P",
            "listings": [f"Listings/{i}" for i in listing_provinces],
        }

    def get_profiles(self, paths: list[str]) -> dict[str, dict[str, Any]]:
        return {"Builders/p1": dict(self.record)} if "Builders/p1" in paths else {}

    def find_profile(self, profile_id: str, collection: str | None, province: str | None) -> dict[str, Any] | None:
        inside = province is None or province in self.listing_provinces.values()
        return dict(self.record) if inside else None

    def get_listings(self, ids: list[str], province: str | None) -> dict[str, dict[str, Any]]:
        states = {code: name for code, name in PROVINCES.items()}
        return {
            i: {"listingId": i, "state": states[p]}
            for i in ids
            if (p := self.listing_provinces.get(i)) is not None and province in (None, p)
        }


class _Outbox:
    def __init__(self, subscriptions: list[Subscription]) -> None:
        self._subscriptions = subscriptions
        self.events: list[Event] = []

    def subscriptions(self, key_id: int | None = None, event: str | None = None, env: str | None = None) -> Any:
        return [s for s in self._subscriptions if event in (None, s.event) and env in (None, s.env)]

    def publish(self, events: list[Event], first_delay: float = 0.0) -> list[tuple[str, int]]:
        self.events.extend(events)
        return [("evt", len(e.subscribers)) for e in events]


grant_strategy = st.tuples(
    st.sets(st.sampled_from(["v1", "v1-lite", "v1-sandbox"]), min_size=1),
    st.one_of(st.just(frozenset({"all"})), st.sets(st.sampled_from(sorted(PROVINCES)), min_size=1, max_size=4)),
)


@settings(max_examples=40, deadline=None)
@given(
    keys=st.lists(st.lists(grant_strategy, min_size=1, max_size=3), min_size=1, max_size=5),
    listings=st.dictionaries(
        st.sampled_from([f"L{i}" for i in range(8)]), st.one_of(st.none(), st.sampled_from(sorted(PROVINCES)))
    ),
)
def test_property_a_profile_reaches_a_key_only_through_a_grant_and_only_with_its_granted_listings(
    keys: list[list[tuple[set[str], frozenset[str]]]], listings: dict[str, str | None]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        accounts = AccountStore(Path(folder) / "accounts.sqlite3")
        subscriptions = []
        granted: dict[int, list[tuple[set[str], frozenset[str]]]] = {}
        for number, grants in enumerate(keys):
            raw = f"pk_property_{number}"
            for index, (versions, provinces) in enumerate(grants):
                accounts.create_key(f"product-{number}-{index}", sorted(versions), sorted(provinces), key=raw)
            key = accounts.authenticate(raw)
            assert key is not None
            granted[key.key_id] = grants
            subscriptions.append(
                Subscription(f"wh_{number}", key.key_id, "live", "profile.updated", "https://1.1.1.1/", "s", "t")
            )
        catalogue = _FakeCatalogue(listings)
        outbox = _Outbox(subscriptions)
        notifier = CatalogueNotifier(outbox, accounts, catalogue, "live")  # type: ignore[arg-type]
        notifier([CatalogueChange("profile", "updated", "Builders/p1")])
    profile_provinces = {p for p in listings.values() if p is not None}
    delivered: dict[int, dict[str, Any]] = {}
    for event in outbox.events:
        for subscriber in event.subscribers:
            assert subscriber.key_id not in delivered, "one delivery per subscription"
            delivered[subscriber.key_id] = event.data["profile"]
    for key_id, grants in granted.items():
        live = [provinces for versions, provinces in grants if versions & {"v1", "v1-lite"}]
        readable = set().union(*live) if live else set()
        may_read = "all" in readable or bool(readable & profile_provinces)
        assert (key_id in delivered) == may_read, (grants, listings)
        if may_read:
            visible = set(PROVINCES) if "all" in readable else readable
            expected = [f"Listings/{i}" for i, p in listings.items() if p in visible]
            assert delivered[key_id]["listings"] == expected
            assert {k: v for k, v in delivered[key_id].items() if k != "listings"} == {
                k: v for k, v in catalogue.record.items() if k != "listings"
            }
