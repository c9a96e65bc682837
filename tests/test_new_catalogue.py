"""(ours) A new catalogue's load: the rows that find its listings made by two processes are the rows one process
makes, a forked copy that fails leaves the load whole, and a first start stopped midway leaves no catalogue behind
(the next start builds it again)."""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from precon.service import catalogue
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.stores import loading
from precon.service.stores.history import iso_time
from precon.service.stores.simulation import last_past_day, simulated_past
from precon.service.stores.sqlite import bulk, forked_rows
from precon.service.stores.sqlite.store import SQLiteStore

LISTINGS = 90
SMALL_BATCH = 16
"""Batches this small, so that the load's batches fall on both sides of where the forked copy's share starts."""


@pytest.fixture(scope="module")
def past() -> tuple[loading.Past, list[dict[str, Any]]]:
    built = catalogue.generate(LISTINGS, 7)
    history = simulated_past(built.listings, 30, 7, last_past_day(), fork=False)
    # Spellings of one amenity on both sides of the split, and of another in two of the copy's batches: the label
    # kept is the first listing's.
    history.listings[0]["amenities"] = [*history.listings[0]["amenities"], "Rooftop Observatory"]
    history.listings[-2]["amenities"] = ["ROOFTOP OBSERVATORY", "sky garden"]
    history.listings[-1]["amenities"] = ["rooftop observatory", "Sauna", "Sky Garden"]
    history.listings[-30]["amenities"] = ["SKY GARDEN"]
    return history, built.profiles


def every_row(path: Path) -> dict[str, list[Any]]:
    """Every table's rows in the order they are stored (what a scan reads), listing_values with their paths' text
    (a path's code is the order it was first met in), the FTS index by its content."""
    db = sqlite3.connect(path)
    try:
        tables = [
            (name, sql)
            for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
            if not name.startswith(("listing_fts_", "profile_fts_", "listing_geo_", "sqlite_"))
            and name not in ("value_paths", "listing_vocab", "profile_vocab")
        ]
        rows: dict[str, list[Any]] = {}
        for name, sql in tables:
            if name == "listing_values":
                query = "SELECT p.path, v.listing, v.value FROM listing_values v JOIN value_paths p ON p.code = v.path"
                rows[name] = sorted(db.execute(query))
            elif name in ("listing_terms", "listing_numbers") or "WITHOUT ROWID" in sql.upper():
                # Read through their indexes (or stored by key), never in the order they were written.
                rows[name] = sorted(db.execute(f"SELECT * FROM {name}"))
            else:
                rows[name] = db.execute(f"SELECT rowid, * FROM {name} ORDER BY rowid").fetchall()
        rows["listing_values in stored order"] = db.execute(
            "SELECT p.path, v.listing, v.value FROM listing_values v JOIN value_paths p ON p.code = v.path "
            "ORDER BY v.rowid"
        ).fetchall()
        return rows
    finally:
        db.close()


def loaded(
    path: Path, past: tuple[loading.Past, list[dict[str, Any]]], fork: bool | None, at: float | None = None
) -> dict[str, list[Any]]:
    """The catalogue loaded at ``path``: by ``add_new_listings`` (``fork`` as given), or, with ``fork`` None, as
    every store loaded one before (``upsert_listings`` of each batch); the listings as they are, or created at
    ``at``."""
    history, profiles = past
    store = SQLiteStore(path)
    with store.bulk_load():
        store.upsert_profiles(profiles)
        if fork is None:
            for batch in loading.batched(history.listings, SMALL_BATCH):
                store.upsert_listings(batch, as_stored=at is None, at=at)
        else:
            store.add_new_listings(history.listings, at=at, fork=fork)
        store.copy_history(history.history)
    store.close()
    return every_row(path)


