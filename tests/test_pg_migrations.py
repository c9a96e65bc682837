"""The PostgreSQL schema's migrations on a throw-away cluster (see tests/pg_support.py)."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from precon.service.stores.postgres import migrations
from tests import pg_support

pg_cluster = pg_support.pg_cluster
pg_empty_database = pg_support.pg_empty_database

EXTENSIONS = {"unaccent", "pg_trgm", "cube", "earthdistance"}
HEAD = "0009"
"""The newest revision: 0001 the catalogue, 0002 the accounts and webhooks, 0003 the webhook idempotency keys, ...,
0007 the listing history, 0008 the selections of filtered webhook subscriptions, 0009 what deleted listings last
were."""


def test_the_cluster_runs_postgresql_15(pg_empty_database: str) -> None:
    with psycopg.connect(pg_empty_database) as connection:
        row = connection.execute("SHOW server_version_num").fetchone()
    assert row is not None and int(row[0]) // 10000 == 15


def test_upgrade_makes_the_schema_with_its_extensions_and_downgrade_removes_it(pg_empty_database: str) -> None:
    assert migrations.current(pg_empty_database) is None
    migrations.upgrade(pg_empty_database)
    assert migrations.current(pg_empty_database) == HEAD
    with psycopg.connect(pg_empty_database) as connection:
        extensions = {r[0] for r in connection.execute("SELECT extname FROM pg_extension")}
        tables = {r[0] for r in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        folded = connection.execute("SELECT unaccent('Québec Montréal')").fetchone()
        distance = connection.execute(
            "SELECT earth_distance(ll_to_earth(43.6532, -79.3832), ll_to_earth(45.5019, -73.5674))"
        ).fetchone()
    assert extensions >= EXTENSIONS
    assert {"listings", "listing_references", "plan_ids", "profiles", "catalogue_log", "meta"} <= tables
    assert "listing_history" in tables  # written by the writes, with the documents (0007)
    assert not {"listing_terms", "listing_numbers", "listing_words", "profile_provinces"} & tables  # reads: the copies
    assert {"api_keys", "products", "grants", "webhook_subscriptions", "webhook_deliveries"} <= tables
    assert "webhook_idempotency_keys" in tables
    assert folded == ("Quebec Montreal",)
    assert distance is not None and 500_000 < distance[0] < 510_000  # Toronto to Montreal
    migrations.upgrade(pg_empty_database)  # at head already: nothing to do
    migrations.downgrade(pg_empty_database)
    with psycopg.connect(pg_empty_database) as connection:
        left = {r[0] for r in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert left <= {"alembic_version"}


def test_a_database_at_the_first_revision_is_migrated_to_the_newest_keeping_its_data(pg_empty_database: str) -> None:
    migrations.upgrade(pg_empty_database, "0001")
    with psycopg.connect(pg_empty_database) as connection:
        connection.execute("INSERT INTO meta(key, value) VALUES ('kept', '1')")
    migrations.upgrade(pg_empty_database)
    assert migrations.current(pg_empty_database) == HEAD
    with psycopg.connect(pg_empty_database) as connection:
        kept = connection.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone()
        tables = {r[0] for r in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert kept == ("1",) and "webhook_deliveries" in tables
    migrations.downgrade(pg_empty_database, "0001")
    assert migrations.current(pg_empty_database) == "0001"


def test_without_postgresql_the_tests_skip_locally_and_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PRECON_REQUIRE_SYSTEM_TESTS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        pg_support.unavailable("PostgreSQL is not installed")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI requires"):
        pg_support.unavailable("PostgreSQL is not installed")


def test_two_catalogues_in_one_database_each_in_its_own_schema(pg_empty_database: str) -> None:
    from precon.service.stores.postgres.store import PostgresCatalogueStore

    live = PostgresCatalogueStore(pg_empty_database)
    sandbox = PostgresCatalogueStore(pg_empty_database, schema="sandbox")
    try:
        assert migrations.current(pg_empty_database) == migrations.current(pg_empty_database, "sandbox") == HEAD
        live.upsert_listings([{"listingId": "A1", "name": "Live Lofts", "state": "Ontario"}])
        sandbox.upsert_listings([{"listingId": "S1", "name": "Sandbox Lofts", "state": "Ontario"}])
        assert live.get_listings(["A1", "S1"], None).keys() == {"A1"}
        assert sandbox.get_listings(["A1", "S1"], None).keys() == {"S1"}
    finally:
        live.close()
        sandbox.close()
    with pytest.raises(ValueError, match="schema"):
        migrations.upgrade(pg_empty_database, schema="x; DROP TABLE listings")


def test_replicas_starting_together_migrate_one_after_the_other(pg_empty_database: str) -> None:
    errors: list[BaseException] = []

    def migrate(schema: str) -> None:
        try:
            migrations.upgrade(pg_empty_database, schema=schema)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=migrate, args=(schema,)) for schema in ["public", "sandbox"] * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert migrations.current(pg_empty_database) == migrations.current(pg_empty_database, "sandbox") == HEAD


def test_replicas_starting_on_an_empty_database_fill_it_once(pg_empty_database: str) -> None:
    from precon.service.stores.postgres.catalogues import open_catalogues

    opened: list[Any] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            opened.append(open_catalogues(pg_empty_database, 50, 7))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        for live, sandbox in opened:
            assert live.counts()["listings"] == 50
            assert sandbox.counts()["listings"] == 40
            assert live.generation() == 1 + 1  # profiles, then listings: loaded once
    finally:
        for stores in opened:
            for store in stores:
                store.close()
