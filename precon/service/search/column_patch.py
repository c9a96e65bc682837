"""A column index moved to a later generation by the listings written since, not read again whole.

A write that updates a few stored listings (a simulated day's sales and price moves, a mirror's daily changes, one
import) changes their rows and nothing else of the index. :func:`patched` reads those rows again (SQLite's
``listing_writes`` names the listings each write wrote, under the generation it raised) and makes a new index from
the old one and them: the old one is not changed (searches may be using it, or it may be mapped read-only from a
file another process wrote). Everything else the index holds is shared with it or copied.

Listings created since (SQLite gives them row ids after every held one) take the positions after the others: their
values, terms and words are added, a value or word the index never held coded where a whole build codes it.

It answers None, and the index is built whole, where a patch could not give what a whole build gives: a listing
deleted (positions would move), a value or term the index has never held in a listing it held (its vocabulary's
order would differ), a held listing whose searchable text changed (the text postings and their statistics are of
the whole catalogue), or more listings written than a patch saves time on. The tests hold a patched index to a
whole build, array by array.
"""

from __future__ import annotations

import copy
import sqlite3
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Any

import numpy as np

from precon.schema import MULTI_ATTRIBUTES, SCALAR_ATTRIBUTES, SEARCHABLE_LISTING_FIELDS
from precon.service import metrics
from precon.service.search.arrays import Splice
from precon.service.search.attribute_rows import patched_rows, read_attribute_rows
from precon.service.search.columns import (
    WEIGHT_SQL,
    ColumnIndex,
    IntArray,
    Mask,
    NumberPostings,
    TermPostings,
    TextColumn,
    TextPostings,
    catalogue_name,
    text_digests,
)
from precon.service.search.text import FTS_OPTIONS

MOST_SHARE = 8
"""A patch writes at most one listing in this many (and at least :data:`LEAST`): past that, a whole build is as
cheap."""
LEAST = 256

WRITES_SCHEMA = """
CREATE TABLE IF NOT EXISTS listing_writes(id INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS listing_writes_by_generation ON listing_writes(generation);
"""
"""Each listing's row id and the generation of the last write that wrote it (what :func:`patched` reads again)."""

WRITTEN_SINCE = "SELECT id FROM listing_writes WHERE generation > ?"
"""The row ids of the listings written since a generation (as a subquery: ``listing IN (...)``)."""


def written_since(db: sqlite3.Connection, generation: int) -> IntArray:
    """The row ids of the listings written since ``generation``, ascending."""
    return np.sort(np.array([r[0] for r in db.execute(WRITTEN_SINCE, (generation,))], dtype=np.int64))


def written_count(db: sqlite3.Connection, generation: int) -> int:
    """How many listings were written since ``generation`` (counted, not read: a bulk write names thousands)."""
    (count,) = db.execute(f"SELECT count(*) FROM ({WRITTEN_SINCE})", (generation,)).fetchone()
    return int(count)


