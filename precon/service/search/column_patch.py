"""A column index moved to a later generation by the listings written since, not read again whole.

A write that updates a few stored listings (a simulated day's sales and price moves, a mirror's daily changes, one
import) changes their rows and nothing else of the index. :func:`patched` reads those rows again (SQLite's
``listing_writes`` names the listings each write wrote, under the generation it raised) and makes a new index from
the old one and them: the old one is not changed (searches may be using it, or it may be mapped read-only from a
file another process wrote). Everything else the index holds is shared with it or copied.

It answers None, and the index is built whole, where a patch could not give what a whole build gives: a listing
created or deleted (positions would move), a value or term the index has never held (its vocabularies would grow),
a listing whose searchable text changed (the text postings and their statistics are of the whole catalogue), or
more listings written than a patch saves time on. The tests hold a patched index to a whole build, array by array.
"""

from __future__ import annotations

import copy
import sqlite3
import time
from collections import defaultdict
from typing import Any

import numpy as np

from precon.schema import MULTI_ATTRIBUTES, SCALAR_ATTRIBUTES
from precon.service import metrics
from precon.service.search.columns import (
    ColumnIndex,
    IntArray,
    NumberPostings,
    TermPostings,
    TextColumn,
    catalogue_name,
    text_digests,
)

MOST_SHARE = 8
"""A patch writes at most one listing in this many (and at least :data:`LEAST`): past that, a whole build is as
cheap."""
LEAST = 256

WRITES_SCHEMA = """
CREATE TABLE IF NOT EXISTS listing_writes(id INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS listing_writes_by_generation ON listing_writes(generation);
"""
"""Each listing's row id and the generation of the last write that wrote it (what :func:`patched` reads again)."""


class _Unpatchable(Exception):
    """What the write changed cannot be patched: the index is built whole."""


