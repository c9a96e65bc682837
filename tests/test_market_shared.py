"""(ours) ``market_stats``' columns and unit ledger where processes share a data directory's indexes: warmed, one
store builds and writes them and the others map them (the same figures as a store that builds its own), and after a
write the next generation's are built once again."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from precon import filters
from precon.service.stores.loading import batched
from precon.service.stores.market_stats import MarketGroup
from precon.service.stores.simulation import day_time, simulate
from precon.service.stores.sqlite.store import SQLiteStore
from tests.catalogues import generated_catalogue

START = date(2025, 6, 1)
EDGES = [int(day_time(date(2025, month, 1)) * 1000) for month in range(6, 10)]


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = generated_catalogue(60, seed=3)
    path = tmp_path_factory.mktemp("market-shared") / "c.sqlite3"
    store = SQLiteStore(path)
    store.upsert_profiles(built.profiles)
    for batch in batched(built.listings):
        store.upsert_listings(batch, at=day_time(START))
    simulate(store, 60, seed=2)
    store.close()
    return path


def answers(store: SQLiteStore) -> list[dict[str, object]]:
    ids = tuple(store.listing_ids())
    groups = [MarketGroup(None, ids), MarketGroup("2", ids, ("floorPlans.numberOfBedrooms", "2"))]
    return store.market_stats(EDGES, groups)


def counting_builds(monkeypatch: pytest.MonkeyPatch, held: str, *stores: SQLiteStore) -> list[int]:
    """Each build of the stores' value ``held`` (``_market``, ``_ledger``), counted."""
    built: list[int] = []
    for store in stores:
        value = getattr(store, held)
        monkeypatch.setattr(value, "build", lambda db, build=value.build: built.append(1) or build(db))
    return built


@pytest.fixture
def stores(original: Path, tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore, SQLiteStore]]:
    """Two stores sharing indexes over a copy of the catalogue (two workers' processes), and one sharing nothing."""
    path = tmp_path / "c.sqlite3"
    shutil.copy(original, path)
    made = SQLiteStore(path, shared_indexes=True), SQLiteStore(path, shared_indexes=True), SQLiteStore(path)
    yield made
    for store in made:
        store.close()


def test_one_process_builds_them_and_the_others_map_them(
    stores: tuple[SQLiteStore, SQLiteStore, SQLiteStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, alone = stores
    built = counting_builds(monkeypatch, "_market", first, second, alone)
    first.warm()
    second.warm()
    assert len(built) == 1
    held = second._market.held
    assert held is not None and held[1].base.grid is not None and not held[1].base.grid.counts.flags.writeable
    assert answers(first) == answers(second) == answers(alone) and len(built) == 2
    listing = alone.listing_ids()[0]
    alone.delete_listing(listing)
    assert answers(second) == answers(first) == answers(alone)
    assert len(built) == 4, "the new generation: built once for both, once alone"
    markets = [p for p in (tmp_path / "c.sqlite3.index").iterdir() if p.name.startswith("market-")]
    assert len(markets) == 1, "the generation before is removed"


def test_warmed_processes_map_the_unit_ledger_one_of_them_built(
    stores: tuple[SQLiteStore, SQLiteStore, SQLiteStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``precon serve --workers``: the process that warms the data directory builds the unit ledger and writes it,
    the workers map it, and no ``unitFilter`` request builds it again."""
    first, second, alone = stores
    built = counting_builds(monkeypatch, "_ledger", first, second, alone)
    chosen = filters.parse("units.status:Available")
    first.warm()
    second.warm()
    assert len(built) == 1
    held = second._ledger.held
    assert held is not None and not held[1].base.unit_price.flags.writeable
    asked = (EDGES, [MarketGroup(None, tuple(alone.listing_ids()))], True, None, chosen)
    assert first.market_stats(*asked) == second.market_stats(*asked) == alone.market_stats(*asked)
    assert len(built) == 2, "built once more: by the store that shares nothing, when asked"


def test_the_unit_ledger_of_a_unit_filter_is_built_once_and_mapped_by_the_others(
    stores: tuple[SQLiteStore, SQLiteStore, SQLiteStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``unitFilter`` is answered from the unit ledger: built by the first process that is asked one, mapped by the
    others, the same figures as a store alone; the market columns' files are left where they are."""
    first, second, alone = stores
    built = counting_builds(monkeypatch, "_ledger", first, second, alone)
    chosen = filters.parse("numberOfBedrooms = 2 AND units.price < 900000")
    ids = tuple(alone.listing_ids())
    asked = (EDGES, [MarketGroup(None, ids)], True, None, chosen)
    found = first.market_stats(*asked)
    assert second.market_stats(*asked) == found == alone.market_stats(*asked) and len(built) == 2
    held = second._ledger.held
    assert held is not None and not held[1].base.unit_price.flags.writeable
    assert first.market_stats(EDGES, [MarketGroup(None, ids)]) != found
    kinds = sorted(p.name.split("-")[0] for p in (tmp_path / "c.sqlite3.index").iterdir() if p.is_dir())
    assert kinds == ["ledger", "market"]
