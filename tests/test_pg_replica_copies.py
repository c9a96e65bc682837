"""Replicas' local copies of the catalogue in PostgreSQL (precon/service/stores/replica.py): built from a snapshot,
kept current from the replication log, resumed exactly where a killed replica stopped, rebuilt when the log no
longer reaches back to them; view counts summed across replicas; keys revoked everywhere within a second."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from precon.service import catalogue
from precon.service.accounts.postgres import PostgresAccountStore
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.replica import CatalogueCopy, Follower, ReplicaCatalogue
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests import pg_support
from tests.catalogues import generated_catalogue

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def generated() -> catalogue.Catalogue:
    return generated_catalogue(150, 7)


def _loaded(conninfo: str, generated: catalogue.Catalogue) -> PostgresCatalogueStore:
    primary = PostgresCatalogueStore(conninfo, migrate=False)
    with primary.atomic():
        primary.upsert_profiles(generated.profiles)
        primary.upsert_listings(generated.listings)
    return primary


def _postgres_documents(primary: PostgresCatalogueStore) -> dict[str, Any]:
    with primary.pool.connection() as db:
        listings = {k: v for k, v in db.execute("SELECT listing_id, doc::text FROM listings")}
        profiles = {k: v for k, v in db.execute("SELECT path, doc::text FROM profiles")}
    return {"listings": listings, "profiles": profiles}


def copy_state(local: SQLiteStore) -> dict[str, Any]:
    """Everything a copy answers from, keyed by what identifies it (not by rowids, which differ by history)."""
    db = local._db()
    ids = dict(db.execute("SELECT id, listing_id FROM listings"))
    paths = dict(db.execute("SELECT id, path FROM profiles"))
    return {
        "listings": {i: orjson.dumps(orjson.loads(d)).decode() for i, d in _docs(db)},
        "profiles": {
            p: orjson.dumps(orjson.loads(d)).decode() for p, d in db.execute("SELECT path, doc FROM profiles")
        },
        "rows": sorted(tuple(r[1:]) for r in db.execute("SELECT * FROM listings ORDER BY listing_id")),
        "terms": sorted((a, t, ids[n]) for a, t, n in db.execute("SELECT attr, term, listing FROM listing_terms")),
        "numbers": sorted((a, v, ids[n]) for a, v, n in db.execute("SELECT attr, num, listing FROM listing_numbers")),
        "plans": sorted(
            (ids[n], *rest)
            for n, *rest in db.execute("SELECT listing, idx, field, kind, term, num FROM listing_plan_values")
        ),
        "plan_ids": sorted((p, ids[n]) for p, n in db.execute("SELECT plan_id, listing FROM plan_ids")),
        "text": sorted((ids[r], *rest) for r, *rest in db.execute("SELECT rowid, * FROM listing_fts")),
        "places": sorted((ids[r], *rest) for r, *rest in db.execute("SELECT * FROM listing_geo")),
        "provinces": sorted(
            (p, paths[n], c) for p, n, c in db.execute("SELECT province, profile, listings FROM profile_provinces")
        ),
        "labels": sorted(db.execute("SELECT attr, term, label FROM labels")),
        "attributes": sorted(db.execute("SELECT name FROM listing_attributes")),
        "profile_text": sorted((paths[r], *rest) for r, *rest in db.execute("SELECT rowid, * FROM profile_fts")),
        "history": copied_history(local),
    }


HISTORY_COLUMNS = "at, listing_id, province, scope, plan, unit, field, change, from_value, to_value"


def copied_history(local: SQLiteStore) -> list[tuple[Any, ...]]:
    """A copy's history rows, in the order it holds them."""
    return [tuple(row) for row in local._db().execute(f"SELECT {HISTORY_COLUMNS} FROM listing_history ORDER BY seq")]


def postgres_history(primary: PostgresCatalogueStore) -> list[tuple[Any, ...]]:
    """PostgreSQL's history rows, in the order they were written."""
    with primary.pool.connection() as db:
        return [tuple(row) for row in db.execute(f"SELECT {HISTORY_COLUMNS} FROM listing_history ORDER BY seq")]


