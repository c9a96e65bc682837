"""tests/test_webhooks.py's service tests (and test_webhook_limits, _profiles and _send_now's) again, with everything in
PostgreSQL: each test's data directory is given a fresh database through ``PRECON_SERVICE_DATABASE_URL``, which then
holds the catalogue and the sandbox, the keys, the webhook subscriptions and the delivery outbox (catalogue events
reach the subscribers from the PostgreSQL store's writes; the service, and the one killed and restarted, send from
the outbox in PostgreSQL). The stores' own behaviour on both is tests/test_pg_webhook_store.py's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests import pg_support
from tests.test_webhook_limits import *  # noqa: F403 - the modules' tests, run here on the other store
from tests.test_webhook_profiles import *  # noqa: F403
from tests.test_webhook_send_now import *  # noqa: F403
from tests.test_webhooks import *  # noqa: F403
from tests.webhook_support import *  # noqa: F403

# Tests of that module that open no data directory but SQLite files of their own (they run there, once; the
# same calls on the PostgreSQL stores are tests/test_pg_webhook_store.py's), or read SQLite itself (the first).
for _name in (
    "test_catalogue_changes_fire_listing_and_profile_events",
    "test_outside_development_loopback_and_http_are_refused",
    "test_a_dns_answer_that_turns_private_is_refused_at_connect_time",
    "test_the_delivery_body_is_the_stored_event",
    "test_a_key_holds_at_most_100_subscriptions_even_when_created_at_once",
    "test_property_concurrent_creates_and_deletes_never_pass_the_limit",
    "test_property_a_profile_reaches_a_key_only_through_a_grant_and_only_with_its_granted_listings",
    "test_send_now_leaves_a_delivery_a_sender_holds_to_it",
):
    del globals()[_name]

pg_cluster = pg_support.pg_cluster


@pytest.fixture(autouse=True)
def catalogue_in_postgresql(pg_cluster: pg_support.Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = pg_cluster.database()
    monkeypatch.setenv("PRECON_SERVICE_DATABASE_URL", pg_cluster.url(name))
    yield name
    pg_cluster.drop(name)


@pytest.fixture
def profile_world(pg_cluster: pg_support.Cluster, catalogue_in_postgresql: str) -> Iterator[ProfileWorld]:  # noqa: F405
    """tests/test_webhooks.py's profile world with the catalogue, the keys and the subscriptions in PostgreSQL."""
    from precon.service.accounts.postgres import PostgresAccountStore
    from precon.service.stores.postgres.store import PostgresCatalogueStore
    from precon.service.webhooks.postgres import PostgresWebhookStore

    conninfo = pg_cluster.conninfo(catalogue_in_postgresql)
    store = PostgresCatalogueStore(conninfo)
    yield from make_profile_world(store, PostgresAccountStore(conninfo), PostgresWebhookStore(conninfo))  # noqa: F405


def test_this_module_runs_on_postgresql(
    service: Running,  # noqa: F405
    pg_cluster: pg_support.Cluster,
    catalogue_in_postgresql: str,
) -> None:
    import psycopg

    from precon.service.accounts.postgres import PostgresAccountStore
    from precon.service.webhooks.postgres import PostgresWebhookStore

    directory = service.directory
    assert type(directory.live).__name__ == "ReplicaCatalogue"
    assert isinstance(directory.accounts, PostgresAccountStore)
    assert isinstance(directory.webhooks, PostgresWebhookStore)
    with service.client() as client:
        subscription = client.create_webhook("https://1.1.1.1/h", "listing.updated")
    with psycopg.connect(pg_cluster.conninfo(catalogue_in_postgresql)) as db:
        stored = db.execute("SELECT id FROM webhook_subscriptions").fetchall()
        keys = db.execute("SELECT count(*) FROM api_keys").fetchone()
    assert stored == [(subscription.id,)]
    assert keys is not None and keys[0] == 4, "the development key and the fixture's three"
    assert not directory.settings.accounts_path.exists() and not directory.settings.webhooks_path.exists()


def test_catalogue_changes_in_postgresql_fire_listing_events(service: Running, receiver: Receiver) -> None:  # noqa: F405
    """tests/test_webhooks.py's test of catalogue events, the record taken through the store's interface."""
    from precon.service.stores.types import ListingQuery

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
