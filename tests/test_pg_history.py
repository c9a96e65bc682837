"""(ours) History on PostgreSQL: each write records what it changed in ``listing_history`` (migration 0007), in its
own transaction and under the generation it raised, and every replica's copy holds exactly those rows, in their
order, whether it followed the log or was made from a snapshot; a copy records none of its own."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from precon.service import catalogue
from precon.service.stores.history import iso_time, listing_changes
from precon.service.stores.postgres import documents, migrations
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.replica import CatalogueCopy, Follower, ReplicaCatalogue
from precon.service.stores.types import HistoryQuery
from tests import pg_support
from tests.catalogues import generated_catalogue
from tests.test_pg_replica_copies import _loaded, copied_history, postgres_history

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database
pg_empty_database = pg_support.pg_empty_database

AT = 1_800_000_000.0
"""A write's time, as a simulated write gives it (2027-01-15T08:00:00.000Z)."""


@pytest.fixture(scope="module")
def generated() -> catalogue.Catalogue:
    return generated_catalogue(60, 5)


def with_units(generated: catalogue.Catalogue, skip: int = 0) -> dict[str, Any]:
    """A generated listing (the ``skip``-th of them) whose first plan has units and which stands in a province."""
    found = [
        record
        for record in generated.listings
        if record.get("state") and record.get("floorPlans") and record["floorPlans"][0].get("units")
    ]
    return copy.deepcopy(found[skip])


def generations(primary: PostgresCatalogueStore) -> list[int]:
    with primary.pool.connection() as db:
        return [int(row[0]) for row in db.execute("SELECT generation FROM listing_history ORDER BY seq")]


def test_migration_0007_adds_the_history_table_to_a_catalogue_and_its_downgrade_drops_it(
    pg_empty_database: str,
) -> None:
    migrations.upgrade(pg_empty_database, "0006")
    with psycopg.connect(pg_empty_database) as connection:
        connection.execute("INSERT INTO meta(key, value) VALUES ('kept', '1')")
    migrations.upgrade(pg_empty_database, "0007")
    with psycopg.connect(pg_empty_database) as connection:
        columns = [
            row[0]
            for row in connection.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'listing_history' "
                "ORDER BY ordinal_position"
            )
        ]
        indexes = {
            r[0] for r in connection.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'listing_history'")
        }
        kept = connection.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone()
    assert columns == [
        "seq", "generation", "at", "listing_id", "province", "scope", "plan", "unit", "field", "change",
        "from_value", "to_value",
    ]  # fmt: skip
    assert any("(generation, seq)" in index for index in indexes)
    assert any("(listing_id, seq)" in index for index in indexes)
    assert kept == ("1",)
    migrations.downgrade(pg_empty_database, "0006")
    assert migrations.current(pg_empty_database) == "0006"
    with psycopg.connect(pg_empty_database) as connection:
        gone = connection.execute("SELECT to_regclass('listing_history')").fetchone()
    assert gone == (None,)


def test_each_write_records_its_entries_under_its_generation_and_a_failed_one_none(
    pg_database: str, generated: catalogue.Catalogue
) -> None:
    primary = PostgresCatalogueStore(pg_database, migrate=False)
    try:
        record = with_units(generated)
        lid = record["listingId"]
        [created] = primary.upsert_listings([record], at=AT)
        assert [(e["at"], e["change"], e["scope"]) for e in created.entries or []] == [
            (iso_time(AT), "created", "listing")
        ]
        assert generations(primary) == [primary.generation()]

        stored = primary.get_listings([lid], None)[lid]
        changed = copy.deepcopy(stored)
        changed["startPrice"] = (stored.get("startPrice") or 0) + 10_000
        changed["floorPlans"][0]["units"][0]["price"] = (stored["floorPlans"][0]["units"][0].get("price") or 0) + 5
        [updated] = primary.upsert_listings([changed], at=AT + 60)
        expected = listing_changes(stored, primary.get_listings([lid], None)[lid], iso_time(AT + 60))
        assert updated.entries == expected and {e["scope"] for e in expected} == {"listing", "unit"}
        held = postgres_history(primary)
        assert [row[7] for row in held] == ["created", "updated", "updated"]
        assert generations(primary) == [primary.generation() - 1] + [primary.generation()] * 2

        # A write that fails after writing (inside the block that makes it one transaction) records nothing.
        generation = primary.generation()
        with pytest.raises(RuntimeError), primary.atomic():
            primary.upsert_listings([{**changed, "name": "Never Committed"}], at=AT + 120)
            primary.delete_listing(lid, at=AT + 120)
            raise RuntimeError("after the write")
        assert postgres_history(primary) == held and primary.generation() == generation
        assert primary.get_listings([lid], None)[lid]["name"] == stored["name"]

        [deleted] = primary.delete_listing(lid, at=AT + 180)
        gone = postgres_history(primary)[-1]
        assert (gone[0], gone[1], gone[3], gone[7]) == (iso_time(AT + 180), lid, "listing", "deleted")
        assert gone[2] == held[0][2] is not None  # the province it stood in, where its history stays readable
        assert [e["change"] for e in deleted.entries or []] == ["deleted"]
    finally:
        primary.close()


def _wait_for(replica: ReplicaCatalogue, generation: int) -> None:
    deadline = time.monotonic() + 10
    while replica.copy.generation() < generation:
        assert time.monotonic() < deadline, "the copy did not follow the writes"
        time.sleep(0.02)