def too_many_written(written: int, listings: int) -> bool:
    """Whether ``written`` listings of ``listings`` are more than an index's patch (or anything carried across
    writes) saves time on: a whole build is as cheap."""
    return written > max(LEAST, listings // MOST_SHARE)


class _Unpatchable(Exception):
    """What the write changed cannot be patched: the index is built whole."""


def patched(index: ColumnIndex, db: sqlite3.Connection, generation: int) -> ColumnIndex | None:
    """``index`` moved to ``generation`` (the catalogue as ``db``'s transaction reads it) by the listings written
    since its own, or None where it must be built whole (see the module's docstring)."""
    started = time.perf_counter()
    if generation < index.generation:
        return None
    # The listings held under the same row ids, and those created since after them: as many as both, the held
    # highest the highest of those (a listing created takes a higher row id, or the highest again where that one was
    # deleted: then its id differs from the index's, see _scalars).
    count, highest = db.execute("SELECT count(*), max(id) FROM listings").fetchone()
    held_highest = int(index.rowids[-1]) if index.size else 0
    added: list[int] = []
    if count != index.size or (count and highest != held_highest):
        added = [r[0] for r in db.execute("SELECT id FROM listings WHERE id > ? ORDER BY id", (held_highest,))]
        if count != index.size + len(added) or not index.size:
            return None
    written = written_since(db, index.generation).tolist()
    if too_many_written(len(written), index.size) or not set(added) <= set(written):
        return None
    try:
        found = _patch(index, db, written, added, generation)
    except _Unpatchable:
        return None
    metrics.index_patched(catalogue_name(db), time.perf_counter() - started)
    return found


def _patch(
    index: ColumnIndex, db: sqlite3.Connection, written: list[int], added: list[int], generation: int
) -> ColumnIndex:
    new = copy.copy(index)
    new.__dict__.pop("_bitmaps", None)  # made again on first use, from the new postings
    new.generation = generation
    created = set(added)
    held = [rowid for rowid in written if rowid not in created]
    positions = index.positions_of_rowids(np.array(held, dtype=np.int64))
    if len(positions) != len(held):
        raise _Unpatchable
    if held and not np.array_equal(text_digests(db, index.rowids, held), index.text_digests[positions]):
        raise _Unpatchable
    if added:
        _append(new, db, added)
    if written:
        positions = new.positions_of_rowids(np.array(written, dtype=np.int64))
        written_mask = np.zeros(new.size, dtype=np.bool_)
        written_mask[positions] = True
        _scalars(new, db, written, positions, index.size)
        _multi(new, db, written, positions, written_mask, index.size)
        fresh = read_attribute_rows(db, new.rowids, written)
        new.attribute_rows = patched_rows(index.attribute_rows, written_mask, fresh)
    # A write only adds labels (a value's display form, kept once): as many as held, the same ones.
    (labels,) = db.execute("SELECT count(*) FROM labels").fetchone()
    if labels != len(index.labels):
        new.labels = {(a, t): label for a, t, label in db.execute("SELECT attr, term, label FROM labels")}
    return new


def _scalars(new: ColumnIndex, db: sqlite3.Connection, written: list[int], positions: IntArray, appended: int) -> None:
    """The written listings' single values: province, position, order, and each scalar attribute (listings created
    from position ``appended``)."""
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
    new.province = _recoded(new.province, positions, [r[2] for r in rows], appended)
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
    new.reorder(positions)
    new.text, new.numbers = dict(new.text), dict(new.numbers)
    for offset, attribute in enumerate(SCALAR_ATTRIBUTES, start=7):
        values = [r[offset] for r in rows]
        if attribute.kind == "text":
            new.text[attribute.path] = _recoded(new.text[attribute.path], positions, values, appended)
        else:
            now = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
            if not np.array_equal(new.numbers[attribute.path][positions], now, equal_nan=True):
                numbers = new.numbers[attribute.path].copy()
                numbers[positions] = now
                new.numbers[attribute.path] = numbers


def _recoded(column: TextColumn, positions: IntArray, values: list[Any], appended: int) -> TextColumn:
    """The column with these positions' values; a value it never held is taken only from a listing created (from
    position ``appended``), coded after the others, as a whole build codes values in the order they first appear."""
    vocabulary, more = column.vocabulary, {}
    now = np.empty(len(positions), dtype=column.codes.dtype)
    for k, (position, value) in enumerate(zip(positions.tolist(), values, strict=True)):
        code = -1 if value is None else vocabulary.get(value)
        if code is None:
            if position < appended:  # a value the index has never held, in a listing it held
                raise _Unpatchable
            code = more.setdefault(value, len(vocabulary) + len(more))
        now[k] = code
    if not more and np.array_equal(column.codes[positions], now):
        return column  # the written listings hold the values they held
    codes = column.codes.copy()
    codes[positions] = now
    vocabulary = vocabulary.extended(list(more))
    if (np.bincount(codes[codes >= 0], minlength=len(vocabulary)) == 0).any():
        raise _Unpatchable  # a value no listing holds any more: a whole build would not name it
    return TextColumn(codes, vocabulary)


def _multi(
    new: ColumnIndex, db: sqlite3.Connection, written: list[int], positions: IntArray, written_mask: Mask, appended: int
) -> None:
    """The written listings' postings of each array attribute (at ``positions``, marked in ``written_mask``): theirs
    taken out, what they hold now put in."""
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
                new.number_postings[attribute.path], written_mask, numbers.get(attribute.path, [])
            )
        else:
            held = terms.get(attribute.path, [])
            new.terms[attribute.path] = _terms(new.terms[attribute.path], written_mask, held, appended)