def _docs(db: Any) -> Any:
    return db.execute("SELECT l.listing_id, d.doc FROM listings l JOIN listing_docs d ON d.id = l.id")


def _answers(local: SQLiteStore) -> list[Any]:
    """A few searches through the column index: totals, pages and facet counts."""
    from precon.filters import parse
    from precon.service.search.text import TextQuery

    local.background_index = False
    answers = []
    for query in (
        ListingQuery(limit=50, facets=("cityOrDistrict", "sellingStatus", "builders", "type")),
        ListingQuery(limit=20, filter=parse("startPrice < 700000"), facets=("minBeds",)),
        ListingQuery(limit=20, text=TextQuery.parse("condo"), facets=("state",)),
        ListingQuery(limit=20, order="trending"),
    ):
        hits = local.search_listings(query)
        answers.append((hits.total, [d["listingId"] for d in hits.documents], hits.facets, hits.scores))
    local.background_index = True
    return answers


def assert_same_copy(one: SQLiteStore, other: SQLiteStore) -> None:
    assert copy_state(one) == copy_state(other)
    assert _answers(one) == _answers(other)


def _mutate(primary: PostgresCatalogueStore, rng: random.Random, listings: list[dict[str, Any]], n: int) -> None:
    for _ in range(n):
        record = dict(rng.choice(listings))
        roll = rng.random()
        if roll < 0.1:
            primary.delete_listing(record["listingId"])
        elif roll < 0.2:
            record["listingId"] = f"NEW{rng.randrange(10**6)}"
            record["path"] = f"Listings/{record['listingId']}"
            record.pop("floorPlans", None)
            primary.upsert_listings([record])
        else:
            record["startPrice"] = rng.randrange(300_000, 2_000_000)
            record["sellingStatus"] = rng.choice(["Selling Now", "Sold Out", "Pending"])
            primary.upsert_listings([record])


def test_a_copy_holds_postgresqls_documents_byte_for_byte_and_answers_as_a_single_node(
    pg_database: str, tmp_path: Path, generated: catalogue.Catalogue
) -> None:
    primary = _loaded(pg_database, generated)
    copy = CatalogueCopy(primary, tmp_path / "copy.sqlite3")
    single = SQLiteStore(tmp_path / "single.sqlite3")
    try:
        stored = _postgres_documents(primary)
        # The copy stores PostgreSQL's documents as they are: the same text, key order kept.
        copied = copy.local._db()
        assert {i: orjson.loads(d) for i, d in _docs(copied)} == {
            i: orjson.loads(t) for i, t in stored["listings"].items()
        }
        for listing_id, blob in _docs(copied):
            assert list(orjson.loads(blob)) == list(orjson.loads(stored["listings"][listing_id]))
        # And it answers as a single node given PostgreSQL's documents.
        single.upsert_profiles([orjson.loads(t) for t in stored["profiles"].values()])
        single.upsert_listings([orjson.loads(t) for t in stored["listings"].values()], as_stored=True)
        single.copy_history(postgres_history(primary))  # and PostgreSQL's history: an entry a listing created
        assert len(copied_history(single)) == len(generated.listings)
        assert_same_copy(copy.local, single)
        assert copy.generation() == primary.generation()
    finally:
        copy.close()
        single.close()
        primary.close()


def test_writes_reach_a_followed_copy_through_the_log(pg_database: str, tmp_path: Path, generated: Any) -> None:
    primary = _loaded(pg_database, generated)
    replica = ReplicaCatalogue(CatalogueCopy(primary, tmp_path / "copy.sqlite3"))
    writer = PostgresCatalogueStore(pg_database, migrate=False)
    follower = Follower(pg_database, [replica]).start()
    try:
        record = dict(generated.listings[3])
        record["name"] = "Heard Through The Log"
        started = time.monotonic()
        writer.upsert_listings([record])
        while replica.get_listings([record["listingId"]], None)[record["listingId"]]["name"] != record["name"]:
            assert time.monotonic() - started < 5, "the copy did not follow the write"
            time.sleep(0.01)
        writer.delete_listing(generated.listings[4]["listingId"])
        while replica.get_listings([generated.listings[4]["listingId"]], None):
            assert time.monotonic() - started < 10
            time.sleep(0.01)
        # A write through the replica itself is read there as soon as it returns.
        record["name"] = "Read Your Writes"
        replica.upsert_listings([record])
        assert replica.get_listings([record["listingId"]], None)[record["listingId"]]["name"] == "Read Your Writes"
        assert replica.search_listings(ListingQuery(limit=0)).total == len(generated.listings) - 1
    finally:
        follower.stop()
        writer.close()
        replica.close()


