"""(ours) ``precon catalogue simulate --database``: the PostgreSQL catalogue moved forward day by day through its
writes, each day's entries in PostgreSQL's history under that day's generation, and every replica's copy following
them; the same market as on SQLite for the same seed."""

from __future__ import annotations

import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import pytest

from precon.service import catalogue
from precon.service.stores.loading import batched
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.replica import CatalogueCopy
from precon.service.stores.simulation import day_time
from precon.service.stores.sqlite.store import SQLiteStore
from tests import pg_support
from tests.catalogues import generated_catalogue
from tests.test_pg_replica_copies import copied_history, postgres_history
from tests.test_simulation import derived_rows

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database

START = date(2025, 2, 1)


@pytest.fixture(scope="module")
def built() -> catalogue.Catalogue:
    return generated_catalogue(80, seed=6)


def test_simulate_moves_postgresql_and_the_copies_follow(
    pg_database: str, built: catalogue.Catalogue, tmp_path: Path
) -> None:
    primary = PostgresCatalogueStore(pg_database, migrate=False)
    with primary.atomic():
        primary.upsert_profiles(built.profiles)
        primary.upsert_listings(built.listings, at=day_time(START))
    copy = CatalogueCopy(primary, tmp_path / "copy.sqlite3")
    command = [sys.executable, "-m", "precon.cli", "catalogue", "simulate", "--days", "30", "--seed", "2"]
    done = subprocess.run(
        [*command, "--database", pg_database, "--data", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert f"simulated {START + timedelta(days=1)} to {START + timedelta(days=30)}" in done.stderr
    history = postgres_history(primary)
    days = {row[0][:10] for row in history[len(built.listings) :]}
    assert days and days <= {(START + timedelta(days=k)).isoformat() for k in range(1, 31)}
    copy.catch_up()
    assert copied_history(copy.local) == history

    # The same market as a SQLite catalogue of the same listings moved by the same seed.
    local = SQLiteStore(tmp_path / "sqlite.sqlite3")
    local.upsert_profiles(built.profiles)
    for batch in batched(built.listings):
        local.upsert_listings(batch, at=day_time(START))
    from precon.service.stores.simulation import simulate

    simulate(local, 30, seed=2)
    assert copied_history(local) == history
    assert derived_rows(local)["docs"] == derived_rows(copy.local)["docs"]
    local.close()
    copy.close()
    primary.close()
