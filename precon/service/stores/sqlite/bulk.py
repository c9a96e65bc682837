"""Loading a whole catalogue into the SQLite store: the indexes built once at the end, and a new catalogue's
listings written by two processes where that is safe (:mod:`.forked_rows`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from precon.service.stores.forked import Forked, ForkFailed, can_fork, forked
from precon.service.stores.loading import BATCH, Progress
from precon.service.stores.records import _last_of_each, listing_key
from precon.service.stores.sqlite.catalogue import _LISTING_SECONDARY_INDEXES, _schema
from precon.service.stores.sqlite.forked_rows import (
    SPLIT_WORTH,
    attached,
    copy_index_rows,
    forked_share,
    new_listing,
    write_index_rows,
)
from precon.service.stores.sqlite.rewrites import ListingBatch
from precon.service.stores.sqlite.writes import SQLiteWrites

log = logging.getLogger("precon.store")


class SQLiteBulkLoads(SQLiteWrites):
    """The SQLite store's bulk loads: a whole catalogue (a new one, an upgrade's, a replica's snapshot)."""

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """For loading a whole catalogue: the listing indexes are built once at the end, not row by row."""
        db = self._db()
        with self._write_lock:
            for name in _LISTING_SECONDARY_INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")
        db.execute("PRAGMA synchronous=OFF")
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
            db.execute("PRAGMA synchronous=NORMAL")
            with self._write_lock:
                db.executescript("BEGIN IMMEDIATE;" + _schema() + "COMMIT;")
            with self._transaction() as db:
                keys = {row[0] for row in db.execute("SELECT path_key FROM profiles")}
                self._refresh_profile_provinces(db, keys)
                self._bump_generation(db)
            db.execute("ANALYZE")

    def add_new_listings(
        self,
        records: Sequence[dict[str, Any]],
        progress: Progress | None = None,
        at: float | None = None,
        fork: bool | None = None,
    ) -> None:
        """A new catalogue's listings (each once: the last of an id), in batches inside :meth:`bulk_load`, into a
        catalogue holding none: completed and recorded as created at ``at`` as :meth:`upsert_listings` writes them,
        or stored as they are where ``at`` is None (a simulated past's). No events: a new catalogue has no
        subscribers yet.

        ``fork``: whether the rows that find the last part of them are made by a forked copy of this process
        meanwhile (:mod:`.forked_rows`); by default where that is safe and worth it."""
        db = self._db()
        if not self._bulk or db.execute("SELECT 1 FROM listings LIMIT 1").fetchone() is not None:
            raise RuntimeError("add_new_listings loads an empty catalogue, inside bulk_load")
        records = _last_of_each(records, listing_key)
        if fork is None:
            fork = len(records) >= SPLIT_WORTH and can_fork()
        forked_count = forked_share(len(records)) if fork else 0
        here = len(records) - forked_count
        side = self.path.with_name(f".{self.path.name}.forked-rows-{os.getpid()}")
        side.unlink(missing_ok=True)
        work = partial(write_index_rows, side, records[here:], here + 1, at)
        try:
            with forked(work) if forked_count else nullcontext() as copy:
                for start in range(0, len(records), BATCH):
                    part = records[start : start + BATCH]
                    with self._transaction() as db:
                        batch = ListingBatch(index_rows_until=here)
                        for offset, record in enumerate(part, start + 1):
                            self._add_listing(db, record, batch, at, rowid=offset)
                        self._finish_listings(db, batch)
                    if progress is not None:
                        progress("listings", len(part))
                if copy is not None:
                    self._add_forked_rows(copy, side, records[here:], here + 1, at)
        finally:
            side.unlink(missing_ok=True)

    def _add_forked_rows(
        self, copy: Forked[int], side: Path, records: Sequence[dict[str, Any]], first_rowid: int, at: float | None
    ) -> None:
        """The index rows the forked copy made, copied in; made here if it failed (a killed copy, a full disk)."""
        try:
            copy.result()
        except ForkFailed as failure:
            log.warning("making the last %d listings' rows here: %s", len(records), failure)
            with self._transaction() as db:
                batch = ListingBatch()
                for rowid, record in enumerate(records, first_rowid):
                    batch.add(new_listing(record, at), rowid)
                self._insert_listing_rows(db, batch)
            return
        with attached(self._db(), side), self._transaction() as db:
            copy_index_rows(db)