KILLED_APPLY = """
import sys, time
from pathlib import Path
from precon.service.stores.replica import CatalogueCopy
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.sqlite.store import SQLiteStore

original = SQLiteStore.upsert_listings
def slow(self, records, as_stored=False):
    changes = original(self, records, as_stored)
    if as_stored and self._connections.writing():
        print("applying", flush=True)
        time.sleep(60)
    return changes
SQLiteStore.upsert_listings = slow
primary = PostgresCatalogueStore(sys.argv[1], migrate=False)
copy = CatalogueCopy(primary, Path(sys.argv[2]))
"""


def test_a_replica_killed_mid_apply_resumes_to_the_same_copy_as_one_never_stopped(
    pg_database: str, tmp_path: Path, generated: Any
) -> None:
    primary = _loaded(pg_database, generated)
    killed_path = tmp_path / "killed.sqlite3"
    CatalogueCopy(primary, killed_path).close()
    steady = CatalogueCopy(primary, tmp_path / "steady.sqlite3")
    before = copy_state(SQLiteStore(killed_path))
    _mutate(primary, random.Random(3), generated.listings, 60)
    script = tmp_path / "apply.py"
    script.write_text(textwrap.dedent(KILLED_APPLY))
    process = subprocess.Popen(
        [sys.executable, str(script), pg_database, str(killed_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "applying"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        # Killed inside the batch's transaction: nothing of it is in the file, nor the position past it.
        assert copy_state(SQLiteStore(killed_path)) == before
        resumed = CatalogueCopy(primary, killed_path)
        steady.catch_up()
        assert resumed.generation() == steady.generation() == primary.generation()
        assert_same_copy(resumed.local, steady.local)
        resumed.close()
    finally:
        if process.poll() is None:
            process.kill()
        steady.close()
        primary.close()


WRITER = """
import random, sys
import orjson
from precon.service.stores.postgres.store import PostgresCatalogueStore
sys.path.insert(0, sys.argv[4])
from tests.test_pg_replica_copies import _mutate
primary = PostgresCatalogueStore(sys.argv[1], migrate=False)
listings = orjson.loads(open(sys.argv[2], "rb").read())
_mutate(primary, random.Random(int(sys.argv[3])), listings, 500)
primary.close()
"""


def test_a_thousand_writes_from_two_processes_leave_two_followed_copies_identical(
    pg_database: str, tmp_path: Path, generated: Any
) -> None:
    primary = _loaded(pg_database, generated)
    replicas = [ReplicaCatalogue(CatalogueCopy(primary, tmp_path / f"copy{n}.sqlite3")) for n in (1, 2)]
    followers = [Follower(pg_database, [replica]).start() for replica in replicas]
    records = tmp_path / "listings.json"
    records.write_bytes(orjson.dumps(generated.listings))
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(WRITER))
    try:
        writers = [
            subprocess.Popen(
                [sys.executable, str(script), pg_database, str(records), str(seed), str(ROOT)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            for seed in (11, 12)
        ]
        for writer in writers:
            assert writer.wait(timeout=300) == 0
        newest = primary.generation()
        assert newest >= 900  # a delete of a listing already deleted changes nothing, and raises no generation
        deadline = time.monotonic() + 30
        while any(replica.copy.generation() < newest for replica in replicas):
            assert time.monotonic() < deadline, "the copies did not catch up"
            time.sleep(0.05)
        assert_same_copy(replicas[0].local, replicas[1].local)
        stored = _postgres_documents(primary)
        state = copy_state(replicas[0].local)
        assert state["listings"] == {i: orjson.dumps(orjson.loads(t)).decode() for i, t in stored["listings"].items()}
        assert state["history"] == postgres_history(primary)
    finally:
        for follower in followers:
            follower.stop()
        for replica in replicas:
            replica.close()


def test_a_copy_older_than_the_log_is_rebuilt_not_patched(pg_database: str, tmp_path: Path, generated: Any) -> None:
    primary = _loaded(pg_database, generated)
    away_path = tmp_path / "away.sqlite3"
    CatalogueCopy(primary, away_path).close()
    running = CatalogueCopy(primary, tmp_path / "running.sqlite3")
    _mutate(primary, random.Random(5), generated.listings, 40)
    with primary.pool.connection() as db:
        db.execute("UPDATE catalogue_log SET logged_at = logged_at - interval '30 days'")
    assert primary.trim_log(7 * 24 * 3600) > 0
    assert primary.read_log(primary.generation()).generation == primary.generation()
    # A replica that was away starts again: its copy is made anew from a snapshot.
    back = CatalogueCopy(primary, away_path)
    # A running one that fell behind the floor is rebuilt in place, in one transaction.
    assert running.catch_up() == primary.generation()
    fresh = CatalogueCopy(primary, tmp_path / "fresh.sqlite3")
    try:
        assert back.generation() == running.generation() == fresh.generation() == primary.generation()
        assert_same_copy(back.local, fresh.local)
        assert_same_copy(running.local, fresh.local)
    finally:
        for copy in (back, running, fresh):
            copy.close()
        primary.close()


def test_views_are_summed_across_replicas_and_trending_agrees(pg_database: str, tmp_path: Path, generated: Any) -> None:
    primary = _loaded(pg_database, generated)
    one = ReplicaCatalogue(CatalogueCopy(primary, tmp_path / "one.sqlite3"))
    two = ReplicaCatalogue(CatalogueCopy(PostgresCatalogueStore(pg_database, migrate=False), tmp_path / "two.sqlite3"))
    try:
        ids = [record["listingId"] for record in generated.listings[:4]]
        for listing_id, (on_one, on_two) in zip(ids, [(5, 0), (0, 4), (1, 2), (1, 0)], strict=True):
            for _ in range(on_one):
                one.record_view(listing_id)
            for _ in range(on_two):
                two.record_view(listing_id)
        for replica in (one, two, one):
            replica.sync_views()
        trending = ListingQuery(limit=4, order="trending")
        assert [d["listingId"] for d in one.search_listings(trending).documents] == ids
        assert [d["listingId"] for d in two.search_listings(trending).documents] == ids
        views = {r[0]: r[1] for r in one.local._db().execute("SELECT listing_id, views FROM listing_views")}
        assert views == dict(zip(ids, [5, 4, 3, 1], strict=True))
    finally:
        one.close()
        two.close()


def test_a_revoked_key_is_refused_by_every_replica_within_a_second(pg_database: str) -> None:
    admin = PostgresAccountStore(pg_database, migrate=False)
    replica = PostgresAccountStore(pg_database, migrate=False)
    try:
        key = admin.create_key("everything")
        assert replica.authenticate(key) is not None  # known, and kept for a moment
        revoked_at = time.monotonic()
        assert admin.revoke_key(key)
        while replica.authenticate(key) is not None:
            assert time.monotonic() - revoked_at < 1.0
            time.sleep(0.01)
        assert admin.authenticate(key) is None and not admin.revoke_key(key)
    finally:
        admin.close()
        replica.close()


def test_a_copy_behind_by_more_than_a_batch_holds_is_rebuilt_from_a_snapshot(
    pg_database: str, tmp_path: Path, generated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precon.service.stores.postgres import documents

    primary = _loaded(pg_database, generated)
    behind = CatalogueCopy(primary, tmp_path / "behind.sqlite3")
    _mutate(primary, random.Random(9), generated.listings, 30)
    with pytest.raises(documents.LogTooLong):
        primary.read_log(behind.generation(), most=10)
    monkeypatch.setattr(documents, "LOG_BATCH_MOST", 10)
    monkeypatch.setattr(documents.PostgresDocuments.read_log, "__defaults__", (10,))
    assert behind.catch_up() == primary.generation()
    fresh = CatalogueCopy(primary, tmp_path / "fresh.sqlite3")
    try:
        assert_same_copy(behind.local, fresh.local)
    finally:
        behind.close()
        fresh.close()
        primary.close()