def _terms(postings: TermPostings, written: Mask, held: list[tuple[str, int]], appended: int) -> TermPostings:
    """The postings with the ``written`` positions' terms now ``held``; a term no listing held is taken only from a
    listing created (from position ``appended``), in its place in the sorted vocabulary, as a whole build has it."""
    unknown = {term for term, _ in held if term not in postings.lookup}
    if any(position < appended for term, position in held if term in unknown):
        raise _Unpatchable  # a term no listing held, in a listing the index held
    mine = written[postings.owners]
    if not unknown and _same(postings.codes[mine], postings.owners[mine], [(postings.lookup[t], p) for t, p in held]):
        return postings  # the written listings hold the terms they held: nothing to move
    if unknown:
        postings = _with_terms(postings, unknown)
        mine = written[postings.owners]
    keep = ~mine
    owners, codes = postings.owners[keep], postings.codes[keep]
    added = np.array(sorted((postings.lookup[term], position) for term, position in held), dtype=np.int64)
    added = added.reshape(-1, 2)
    # Postings are ordered by code, then owner: one key of both finds where each new one goes, in one call.
    at = np.searchsorted(codes.astype(np.int64) << 32 | owners, added[:, 0] << 32 | added[:, 1])
    spliced = Splice(keep, at)
    owners = spliced(postings.owners, added[:, 1].astype(np.int32))
    codes = spliced(postings.codes, added[:, 0].astype(np.int32))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(postings.vocabulary)))])
    if (np.diff(offsets) == 0).any():  # a term no listing holds any more: a whole build would not name it
        raise _Unpatchable
    return TermPostings(owners, codes, offsets.astype(np.int64), postings.vocabulary, postings.lookup)


def _numbers(postings: NumberPostings, written: Mask, held: list[tuple[float, int]]) -> NumberPostings:
    """The postings with the ``written`` positions' numbers now ``held`` (ordered by value, then owner)."""
    mine = written[postings.owners]
    if _same(postings.values[mine], postings.owners[mine], held):
        return postings  # the written listings hold the numbers they held
    keep = ~mine
    values, owners = postings.values[keep], postings.owners[keep]
    added = sorted(held)
    new_values = np.array([value for value, _ in added], dtype=np.float64)
    new_owners = np.array([owner for _, owner in added], dtype=np.int32)
    # One key orders the postings as they are (a value's group: where its value first comes, then the owner) and
    # puts a new one among its value's group by owner, or before the group it precedes when no listing holds it.
    low = np.searchsorted(values, new_values, side="left")
    present = low < len(values)
    present[present] = values[low[present]] == new_values[present]
    groups = np.searchsorted(values, values, side="left").astype(np.int64)
    held_keys = (2 * groups + 1) << 32 | owners
    at = np.searchsorted(held_keys, (2 * low.astype(np.int64) + present) << 32 | new_owners)
    spliced = Splice(keep, at)
    return NumberPostings(spliced(postings.values, new_values), spliced(postings.owners, new_owners))


def _same(values: np.ndarray[Any, Any], owners: np.ndarray[Any, Any], held: list[tuple[Any, int]]) -> bool:
    """Whether the postings (``values``, ``owners``) are those of ``held`` (value, owner), in any order."""
    return len(held) == len(owners) and sorted(zip(values.tolist(), owners.tolist(), strict=True)) == sorted(held)


def _with_terms(postings: TermPostings, terms: set[str]) -> TermPostings:
    """The postings with these terms in the vocabulary (held by no listing yet), the codes of the others moved."""
    vocabulary = sorted({*postings.vocabulary, *terms})
    lookup = {term: code for code, term in enumerate(vocabulary)}
    moved = np.array([lookup[term] for term in postings.vocabulary], dtype=np.int32)
    codes = moved[postings.codes] if len(postings.codes) else postings.codes
    offsets = np.searchsorted(codes, np.arange(len(vocabulary) + 1), side="left").astype(np.int64)
    return TermPostings(postings.owners, codes, offsets, vocabulary, lookup)


