"""(ours) A catalogue that lives: ``precon catalogue simulate`` moves it forward day by day through the store's
writes, a new data directory's catalogue comes with a simulated past, and a listing rewritten in place leaves the
rows a fresh load would."""

from __future__ import annotations

import copy
import fcntl
import functools
import statistics
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

import orjson
import pytest

from precon.filters import fold_text
from precon.filters.plans import unit_values
from precon.service import catalogue
from precon.service.catalogue.market import Draws, Listing, Week, apply_week, year_pace
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.stores.history import iso_time
from precon.service.stores.loading import batched
from precon.service.stores.simulation import (
    OWN_SLOTS,
    WRITE_HOUR,
    SimulationFailed,
    day_time,
    last_past_day,
    simulate,
    simulated_past,
    slot,
)
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.sqlite.writes import StaleUpdate
from precon.service.stores.types import CatalogueChange
from tests.catalogues import generated_catalogue

START = date(2024, 3, 1)

DERIVED = {
    "rows": "SELECT l.listing_id, {columns} FROM listings l",
    "terms": "SELECT l.listing_id, t.attr, t.term FROM listing_terms t JOIN listings l ON l.id = t.listing",
    "numbers": "SELECT l.listing_id, n.attr, n.num FROM listing_numbers n JOIN listings l ON l.id = n.listing",
    "plans": "SELECT l.listing_id, p.idx FROM listing_plans p JOIN listings l ON l.id = p.listing",
    "values": "SELECT l.listing_id, v.idx, v.field, v.kind, v.term, v.num FROM listing_plan_values v "
    "JOIN listings l ON l.id = v.listing",
    "units": "SELECT l.listing_id, u.idx, u.status, u.status_num, u.price, u.floor FROM listing_plan_units u "
    "JOIN listings l ON l.id = u.listing",
    "plan_ids": "SELECT l.listing_id, p.plan_id FROM plan_ids p JOIN listings l ON l.id = p.listing",
    "text": "SELECT l.listing_id, f.* FROM listing_fts f JOIN listings l ON l.id = f.rowid",
    "places": "SELECT l.listing_id, g.min_lat, g.min_lng FROM listing_geo g JOIN listings l ON l.id = g.id",
    "docs": "SELECT l.listing_id, d.doc FROM listing_docs d JOIN listings l ON l.id = d.id",
    "labels": "SELECT attr, term, label FROM labels",
    "attributes": "SELECT name FROM listing_attributes",
    "provinces": "SELECT pp.province, p.path, pp.listings FROM profile_provinces pp "
    "JOIN profiles p ON p.id = pp.profile",
}


def derived_rows(store: SQLiteStore) -> dict[str, list[Any]]:
    """Every row a search reads, keyed by listing id rather than row id (which a rewrite in place keeps)."""
    db = store._db()
    columns = [row[1] for row in db.execute("PRAGMA table_info(listings)") if row[1] not in ("id", "listing_id")]
    found: dict[str, list[Any]] = {}
    for name, sql in DERIVED.items():
        rows = db.execute(sql.format(columns=", ".join(f"l.{c}" for c in columns))).fetchall()
        if name == "docs":
            rows = [(listing_id, orjson.loads(doc)) for listing_id, doc in rows]
            rows.sort(key=lambda row: row[0])
        else:
            rows.sort(key=repr)
        found[name] = rows
    return found


def _stored(path: Path, built: catalogue.Catalogue, at: float | None = None) -> SQLiteStore:
    store = SQLiteStore(path)
    for batch in batched(built.profiles):
        store.upsert_profiles(batch)
    for batch in batched(built.listings):
        store.upsert_listings(batch, at=at)
    return store


@pytest.fixture(scope="module")
def built() -> catalogue.Catalogue:
    return generated_catalogue(150, seed=5)


def _edited(doc: dict[str, Any], k: int) -> dict[str, Any]:
    """A listing changed the ways writes change them: its text, place, terms, plans, units and plan ids."""
    doc = copy.deepcopy(doc)
    plans = doc.get("floorPlans") or []
    match k % 7:
        case 0:
            doc["name"] = doc["name"] + " Residences"
            doc["amenities"] = [*doc.get("amenities", []), "Rooftop Garden"]
        case 1:
            doc["lat"], doc["long"] = "43.7001", "-79.4163"
            doc["_geoloc"] = {"lat": 43.7001, "lng": -79.4163}
        case 2 if plans:
            plans.pop()
        case 3 if plans:
            plans.append({**copy.deepcopy(plans[0]), "id": f"{doc['listingId']}-extra", "name": "Suite X"})
        case 4 if plans and plans[0].get("units"):
            plans[0]["units"][0]["status"] = "Sold"
            plans[0]["units"][-1]["price"] = 999_990
            plans[0]["contactForPricing"] = not plans[0].get("contactForPricing")
            doc["startPrice"], doc["isFeatured"] = 123_456, not doc.get("isFeatured")
        case 5 if plans:
            plans[0]["id"] = f"{doc['listingId']}-renamed"
        case _:  # its companies change: the profiles' provinces follow
            doc["builders"], doc["state"] = [], "Yukon"
    return doc


