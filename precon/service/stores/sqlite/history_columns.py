"""The catalogue's history entries as columns in memory: a ``changes`` feed narrowed to thousands of listings is
one pass over them, not thousands of index searches in SQLite (a month of Toronto's changes at 50,000 listings:
7,677 listings, 18,000 of 2 million entries).

Entries are only ever added (with a growing ``seq``), so the columns of a newer generation are those of the one
before with the entries written since appended; a history that lost entries (a replica's copy rebuilt) is read
again whole. Times are read from the text entries carry (``2026-11-27T14:00:00.000Z``, 24 characters each, in
UTC to the millisecond: ordered as their texts are) as Unix milliseconds.

Entries are written in time order (each write at its time, a simulated past day by day), so ``since`` and
``until`` are two binary searches over the times, and only the entries between them are tested further (a month
of two years: 80,000 of 2 million); a history whose times go back somewhere (kept in :attr:`HistoryColumns.ascending`)
is tested whole. A feed narrowed to listings can name them as a mask over the listings' codes
(:meth:`HistoryColumns.matching`'s ``wanted``) rather than as thousands of ids.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from precon.service.stores.types import HistoryQuery

TIME_WIDTH = 24
"""The length of every entry's time as :func:`precon.service.stores.history.iso_time` writes it."""
SCOPES = ("listing", "floorPlan", "unit")
CHANGES = ("created", "updated", "deleted")

_READ = (
    "SELECT count(*), max(seq), group_concat(seq), group_concat(at, ''), group_concat(listing_id, char(31)), "
    f"group_concat(CASE scope {' '.join(f'WHEN {s!r} THEN {k}' for k, s in enumerate(SCOPES))} ELSE -1 END), "
    f"group_concat(CASE change {' '.join(f'WHEN {c!r} THEN {k}' for k, c in enumerate(CHANGES))} ELSE -1 END), "
    "group_concat(ifnull(field, ''), char(31)), group_concat(ifnull(province, ''), char(31)) "
    "FROM (SELECT * FROM listing_history WHERE seq > ? ORDER BY seq LIMIT ?)"
)
COLUMNS_VERSION = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=6).hexdigest()
"""Names columns written to be shared by this module's code: those another version wrote are read again."""
CHUNK = 250_000
"""The most entries read in one statement: the text SQLite joins, and the Python strings it is split into, are
held for this many at a time (2 million at once held about 600 MB more than their columns)."""


def _milliseconds(times: npt.NDArray[np.bytes_]) -> npt.NDArray[np.int64]:
    """Unix milliseconds of times written ``2026-11-27T14:00:00.000Z`` (the ``Z`` left off: it is always UTC)."""
    return times.astype(f"S{TIME_WIDTH - 1}").astype("datetime64[ms]").astype(np.int64)


