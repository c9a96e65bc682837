"""Copying a remote deployment's listings and profiles into a catalogue here, as the differences since the last copy.

A run has two phases:

1. **Fetch.** Every page of profiles, then of listings, is fetched into a work file beside the catalogue (each
   record as the catalogue stores it: media URLs of the source's own ``/media/`` as paths, no ``objectID``), and
   the next page to fetch is saved after each page's records. An interrupted run, run again with the same source,
   picks up at that page.
2. **Apply.** The fetched records are compared with the catalogue's, and what differs is written through the path
   an import takes (profiles, then listings, checked as an import checks them), with the listings and profiles the
   source no longer has deleted: all in one transaction, on SQLite and on PostgreSQL alike. The catalogue's history
   records each change (a listing's, a floor plan's or a unit's field, with ``from`` and ``to``; a listing, plan or
   unit created or deleted), stamped with the time the run started: the source does not say when a change was
   made. The store's listeners (webhook events) hear of each change once, after the commit. A record that did not
   change is not written, so a run in which nothing changed at the source records nothing and sends nothing.

The run is kept in the catalogue in the same transaction (``meta``, key ``mirror``), so a work file whose run was
applied is never applied again. A run that fails while applying changes nothing; run again, it applies the same
fetched pages without fetching them again, and records the same entries at the same time. Into a catalogue file
that does not exist yet, the copy is loaded whole (each listing ``created``) and moved into place.
"""

from __future__ import annotations

import math
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import orjson

from precon.client import Client
from precon.client.errors import BadRequest
from precon.service.media_links import MediaPaths
from precon.service.stores.derived import complete_listing
from precon.service.stores.importer import ParsedFile, check_plan_ids, classify
from precon.service.stores.loading import batched, load
from precon.service.stores.records import (
    as_stored_listing,
    decode_document,
    encode_document,
    nul_in,
    stored_profile,
)
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import CatalogueChange

if TYPE_CHECKING:
    from precon.service.stores.postgres.store import PostgresCatalogueStore

MIRROR_PAGE_SIZE = 1000
"""The most the API gives in one page: the fewest requests."""
APPLY_BATCH = 1000
"""Records compared (and those that changed, written) at a time: what a run holds decoded at once."""
RUN_KEY = "mirror"
"""Where a catalogue keeps the mirror run applied last (``meta``)."""

Kind = Literal["listings", "profiles"]
Progress = Callable[[str, int, int], None]
"""Called after each page with the phase (``profiles`` or ``listings``), records done and records in all."""


class MirrorTarget(Protocol):
    """A catalogue a mirror run applies its differences to: SQLite's store or PostgreSQL's."""

    listeners: list[Callable[[list[CatalogueChange]], None]]

    def atomic(self) -> AbstractContextManager[None]: ...
    def stored_keys(self, kind: Kind) -> list[str]: ...
    def stored_documents(self, kind: Kind, keys: Sequence[str]) -> dict[str, bytes]: ...
    def meta_value(self, key: str) -> str | None: ...
    def set_meta_value(self, key: str, value: str) -> None: ...
    def listings_holding_plans(self, plan_ids: Iterable[str]) -> dict[str, list[str]]: ...
    def bulk_load(self) -> AbstractContextManager[None]: ...
    def counts(self) -> dict[str, int]: ...
    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]: ...
    def upsert_listings(self, records: Iterable[dict[str, Any]], at: float | None = None) -> list[CatalogueChange]: ...
    def delete_listing(self, listing_id: str, at: float | None = None) -> list[CatalogueChange]: ...
    def delete_profile(self, path: str) -> list[CatalogueChange]: ...


@dataclass
class Differences:
    """What a run wrote: per kind, the keys created, updated and deleted; the history entries recorded."""

    created: dict[str, int] = field(default_factory=lambda: {"listings": 0, "profiles": 0})
    updated: dict[str, int] = field(default_factory=lambda: {"listings": 0, "profiles": 0})
    deleted: dict[str, int] = field(default_factory=lambda: {"listings": 0, "profiles": 0})
    entries: int = 0

    def count(self, changes: Iterable[CatalogueChange]) -> None:
        for change in changes:
            kind = "listings" if change.kind == "listing" else "profiles"
            {"created": self.created, "updated": self.updated, "deleted": self.deleted}[change.action][kind] += 1
            if change.kind == "listing":
                self.entries += 1 if change.action == "deleted" else len(change.entries or ())

    def any(self) -> bool:
        return any(sum(counts.values()) for counts in (self.created, self.updated, self.deleted))