def test_a_followed_copy_and_one_made_from_a_snapshot_hold_postgresqls_history_and_none_of_their_own(
    pg_database: str, tmp_path: Path, generated: catalogue.Catalogue
) -> None:
    primary = _loaded(pg_database, generated)
    replica = ReplicaCatalogue(CatalogueCopy(primary, tmp_path / "followed.sqlite3"))
    writer = PostgresCatalogueStore(pg_database, migrate=False)
    follower = Follower(pg_database, [replica]).start()
    fresh: CatalogueCopy | None = None
    try:
        record = with_units(generated, 1)
        lid, other = record["listingId"], with_units(generated, 2)["listingId"]
        for unit in record["floorPlans"][0]["units"]:
            unit["status"] = "Sold"
        writer.upsert_listings([record], at=AT)
        writer.delete_listing(other, at=AT + 1)
        _wait_for(replica, writer.generation())
        assert copied_history(replica.local) == postgres_history(primary)
        deleted = replica.listing_history(HistoryQuery(listing_id=other, changes=("deleted",)))
        assert deleted.total == 1 and deleted.entries[0]["at"] == iso_time(AT + 1)  # PostgreSQL's, not the copy's

        # A write through the replica passes its time on, and is in the copy's history when it returns.
        replica.upsert_listings([{**record, "name": "Renamed"}], at=AT + 2)
        newest = replica.listing_history(HistoryQuery(listing_id=lid, limit=1)).entries[0]
        assert (newest["at"], newest["field"], newest["to"]) == (iso_time(AT + 2), "name", "Renamed")
        assert copied_history(replica.local) == postgres_history(primary)

        fresh = CatalogueCopy(primary, tmp_path / "fresh.sqlite3")
        assert copied_history(fresh.local) == postgres_history(primary)
        replica.copy._load_snapshot(replica.local, bulk=False)  # rebuilt in place: PostgreSQL's rows, once
        assert copied_history(replica.local) == postgres_history(primary)
    finally:
        follower.stop()
        writer.close()
        replica.close()
        if fresh is not None:
            fresh.close()


def test_a_batch_reads_its_history_a_page_at_a_time_in_the_order_it_was_written(
    pg_database: str, tmp_path: Path, generated: catalogue.Catalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary = _loaded(pg_database, generated)
    behind = CatalogueCopy(primary, tmp_path / "behind.sqlite3")
    try:
        after = primary.generation()
        written = len(postgres_history(primary))
        for n, record in enumerate(generated.listings[:12]):
            primary.upsert_listings([{**record, "name": f"Renamed {n}", "startPrice": 100_000 + n}], at=AT + n)
        primary.delete_listing(generated.listings[0]["listingId"], at=AT + 20)
        monkeypatch.setattr(documents, "HISTORY_PAGE", 5)
        pages = list(primary.read_log(after).history)
        recorded = postgres_history(primary)[written:]
        assert len(recorded) > 20 and [row for page in pages for row in page] == recorded
        assert [len(page) for page in pages] == [5] * (len(recorded) // 5) + [len(recorded) % 5][: len(recorded) % 5]
        assert behind.catch_up() == primary.generation()
        assert copied_history(behind.local) == postgres_history(primary)
    finally:
        behind.close()
        primary.close()


def test_an_update_keeps_the_listing_s_row_and_the_rows_of_what_it_still_holds(
    pg_database: str, generated: catalogue.Catalogue
) -> None:
    """PostgreSQL keeps a listing under its key: an update rewrites its row in place (its id stays, so do the rows of
    the plans it still has: untouched by the write), removes the rows of a plan it dropped and adds those of a new
    one; the replicas' questions answer the same."""
    primary = PostgresCatalogueStore(pg_database, migrate=False)
    try:
        record = with_units(generated, skip=1)
        lid = record["listingId"]
        primary.upsert_listings([record], at=AT)

        def rows() -> tuple[int, dict[str, tuple[int, str]], set[str]]:
            with primary.pool.connection() as db:
                (rowid,) = db.execute("SELECT id FROM listings WHERE listing_id = %s", (lid,)).fetchone() or (0,)
                plans = {
                    plan: (listing, str(xmin))
                    for plan, listing, xmin in db.execute(
                        "SELECT plan_id, listing, xmin FROM plan_ids WHERE listing = %s", (rowid,)
                    )
                }
                references = {r[0] for r in db.execute("SELECT path_key FROM listing_references WHERE listing = %s",
                                                        (rowid,))}  # fmt: skip
            return int(rowid), plans, references

        rowid, plans, references = rows()
        stored = primary.get_listings([lid], None)[lid]
        assert len(plans) == len(stored["floorPlans"]) > 1 and references
        changed = copy.deepcopy(stored)
        dropped = changed["floorPlans"].pop()["id"]
        changed["floorPlans"].append(
            {**copy.deepcopy(changed["floorPlans"][0]), "id": f"{lid}-new-plan", "name": "New"}
        )
        changed["floorPlans"][0]["units"][0]["price"] = (changed["floorPlans"][0]["units"][0].get("price") or 0) + 5
        primary.upsert_listings([changed], at=AT + 60)
        after_id, after_plans, after_references = rows()
        assert after_id == rowid
        assert set(after_plans) == set(plans) - {dropped} | {f"{lid}-new-plan"}
        kept = set(plans) - {dropped}
        assert {p: after_plans[p] for p in kept} == {p: plans[p] for p in kept}, "the rows it still holds, untouched"
        assert after_references == references
        assert primary.listings_holding_plans([f"{lid}-new-plan", dropped]) == {f"{lid}-new-plan": [lid]}
        assert primary.get_listings([lid], None)[lid]["floorPlans"][-1]["name"] == "New"
    finally:
        primary.close()