def test_the_rows_a_forked_copy_makes_are_the_rows_one_process_makes(
    past: tuple[loading.Past, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "BATCH", SMALL_BATCH)
    monkeypatch.setattr(forked_rows, "BATCH", SMALL_BATCH)
    one = loaded(tmp_path / "one.sqlite3", past, fork=False)
    two = loaded(tmp_path / "two.sqlite3", past, fork=True)
    before = loaded(tmp_path / "before.sqlite3", past, fork=None)
    assert len(one["listings"]) == LISTINGS and len(one["listing_plan_units"]) > 1000
    assert sum(row[1] > LISTINGS - bulk.forked_share(LISTINGS) for row in two["listing_plan_units"]) > 500
    labels = {(attr, term): label for attr, term, label in two["labels"]}
    assert labels["amenities", "rooftop observatory"] == "Rooftop Observatory"
    assert labels["amenities", "sky garden"] == "SKY GARDEN"
    for table in one:
        assert two[table] == one[table], table
        assert before[table] == one[table], table
    assert not list(tmp_path.glob(".*forked-rows*"))  # the copy's file is gone


def test_listings_created_at_a_time_are_completed_and_recorded_alike_by_either_process(
    past: tuple[loading.Past, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "BATCH", SMALL_BATCH)
    at = 1_790_000_000.0
    history, profiles = past
    # As a record from outside comes: no plan ids, no time of its status (the store completes both).
    bare = copy.deepcopy(history)
    for listing in bare.listings[::3]:
        listing.pop("sellingStatusUpdateTimestamp", None)
        for plan in listing.get("floorPlans") or []:
            plan.pop("id", None)
    two = loaded(tmp_path / "two.sqlite3", (bare, profiles), fork=True, at=at)
    before = loaded(tmp_path / "before.sqlite3", (bare, profiles), fork=None, at=at)
    created = [row for row in two["listing_history"] if row[9] == "created" and row[2] == iso_time(at)]
    assert len(created) == LISTINGS
    assert two == before


def test_a_forked_copy_that_fails_leaves_the_load_whole(
    past: tuple[loading.Past, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(path: Path, records: Any, first_rowid: int) -> int:
        path.write_bytes(b"half a file")
        raise OSError(28, "No space left on device")

    one = loaded(tmp_path / "one.sqlite3", past, fork=False)
    monkeypatch.setattr(bulk, "write_index_rows", fails)
    failed = loaded(tmp_path / "failed.sqlite3", past, fork=True)
    assert failed == one
    assert not list(tmp_path.glob(".*forked-rows*"))


def test_new_listings_go_only_into_an_empty_catalogue_being_loaded(
    past: tuple[loading.Past, list[dict[str, Any]]], tmp_path: Path
) -> None:
    history, _ = past
    store = SQLiteStore(tmp_path / "c.sqlite3")
    try:
        with pytest.raises(RuntimeError, match="inside bulk_load"):
            store.add_new_listings(history.listings[:3])
        store.upsert_listings(history.listings[:1], as_stored=True)
        with store.bulk_load(), pytest.raises(RuntimeError, match="empty catalogue"):
            store.add_new_listings(history.listings[1:3])
        assert store.counts()["listings"] == 1
    finally:
        store.close()


def test_a_first_start_stopped_midway_leaves_no_catalogue_and_the_next_builds_it_whole(tmp_path: Path) -> None:
    settings = ServiceSettings(data_dir=tmp_path, default_listings=40, default_history_days=20, rate_limit=0)

    def stopped(what: str, records: int) -> None:
        if what == "listings":
            raise KeyboardInterrupt  # Ctrl-C, with part of the listings written

    with pytest.raises(KeyboardInterrupt):
        DataDirectory.open(settings, stopped, serving=False)
    assert not settings.catalogue_path.exists()
    directory = DataDirectory.open(settings, serving=False)
    try:
        assert directory.live.counts()["listings"] == 40
        history = directory.live._db().execute("SELECT count(*) FROM listing_history").fetchone()[0]
        assert history > 40
    finally:
        directory.close()
    leftovers = {path.name for path in tmp_path.iterdir()} - {
        "catalogue.sqlite3",
        "catalogue.sqlite3.generation",
        "sandbox.sqlite3",
        "sandbox.sqlite3.generation",
        "accounts.sqlite3",
        "webhooks.sqlite3",
    }
    assert not {name for name in leftovers if not name.endswith(("-wal", "-shm"))}