@dataclass
class Timings:
    """Where a run's time went, in seconds: fetching the pages into the work file (requests, decoding, staging),
    comparing the staged records with the stored ones, and writing what differs (with the commit)."""

    fetch: float = 0.0
    compare: float = 0.0
    write: float = 0.0


@dataclass
class MirrorReport:
    profiles: int
    listings: int
    resumed: bool
    requests: int
    at: float = 0.0
    """The time the run's changes are stamped with (when it started)."""
    differences: Differences = field(default_factory=Differences)
    timings: Timings = field(default_factory=Timings)


# -- the work file ---------------------------------------------------------------------------------------------


class Staging:
    """The work file of a run: each fetched record as the catalogue stores it, by key, and the run's checkpoint."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(
            "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS records(kind TEXT NOT NULL, key TEXT NOT NULL, doc BLOB NOT NULL, "
            "PRIMARY KEY(kind, key)) WITHOUT ROWID;"
        )

    def state(self) -> dict[str, Any] | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
        return orjson.loads(row[0]) if row else None

    def write_page(self, kind: Kind, records: Sequence[tuple[str, bytes]], state: dict[str, Any]) -> None:
        """A page's records, then the checkpoint past them, in one transaction: a crash before its commit only
        fetches the page again."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany(
                "INSERT OR REPLACE INTO records VALUES (?, ?, ?)", [(kind, key, doc) for key, doc in records]
            )
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('state', ?)", (orjson.dumps(state).decode(),))
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def keys(self, kind: Kind) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT key FROM records WHERE kind = ? ORDER BY key", (kind,))]

    def documents(self, kind: Kind, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for some in batched(keys, 500):
            marks = ", ".join("?" * len(some))
            rows = self.db.execute(f"SELECT key, doc FROM records WHERE kind = ? AND key IN ({marks})", [kind, *some])
            found.update((key, bytes(doc)) for key, doc in rows)
        return found

    def records(self, kind: Kind) -> Iterator[dict[str, Any]]:
        """Every staged record of ``kind``, decoded, in key order."""
        for some in batched(self.keys(kind), APPLY_BATCH):
            documents = self.documents(kind, some)
            yield from (decode_document(documents[key]) for key in some)

    def count(self, kind: Kind) -> int:
        return int(self.db.execute("SELECT count(*) FROM records WHERE kind = ?", (kind,)).fetchone()[0])

    def close(self) -> None:
        self.db.close()

    @staticmethod
    def remove(path: Path) -> None:
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            name.unlink(missing_ok=True)


def _work_file(target: Path) -> Path:
    return target.with_name(target.name + ".mirror")


def staged_record(kind: Kind, record: Any, media: MediaPaths) -> tuple[str, bytes]:
    """A fetched record's key and its document as the catalogue stores it; ValueError says what no store takes."""
    if not isinstance(record, dict):
        raise ValueError(f"{kind}: expected a JSON object, got {type(record).__name__}")
    holder = nul_in(record)
    if holder is not None:
        key = record.get("listingId") or record.get("path") or "a record"
        raise ValueError(f"{kind}: {key!r} holds a NUL character in {holder}, which no value may")
    copy = dict(record)
    if kind == "listings":
        media.listing(copy)
        listing_id, stored = as_stored_listing(copy)
        return listing_id, encode_document(stored)
    media.profile(copy)
    profile = stored_profile(copy)
    return profile.path, encode_document(profile.record)


# -- a run -----------------------------------------------------------------------------------------------------


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

    ``on_store`` is given the store the records are written to before anything is, to listen to its changes.
    """
    source = {"url": client.api_url, "product": client.product_id, "version": client.version, "province": province}
    work = _work_file(target)
    applied = _applied_run(target, into)
    staging = Staging(work)
    state = staging.state()
    resumed = state is not None and state.get("source") == source and state.get("run") != applied
    if not resumed:
        staging.close()
        Staging.remove(work)
        staging = Staging(work)
        state = {
            "source": source, "run": uuid.uuid4().hex, "at": time.time(), "phase": "profiles", "page": 0,
            "perPage": page_size,
        }  # fmt: skip
        staging.write_page("profiles", [], state)
    assert state is not None
    try:
        # The pages are counted in the size the run began with: a resumed run asks for the same records.
        started = time.perf_counter()
        requests = _fetch(client, staging, state, province, int(state.get("perPage") or page_size), progress)
        state = staging.state() or state
        report = MirrorReport(staging.count("profiles"), staging.count("listings"), resumed, requests, state["at"])
        report.timings.fetch = time.perf_counter() - started
        started = time.perf_counter()
        run = orjson.dumps({"run": state["run"], "at": state["at"], "source": source}).decode()
        if into is not None:
            if on_store is not None:
                on_store(into)
            report.differences = apply_differences(into, staging, state["at"], run, report.timings)
        elif not target.exists():
            report.differences = _load_new(target, staging, state["at"], run, on_store)
        else:
            store = SQLiteStore(target)
            try:
                if on_store is not None:
                    on_store(store)
                report.differences = apply_differences(store, staging, state["at"], run, report.timings)
            finally:
                store.close()
        report.timings.write = time.perf_counter() - started - report.timings.compare
    finally:
        staging.close()
    Staging.remove(work)
    return report


def _applied_run(target: Path, into: PostgresCatalogueStore | None) -> str | None:
    """The id of the run the catalogue applied last, or None."""
    if into is not None:
        value = into.meta_value(RUN_KEY)
    elif target.exists():
        with closing(sqlite3.connect(f"file:{target}?mode=ro", uri=True, timeout=30)) as db:
            try:
                row = db.execute("SELECT value FROM meta WHERE key = ?", (RUN_KEY,)).fetchone()
            except sqlite3.OperationalError:  # no meta table: not a catalogue a run has written
                row = None
        value = None if row is None else str(row[0])
    else:
        value = None
    return None if value is None else str(orjson.loads(value).get("run"))


def _fetch(
    client: Client,
    staging: Staging,
    state: dict[str, Any],
    province: str,
    page_size: int,
    progress: Progress | None,
) -> int:
    """Fetches the pages from the checkpoint ``state`` on into the work file; answers the requests made."""
    media = MediaPaths(client.api_url)
    requests = 0
    for phase, operation in (("profiles", "search_profiles"), ("listings", "search_listings")):
        if state["phase"] == "done" or (state["phase"] == "listings" and phase == "profiles"):
            continue
        while True:
            params: dict[str, Any] = {"product_id": client.product_id, "page": state["page"], "perPage": page_size}
            if phase == "profiles":
                params["sortByName"] = "asc"
            try:
                body, _ = client.call("GET", operation, params, province=province)
            except BadRequest as refused:
                requests += 1
                smaller = _smaller_page(page_size)
                if "perPage" not in refused.message or smaller is None:
                    raise
                # Too large an answer (a page of big listings over the source's limit): the same records, in
                # smaller pages. A divisor of the size keeps the page boundaries, so nothing is skipped or repeated.
                state = {**state, "page": state["page"] * (page_size // smaller), "perPage": smaller}
                page_size = smaller
                staging.write_page(phase, [], state)  # type: ignore[arg-type]
                continue
            requests += 1
            records, total = _page(phase, body, state["page"])
            staged = [staged_record(phase, record, media) for record in records]  # type: ignore[arg-type]
            next_page = state["page"] + 1
            last = not records or next_page >= math.ceil(total / page_size)
            state = {**state, "phase": phase, "page": next_page}
            if last:
                state = {**state, "phase": "listings" if phase == "profiles" else "done", "page": 0}
            staging.write_page(phase, staged, state)  # type: ignore[arg-type]
            if progress is not None:
                progress(phase, min(total, next_page * page_size), total)
            if last:
                break
    return requests


def _smaller_page(size: int) -> int | None:
    """The largest divisor of ``size`` at most half of it (1000: 500, 125: 25), or None for 1."""
    return next((smaller for smaller in range(size // 2, 0, -1) if size % smaller == 0), None)


def _page(phase: str, body: Any, page: int) -> tuple[list[Any], int]:
    """A search answer's records and total; ValueError when it is not one."""
    results = body.get("results") if isinstance(body, dict) else None
    total = body.get("total") if isinstance(body, dict) else None
    if not isinstance(results, list) or isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ValueError(f"{phase} page {page}: the source's answer is not a search answer (results and total)")
    return results, total


# -- applying a run --------------------------------------------------------------------------------------------


def apply_differences(
    store: MirrorTarget, staging: Staging, at: float, run: str, timings: Timings | None = None
) -> Differences:
    """Writes into ``store``, in one transaction, what differs between its records and the staged ones, as of
    ``at``, and keeps ``run`` as the run applied last; answers what was written (``timings.compare`` adds the time
    spent comparing)."""
    timings = timings if timings is not None else Timings()
    differences = Differences()
    heard = differences.count
    store.listeners.append(heard)
    try:
        with store.atomic():
            listings, profiles = staging.keys("listings"), staging.keys("profiles")
            staged_listings, staged_profiles = set(listings), set(profiles)
            gone = [key for key in store.stored_keys("listings") if key not in staged_listings]
            gone_profiles = [path for path in store.stored_keys("profiles") if path not in staged_profiles]
            for listing_id in gone:
                store.delete_listing(listing_id, at=at)
            for batch in _changed(store, staging, "profiles", profiles, at, timings):
                load(store, [], batch, at=at, bulk=False)
            deleted = set(gone)
            for batch in _changed(store, staging, "listings", listings, at, timings):
                load(store, _checked(store, batch, deleted), [], at=at, bulk=False)
            for path in gone_profiles:
                store.delete_profile(path)
            store.set_meta_value(RUN_KEY, run)  # not a change: the generation stays, nothing is heard of
    finally:
        store.listeners.remove(heard)
    return differences


def _changed(
    store: MirrorTarget, staging: Staging, kind: Kind, keys: list[str], at: float, timings: Timings
) -> Iterator[list[dict[str, Any]]]:
    """The staged records of ``kind`` (``keys``) that differ from the stored ones (or are not stored), a batch at a
    time."""
    for batch in batched(keys, APPLY_BATCH):
        started = time.perf_counter()
        staged = staging.documents(kind, batch)
        stored = store.stored_documents(kind, batch)
        changed = [decode_document(staged[key]) for key in batch if not _same(kind, staged[key], stored.get(key), at)]
        timings.compare += time.perf_counter() - started
        if changed:
            yield changed


def _same(kind: Kind, staged: bytes, stored: bytes | None, at: float) -> bool:
    """Whether a staged record, once written, would be stored as it is: the bytes compared first (a record of one
    of our deployments), then the listing as the store completes it (a source that does not carry what the store
    adds, such as the time of the last change of selling status)."""
    if stored is None:
        return False
    if staged == stored:
        return True
    if kind == "profiles":
        return False
    old = decode_document(stored)
    return encode_document(complete_listing(decode_document(staged), old, at)) == stored


def _checked(store: MirrorTarget, listings: list[dict[str, Any]], gone: set[str]) -> list[dict[str, Any]]:
    """The listings as an import checks them (each on its own, then their floor-plan ids against the other
    listings'); ValueError naming the first one refused and why: a run writes all of the source or nothing."""
    parsed = ParsedFile()
    for position, record in enumerate(listings, start=1):
        try:
            _, checked = classify(record)
        except ValueError as error:
            raise ValueError(f"listing {record.get('listingId')!r}: {error}") from None
        parsed.listings.append((position, checked))

    def holders(plan_ids: Iterable[str]) -> dict[str, list[str]]:  # the listings this run deletes hold none
        held = store.listings_holding_plans(plan_ids)
        return {plan_id: [key for key in keys if key not in gone] for plan_id, keys in held.items()}

    report = check_plan_ids(parsed, holders)
    if report.problems:
        raise ValueError(report.problems[0][1])
    return report.listings


def _load_new(
    target: Path,
    staging: Staging,
    at: float,
    run: str,
    on_store: Callable[[SQLiteStore | PostgresCatalogueStore], None] | None,
) -> Differences:
    """A catalogue file made of the staged records (each listing created at ``at``), moved into place at once."""
    building = target.with_name(target.name + ".new")
    Staging.remove(building)
    differences = Differences()
    store = SQLiteStore(building)
    try:
        if on_store is not None:
            on_store(store)
        store.listeners.append(differences.count)
        checked = (listing for batch in batched(staging.records("listings"), APPLY_BATCH)
                   for listing in _checked(store, batch, set()))  # fmt: skip
        load(store, checked, staging.records("profiles"), at=at)
        store.set_meta_value(RUN_KEY, run)
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    building.replace(target)
    Staging.remove(building)
    return differences


def replace_catalogue(
    store: PostgresCatalogueStore, profiles: Iterable[dict[str, Any]], listings: Iterable[dict[str, Any]]
) -> list[CatalogueChange]:
    """Makes ``store`` hold these records and no others, in one transaction: the records it holds that are not
    among them are removed, these are upserted (profiles first). The store's listeners hear of every change
    once, after the commit (or its journal records them in the transaction: see :meth:`PostgresCatalogueStore.atomic`);
    a failure leaves the catalogue as it was."""
    profiles, listings = list(profiles), list(listings)
    keep_listings = {str(r.get("listingId") or r.get("objectID") or "").strip() for r in listings}
    keep_profiles = {str(r.get("path") or "").strip() for r in profiles}
    changes: list[CatalogueChange] = []
    with store.atomic():  # under the write lock: what is committed cannot change meanwhile
        for listing_id in store.stored_keys("listings"):
            if listing_id not in keep_listings:
                changes += store.delete_listing(listing_id)
        for path in store.stored_keys("profiles"):
            if path not in keep_profiles:
                changes += store.delete_profile(path)
        changes += load(store, listings, profiles)
    return changes