class Vocabulary:
    """Text values as small integer codes (``""`` stands for none)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def encode(self, joined: str | None, count: int) -> npt.NDArray[np.int32]:
        if not count:
            return np.empty(0, np.int32)
        codes = self.codes
        values = (joined or "").split("\x1f")
        return np.fromiter((codes.setdefault(v, len(codes)) for v in values), dtype=np.int32, count=count)

    def wanted(self, values: tuple[str, ...]) -> npt.NDArray[np.bool_]:
        """Per code, whether its value is one of ``values``."""
        found = np.zeros(len(self.codes) + 1, dtype=np.bool_)
        found[[self.codes[v] for v in values if v in self.codes]] = True
        return found


@dataclass
class HistoryColumns:
    """Every entry of a catalogue's history, in ``seq`` order."""

    count: int = 0
    last_seq: int = 0
    seq: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))
    at: npt.NDArray[np.int64] = field(default_factory=lambda: np.empty(0, np.int64))
    """Unix milliseconds (a comparison of numbers, a tenth of one of 24-byte texts)."""
    listing: npt.NDArray[np.int32] = field(default_factory=lambda: np.empty(0, np.int32))
    scope: npt.NDArray[np.int8] = field(default_factory=lambda: np.empty(0, np.int8))
    change: npt.NDArray[np.int8] = field(default_factory=lambda: np.empty(0, np.int8))
    field_code: npt.NDArray[np.int32] = field(default_factory=lambda: np.empty(0, np.int32))
    province: npt.NDArray[np.int32] = field(default_factory=lambda: np.empty(0, np.int32))
    listings: Vocabulary = field(default_factory=Vocabulary)
    fields: Vocabulary = field(default_factory=Vocabulary)
    provinces: Vocabulary = field(default_factory=Vocabulary)
    ascending: bool = True
    """Whether the times never go back from one entry to the next (so a window of time is a range of entries)."""

    def caught_up(self, db: sqlite3.Connection) -> HistoryColumns | None:
        """These columns with the entries written since appended (new columns, read whole, where entries went);
        None where an entry's time is not as this module reads them (its SQL then answers)."""
        held = db.execute("SELECT count(*) FROM listing_history WHERE seq <= ?", (self.last_seq,)).fetchone()[0]
        columns: HistoryColumns | None = self if held == self.count else HistoryColumns()
        while columns is not None:
            row = db.execute(_READ, (columns.last_seq, CHUNK)).fetchone()
            columns = columns._appended(row)
            if int(row[0]) < CHUNK:
                break
        return columns

    def _appended(self, row: tuple[Any, ...]) -> HistoryColumns | None:
        count = int(row[0])
        if not count:
            return self
        times = (row[3] or "").encode("ascii", "replace")
        if len(times) != TIME_WIDTH * count:
            return None
        try:
            moments = _milliseconds(np.frombuffer(times, dtype=f"S{TIME_WIDTH}"))
        except ValueError:  # a time not written as ours are
            return None
        numbers = [np.fromstring(row[k], dtype=np.int64, sep=",") for k in (2, 5, 6)]  # type: ignore[call-overload]
        ascending = self.ascending and bool(np.all(moments[1:] >= moments[:-1]))
        if self.count:
            ascending = ascending and bool(moments[0] >= self.at[-1])
        return HistoryColumns(
            self.count + count,
            int(row[1]),
            np.concatenate([self.seq, numbers[0]]),
            np.concatenate([self.at, moments]),
            np.concatenate([self.listing, self.listings.encode(row[4], count)]),
            np.concatenate([self.scope, numbers[1].astype(np.int8)]),
            np.concatenate([self.change, numbers[2].astype(np.int8)]),
            np.concatenate([self.field_code, self.fields.encode(row[7], count)]),
            np.concatenate([self.province, self.provinces.encode(row[8], count)]),
            self.listings,
            self.fields,
            self.provinces,
            ascending,
        )

    def matching(self, query: HistoryQuery, wanted: npt.NDArray[np.bool_] | None = None) -> tuple[int, list[int]]:
        """How many entries of the catalogue's the query asks for, and the ``seq`` of its page's, newest first;
        ``wanted``, per listing code (:attr:`listings`), narrows them further to the listings it holds."""
        since = None if query.since is None else _milliseconds(np.array([query.since.encode()]))[0]
        until = None if query.until is None else _milliseconds(np.array([query.until.encode()]))[0]
        start, end = 0, self.count
        if self.ascending:  # the window is a range of entries
            start = 0 if since is None else int(np.searchsorted(self.at, since, side="left"))
            end = self.count if until is None else int(np.searchsorted(self.at, until, side="right"))
            end = max(start, end)
        window = slice(start, end)
        mask = np.ones(end - start, dtype=np.bool_)
        if not self.ascending:
            if since is not None:
                mask &= self.at >= since
            if until is not None:
                mask &= self.at <= until
        if query.scopes:
            mask &= np.isin(self.scope[window], [SCOPES.index(s) for s in query.scopes if s in SCOPES])
        if query.changes:
            mask &= np.isin(self.change[window], [CHANGES.index(c) for c in query.changes if c in CHANGES])
        if query.fields:
            fields = self.fields.wanted(query.fields)
            if query.records:
                fields[self.fields.codes.get("", len(self.fields.codes))] = True
            mask &= fields[self.field_code[window]]
        if query.listing_ids is not None:
            mask &= self.listings.wanted(query.listing_ids)[self.listing[window]]
        if wanted is not None:
            mask &= wanted[self.listing[window]]
        if query.provinces is not None:
            mask &= self.provinces.wanted(tuple(p for p in query.provinces if p))[self.province[window]]
        found = np.flatnonzero(mask)
        newest_first = found[::-1][query.offset : query.offset + query.limit] + start
        return len(found), [int(seq) for seq in self.seq[newest_first]]
