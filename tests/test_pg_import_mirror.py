"""Import and mirror into PostgreSQL: one transaction each (all of it or nothing), the same catalogue an import into
SQLite gives, webhook events published once by the process that ran it, whichever replica that is, and imports from
two replicas at once one after the other."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from click.testing import CliRunner, Result

from precon import filters
from precon.cli import main
from precon.client import Client
from precon.service import catalogue
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.importer import import_file
from precon.service.stores.loading import BATCH
from precon.service.stores.mirror import mirror
from precon.service.stores.postgres.store import CHANNEL, PostgresCatalogueStore
from precon.service.stores.replica import CatalogueCopy
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery, ProfileQuery
from tests import pg_support
from tests.catalogues import generated_catalogue

pg_cluster = pg_support.pg_cluster

QUERIES = [
    ListingQuery(limit=1000),
    ListingQuery(limit=1000, province="on", facets=("type", "sellingStatus", "builders")),
    ListingQuery(limit=1000, filter=filters.parse('type:"Townhouse" AND startPrice < 900000')),
]


@pytest.fixture
def database(pg_cluster: pg_support.Cluster) -> Iterator[str]:
    """A fresh, empty database's ``postgresql://`` URL (the first store to open it migrates it)."""
    name = pg_cluster.database()
    yield pg_cluster.url(name)
    pg_cluster.drop(name)


@pytest.fixture(scope="module")
def built() -> catalogue.Catalogue:
    return generated_catalogue(150, seed=11)


