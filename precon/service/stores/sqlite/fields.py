"""(ours) A page of stored listings read for a few of their top-level attributes only.

An answer that retrieves a few attributes (``retrieveAttributes=startPrice,cityOrDistrict``: the dashboard's charts
fetch every listing so, a thousand at a time) needs nothing else of a 24 KB document. SQLite's JSON functions find
them in C (``json_each`` over the document's members, ``->`` for each one's JSON text, as written), and only those
values are decoded: about a third of the time of decoding the documents whole. Each record holds its attributes in
the document's order, as the whole document would give them (what an answer's key order follows).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

import orjson

from precon.service.collector import collector_paused

READS_FIELDS = sqlite3.sqlite_version_info >= (3, 38)
"""Whether this SQLite has ``->`` (3.38): where it does not, documents are decoded whole."""


def read_fields(
    db: sqlite3.Connection, rowids: Sequence[int], fields: Collection[str]
) -> dict[int, dict[str, Any]] | None:
    """Per stored listing of ``rowids`` (those still stored), its attributes among ``fields``, in its document's
    order; None where this SQLite cannot read them so."""
    if not READS_FIELDS:
        return None
    names = sorted(fields)
    sql = (
        f"SELECT d.id, e.key, d.doc -> e.fullkey FROM (SELECT id, CAST(doc AS TEXT) AS doc FROM listing_docs "
        f"WHERE id IN ({', '.join('?' * len(rowids))})) d LEFT JOIN json_each(d.doc) e "
        f"ON e.key IN ({', '.join('?' * len(names))}) ORDER BY d.id, e.id"
    )
    found: dict[int, dict[str, Any]] = {}
    with collector_paused():
        for rowid, key, text in db.execute(sql, [*rowids, *names]):
            record = found.setdefault(rowid, {})
            if key is not None:
                record[key] = orjson.loads(text)
    return found