def patched(index: ColumnIndex, db: sqlite3.Connection, generation: int) -> ColumnIndex | None:
    """``index`` moved to ``generation`` (the catalogue as ``db``'s transaction reads it) by the listings written
    since its own, or None where it must be built whole (see the module's docstring)."""
    started = time.perf_counter()
    if generation < index.generation:
        return None
    # The same listings under the same row ids: as many, the same highest (a listing created takes a higher one,
    # or the highest again where that one was deleted: then its id differs from the index's, see _scalars).
    count, highest = db.execute("SELECT count(*), max(id) FROM listings").fetchone()
    if count != index.size or (count and highest != int(index.rowids[-1])):
        return None
    written = [r[0] for r in db.execute("SELECT id FROM listing_writes WHERE generation > ?", (index.generation,))]
    if len(written) > max(LEAST, index.size // MOST_SHARE):
        return None
    try:
        found = _patch(index, db, sorted(written), generation)
    except _Unpatchable:
        return None
    metrics.index_patched(catalogue_name(db), time.perf_counter() - started)
    return found


def _patch(index: ColumnIndex, db: sqlite3.Connection, written: list[int], generation: int) -> ColumnIndex:
    new = copy.copy(index)
    new.__dict__.pop("_bitmaps", None)  # made again on first use, from the new postings
    new.generation = generation
    positions = index.positions_of_rowids(np.array(written, dtype=np.int64))
    if len(positions) != len(written):
        raise _Unpatchable
    if len(written):
        if not np.array_equal(text_digests(db, index.rowids, written), index.text_digests[positions]):
            raise _Unpatchable
        _scalars(new, db, written, positions)
        _multi(new, db, written, positions)
    new.labels = {(a, t): label for a, t, label in db.execute("SELECT attr, term, label FROM labels")}
    return new


def _scalars(new: ColumnIndex, db: sqlite3.Connection, written: list[int], positions: IntArray) -> None:
    """The written listings' single values: province, position, order, and each scalar attribute."""
    scalar_columns = ", ".join(a.column for a in SCALAR_ATTRIBUTES)
    marks = ", ".join("?" * len(written))
    rows = db.execute(
        f"SELECT id, listing_id, province, featured, updated_at, geo_lat, geo_lng, {scalar_columns} "
        f"FROM listings WHERE id IN ({marks}) ORDER BY id",
        written,
    ).fetchall()
    if [r[0] for r in rows] != written:
        raise _Unpatchable
    if any(new.listing_ids[p] != r[1] for p, r in zip(positions.tolist(), rows, strict=True)):
        raise _Unpatchable
    new.province = _recoded(new.province, positions, [r[2] for r in rows])
    new.lat, new.lng, new.featured, new.updated = (
        new.lat.copy(), new.lng.copy(), new.featured.copy(), new.updated.copy()
    )  # fmt: skip
    new.lat[positions] = [np.nan if r[5] is None else r[5] for r in rows]
    new.lng[positions] = [np.nan if r[6] is None else r[6] for r in rows]
    new.featured[positions] = [r[3] or 0 for r in rows]
    updated = np.array([str(r[4] or "").encode() for r in rows], dtype=np.bytes_)
    if updated.dtype.itemsize > new.updated.dtype.itemsize:
        new.updated = new.updated.astype(updated.dtype)
    new.updated[positions] = updated
    new.order()
    new.text, new.numbers = dict(new.text), dict(new.numbers)
    for offset, attribute in enumerate(SCALAR_ATTRIBUTES, start=7):
        values = [r[offset] for r in rows]
        if attribute.kind == "text":
            new.text[attribute.path] = _recoded(new.text[attribute.path], positions, values)
        else:
            numbers = new.numbers[attribute.path].copy()
            numbers[positions] = [np.nan if v is None else v for v in values]
            new.numbers[attribute.path] = numbers


def _recoded(column: TextColumn, positions: IntArray, values: list[Any]) -> TextColumn:
    codes = column.codes.copy()
    for position, value in zip(positions.tolist(), values, strict=True):
        code = -1 if value is None else column.vocabulary.get(value)
        if code is None:  # a value the index has never held
            raise _Unpatchable
        codes[position] = code
    if (np.bincount(codes[codes >= 0], minlength=len(column.vocabulary)) == 0).any():
        raise _Unpatchable  # a value no listing holds any more: a whole build would not name it
    return TextColumn(codes, column.vocabulary)


def _multi(new: ColumnIndex, db: sqlite3.Connection, written: list[int], positions: IntArray) -> None:
    """The written listings' postings of each array attribute: theirs taken out, what they hold now put in."""
    marks = ", ".join("?" * len(written))
    at = dict(zip(written, positions.tolist(), strict=True))
    terms: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for attr, term, listing in db.execute(
        f"SELECT attr, term, listing FROM listing_terms WHERE listing IN ({marks})", written
    ):
        terms[attr].append((term, at[listing]))
    numbers: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for attr, number, listing in db.execute(
        f"SELECT attr, num, listing FROM listing_numbers WHERE listing IN ({marks})", written
    ):
        numbers[attr].append((number, at[listing]))
    new.terms, new.number_postings = dict(new.terms), dict(new.number_postings)
    for attribute in MULTI_ATTRIBUTES:
        if attribute.kind == "number":
            new.number_postings[attribute.path] = _numbers(
                new.number_postings[attribute.path], positions, numbers.get(attribute.path, [])
            )
        else:
            new.terms[attribute.path] = _terms(new.terms[attribute.path], positions, terms.get(attribute.path, []))


def _terms(postings: TermPostings, positions: IntArray, held: list[tuple[str, int]]) -> TermPostings:
    keep = ~np.isin(postings.owners, positions)
    owners, codes = postings.owners[keep], postings.codes[keep]
    try:
        added = sorted((postings.lookup[term], position) for term, position in held)
    except KeyError:  # a term no listing held
        raise _Unpatchable from None
    offsets = np.searchsorted(codes, np.arange(len(postings.vocabulary) + 1), side="left")
    at = [int(offsets[code]) + int(np.searchsorted(owners[offsets[code] : offsets[code + 1]], owner))
          for code, owner in added]  # fmt: skip
    owners = np.insert(owners, at, np.array([owner for _, owner in added], dtype=np.int32))
    codes = np.insert(codes, at, np.array([code for code, _ in added], dtype=np.int32))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(postings.vocabulary)))])
    if (np.diff(offsets) == 0).any():  # a term no listing holds any more: a whole build would not name it
        raise _Unpatchable
    return TermPostings(owners, codes, offsets.astype(np.int64), postings.vocabulary, postings.lookup)


def _numbers(postings: NumberPostings, positions: IntArray, held: list[tuple[float, int]]) -> NumberPostings:
    keep = ~np.isin(postings.owners, positions)
    values, owners = postings.values[keep], postings.owners[keep]
    added = sorted(held)
    low = np.searchsorted(values, [value for value, _ in added], side="left")
    high = np.searchsorted(values, [value for value, _ in added], side="right")
    at = [int(a) + int(np.searchsorted(owners[a:b], owner)) for a, b, (_, owner) in zip(low, high, added, strict=True)]
    return NumberPostings(
        np.insert(values, at, np.array([value for value, _ in added], dtype=np.float64)),
        np.insert(owners, at, np.array([owner for _, owner in added], dtype=np.int32)),
    )
