"""The market columns (what market_stats is answered from) after a write: moved to the new generation by the listings
written since (precon/service/stores/sqlite/market_patch.py) where they can be, built whole where they cannot. Either
way they hold what a whole build holds, and market_stats answers as a store that builds them whole."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import REGISTRY

from precon.filters import parse
from precon.service.stores import market_layers
from precon.service.stores.ledger_patch import combined_ledger
from precon.service.stores.market_grid import Runs
from precon.service.stores.market_layers import Layers, as_layers, compacted
from precon.service.stores.market_patch import combined
from precon.service.stores.market_stats import MarketColumns, MarketGroup
from precon.service.stores.market_units import UnitLedger, value_key
from precon.service.stores.simulation import day_time, newest_change_day, simulate
from precon.service.stores.sqlite.market_columns import build_market_columns
from precon.service.stores.sqlite.market_units import build_unit_ledger
from precon.service.stores.sqlite.store import SQLiteStore
from tests.catalogues import random_moves, stored_catalogue

START = date(2025, 6, 1)
UNIT_FILTERS = [
    "numberOfBedrooms = 2",
    "units.status:Available AND units.price < 900000",
    "NOT units.status:Sold OR squareFeet >= 900",
    'planCategory:"Sky Suite" OR units.floor >= 10',
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / "market.sqlite3", 80, 21, START)
    simulate(opened, 50, seed=4)
    opened.market_columns()  # held, as when serving
    opened.unit_ledger()
    yield opened
    opened.close()


def patches(kind: str = "columns") -> float:
    return REGISTRY.get_sample_value("precon_market_patches_total", {"catalogue": "market", "kind": kind}) or 0.0


def _plain(values: Any) -> list[Any]:
    """A column as a list, NaN as None (NaN equals nothing)."""
    return [None if value != value else value for value in np.asarray(values).tolist()]


def _runs(runs: Runs) -> list[tuple[Any, ...]]:
    """The runs as a set (the order of runs of one value is the order they were put in; the medians do not see it)."""
    return sorted(zip(runs.value.tolist(), runs.listing.tolist(), runs.first.tolist(), runs.last.tolist(), strict=True))


def held_as_lists(held: MarketColumns | Layers[MarketColumns]) -> dict[str, Any]:
    """What the columns hold (layers: as one)."""
    columns = compacted(as_layers(held), combined).base
    grid = columns.grid
    assert grid is not None and columns.listing_counts is not None
    found: dict[str, Any] = {
        "codes": list(columns.listing_codes.items()),
        "provinces": columns.listing_provinces,
        "plan parts": {path: {k: v.tolist() for k, v in held.items()} for path, held in columns.plan_parts.items()},
        "times": grid.times.tolist(),
        "counts": grid.counts.tolist(),
        "listing counts": columns.listing_counts.tolist(),
        "prices": _runs(grid.prices),
        "per sqft": _runs(grid.per_sqft),
        "runs per part": (grid.prices.listing_first.tolist(), grid.per_sqft.listing_first.tolist()),
        "event months": (columns.event_months.code.tolist(), columns.event_months.first, columns.event_months.span),
        "history seq": columns.history_seq,
    }
    for name in ("part_first", "event_first", "event_at", "event_kind", "launch_first", "launch_at", "listing_deleted"):
        found[name] = getattr(columns, name).tolist()
    return found


def ledger_as_lists(held: UnitLedger | Layers[UnitLedger]) -> dict[str, Any]:
    """What a unit ledger holds (layers: as one), its statuses and plan values decoded (a patch codes a new one after
    those held, a whole build in the order it meets them)."""
    ledger = compacted(as_layers(held), combined_ledger).base

    def status(codes: Any) -> list[str | None]:
        return [ledger.statuses[int(code)] if code >= 0 else None for code in np.asarray(codes).tolist()]

    found: dict[str, Any] = {
        "ids": ledger.listing_ids,
        "codes": list(ledger.listing_codes.items()),
        "provinces": ledger.listing_provinces,
        "unit status": status(ledger.unit_status),
        "status from": status(ledger.status_from),
        "event status": status(ledger.event_status),
        "plan values": {
            name: [value_key(ledger.field_values[name][code]) if code >= 0 else None for code in codes.tolist()]
            for name, codes in ledger.plan_codes.items()
        },
        "history seq": ledger.history_seq,
    }
    for name in ("plan_first", "unit_first", "event_first", "plan_sqft", "unit_plan", "unit_floor", "unit_price",
                 "unit_text_price", "unit_born", "listing_gone", "status_first", "status_at", "price_first",
                 "price_at", "price_from", "typed_from", "event_at", "event_kind", "event_plan", "event_floor",
                 "event_price", "listing_deleted"):  # fmt: skip
        found[name] = _plain(getattr(ledger, name))
    return found


def month_starts(first: date, months: int) -> list[int]:
    found = []
    year, month = first.year, first.month
    for _ in range(months + 1):
        found.append(int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return found


def answers(store: SQLiteStore) -> list[Any]:
    """market_stats over the months simulated, for the market whole, by city, by bedrooms, and in one province."""
    ids = store.listing_ids()
    boundaries = month_starts(START, 4)
    groups = [
        [MarketGroup(None, tuple(ids))],
        [MarketGroup(city, tuple(ids[i::3])) for i, city in enumerate(("a", "b", "c"))],
        [MarketGroup(str(n), tuple(ids), ("floorPlans.numberOfBedrooms", str(n))) for n in (1, 2, 3)],
    ]
    found = [store.market_stats(boundaries, group) for group in groups]
    found.append(store.market_stats(boundaries, groups[0], provinces=frozenset({"ON"})))
    for text in UNIT_FILTERS:
        found += [store.market_stats(boundaries, group, unit_filter=parse(text)) for group in groups]
    return found


def assert_as_built_whole(store: SQLiteStore) -> None:
    answered = answers(store)
    held = store._market.held
    assert held is not None and held[0] == store._read_generation()
    ledger = store._ledger.held
    assert ledger is not None and ledger[0] == held[0]
    with store._reading() as db:
        built, built_ledger = build_market_columns(db), build_unit_ledger(db)
    assert held_as_lists(held[1]) == held_as_lists(built)
    assert ledger_as_lists(ledger[1]) == ledger_as_lists(built_ledger)
    alone = SQLiteStore(store.path)  # a store of its own, which builds its columns whole
    try:
        assert answered == answers(alone)
    finally:
        alone.close()


def later(hours: int, store: SQLiteStore) -> float:
    """A time ``hours`` after the day of the store's newest change began."""
    return day_time(newest_change_day(store)) + hours * 3_600


