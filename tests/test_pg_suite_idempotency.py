"""tests/test_idempotency.py's service tests again, with the outbox (and the stored answers of ``Idempotency-Key``)
in PostgreSQL: each test's data directory is given a fresh database through ``PRECON_SERVICE_DATABASE_URL``."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from precon.service.webhooks.model import IdempotencyKey
from precon.service.webhooks.postgres import PostgresWebhookStore
from tests import pg_support
from tests.test_idempotency import *  # noqa: F403 - the module's tests, run here on the other store

del globals()["test_a_key_older_than_a_day_is_purged_and_free_again"]  # the SQLite file's; PostgreSQL's is below

pg_cluster = pg_support.pg_cluster


@pytest.fixture(autouse=True)
def catalogue_in_postgresql(pg_cluster: pg_support.Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = pg_cluster.database()
    monkeypatch.setenv("PRECON_SERVICE_DATABASE_URL", pg_cluster.url(name))
    yield name
    pg_cluster.drop(name)


def test_this_module_runs_on_postgresql(service: Running) -> None:  # noqa: F405
    assert isinstance(service.directory.webhooks, PostgresWebhookStore)


def test_a_key_older_than_a_day_is_purged_and_free_again_in_postgresql(
    pg_cluster: pg_support.Cluster, catalogue_in_postgresql: str
) -> None:
    conninfo = pg_cluster.conninfo(catalogue_in_postgresql)
    store = PostgresWebhookStore(conninfo)
    key = IdempotencyKey(1, "k", "f")
    try:
        assert not store.publish_once([], 0.0, key, lambda published: b"first").replayed
        assert store.publish_once([], 0.0, key, lambda published: b"second").replayed
        with psycopg.connect(conninfo, autocommit=True) as db:
            db.execute("UPDATE webhook_idempotency_keys SET created_at = created_at - 86401")
        assert store.stored_answer(key) is None
        again = store.publish_once([], 0.0, key, lambda published: b"second")
        assert not again.replayed and again.body == b"second"
        with psycopg.connect(conninfo) as db:
            count = db.execute("SELECT count(*) FROM webhook_idempotency_keys").fetchone()
        assert count is not None and count[0] == 1
    finally:
        store.close()