def test_a_listing_rewritten_in_place_leaves_the_rows_a_fresh_load_would(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    store = _stored(tmp_path / "rewritten.sqlite3", built)
    stored = store.get_listings([listing["listingId"] for listing in built.listings], None)
    edited = [_edited(stored[listing["listingId"]], k) for k, listing in enumerate(built.listings)]
    for batch in batched(edited, 40):
        store.upsert_listings(batch)
    final = list(store.get_listings([listing["listingId"] for listing in built.listings], None).values())
    fresh = SQLiteStore(tmp_path / "fresh.sqlite3")
    fresh.upsert_profiles(built.profiles)
    fresh.upsert_listings(final, as_stored=True)
    rewritten, loaded = derived_rows(store), derived_rows(fresh)
    # Labels are each value's first spelling, kept once seen (as a rewrite of the whole listing keeps them).
    assert set(loaded.pop("labels")) <= set(rewritten.pop("labels"))
    assert rewritten == loaded
    store.close()
    fresh.close()


def test_simulate_writes_each_day_through_the_store_at_that_days_time(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    store = _stored(tmp_path / "c.sqlite3", built, at=day_time(START))
    heard: list[list[CatalogueChange]] = []
    store.listeners.append(heard.append)
    days: list[tuple[date, int]] = []
    report = simulate(store, 120, seed=3, progress=lambda day, written: days.append((day, written)))
    assert (report.first_day, report.last_day) == (START + timedelta(days=1), START + timedelta(days=120))
    assert [day for day, _ in days] == [START + timedelta(days=k) for k in range(1, 121)]
    assert report.writes == len(heard) == sum(1 for _, written in days if written) > 60
    assert report.listings_written == sum(written for _, written in days) == sum(len(c) for c in heard)
    entries = [row for row in _history(store) if row[0] > iso_time(day_time(START))]
    assert len(entries) == report.entries > report.listings_written
    assert all(row[0][11:13] == f"{WRITE_HOUR:02d}" for row in entries)
    assert {row[0][:10] for row in entries} <= {(START + timedelta(days=k)).isoformat() for k in range(1, 121)}
    # Each write's listeners heard of its listings with their entries, as an import's would.
    assert all(change.action == "updated" and change.entries for changes in heard for change in changes)
    # It goes on from the newest change, not from today.
    again = simulate(store, 10, seed=3)
    assert again.first_day == START + timedelta(days=121)
    store.close()


class _ReadThenWrite:
    """A store without a read-modify-write of its own: a simulation reads each day's documents, then writes them."""

    def __init__(self, store: SQLiteStore) -> None:
        self.get_listings, self.upsert_listings = store.get_listings, store.upsert_listings
        self.newest_change, self.listing_ids = store.newest_change, store.listing_ids


class _Hearing(list[list[CatalogueChange]]):
    """A listener that keeps each write's changes, each with the document it replaced."""

    def __call__(self, changes: list[CatalogueChange]) -> None:
        self.append(changes)

    def wants_before(self) -> bool:
        return True


def test_a_simulation_through_the_stores_update_records_what_reading_then_writing_records(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    """Three ways to the same catalogue, history and events: each day's update read, decided and written in one
    transaction; each day's documents read, then written; most days decided by a helper process while the days
    before are written (as a long simulation does)."""
    outcomes = []
    for name in ("updated", "read-then-written", "shared with a helper"):
        store = _stored(tmp_path / f"{name}.sqlite3", built, at=day_time(START))
        heard = _Hearing()
        store.listeners.append(heard)
        if name == "read-then-written":
            simulate(_ReadThenWrite(store), 60, seed=4)  # type: ignore[arg-type]
        else:
            simulate(store, 60, seed=4, helper=name != "updated")
        events = [[(c.kind, c.action, c.key, c.entries, c.before) for c in changes] for changes in heard]
        units = store._db().execute(  # each plan's unit rows in the order of its units, as a fresh load has them
            "SELECT l.listing_id, u.idx, u.status, u.price FROM listing_plan_units u "
            "JOIN listings l ON l.id = u.listing ORDER BY l.listing_id, u.idx, u.rowid"
        )
        outcomes.append((derived_rows(store), _history(store, with_province=True), events, units.fetchall()))
        store.close()
    assert outcomes[0] == outcomes[1] == outcomes[2]
    docs = dict(outcomes[0][0]["docs"])
    in_order = [
        (listing_id, index, fold_text(unit["status"]), unit_values(unit)["price"])
        for listing_id in sorted(docs)
        for index, plan in enumerate(docs[listing_id].get("floorPlans") or [])
        for unit in plan.get("units") or []
    ]
    assert outcomes[0][3] == in_order


class _HelperCannotOpen(SQLiteStore):
    """A catalogue whose helper process fails: the file it is told to open cannot be (its folder is a file)."""

    def opener(self) -> functools.partial[SQLiteStore]:
        return functools.partial(SQLiteStore, self.path / "catalogue.sqlite3")


def test_a_helper_that_fails_stops_the_simulation_with_its_reason_and_the_days_written_stay_whole(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    _stored(tmp_path / "c.sqlite3", built, at=day_time(START)).close()
    store = _HelperCannotOpen(tmp_path / "c.sqlite3")
    days: list[date] = []
    with pytest.raises(SimulationFailed, match=r"(?s)helper process failed: Traceback.*Error"):
        simulate(store, 30, seed=4, progress=lambda day, written: days.append(day), helper=True)
    # The days before the helper's first were written, each whole; none after.
    assert days == [START + timedelta(days=k) for k in range(1, len(days) + 1)]
    assert all(slot(day) in OWN_SLOTS for day in days)
    written = {row[0][:10] for row in _history(store) if row[0] > iso_time(day_time(START))}
    assert written <= {day.isoformat() for day in days}
    store.close()


def test_a_prepared_update_is_refused_when_one_of_its_listings_was_written_after_it_was_read(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    store = _stored(tmp_path / "c.sqlite3", built, at=day_time(START))
    ids = [listing["listingId"] for listing in built.listings[:5]]

    def renamed(listing_id: str, doc: dict[str, Any]) -> dict[str, Any]:
        return {**doc, "name": doc["name"] + " II"}

    prepared = store.prepare_update(ids, renamed, at=day_time(START) + 86_400)
    store.upsert_listings([{**store.get_listings([ids[3]], None)[ids[3]], "summary": "written meanwhile"}])
    before, generation = derived_rows(store), store.generation()
    with pytest.raises(StaleUpdate, match="written after it was read; nothing was written"):
        store.apply_update(prepared)
    assert derived_rows(store) == before and store.generation() == generation
    # Prepared again, it is written, with its history.
    changes = store.apply_update(store.prepare_update(ids, renamed, at=day_time(START) + 86_400))
    assert [change.key for change in changes] == ids
    assert all(doc["name"].endswith(" II") for doc in store.get_listings(ids, None).values())
    store.close()


def test_a_simulation_is_the_same_for_the_same_seed_and_another_for_another(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    outcomes = []
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        store = _stored(tmp_path / f"{name}.sqlite3", built, at=day_time(START))
        simulate(store, 45, seed=seed)
        outcomes.append((derived_rows(store)["docs"], _history(store)))
        store.close()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] != outcomes[2]


def test_the_simulated_past_is_what_writing_each_day_through_the_store_records(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    end = START + timedelta(days=90)
    past = simulated_past(built.listings, 90, seed=2, end=end)
    store = _stored(tmp_path / "written.sqlite3", built, at=day_time(START))
    simulate(store, 90, seed=2)
    assert past.history == _history(store, with_province=True)
    assert {doc["listingId"]: doc for doc in past.listings} == dict(derived_rows(store)["docs"])
    assert past.report is not None and past.report.entries == len(past.history)
    store.close()


def test_a_simulated_past_shared_with_a_forked_copy_is_the_one_a_single_process_makes(
    built: catalogue.Catalogue,
) -> None:
    end = START + timedelta(days=120)
    alone = simulated_past(built.listings, 120, seed=4, end=end, fork=False)
    shared = simulated_past(built.listings, 120, seed=4, end=end, fork=True)
    assert shared.listings == alone.listings  # the same documents, in the same order
    assert shared.history == alone.history  # the same entries, in the order the days wrote them
    assert alone.report is not None and shared.report is not None
    assert (shared.report.writes, shared.report.listings_written, shared.report.entries) == (
        alone.report.writes,
        alone.report.listings_written,
        alone.report.entries,
    )
    assert alone.report.listings_written > 0


def _history(store: SQLiteStore, with_province: bool = False) -> list[tuple[Any, ...]]:
    columns = "at, listing_id, province, scope, plan, unit, field, change, from_value, to_value"
    rows = store._db().execute(f"SELECT {columns} FROM listing_history ORDER BY seq").fetchall()
    return [tuple(row) if with_province else (row[0], *row[1:2], *row[3:]) for row in rows]


@pytest.fixture(scope="module")
def two_years() -> tuple[catalogue.Catalogue, list[tuple[Any, ...]], list[dict[str, Any]]]:
    built = generated_catalogue(400, seed=9)
    past = simulated_past(built.listings, 730, seed=1, end=date(2024, 12, 31))
    return built, past.history, past.listings


def _entries(history: list[tuple[Any, ...]], scope: str, field: str) -> list[tuple[Any, ...]]:
    return [row for row in history if row[3] == scope and row[6] == field and row[7] == "updated"]


def test_the_market_moves_as_the_condo_markets_went(two_years: Any) -> None:
    built, history, final = two_years
    sold = [row for row in _entries(history, "unit", "status") if orjson.loads(row[9]) == "Sold"]
    by_year = Counter(row[0][:4] for row in sold)
    assert by_year["2023"] > 1.3 * by_year["2024"]  # brisk, then slow from 2024
    selling = [orjson.loads(row[9]) for row in _entries(history, "listing", "sellingStatus")]
    assert {"Selling Now", "Sold Out", "Pending"} <= set(selling)  # launches, sell-outs, stalls
    incentives = _entries(history, "listing", "numberOfIncentives")
    assert incentives and min(row[0][:4] for row in incentives) >= "2024"
    assert _entries(history, "listing", "estimatedCompletionYear")  # completion dates slip
    statuses = Counter(doc["sellingStatus"] for doc in final)
    assert statuses["Pending"] < Counter(doc["sellingStatus"] for doc in built.listings)["Pending"]


def test_releases_raise_a_plans_prices_a_few_per_cent_and_cuts_come_in_the_slow_years(two_years: Any) -> None:
    _, history, _ = two_years
    moves = [
        (row[0][:4], orjson.loads(row[9]) / orjson.loads(row[8]) - 1) for row in _entries(history, "unit", "price")
    ]
    ups = [change for _, change in moves if change > 0]
    downs = [(year, change) for year, change in moves if change < 0]
    assert ups and all(0.015 <= change <= 0.055 for change in ups)
    assert downs and all(year >= "2024" and -0.085 <= change <= -0.025 for year, change in downs)


def test_cheaper_units_sell_first() -> None:
    units = [
        {"unitNumber": str(k), "floor": "2", "price": 500_000 + 1000 * k, "status": "Available"} for k in range(200)
    ]
    doc = {"listingId": "L1", "sellingStatus": "Selling Now", "floorPlans": [{"id": "p", "units": units}]}
    state = Listing.of(doc)
    week = Week(date(2023, 5, 1), 1.0, 600_000.0)
    moved = apply_week(doc, state, Draws(sales=60), week, Random("cheaper"))
    taken = [u["price"] for u in moved["floorPlans"][0]["units"] if u["status"] != "Available"]
    assert len(taken) == 60 and state.available == 140
    assert statistics.mean(taken) < 500_000 + 1000 * 80  # the cheaper of two drawn (uniform draws: near 100)
    assert doc["floorPlans"][0]["units"] is units and all(u["status"] == "Available" for u in units)  # untouched


def test_a_plans_status_and_price_and_the_listings_follow_its_units(two_years: Any) -> None:
    _, _, final = two_years
    for doc in final:
        for plan in doc.get("floorPlans") or []:
            units = plan.get("units") or []
            available = [u["price"] for u in units if u["status"] == "Available"]
            if units:
                assert plan["status"] == ("Available" if available else "Sold Out")
                if available and all(available):
                    assert plan["startPrice"] == min(available)
        if doc["sellingStatus"] == "Sold Out":
            assert all(u["status"] == "Sold" for p in doc.get("floorPlans") or [] for u in p.get("units") or [])
        priced = [p["startPrice"] for p in doc.get("floorPlans") or [] if isinstance(p.get("startPrice"), int)]
        if priced:
            assert doc["startPrice"] == min(priced)


def test_the_markets_pace_is_brisk_in_2022_and_slow_from_2024() -> None:
    assert year_pace(date(2022, 3, 1)) > 1.4 > year_pace(date(2023, 6, 1)) > year_pace(date(2024, 6, 1))
    assert year_pace(date(2025, 6, 1)) < 0.5


def test_a_new_data_directory_comes_with_its_simulated_past(tmp_path: Path) -> None:
    settings = ServiceSettings(data_dir=tmp_path, default_listings=60, default_history_days=45, rate_limit=0)
    directory = DataDirectory.open(settings)
    try:
        newest = directory.live.newest_change()
        rows = directory.live._db().execute("SELECT count(*), min(at) FROM listing_history").fetchone()
    finally:
        directory.close()
    end = last_past_day()
    # The past is the simulation of these listings up to the last past day. Its newest entry is on that day only when
    # some listing changed that day; with 60 listings about one day in five is quiet (2026-12-05 was), so the newest
    # entry is compared with the simulation's own, made here to the same end.
    expected = simulated_past(generated_catalogue(60, settings.default_seed).listings, 45, settings.default_seed, end)
    assert newest is not None and newest == max(entry[0] for entry in expected.history)
    assert newest[:10] <= end.isoformat()
    assert newest <= iso_time(time.time())  # nothing stamped after the catalogue was made
    assert rows[0] > 60 and rows[1][:10] == (end - timedelta(days=45)).isoformat()


def test_a_simulated_past_ends_on_the_last_day_whose_write_time_has_passed() -> None:
    write = datetime(2026, 3, 10, WRITE_HOUR, tzinfo=UTC)
    assert last_past_day(write - timedelta(seconds=1)) == date(2026, 3, 9)
    assert last_past_day(write) == date(2026, 3, 10)
    assert last_past_day(datetime(2026, 3, 11, 0, 30, tzinfo=UTC)) == date(2026, 3, 10)
    assert day_time(last_past_day()) <= time.time()


def _precon(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "precon.cli", "catalogue", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def test_the_command_simulates_and_says_what_it_did(built: catalogue.Catalogue, tmp_path: Path) -> None:
    outcomes = []
    for way in ("--no-helper", "--helper"):  # the same days, written by one process or decided mostly by two
        data = tmp_path / way
        data.mkdir()
        _stored(data / "catalogue.sqlite3", built, at=day_time(START)).close()
        done = _precon("simulate", "--days", "20", "--seed", "4", way, "--data", str(data))
        assert done.returncode == 0, done.stderr
        assert f"simulated {START + timedelta(days=1)} to {START + timedelta(days=20)}" in done.stderr
        store = SQLiteStore(data / "catalogue.sqlite3")
        outcomes.append((derived_rows(store), _history(store, with_province=True)))
        store.close()
    assert outcomes[0] == outcomes[1]
    assert (
        "--helper is for a SQLite catalogue"
        in _precon("simulate", "--days", "2", "--helper", "--database", "postgresql://nowhere/x").stderr
    )
    for args, message in (
        (("--days", "0"), "0 is not in the range 1<=x<=3650"),
        (("--days", "soon"), "'soon' is not a valid integer"),
        ((), "Missing option '--days'"),
    ):
        refused = _precon("simulate", *args, "--data", str(tmp_path / "--helper"))
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr


def test_a_simulation_waits_for_an_import_then_refuses_and_writes_nothing(
    built: catalogue.Catalogue, tmp_path: Path
) -> None:
    store = _stored(tmp_path / "catalogue.sqlite3", built, at=day_time(START))
    before = derived_rows(store)
    store.close()
    lock = (tmp_path / "catalogue.sqlite3.operation").open("a+")
    fcntl.flock(lock, fcntl.LOCK_EX)
    lock.write("an import of listings.ndjson (process 1)")
    lock.flush()
    try:
        refused = _precon("simulate", "--days", "5", "--wait", "1", "--data", str(tmp_path))
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    assert refused.returncode == 1
    assert "waiting for an import of listings.ndjson (process 1) to finish" in refused.stderr
    assert "is still running" in refused.stderr and "nothing was simulated" in refused.stderr
    assert "Traceback" not in refused.stderr
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    assert derived_rows(store) == before
    store.close()
    assert _precon("simulate", "--days", "5", "--data", str(tmp_path)).returncode == 0
