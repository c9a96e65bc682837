"""tests/test_webhook_filters.py's tests again with everything in PostgreSQL: each test's data directory is given a
fresh database through ``PRECON_SERVICE_DATABASE_URL``, which then holds the catalogue, the keys, the subscriptions
(their selections in the columns of migration 0008) and the outbox; catalogue events reach the subscribers from the
PostgreSQL store's writes, through its journal. Where PostgreSQL's writes keep no earlier document, the listing
before a write is its entries undone (tests/test_webhook_filters.py skips the deletion test there)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import pg_support
from tests.test_webhook_filters import *  # noqa: F403 - the module's tests, run here on the other store

# Tests of that module that open no data directory: they run there, once.
for _name in (
    "test_a_created_or_deleted_record_counts_for_the_fields_it_holds",
    "test_the_listing_before_a_write_is_its_entries_undone",
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
    assert type(service.directory.live).__name__ == "ReplicaCatalogue"
    assert type(service.directory.webhooks).__name__ == "PostgresWebhookStore"
