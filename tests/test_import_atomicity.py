"""Imports commit whole batches: a profile never without its province rows, re-imports leave no orphan rows. Into
PostgreSQL the whole import is one transaction: killed partway, it leaves the catalogue as it was.

A profile is in a province when a listing referring to it is (``/v1/on/search_profiles`` finds it there). Those
rows are written in the transaction that writes the listings or the profiles, so an import killed at any moment
leaves a store whose province search finds every profile it should.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from precon.cli import main
from precon.client.models import PROVINCES, REFERENCE_FIELDS
from precon.service import catalogue
from precon.service.stores.loading import BATCH
from precon.service.stores.records import decode_document, province_of
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ProfileQuery
from tests.catalogues import generated_catalogue

PRECON = Path(sys.executable).with_name("precon")


def write_ndjson(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


def import_file(file: Path, data: Path) -> None:
    result = CliRunner().invoke(
        main, ["catalogue", "import", str(file), "--data", str(data)], env={"PRECON_SERVICE_DATA_DIR": None}
    )
    assert result.exit_code == 0, result.output


def province_rows(path: Path) -> tuple[int, int]:
    """(rows of profile_provinces, those of them whose profile is gone)."""
    with closing(sqlite3.connect(path)) as db:
        total = db.execute("SELECT count(*) FROM profile_provinces").fetchone()[0]
        orphans = db.execute(
            "SELECT count(*) FROM profile_provinces WHERE profile NOT IN (SELECT id FROM profiles)"
        ).fetchone()[0]
    return total, orphans


def expected_provinces(path: Path) -> dict[str, set[str]]:
    """Per province code, the stored profiles that a stored listing of that province refers to."""
    with closing(sqlite3.connect(path)) as db:
        stored = {row[0] for row in db.execute("SELECT path FROM profiles")}
        docs = [decode_document(row[0]) for row in db.execute("SELECT doc FROM listing_docs")]
    expected: dict[str, set[str]] = {code: set() for code in PROVINCES if code != "all"}
    for listing in docs:
        province = province_of(listing.get("state"))
        for field in REFERENCE_FIELDS:
            for reference in listing.get(field) or ():
                if province is not None and reference in stored:
                    expected[province].add(reference)
    return expected


def assert_province_search_finds_every_profile(path: Path) -> None:
    expected = expected_provinces(path)
    store = SQLiteStore(path)
    try:
        for code, paths in expected.items():
            hits = store.search_profiles(ProfileQuery(province=code, limit=100_000))
            assert {hit["path"] for hit in hits.documents} == paths, code
    finally:
        store.close()
    assert province_rows(path)[1] == 0


# ----------------------------------------------------------------------------------------------------------
# re-importing
# ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> catalogue.Catalogue:
    return generated_catalogue(150, seed=5)


def test_reimporting_the_same_records_keeps_the_province_rows(tmp_path: Path, small: catalogue.Catalogue) -> None:
    data = tmp_path / "data"
    target = data / "catalogue.sqlite3"
    everything = write_ndjson(tmp_path / "all.ndjson", [*small.profiles, *small.listings])
    profiles = write_ndjson(tmp_path / "profiles.ndjson", small.profiles)
    import_file(everything, data)
    first = province_rows(target)
    assert first[0] > 0 and first[1] == 0
    assert_province_search_finds_every_profile(target)
    for file in (everything, everything, profiles, profiles, profiles):
        import_file(file, data)
        assert province_rows(target) == first
    assert_province_search_finds_every_profile(target)


# ----------------------------------------------------------------------------------------------------------
# an import killed partway
# ----------------------------------------------------------------------------------------------------------

PROVINCE_NAMES = ["Ontario", "British Columbia", "Alberta", "Quebec", "Manitoba", "Nova Scotia"]


def many_small_records(listings: int, builders: int) -> list[dict[str, Any]]:
    """Profiles, then listings that refer to them: small records, so that one batch commits quickly."""
    profiles = [{"id": f"b{k}", "path": f"Builders/b{k}", "name": f"Builder {k}"} for k in range(builders)]
    profiles += [{"id": f"a{k}", "path": f"Architects/a{k}", "name": f"Architect {k}"} for k in range(builders)]
    records: list[dict[str, Any]] = list(profiles)
    for n in range(listings):
        listing_id = f"L{n:05d}"
        records.append(
            {
                "listingId": listing_id,
                "path": f"Listings/{listing_id}",
                "name": f"Tower {n}",
                "state": PROVINCE_NAMES[n % len(PROVINCE_NAMES)],
                "builders": [f"Builders/b{(n * 7) % builders}"],
                "architects": [f"Architects/a{(n * 13) % builders}"],
            }
        )
    return records


def listings_committed(path: Path) -> int:
    """How many listings a reader sees in the file now (0 while it does not exist yet)."""
    if not path.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.1)) as db:
            return int(db.execute("SELECT count(*) FROM listings").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.fixture
def importer() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def test_an_import_killed_partway_leaves_every_profile_with_its_provinces(
    tmp_path: Path, importer: list[subprocess.Popen[bytes]]
) -> None:
    total = 3 * BATCH + 1000  # four batches of listings after the profiles: the kill lands after the first commits
    file = write_ndjson(tmp_path / "big.ndjson", many_small_records(total, builders=400))
    data = tmp_path / "data"
    target = data / "catalogue.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECON_SERVICE_")}
    process = subprocess.Popen(
        [str(PRECON), "catalogue", "import", str(file), "--data", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    importer.append(process)
    deadline = time.monotonic() + 60
    while process.poll() is None and listings_committed(target) == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    committed = listings_committed(target)
    assert committed > 0, "the import committed no listing batch before it ended"
    # Whether the kill landed mid-import (the point of the test) or the import had finished, the store holds
    # whole batches, and every stored profile is found in the provinces of the listings referring to it.
    assert committed % BATCH == 0 or committed == total
    assert_province_search_finds_every_profile(target)


# ----------------------------------------------------------------------------------------------------------
# into PostgreSQL: the whole import, or nothing
# ----------------------------------------------------------------------------------------------------------


def import_in_progress(conninfo: str) -> bool:
    """Whether a writer holds the catalogue's write lock (an import's transaction is open)."""
    import psycopg

    from precon.service.stores.postgres.store import WRITE_LOCK

    with psycopg.connect(conninfo) as db:
        row = db.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = %s AND granted",
            (WRITE_LOCK,),
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.postgres  # starts the cluster itself, not through the pg_cluster fixture
def test_an_import_into_postgresql_killed_partway_leaves_the_catalogue_as_it_was(
    tmp_path: Path, importer: list[subprocess.Popen[bytes]]
) -> None:
    from precon.service.stores.postgres.store import PostgresCatalogueStore
    from tests import pg_support

    cluster = pg_support.cluster()
    name = cluster.database()
    url = cluster.url(name)
    total = 15 * BATCH + 1000  # PostgreSQL stores little beside each document: a smaller import ends too soon
    first = write_ndjson(tmp_path / "first.ndjson", many_small_records(200, builders=20))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECON_SERVICE_")}
    done = subprocess.run(
        [str(PRECON), "catalogue", "import", str(first), "--data", str(tmp_path / "data"), "--database", url],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    store = PostgresCatalogueStore(url, migrate=False)
    try:
        before = (store.counts(), store.generation())
        big = write_ndjson(tmp_path / "big.ndjson", many_small_records(total, builders=400))
        process = subprocess.Popen(
            [str(PRECON), "catalogue", "import", str(big), "--data", str(tmp_path / "data"), "--database", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        importer.append(process)
        deadline = time.monotonic() + 60
        while process.poll() is None and not import_in_progress(cluster.conninfo(name)):
            assert time.monotonic() < deadline, "the import never started writing"
            time.sleep(0.005)
        time.sleep(0.1)  # batches written in its transaction, not committed
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        after = (store.counts(), store.generation())
        finished = {"listings": total, "profiles": 800}  # the first file's records are among the second's
        assert after == before or (process.returncode == 0 and after[0] == finished)
        assert after == before, "the import finished before it could be killed: the test proved nothing"
    finally:
        store.close()
        cluster.drop(name)