def sold_and_raised(_: str, doc: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(doc)
    units = [u for plan in changed.get("floorPlans") or [] for u in plan.get("units") or []]
    available = [u for u in units if u.get("status") == "Available"]
    if len(available) >= 2:
        available[0]["status"] = "Sold"
        available[-1]["price"] = (available[-1].get("price") or 500_000) + 25_000
    return changed


def test_a_day_of_sales_patches_the_market_columns_and_the_ledger(store: SQLiteStore) -> None:
    before, ledgers = patches(), patches("ledger")
    store.update_listings(store.listing_ids()[:8], sold_and_raised, at=later(1, store))
    assert_as_built_whole(store)
    assert patches() == before + 1 and patches("ledger") == ledgers + 1


def test_plans_taken_off_and_added_and_a_launch(store: SQLiteStore) -> None:
    ids = store.listing_ids()
    docs = store.get_listings(ids[2:4], None)
    first, second = (copy.deepcopy(docs[i]) for i in ids[2:4])
    first["floorPlans"] = first["floorPlans"][1:]
    extra = copy.deepcopy(second["floorPlans"][0])
    extra.update(id=None, name="Penthouse Added", numberOfBedrooms=7, planCategory="Sky Suite")
    second["floorPlans"] = [*second["floorPlans"], extra, {"name": "Suite Without Units", "numberOfBedrooms": 1}]
    second["sellingStatus"] = "Selling Now" if second.get("sellingStatus") != "Selling Now" else "Sold Out"
    before = patches()
    store.upsert_listings([first, second], at=later(2, store))
    assert_as_built_whole(store)
    assert patches() == before + 1
    held = store._market.held
    assert held is not None and "7" in held_as_lists(held[1])["plan parts"]["floorPlans.numberOfBedrooms"]


def test_a_listing_created_deleted_and_restored_is_patched(store: SQLiteStore) -> None:
    ids = store.listing_ids()
    template = copy.deepcopy(store.get_listings([ids[7]], None)[ids[7]])
    template.update(listingId="MARKET-NEW-1", name="Marketed Anew", sellingStatus="Selling Now")
    for plan in template.get("floorPlans") or []:
        plan.pop("id", None)
    before = patches()
    store.upsert_listings([template], at=later(3, store))
    assert_as_built_whole(store)
    deleted = store.get_listings([ids[5]], None)[ids[5]]
    store.delete_listing(ids[5], at=later(4, store))
    assert_as_built_whole(store)
    store.upsert_listings([deleted], at=later(5, store))
    assert_as_built_whole(store)
    assert patches() == before + 3


def test_a_deletion_with_no_entry_is_found(store: SQLiteStore) -> None:
    """A replica applies another store's deletion without recording it: the deleted listing is found all the same."""
    before = patches()
    store.delete_listing(store.listing_ids()[9], as_stored=True)
    assert_as_built_whole(store)
    assert patches() == before + 1


def test_history_copied_alone_is_read(store: SQLiteStore) -> None:
    """Entries copied from another store with no write of their listing (as a replica copies them) are news."""
    with store._reading() as db:
        rows = db.execute(
            "SELECT at, listing_id, province, scope, plan, unit, field, change, from_value, to_value "
            "FROM listing_history WHERE scope = 'unit' AND field = 'status' "
            "AND CAST(to_value AS TEXT) = '\"Sold\"' LIMIT 2"
        ).fetchall()
    assert rows
    moment = datetime.fromtimestamp(later(1, store), UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    other = next(listing for listing in store.listing_ids() if listing not in {row[1] for row in rows})
    before = patches()
    with store.atomic():  # one change set: the entries, and another listing's write (which raises the generation)
        store.copy_history([(moment, *row[1:]) for row in rows])
        store.update_listings([other], sold_and_raised, at=later(1, store))
    assert_as_built_whole(store)
    assert patches() == before + 1


def test_a_new_month_or_a_large_write_builds_them_whole(store: SQLiteStore) -> None:
    before = patches()
    store.update_listings(store.listing_ids()[:3], sold_and_raised, at=later(24 * 45, store))  # past the grid's end
    assert_as_built_whole(store)
    store.update_listings(store.listing_ids()[:20], sold_and_raised, at=later(24 * 46, store))  # a quarter written
    assert_as_built_whole(store)
    assert patches() == before


@pytest.mark.parametrize("compact_least", [64, 4], ids=["layered", "compacted"])
def test_days_of_random_writes_and_a_simulated_market_stay_as_built_whole(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, compact_least: int
) -> None:
    """Day after day the written listings pile up in the fresh layer (or, with a lower threshold, are combined into
    the base now and then): the figures stay those of columns built whole."""
    monkeypatch.setattr(market_layers, "COMPACT_LEAST", compact_least)
    rng = random.Random(5)
    ids = store.listing_ids()
    before = patches()

    moved = random_moves(rng, drop_sizes=True)

    for day in range(5):
        store.update_listings(rng.sample(ids, k=rng.randint(1, 6)), moved, at=later(1 + day, store))
        assert_as_built_whole(store)
    simulate(store, 2, seed=9)
    assert_as_built_whole(store)
    assert patches() >= before + 5


def test_shared_columns_are_patched_and_mapped(store: SQLiteStore) -> None:
    """Where worker processes share their indexes, one patches the columns it maps and writes them for the others."""
    first, second = SQLiteStore(store.path, shared_indexes=True), SQLiteStore(store.path, shared_indexes=True)
    try:
        first.market_columns()
        before = patches()
        first.update_listings(first.listing_ids()[:4], sold_and_raised, at=later(1, first))
        patched = first.market_columns()
        assert patches() == before + 1
        assert held_as_lists(second.market_columns()) == held_as_lists(patched)
        assert isinstance(second.market_columns().base.event_at, np.ndarray)
        assert answers(first) == answers(second) == answers(store)
    finally:
        first.close()
        second.close()


def test_a_write_makes_the_written_listings_columns_and_keeps_the_base(store: SQLiteStore) -> None:
    """A patch builds the written listings' columns and ledger beside the ones held (market_layers): the base is kept
    as it is, the same arrays, and the written listings are counted from the fresh layer alone."""
    held, ledger = store._market.held, store._ledger.held
    assert held is not None and ledger is not None
    written = store.listing_ids()[:3]
    store.update_listings(written, sold_and_raised, at=later(1, store))
    assert_as_built_whole(store)
    patched, patched_ledger = store._market.held, store._ledger.held
    assert patched is not None and patched_ledger is not None
    for before, after in ((held[1], patched[1]), (ledger[1], patched_ledger[1])):
        assert after.base is before.base
        assert after.fresh is not None and sorted(after.fresh.listing_codes) == sorted(written)
        assert after.replaced is not None and after.replaced.sum() == len(written)
    store.update_listings(store.listing_ids()[2:5], sold_and_raised, at=later(2, store))
    assert_as_built_whole(store)
    again = store._market.held
    assert again is not None and again[1].base is held[1].base and again[1].fresh is not None
    assert sorted(again[1].fresh.listing_codes) == sorted(store.listing_ids()[:5])


def test_a_fresh_layer_grown_large_is_combined_into_the_base(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(market_layers, "COMPACT_LEAST", 4)
    held = store._market.held
    assert held is not None
    store.update_listings(store.listing_ids()[:3], sold_and_raised, at=later(1, store))
    store.market_columns()
    layered = store._market.held
    assert layered is not None and layered[1].fresh is not None and layered[1].base is held[1].base
    store.update_listings(store.listing_ids()[3:6], sold_and_raised, at=later(2, store))
    assert_as_built_whole(store)
    combined_held = store._market.held
    assert combined_held is not None and combined_held[1].fresh is None and combined_held[1].base is not held[1].base