def write_ndjson(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


def precon(*args: str | Path) -> Result:
    env = {"PRECON_SERVICE_DATA_DIR": None, "PRECON_SERVICE_DATABASE_URL": None}
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def snapshot(store: SQLiteStore | PostgresCatalogueStore) -> tuple[Any, ...]:
    """What the store serves: every query's page, totals and facets, and every profile. PostgreSQL's is what a
    replica's copy of it serves."""
    if isinstance(store, PostgresCatalogueStore):
        folder = Path(tempfile.mkdtemp(prefix="precon-copy-"))
        copy = CatalogueCopy(store, folder / "copy.sqlite3")
        copy.local.background_index = False
        try:
            return snapshot(copy.local)
        finally:
            copy.close()
            shutil.rmtree(folder, ignore_errors=True)
    answers: list[Any] = []
    for query in QUERIES:
        hits = store.search_listings(query)
        answers.append((hits.total, hits.documents, hits.facets))
    profiles = store.search_profiles(ProfileQuery(limit=10_000))
    return (store.counts(), answers, profiles.total, profiles.documents)


def outbox(webhooks: Any, key_id: int) -> list[str]:
    """The event type of every delivery to the key stored in the outbox, oldest first."""
    _, deliveries = webhooks.deliveries(key_id, None, 0, 100_000)
    return [delivery["event"] for delivery in reversed(deliveries)]


def subscribe_everything(accounts: Any, webhooks: Any) -> int:
    """A key that reads everything, subscribed to every listing and profile event of the live catalogue: its id."""
    found = accounts.authenticate(accounts.create_key("everything"))
    assert found is not None
    for kind in ("listing", "profile"):
        for action in ("created", "updated", "deleted"):
            webhooks.subscribe(found.key_id, "live", f"{kind}.{action}", "https://hooks.example.com/precon")
    return int(found.key_id)


@pytest.fixture
def hooks(tmp_path: Path, database: str) -> Iterator[tuple[Path, Any, int]]:
    """The outbox in the database, with a key subscribed to everything (``precon catalogue --database``
    publishes there, and every replica sends from it): (a data directory, the webhook store, the key's id)."""
    from precon.service.accounts.postgres import PostgresAccountStore
    from precon.service.webhooks.postgres import PostgresWebhookStore

    accounts = PostgresAccountStore(database)
    webhooks = PostgresWebhookStore(database, migrate=False)
    key_id = subscribe_everything(accounts, webhooks)
    accounts.close()
    yield tmp_path / "data", webhooks, key_id
    webhooks.close()


# ----------------------------------------------------------------------------------------------------------
# the same catalogue as SQLite
# ----------------------------------------------------------------------------------------------------------


def test_an_import_into_postgresql_serves_what_an_import_into_sqlite_serves(
    database: str, built: catalogue.Catalogue, tmp_path: Path
) -> None:
    file = write_ndjson(tmp_path / "catalogue.ndjson", [*built.profiles, *built.listings])
    into_sqlite = precon("catalogue", "import", file, "--data", tmp_path / "sqlite")
    into_postgres = precon("catalogue", "import", file, "--data", tmp_path / "pg", "--database", database)
    assert into_sqlite.exit_code == 0, into_sqlite.output
    assert into_postgres.exit_code == 0, into_postgres.output
    assert into_postgres.stderr == into_sqlite.stderr  # the same report
    assert not (tmp_path / "pg" / "catalogue.sqlite3").exists()
    sqlite = SQLiteStore(tmp_path / "sqlite" / "catalogue.sqlite3")
    postgres = PostgresCatalogueStore(database, migrate=False)
    try:
        assert snapshot(postgres) == snapshot(sqlite)
        assert postgres.counts() == {"listings": 150, "profiles": len(built.profiles)}
        assert postgres.generation() > 0
    finally:
        sqlite.close()
        postgres.close()


def test_a_record_holding_a_nul_character_is_refused_alike_by_both_stores(database: str, tmp_path: Path) -> None:
    """PostgreSQL refuses NUL characters in text: such a record is one of the import's problems on either store,
    and the others load."""
    records = small_listings(3)
    records[1]["name"] = "Tower\x00 1"
    records[2]["floorPlans"] = [{"id": "p\x001", "name": "Plan"}]
    file = write_ndjson(tmp_path / "nul.ndjson", records)
    into_sqlite = precon("catalogue", "import", file, "--data", tmp_path / "sqlite")
    into_postgres = precon("catalogue", "import", file, "--data", tmp_path / "pg", "--database", database)
    assert into_sqlite.exit_code == into_postgres.exit_code == 0, into_postgres.output
    assert into_postgres.stderr == into_sqlite.stderr
    assert "nul.ndjson:2: skipped: name: holds a NUL character" in into_sqlite.stderr
    assert "nul.ndjson:3: skipped: floorPlans.0.id: holds a NUL character" in into_sqlite.stderr
    postgres = PostgresCatalogueStore(database, migrate=False)
    try:
        assert postgres.counts()["listings"] == 1
    finally:
        postgres.close()


def test_the_sandbox_import_and_generate_write_their_own_catalogue(database: str, tmp_path: Path) -> None:
    sandbox = catalogue.sandbox()
    file = write_ndjson(tmp_path / "sandbox.ndjson", [*sandbox.profiles, *sandbox.listings])
    assert precon("catalogue", "import", file, "--sandbox", "--data", tmp_path, "--database", database).exit_code == 0
    generated = precon("catalogue", "generate", "--listings", "40", "--data", tmp_path, "--database", database)
    assert generated.exit_code == 0, generated.output
    again = precon(
        "catalogue", "generate", "--listings", "30", "--seed", "4", "--data", tmp_path, "--database", database
    )
    assert again.exit_code == 0, again.output
    assert not (tmp_path / "catalogue.sqlite3").exists() and not (tmp_path / "sandbox.sqlite3").exists()
    live = PostgresCatalogueStore(database, migrate=False)
    in_sandbox = PostgresCatalogueStore(database, schema="sandbox", migrate=False)
    expected = SQLiteStore(tmp_path / "expected.sqlite3")
    try:
        assert in_sandbox.counts()["listings"] == len(sandbox.listings)
        assert live.counts()["listings"] == 30  # replaced whole: the first generation's listings are gone
        from precon.service.runtime import load

        fourth = generated_catalogue(30, 4)
        load(expected, fourth.listings, fourth.profiles)
        assert snapshot(live)[1][0][:2] == snapshot(expected)[1][0][:2]
    finally:
        live.close()
        in_sandbox.close()
        expected.close()


# ----------------------------------------------------------------------------------------------------------
# all or nothing
# ----------------------------------------------------------------------------------------------------------


def small_listings(count: int, start: int = 0, prefix: str = "L") -> list[dict[str, Any]]:
    return [
        {"listingId": f"{prefix}{n:05d}", "name": f"Tower {n}", "state": "Ontario", "cityOrDistrict": "Toronto"}
        for n in range(start, start + count)
    ]


def test_a_failing_import_leaves_postgresql_unchanged_and_publishes_nothing(
    database: str,
    built: catalogue.Catalogue,
    tmp_path: Path,
    hooks: tuple[Path, Any, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, webhooks, key_id = hooks
    first = write_ndjson(tmp_path / "first.ndjson", [*built.profiles, *built.listings])
    assert precon("catalogue", "import", first, "--data", data, "--database", database).exit_code == 0
    published = len(outbox(webhooks, key_id))
    assert published == 150 + len(built.profiles)
    store = PostgresCatalogueStore(database, migrate=False)
    try:
        before, generation = snapshot(store), store.generation()
        # A listing PostgreSQL refuses well past the first batch: that batch is written, in the import's
        # transaction, before the refusal.
        records = [*small_listings(BATCH + 300), *built.listings[:5]]
        records[BATCH + 200]["name"] = "Refused Tower"
        upsert = PostgresCatalogueStore.upsert_listings

        def refusing(
            self: PostgresCatalogueStore, batch: Iterable[dict[str, Any]], at: float | None = None
        ) -> list[Any]:
            batch = list(batch)
            if any(record.get("name") == "Refused Tower" for record in batch):
                raise psycopg.errors.DataError("a value PostgreSQL refuses")
            return upsert(self, batch, at)

        bad = write_ndjson(tmp_path / "bad.ndjson", records)
        with monkeypatch.context() as patched:
            patched.setattr(PostgresCatalogueStore, "upsert_listings", refusing)
            result = precon("catalogue", "import", bad, "--data", data, "--database", database)
        assert result.exit_code == 1
        assert "nothing was imported" in result.stderr and "PostgreSQL refuses" in result.stderr
        assert store.generation() == generation
        assert snapshot(store) == before
        assert len(outbox(webhooks, key_id)) == published
        # The same file without the bad record goes in whole, and its events are published once each.
        del records[BATCH + 200]
        good = write_ndjson(tmp_path / "good.ndjson", records)
        assert precon("catalogue", "import", good, "--data", data, "--database", database).exit_code == 0
        assert store.counts()["listings"] == 150 + BATCH + 299
        kinds = outbox(webhooks, key_id)[published:]
        assert kinds.count("listing.created") == BATCH + 299
        assert kinds.count("listing.updated") == 5
        assert len(kinds) == BATCH + 304
    finally:
        store.close()


# ----------------------------------------------------------------------------------------------------------
# replicas
# ----------------------------------------------------------------------------------------------------------


def test_an_import_publishes_its_events_once_however_many_replicas_run(database: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = ServiceSettings(data_dir=data, database_url=database, default_listings=20, rate_limit=0)
    first, second = DataDirectory.open(settings), DataDirectory.open(settings)
    published: dict[str, list[int]] = {"first": [], "second": []}
    for name, replica in (("first", first), ("second", second)):
        original = replica.webhooks.publish

        def spy(events: Any, *args: Any, name: str = name, original: Any = original) -> Any:
            published[name].append(len(events))
            return original(events, *args)

        replica.webhooks.publish = spy  # type: ignore[method-assign]
    key_id = subscribe_everything(first.accounts, first.webhooks)
    listener = psycopg.connect(database, autocommit=True)
    listener.execute(f"LISTEN {CHANNEL}")
    try:
        records = small_listings(30, prefix="R")
        import_file(first.live, write_ndjson(tmp_path / "one.ndjson", records))
        assert published == {"first": [30], "second": []}  # once, after the commit, by the replica that imported
        assert outbox(second.webhooks, key_id) == ["listing.created"] * 30
        heard = list(listener.notifies(timeout=2, stop_after=1))
        assert heard and heard[0].channel == CHANNEL
        found = second.live.get_listings([r["listingId"] for r in records], None)  # the other replica serves them
        assert len(found) == 30
        # The command, run beside the two replicas, publishes once too (from its own process).
        more = write_ndjson(tmp_path / "two.ndjson", small_listings(10, start=30, prefix="R"))
        assert precon("catalogue", "import", more, "--data", data, "--database", database).exit_code == 0
        assert published == {"first": [30], "second": []}
        assert outbox(first.webhooks, key_id) == ["listing.created"] * 40
        assert second.live.counts()["listings"] == first.live.counts()["listings"] == 20 + 40
    finally:
        listener.close()
        first.close()
        second.close()


def test_imports_from_two_replicas_at_once_run_one_after_the_other(database: str, tmp_path: Path) -> None:
    contested = {"id": "PLAN-SHARED", "name": "The Shared"}
    one = small_listings(BATCH + 100, prefix="A")
    two = small_listings(BATCH + 100, prefix="B")
    one[-1]["floorPlans"] = [contested]
    two[-1]["floorPlans"] = [contested]
    files = [write_ndjson(tmp_path / "one.ndjson", one), write_ndjson(tmp_path / "two.ndjson", two)]
    stores = [PostgresCatalogueStore(database), PostgresCatalogueStore(database, migrate=False)]
    start = threading.Barrier(2)
    reports: list[Any] = [None, None]
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait()
            reports[index] = import_file(stores[index], files[index])
        except BaseException as error:  # handed to the test's thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not failures, failures
        # Neither lost the other's writes; the plan id went to whichever ran first, and the second was told.
        refused = [report for report in reports if report.problems]
        assert len(refused) == 1 and "PLAN-SHARED" in refused[0].problems[0][1]
        assert stores[0].counts()["listings"] == 2 * (BATCH + 100) - 1
        holders = stores[1].listings_holding_plans(["PLAN-SHARED"])
        assert holders["PLAN-SHARED"] in (["A02099"], ["B02099"])
    finally:
        for store in stores:
            store.close()


# ----------------------------------------------------------------------------------------------------------
# mirror
# ----------------------------------------------------------------------------------------------------------

KEY = "mirror-into-postgres"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = ServiceSettings(
        data_dir=tmp_path_factory.mktemp("source"), default_listings=300, default_seed=23, rate_limit=0
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("remote", key=KEY)
    with ServerThread(directory.app()) as server:
        yield server.url
    directory.close()


def test_a_mirror_into_postgresql_replaces_the_catalogue_in_one_transaction(
    source: str, database: str, tmp_path: Path
) -> None:
    with Client(source, KEY, "remote", cache=False) as client:
        mirror(client, tmp_path / "catalogue.sqlite3")  # the same copy into SQLite, to compare with
    store = PostgresCatalogueStore(database)
    sqlite = SQLiteStore(tmp_path / "catalogue.sqlite3")
    try:
        store.upsert_listings(small_listings(3, prefix="OLD"))
        heard: list[int] = []
        with Client(source, KEY, "remote", cache=False) as client:
            report = mirror(
                client,
                tmp_path / "pg.sqlite3",
                page_size=100,
                into=store,
                on_store=lambda target: target.listeners.append(lambda changes: heard.append(len(changes))),
            )
        assert report.listings == 300 and not report.resumed
        assert not (tmp_path / "pg.sqlite3").exists() and not (tmp_path / "pg.sqlite3.mirror").exists()
        assert heard == [300 + report.profiles + 3]  # once, after the commit: the copy, and the three removed
        assert snapshot(store) == snapshot(sqlite)
        assert store.get_listings(["OLD00000"], None) == {}
    finally:
        store.close()
        sqlite.close()


def test_a_mirror_into_postgresql_cut_short_changes_nothing_and_resumes(
    source: str, database: str, tmp_path: Path
) -> None:
    from precon.client import errors
    from tests.test_mirror import FailAfter

    store = PostgresCatalogueStore(database)
    try:
        store.upsert_listings(small_listings(3, prefix="OLD"))
        generation = store.generation()
        work = tmp_path / "catalogue.sqlite3"
        with Client(source, KEY, "remote", cache=False, transport=FailAfter(3), max_retries=0) as flaky:
            with pytest.raises(errors.TransportError):
                mirror(flaky, work, page_size=100, into=store)
        assert store.generation() == generation and store.counts()["listings"] == 3
        with Client(source, KEY, "remote", cache=False) as steady:
            report = mirror(steady, work, page_size=100, into=store)
        assert report.resumed and report.listings == 300
        assert store.counts()["listings"] == 300
    finally:
        store.close()


def test_a_mirror_whose_last_transaction_failed_writes_again_without_fetching_again(
    source: str, database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precon.service.stores import mirror as mirroring

    real = mirroring.apply_differences
    calls: list[int] = []

    def fail_first(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise psycopg.OperationalError("the server went away")
        return real(*args)

    monkeypatch.setattr(mirroring, "apply_differences", fail_first)
    store = PostgresCatalogueStore(database)
    try:
        with Client(source, KEY, "remote", cache=False) as client:
            with pytest.raises(psycopg.OperationalError):
                mirror(client, tmp_path / "catalogue.sqlite3", province="pe", into=store)
            assert store.counts()["listings"] == 0
            again = mirror(client, tmp_path / "catalogue.sqlite3", province="pe", into=store)
        assert again.resumed and again.requests == 0  # every page was in the work file already
        assert store.counts()["listings"] == again.listings > 0
    finally:
        store.close()