def _append(new: ColumnIndex, db: sqlite3.Connection, added: list[int]) -> None:
    """Room for the listings created (row ids after every held one): their positions at the end, their ids, their
    words in the text postings; their values are read as any written listing's (no value yet)."""
    marks = ", ".join("?" * len(added))
    ids = [r[0] for r in db.execute(f"SELECT listing_id FROM listings WHERE id IN ({marks}) ORDER BY id", added)]
    size, more = new.size, len(added)
    new.rowids = np.concatenate([new.rowids, np.array(added, dtype=np.int64)])
    new.listing_ids = new.listing_ids.extended(ids)
    new.size = size + more

    def longer(values: np.ndarray[Any, Any], fill: Any) -> np.ndarray[Any, Any]:
        return np.concatenate([values, np.full(more, fill, dtype=values.dtype)])

    new.province = TextColumn(longer(new.province.codes, -1), new.province.vocabulary)
    new.lat, new.lng = longer(new.lat, np.nan), longer(new.lng, np.nan)
    new.featured, new.updated = longer(new.featured, 0), longer(new.updated, b"")
    new.text = {path: TextColumn(longer(c.codes, -1), c.vocabulary) for path, c in new.text.items()}
    new.numbers = {path: longer(values, np.nan) for path, values in new.numbers.items()}
    new.text_digests = np.concatenate([new.text_digests, text_digests(db, new.rowids, added)])
    new.search_text = _words_appended(new.search_text, db, added, size)


def _words_appended(postings: TextPostings, db: sqlite3.Connection, added: list[int], first: int) -> TextPostings:
    """The text postings with the words of the listings created (positions from ``first``): their text tokenized
    by a table of their own made as the catalogue's is, weighed and counted as a whole build counts it."""
    fields = ", ".join(SEARCHABLE_LISTING_FIELDS)
    marks = ", ".join("?" * len(added))
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.patch_fts USING fts5({fields}, {FTS_OPTIONS})")
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.patch_instances USING fts5vocab(temp, patch_fts, 'instance')")
    db.execute("DELETE FROM temp.patch_fts")
    db.execute(
        f"INSERT INTO temp.patch_fts(rowid, {fields}) SELECT rowid, {fields} FROM listing_fts WHERE rowid IN ({marks})",
        added,
    )
    at = {rowid: first + k for k, rowid in enumerate(added)}
    found = db.execute(
        f"SELECT term, doc, sum({WEIGHT_SQL}) FROM temp.patch_instances GROUP BY term, doc ORDER BY term, doc"
    ).fetchall()
    lengths = np.concatenate([postings.lengths, np.zeros(len(added))])
    for doc, length in db.execute(f"SELECT doc, sum({WEIGHT_SQL}) FROM temp.patch_instances GROUP BY doc"):
        lengths[at[doc]] = length
    db.execute("DELETE FROM temp.patch_fts")
    held_words = postings.words
    terms = [term for term, _, _ in found]
    # A word's postings are its held listings', then the created ones' (whose positions come after): each created
    # one's goes in at the end of its word's run, or where a word it brings first stands in the order.
    places = postings.offsets[[bisect_right(held_words, term) for term in terms]]
    owners = np.insert(postings.owners, places, np.array([at[doc] for _, doc, _ in found], dtype=np.int32))
    counts = np.insert(postings.counts, places, np.array([count for _, _, count in found], dtype=np.float32))
    brought = sorted({term for term in terms if not _holds(held_words, term)})
    words = sorted([*held_words, *brought]) if brought else held_words
    per_word = np.zeros(len(words), dtype=np.int64)
    held_at = np.arange(len(held_words)) + np.searchsorted(np.array(brought, dtype=object), held_words)
    per_word[held_at] = np.diff(postings.offsets)
    per_word += np.bincount([bisect_left(words, term) for term in terms], minlength=len(words))
    offsets = np.concatenate([[0], np.cumsum(per_word)]).astype(np.int64)
    average = float(lengths.mean()) if len(lengths) and lengths.any() else 1.0
    return TextPostings(words, offsets, owners, counts, lengths, average)


def _holds(words: list[str], word: str) -> bool:
    """Whether the sorted ``words`` hold ``word``."""
    at = bisect_left(words, word)
    return at < len(words) and words[at] == word
