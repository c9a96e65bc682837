"""A new catalogue's index rows made by two processes: the rows that find its listings (terms, numbers, plans,
units, plan ids, values, labels) for the last part of them computed by a forked copy of this process into a file of
their own, while this one writes the rest; then copied into the catalogue by SQLite, with no Python in between.

Computing and inserting those rows is most of a bulk load's time (2,500 listings with their 565,000 units: about
3.5 s of 4.7 s), and it is the same for every listing, so it splits by listing. The copy keeps the order one
process would have written them in: the copy's listings come after this process's, and their rows are added
after all of this process's. Only where a fork is safe and worth it (:func:`~.forked.can_fork`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from precon.service.stores.derived import complete_listing
from precon.service.stores.loading import BATCH
from precon.service.stores.records import ListingIndexRows, as_stored_listing

SPLIT_WORTH = 400
"""The fewest listings a load splits with a forked copy (below, the fork and the copy cost more than they save)."""
FORKED_SHARE = 0.6
"""The part of the listings whose rows the copy makes: this process also writes every listing's document, columns,
text and place, and copies the rows in at the end."""

# (table, its columns in the catalogue): listing_values' path is kept as text (its code is the catalogue's).
_TABLES: tuple[tuple[str, str], ...] = (
    ("listing_terms", "attr, term, listing"),
    ("listing_numbers", "attr, num, listing"),
    ("listing_plans", "listing, idx"),
    ("listing_plan_values", "listing, idx, field, kind, term, num"),
    (
        "listing_plan_units",
        "listing, idx, status, status_num, price, floor, number_value, floor_value, price_value, status_value",
    ),
    ("plan_ids", "plan_id, listing"),
    ("forked_values", "path, listing, value"),
    ("labels", "attr, term, label"),
    ("listing_attributes", "name"),
)
_KEYS = {"labels": "attr, term", "listing_attributes": "name"}
"""The tables whose first row of a key is kept (a label's first spelling): keyed in the copy's file as well."""


def forked_share(listings: int) -> int:
    """How many of ``listings`` (the last ones) a forked copy makes the rows of."""
    return int(listings * FORKED_SHARE)


def new_listing(record: dict[str, Any], at: float | None) -> dict[str, Any]:
    """A new listing as the store writes it: completed at ``at``, as it is where None (see ``_add_listing``)."""
    record = as_stored_listing(record)[1]
    return record if at is None else complete_listing(record, None, at)


def write_index_rows(path: Path, records: Sequence[dict[str, Any]], first_rowid: int, at: float | None = None) -> int:
    """The index rows of ``records`` (new listings written at ``at``: :func:`new_listing`), stored as row ids
    ``first_rowid`` on, written to a new SQLite file at ``path`` (what the forked copy does),
    :data:`~.loading.BATCH` listings at a time (a batch's rows held at once, as a load holds them). Answers how
    many listings."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("BEGIN")
        for table, columns in _TABLES:
            key = f", PRIMARY KEY({_KEYS[table]})) WITHOUT ROWID" if table in _KEYS else ")"
            db.execute(f"CREATE TABLE {table}({columns}{key}")
        for start in range(0, len(records), BATCH):
            rows = ListingIndexRows()
            for rowid, record in enumerate(records[start : start + BATCH], first_rowid + start):
                rows.add(new_listing(record, at), rowid)
            _insert(db, rows)
        db.execute("COMMIT")
    finally:
        db.close()
    return len(records)


def _insert(db: sqlite3.Connection, rows: ListingIndexRows) -> None:
    inserts = {
        "listing_terms": sorted(rows.terms),
        "listing_numbers": sorted(rows.numbers),
        "listing_plans": rows.plans,
        "listing_plan_values": rows.plan_values,
        "listing_plan_units": rows.plan_units,
        "plan_ids": sorted(rows.plan_ids),
        "forked_values": rows.values,
        "labels": [(attr, term, label) for (attr, term), label in rows.labels.items()],
        "listing_attributes": [(name,) for name in sorted(rows.attribute_names)],
    }
    for table, columns in _TABLES:
        marks = ", ".join("?" * (columns.count(",") + 1))
        verb = "INSERT OR IGNORE" if table in _KEYS else "INSERT"
        db.executemany(f"{verb} INTO {table} VALUES ({marks})", inserts[table])


@contextmanager
def attached(db: sqlite3.Connection, path: Path) -> Iterator[None]:
    """The file :func:`write_index_rows` wrote, attached to ``db`` (outside a transaction: SQLite attaches none
    inside one) for :func:`copy_index_rows`."""
    db.execute("ATTACH DATABASE ? AS forked", (str(path),))
    try:
        yield
    finally:
        db.execute("DETACH DATABASE forked")


def copy_index_rows(db: sqlite3.Connection) -> None:
    """The rows of the attached file added to the catalogue ``db`` (in the caller's transaction)."""
    for table, columns in _TABLES:
        if table == "forked_values":
            db.execute(
                "INSERT OR IGNORE INTO value_paths(path) SELECT DISTINCT path FROM forked.forked_values ORDER BY path"
            )
            db.execute(
                "INSERT INTO listing_values SELECT p.code, v.listing, v.value FROM forked.forked_values v "
                "JOIN value_paths p ON p.path = v.path ORDER BY v.rowid"
            )
        elif table in _KEYS:  # a label, an attribute's name: the first met is kept, as one process's writes keep it
            db.execute(f"INSERT OR IGNORE INTO main.{table}({columns}) SELECT {columns} FROM forked.{table}")
        else:
            db.execute(f"INSERT INTO main.{table}({columns}) SELECT {columns} FROM forked.{table} ORDER BY rowid")
