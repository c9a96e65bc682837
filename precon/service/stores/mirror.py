"""Copying every listing and profile of a remote deployment into a local store, resumably.

The copy is written to a work file beside the catalogue, page by page, and the next page to fetch is saved
after each page's records; an interrupted mirror run again with the same source picks up at that page (a
page written twice is written the same: records are upserted). When every page is in, the work file
replaces the catalogue.

Into PostgreSQL (``into``), the pages are fetched into the same work file, resumably; when every page is in, the
copy replaces the catalogue in one transaction (records the copy lacks removed, the others upserted), under the
store's write lock: a replica reading meanwhile sees the old catalogue or the new one, and the store's listeners
(webhook events) hear of each change once, after the commit. The work file is then removed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from precon.client import Client
from precon.service.stores.records import decode_document, nul_in
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import CatalogueChange

if TYPE_CHECKING:
    from precon.service.stores.postgres.store import PostgresCatalogueStore

MIRROR_PAGE_SIZE = 1000
"""The most the API gives in one page: the fewest requests."""

Progress = Callable[[str, int, int], None]
"""Called after each page with the phase (``profiles`` or ``listings``), records done and records in all."""


@dataclass
class MirrorReport:
    profiles: int
    listings: int
    resumed: bool
    requests: int


def _work_file(target: Path) -> Path:
    return target.with_name(target.name + ".mirror")


def _checkpoint(store: SQLiteStore) -> dict[str, Any] | None:
    row = store._db().execute("SELECT value FROM meta WHERE key = 'mirror'").fetchone()
    return orjson.loads(row[0]) if row else None


def _save_checkpoint(store: SQLiteStore, state: dict[str, Any]) -> None:
    with store._transaction() as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('mirror', ?)", (orjson.dumps(state).decode(),))


def mirror(
    client: Client,
    target: Path,
    *,
    province: str = "all",
    progress: Progress | None = None,
    page_size: int = MIRROR_PAGE_SIZE,
    on_store: Callable[[SQLiteStore | PostgresCatalogueStore], None] | None = None,
    into: PostgresCatalogueStore | None = None,
) -> MirrorReport:
    """Mirrors the client's deployment into the catalogue file ``target``, or into the PostgreSQL catalogue
    ``into`` (``target`` then names the work file only); resumes an interrupted run.

    ``on_store`` is given the store the records are written to (the work file, or ``into``) before anything is,
    to listen to its changes.
    """
    source = {"url": client.api_url, "product": client.product_id, "version": client.version, "province": province}
    work = _work_file(target)
    store = SQLiteStore(work)
    state = _checkpoint(store)
    resumed = state is not None and state.get("source") == source
    if not resumed:
        store.close()
        _remove(work)
        store = SQLiteStore(work)
        state = {"source": source, "phase": "profiles", "page": 0}
        _save_checkpoint(store, state)
    assert state is not None
    if on_store is not None:
        on_store(store if into is None else into)  # e.g. webhook notifications of every record written
    requests = _fetch(client, store, state, province, page_size, progress)
    counts = store.counts()
    if into is not None:
        replace_catalogue(into, _documents(store, "profiles"), _documents(store, "listing_docs"))
        store.close()
        _remove(work)
        return MirrorReport(counts["profiles"], counts["listings"], resumed, requests)
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    work.replace(target)
    for suffix in ("-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    return MirrorReport(counts["profiles"], counts["listings"], resumed, requests)


def _remove(work: Path) -> None:
    for path in (work, Path(f"{work}-wal"), Path(f"{work}-shm")):
        path.unlink(missing_ok=True)


def _fetch(
    client: Client,
    store: SQLiteStore,
    state: dict[str, Any],
    province: str,
    page_size: int,
    progress: Progress | None,
) -> int:
    """Fetches the pages from the checkpoint ``state`` on into the work file; answers the requests made."""
    source = state["source"]
    requests = 0
    for phase, operation in (("profiles", "search_profiles"), ("listings", "search_listings")):
        if state["phase"] == "done" or (state["phase"] == "listings" and phase == "profiles"):
            continue
        while True:
            params: dict[str, Any] = {"product_id": client.product_id, "page": state["page"], "perPage": page_size}
            if phase == "profiles":
                params["sortByName"] = "asc"
            body, _ = client.call("GET", operation, params, province=province)
            requests += 1
            records = body.get("results") or []
            total = int(body.get("total") or 0)
            next_page = state["page"] + 1
            last = not records or next_page >= math.ceil(total / page_size)
            state = {"source": source, "phase": phase, "page": next_page}
            if last:
                state = {"source": source, "phase": "listings" if phase == "profiles" else "done", "page": 0}
            _write_page(store, phase, records, state)
            if progress is not None:
                progress(phase, min(total, next_page * page_size), total)
            if last:
                break
    return requests


def _documents(store: SQLiteStore, table: str) -> list[dict[str, Any]]:
    """The stored documents of the work file's ``profiles`` or ``listing_docs``, in the order written."""
    rows = store._db().execute(f"SELECT doc FROM {table} ORDER BY id")  # table: a fixed name
    return [decode_document(row[0]) for row in rows]


def replace_catalogue(
    store: PostgresCatalogueStore, profiles: Iterable[dict[str, Any]], listings: Iterable[dict[str, Any]]
) -> list[CatalogueChange]:
    """Makes ``store`` hold these records and no others, in one transaction: the records it holds that are not
    among them are removed, these are upserted (profiles first). The store's listeners hear of every change
    once, after the commit (or its journal records them in the transaction: see :meth:`PostgresCatalogueStore.atomic`);
    a failure leaves the catalogue as it was."""
    from precon.service.stores.loading import load

    profiles, listings = list(profiles), list(listings)
    keep_listings = {str(r.get("listingId") or r.get("objectID") or "").strip() for r in listings}
    keep_profiles = {str(r.get("path") or "").strip() for r in profiles}
    changes: list[CatalogueChange] = []
    with store.atomic():
        with store.pool.connection() as db:  # under the write lock: what is committed cannot change meanwhile
            stored_listings = [row[0] for row in db.execute("SELECT listing_id FROM listings ORDER BY listing_id")]
            stored_profiles = [row[0] for row in db.execute("SELECT path FROM profiles ORDER BY path")]
        for listing_id in stored_listings:
            if listing_id not in keep_listings:
                changes += store.delete_listing(listing_id)
        for path in stored_profiles:
            if path not in keep_profiles:
                changes += store.delete_profile(path)
        changes += load(store, listings, profiles)
    return changes


def _write_page(store: SQLiteStore, phase: str, records: list[dict[str, Any]], state: dict[str, Any]) -> None:
    """The page's records, then the checkpoint past them: a crash between the two only fetches the page again.
    A record holding a NUL character stops the mirror (PostgreSQL refuses them; neither store takes one)."""
    for record in records:
        holder = nul_in(record)
        if holder is not None:
            key = record.get("listingId") or record.get("path") or "a record"
            raise ValueError(f"{phase}: {key!r} holds a NUL character in {holder}, which no value may")
    if phase == "profiles":
        store.upsert_profiles(records)
    else:
        store.upsert_listings(records)
    _save_checkpoint(store, state)
