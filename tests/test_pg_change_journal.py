"""The journal of catalogue changes in PostgreSQL: a write's events are published once, by the process that made it
or, if it died after the commit, by any replica's sweep; never twice, and never for a write that was undone."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from precon.service.accounts.postgres import PostgresAccountStore
from precon.service.stores.importer import import_file
from precon.service.stores.postgres.catalogue_base import Entry
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.types import CatalogueChange
from precon.service.webhooks.delivery import DeliveryWorker
from precon.service.webhooks.journal import ChangeJournal
from precon.service.webhooks.notify import CatalogueNotifier
from precon.service.webhooks.postgres import PostgresWebhookStore
from precon.service.webhooks.sqlite import WebhookStore
from precon.service.webhooks.targets import TargetPolicy
from tests import pg_support

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database

ROOT = Path(__file__).resolve().parent.parent
PROVINCES = {"on": "Ontario", "pe": "Prince Edward Island"}


class Killed(BaseException):
    """The process dying: nothing after it runs (not an ``Exception`` a listener's failure would be)."""


@dataclass
class Replica:
    """A process serving the live catalogue: its store, outbox and keys, the store's events published there."""

    store: PostgresCatalogueStore
    webhooks: PostgresWebhookStore
    accounts: PostgresAccountStore

    @property
    def journal(self) -> ChangeJournal:
        assert self.store.journal is not None
        return self.store.journal

    def close(self) -> None:
        self.store.close()
        self.webhooks.close()
        self.accounts.close()


def open_replica(conninfo: str) -> Replica:
    store = PostgresCatalogueStore(conninfo, migrate=False)
    webhooks = PostgresWebhookStore(conninfo, migrate=False)
    accounts = PostgresAccountStore(conninfo, migrate=False)
    CatalogueNotifier(webhooks, accounts, store, "live").attach()
    return Replica(store, webhooks, accounts)


@pytest.fixture
def replicas(pg_database: str) -> Iterator[list[Replica]]:
    opened = [open_replica(pg_database) for _ in range(2)]
    yield opened
    for replica in opened:
        replica.close()


@dataclass
class Keys:
    everything: int
    ontario: int
    pei: int


@pytest.fixture
def keys(replicas: list[Replica]) -> Keys:
    """Three keys subscribed to the live listing events: one reading everything, one Ontario only, one PEI only."""
    accounts, webhooks = replicas[0].accounts, replicas[0].webhooks
    ids = []
    for product, provinces in (("everything", None), ("ontario", ["on"]), ("pei", ["pe"])):
        found = accounts.authenticate(accounts.create_key(product, ["v1"], provinces))
        assert found is not None
        for action in ("created", "updated", "deleted"):
            webhooks.subscribe(found.key_id, "live", f"listing.{action}", "https://hooks.example.com/precon")
        ids.append(int(found.key_id))
    return Keys(*ids)


def listings(count: int, start: int = 0, province: str = "on") -> list[dict[str, Any]]:
    return [
        {"listingId": f"{province.upper()}{n:05d}", "name": f"Tower {n}", "state": PROVINCES[province]}
        for n in range(start, start + count)
    ]


def delivered(webhooks: PostgresWebhookStore, key_id: int, env: str = "live") -> list[tuple[str, str]]:
    """(event type, listing id) of every delivery of an ``env`` event to the key in the outbox, oldest first."""
    with webhooks.pool.connection() as db:
        rows = db.execute(
            "SELECT e.type, e.body FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "
            "WHERE d.key_id = %s AND e.env = %s ORDER BY d.seq",
            (key_id, env),
        ).fetchall()
    return [(kind, orjson.loads(body)["data"]["listing"]["listingId"]) for kind, body in rows]


def journal_rows(conninfo: str, schema: str = "public") -> list[tuple[Any, ...]]:
    with psycopg.connect(conninfo, autocommit=True) as db:
        return db.execute(
            f"SELECT id, kind, action, key, claimed_by FROM {schema}.catalogue_changes ORDER BY id"
        ).fetchall()


def expire_leases(conninfo: str) -> None:
    with psycopg.connect(conninfo, autocommit=True) as db:
        db.execute("UPDATE catalogue_changes SET claimed_until = 0")


def killed(entries: Any) -> int:
    raise Killed


def die_before_publishing(monkeypatch: pytest.MonkeyPatch, replica: Replica) -> None:
    """The replica's process dies right after its next write is committed, before publishing anything."""
    monkeypatch.setattr(replica.journal, "publish", killed)


def write_ndjson(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


# ----------------------------------------------------------------------------------------------------------


def test_a_postgresql_outbox_in_the_same_database_takes_the_journal(
    pg_cluster: pg_support.Cluster, replicas: list[Replica], tmp_path: Path
) -> None:
    for replica in replicas:
        assert replica.store.journal is not None and replica.store.listeners == []
        assert replica.webhooks.journals == [replica.store.journal]
    # An outbox in another database of the same server: no transaction holds both.
    elsewhere = pg_cluster.database(pg_support.migrate)
    other = PostgresWebhookStore(pg_cluster.conninfo(elsewhere), migrate=False)
    store = PostgresCatalogueStore(replicas[0].store.conninfo, migrate=False)
    try:
        notifier = CatalogueNotifier(other, replicas[0].accounts, store, "live").attach()
        assert store.journal is None and store.listeners == [notifier] and other.journals == []
    finally:
        store.close()
        other.close()
        pg_cluster.drop(elsewhere)
    # An outbox elsewhere (SQLite here): the store's listeners hear of each write after its commit, as before.
    store = PostgresCatalogueStore(replicas[0].store.conninfo, migrate=False)
    sqlite = WebhookStore(tmp_path / "webhooks.sqlite3")
    try:
        notifier = CatalogueNotifier(sqlite, replicas[0].accounts, store, "live").attach()
        assert store.journal is None and store.listeners == [notifier]
        heard: list[int] = []
        store.listeners.append(lambda changes: heard.append(len(changes)))
        store.upsert_listings(listings(2))
        assert heard == [2] and journal_rows(store.conninfo) == []
    finally:
        store.close()
        sqlite.close()


def test_an_imports_events_are_published_once_and_the_journal_emptied(
    replicas: list[Replica], keys: Keys, tmp_path: Path
) -> None:
    first, second = replicas
    published: list[int] = []
    original = first.webhooks.publish

    def spy(events: Any, *args: Any) -> Any:
        published.append(len(events))
        return original(events, *args)

    first.webhooks.publish = spy  # type: ignore[method-assign]
    records = [*listings(30), *listings(5, province="pe")]
    report = import_file(first.store, write_ndjson(tmp_path / "one.ndjson", records))
    assert len(report.listings) == 35
    assert published == [35]  # once, after the commit, by the process that imported
    assert journal_rows(first.store.conninfo) == []
    assert delivered(second.webhooks, keys.everything) == [("listing.created", r["listingId"]) for r in records]
    assert [i for _, i in delivered(second.webhooks, keys.ontario)] == [r["listingId"] for r in records[:30]]
    assert [i for _, i in delivered(second.webhooks, keys.pei)] == [r["listingId"] for r in records[30:]]
    # A single write too, each in its own transaction; nothing is left for a sweep.
    first.store.upsert_listings([{**records[0], "name": "Renamed"}])
    first.store.delete_listing(records[1]["listingId"])
    assert published == [35, 1, 1]
    expire_leases(first.store.conninfo)
    assert second.webhooks.sweep_journals() == 0
    assert delivered(second.webhooks, keys.everything)[35:] == [
        ("listing.updated", records[0]["listingId"]),
        ("listing.deleted", records[1]["listingId"]),
    ]


def test_changes_left_by_a_process_that_died_are_published_once_by_another_replicas_sweep(
    replicas: list[Replica], keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = replicas
    die_before_publishing(monkeypatch, first)
    records = [*listings(4), *listings(3, province="pe")]
    with pytest.raises(Killed):
        first.store.upsert_listings(records)
    assert second.store.counts()["listings"] == 7  # committed
    rows = journal_rows(first.store.conninfo)
    assert [(r[1], r[2], r[3]) for r in rows] == [("listing", "created", r["listingId"]) for r in records]
    assert delivered(second.webhooks, keys.everything) == []
    # Its claim still runs (and its process, this one, is alive): not another's yet.
    assert second.webhooks.sweep_journals() == 0
    expire_leases(first.store.conninfo)
    assert second.webhooks.sweep_journals() == 7
    assert journal_rows(first.store.conninfo) == []
    assert delivered(second.webhooks, keys.everything) == [("listing.created", r["listingId"]) for r in records]
    assert [i for _, i in delivered(second.webhooks, keys.ontario)] == [r["listingId"] for r in records[:4]]
    assert [i for _, i in delivered(second.webhooks, keys.pei)] == [r["listingId"] for r in records[4:]]
    assert second.webhooks.sweep_journals() == 0 and first.webhooks.sweep_journals() == 0
    assert len(delivered(first.webhooks, keys.everything)) == 7


KILLED_WRITER = """
import os, signal, sys
from precon.service.webhooks.notify import CatalogueNotifier
from precon.service.accounts.postgres import PostgresAccountStore
from precon.service.webhooks.journal import ChangeJournal
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.webhooks.postgres import PostgresWebhookStore

conninfo = sys.argv[1]
store = PostgresCatalogueStore(conninfo, migrate=False)
webhooks = PostgresWebhookStore(conninfo, migrate=False)
CatalogueNotifier(webhooks, PostgresAccountStore(conninfo, migrate=False), store, "live").attach()
assert store.journal is not None
ChangeJournal.publish = lambda self, entries: os.kill(os.getpid(), signal.SIGKILL)
store.upsert_listings([{"listingId": f"K{n}", "name": "Killed", "state": "Ontario"} for n in range(5)])
"""


def test_a_writer_killed_after_its_commit_loses_nothing(replicas: list[Replica], keys: Keys) -> None:
    conninfo = replicas[0].store.conninfo
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, conninfo], cwd=ROOT, env=env, stderr=subprocess.PIPE
    )
    _, stderr = writer.communicate(timeout=120)
    assert writer.returncode == -signal.SIGKILL, stderr.decode()
    rows = journal_rows(conninfo)
    assert [r[3] for r in rows] == [f"K{n}" for n in range(5)]
    assert {r[4] for r in rows} == {f"{socket.gethostname()}:{writer.pid}"}
    # Its claimant was a process of this host that no longer runs: swept at once, not after the lease.
    assert replicas[1].webhooks.sweep_journals() == 5
    assert [i for _, i in delivered(replicas[0].webhooks, keys.ontario)] == [f"K{n}" for n in range(5)]
    assert delivered(replicas[0].webhooks, keys.pei) == []
    assert journal_rows(conninfo) == []


def test_two_sweepers_at_once_never_publish_a_change_twice(
    pg_database: str, replicas: list[Replica], keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    more = [open_replica(pg_database) for _ in range(2)]
    sweepers = [*replicas, *more]
    try:
        die_before_publishing(monkeypatch, replicas[0])
        records = listings(1300)
        with pytest.raises(Killed):
            replicas[0].store.upsert_listings(records)
        monkeypatch.undo()
        expire_leases(pg_database)
        start = threading.Barrier(len(sweepers))
        swept = [0] * len(sweepers)

        def sweep(index: int) -> None:
            start.wait()
            swept[index] = sweepers[index].webhooks.sweep_journals()

        threads = [threading.Thread(target=sweep, args=(index,)) for index in range(len(sweepers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert sum(swept) == 1300
        # Each once (the sweepers' batches interleave: not in the order written).
        assert sorted(delivered(replicas[1].webhooks, keys.everything)) == [
            ("listing.created", r["listingId"]) for r in records
        ]
        assert journal_rows(pg_database) == []
    finally:
        for replica in more:
            replica.close()


def test_two_publishers_of_the_same_changes_store_their_events_once(
    replicas: list[Replica], keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer, late, and a sweeper that took its rows when its lease ran out: whoever deletes a row publishes."""
    die_before_publishing(monkeypatch, replicas[0])
    with pytest.raises(Killed):
        replicas[0].store.upsert_listings(listings(200))
    monkeypatch.undo()
    entries: list[Entry] = [
        (row[0], CatalogueChange(row[1], row[2], row[3])) for row in journal_rows(replicas[0].store.conninfo)
    ]
    start = threading.Barrier(2)
    counts = [0, 0]

    def publish(index: int) -> None:
        start.wait()
        counts[index] = replicas[index].journal.publish(entries)

    threads = [threading.Thread(target=publish, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sum(counts) == 200
    assert len(delivered(replicas[0].webhooks, keys.everything)) == 200
    assert replicas[1].journal.publish(entries) == 0


def test_an_undone_write_leaves_no_change_and_no_event(
    replicas: list[Replica], keys: Keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = replicas[0].store
    with pytest.raises(ValueError), store.atomic():
        store.upsert_listings(listings(10))
        store.upsert_listings([{"name": "no id"}])  # a bad record: the whole import is undone
    with pytest.raises(ValueError):
        store.upsert_listings([*listings(3, start=20), {"name": "no id"}])
    records = listings(2100)
    records[2050]["name"] = "Refused Tower"  # PostgreSQL refuses it, past the first batch written
    upsert = type(store).upsert_listings

    def refusing(self: PostgresCatalogueStore, batch: Iterable[dict[str, Any]], at: float | None = None) -> list[Any]:
        batch = list(batch)
        if any(record.get("name") == "Refused Tower" for record in batch):
            raise psycopg.errors.DataError("a value PostgreSQL refuses")
        return upsert(self, batch, at)

    with monkeypatch.context() as patched, pytest.raises(psycopg.DataError):
        patched.setattr(type(store), "upsert_listings", refusing)
        import_file(store, write_ndjson(tmp_path / "bad.ndjson", records))
    assert store.counts()["listings"] == 0
    assert journal_rows(store.conninfo) == []
    expire_leases(store.conninfo)
    assert replicas[1].webhooks.sweep_journals() == 0
    assert delivered(replicas[0].webhooks, keys.everything) == []


def test_the_sandbox_has_a_journal_of_its_own(pg_database: str, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox = PostgresCatalogueStore(pg_database, schema="sandbox")
    webhooks = PostgresWebhookStore(pg_database, migrate=False)
    accounts = PostgresAccountStore(pg_database, migrate=False)
    try:
        webhooks.subscribe(keys.pei, "sandbox", "listing.created", "https://hooks.example.com/sandbox")
        CatalogueNotifier(webhooks, accounts, sandbox, "sandbox").attach()
        assert sandbox.journal is not None
        monkeypatch.setattr(sandbox.journal, "publish", killed)
        with pytest.raises(Killed):
            sandbox.upsert_listings(listings(3))
        assert [r[3] for r in journal_rows(pg_database, "sandbox")] == ["ON00000", "ON00001", "ON00002"]
        assert journal_rows(pg_database) == []
        monkeypatch.undo()
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute("UPDATE sandbox.catalogue_changes SET claimed_until = 0")
        assert webhooks.sweep_journals() == 3
        assert delivered(webhooks, keys.pei, "sandbox") == [("listing.created", f"ON0000{n}") for n in range(3)]
    finally:
        sandbox.close()
        webhooks.close()
        accounts.close()


def test_the_delivery_worker_sweeps_the_journals(
    replicas: list[Replica], keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    die_before_publishing(monkeypatch, replicas[0])
    with pytest.raises(Killed):
        replicas[0].store.upsert_listings(listings(3))
    monkeypatch.undo()
    expire_leases(replicas[0].store.conninfo)
    worker = DeliveryWorker(replicas[1].webhooks, TargetPolicy(), senders=0).start()
    try:
        deadline = time.monotonic() + 20
        while journal_rows(replicas[0].store.conninfo) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        worker.stop()
    assert len(delivered(replicas[0].webhooks, keys.everything)) == 3


def test_a_data_directory_on_postgresql_journals_both_catalogues(
    pg_cluster: pg_support.Cluster, tmp_path: Path
) -> None:
    from precon.service.config import ServiceSettings
    from precon.service.runtime import DataDirectory

    name = pg_cluster.database()
    settings = ServiceSettings(
        data_dir=tmp_path / "data", database_url=pg_cluster.url(name), default_listings=20, rate_limit=0
    )
    directory = DataDirectory.open(settings)
    try:
        journals = [directory.live.journal, directory.sandbox.journal]  # type: ignore[union-attr]
        assert [journal.schema for journal in journals if journal is not None] == ["public", "sandbox"]
        assert directory.webhooks.journals == journals  # type: ignore[union-attr]
        assert journal_rows(pg_cluster.conninfo(name)) == journal_rows(pg_cluster.conninfo(name), "sandbox") == []
    finally:
        directory.close()
        pg_cluster.drop(name)
