"""tests/test_webhooks.py's service tests again, with the catalogue and sandbox in PostgreSQL: each test's data
directory is given a fresh database through ``PRECON_SERVICE_DATABASE_URL`` (catalogue events reach the
subscribers from the PostgreSQL store's writes)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests import pg_support
from tests.test_webhooks import *  # noqa: F403 - the module's tests, run here on the other store

# Tests of that module that open no data directory (they run there, once), or read SQLite itself (the first).
for _name in (
    "test_catalogue_changes_fire_listing_and_profile_events",
    "test_outside_development_loopback_and_http_are_refused",
    "test_a_dns_answer_that_turns_private_is_refused_at_connect_time",
    "test_the_delivery_body_is_the_stored_event",
    "test_a_key_holds_at_most_100_subscriptions_even_when_created_at_once",
    "test_property_concurrent_creates_and_deletes_never_pass_the_limit",
    "test_a_profile_event_reaches_only_keys_granted_one_of_its_provinces",
    "test_property_a_profile_reaches_a_key_only_through_a_grant_and_only_with_its_granted_listings",
    "test_send_now_leaves_a_delivery_a_sender_holds_to_it",
    "test_a_delivery_stored_before_a_hard_kill_is_sent_after_the_restart",
):
    del globals()[_name]

pg_cluster = pg_support.pg_cluster


@pytest.fixture(autouse=True)
def catalogue_in_postgresql(pg_cluster: pg_support.Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = pg_cluster.database()
    monkeypatch.setenv("PRECON_SERVICE_DATABASE_URL", pg_cluster.url(name))
    yield name
    pg_cluster.drop(name)


def test_this_module_runs_on_postgresql(service: Running) -> None:  # noqa: F405
    assert type(service.directory.live).__name__ == "PostgresCatalogueStore"


def test_catalogue_changes_in_postgresql_fire_listing_events(service: Running, receiver: Receiver) -> None:  # noqa: F405
    """tests/test_webhooks.py's test of catalogue events, the record taken through the store's interface."""
    from precon.service.store import ListingQuery

    store = service.directory.live
    record = store.search_listings(ListingQuery(limit=1)).documents[0]
    with service.client() as client:
        updated = client.create_webhook(receiver.url + "?updated", "listing.updated")
        deleted = client.create_webhook(receiver.url + "?deleted", "listing.deleted")
    store.upsert_listings([{**record, "name": "Renamed Towers"}])
    store.delete_listing(record["listingId"])
    arrived = receiver.wait_for(2)
    by_secret = {}
    for headers, body in arrived:
        for subscription in (updated, deleted):
            with contextlib.suppress(Exception):
                by_secret[subscription.id] = verified(subscription.secret or "", headers, body)  # noqa: F405
    assert by_secret[updated.id]["type"] == "listing.updated"
    assert by_secret[updated.id]["data"]["listing"]["name"] == "Renamed Towers"
    assert by_secret[deleted.id]["data"]["listing"]["listingId"] == record["listingId"]
