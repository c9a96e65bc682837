"""Copying every listing and profile of a remote deployment into a local store, resumably.

The copy is written to a work file beside the catalogue, page by page, and the next page to fetch is saved
after each page's records; an interrupted mirror run again with the same source picks up at that page (a
page written twice is written the same: records are upserted). When every page is in, the work file
replaces the catalogue.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from precon.client import Client
from precon.service.store import SQLiteStore

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
    on_store: Callable[[SQLiteStore], None] | None = None,
) -> MirrorReport:
    """Mirrors the client's deployment into the catalogue file ``target``; resumes an interrupted run.

    ``on_store`` is given the store being written before anything is, to listen to its changes.
    """
    source = {"url": client.api_url, "product": client.product_id, "version": client.version, "province": province}
    work = _work_file(target)
    store = SQLiteStore(work)
    state = _checkpoint(store)
    resumed = state is not None and state.get("source") == source
    if not resumed:
        store.close()
        for path in (work, Path(f"{work}-wal"), Path(f"{work}-shm")):
            path.unlink(missing_ok=True)
        store = SQLiteStore(work)
        state = {"source": source, "phase": "profiles", "page": 0}
        _save_checkpoint(store, state)
    assert state is not None
    if on_store is not None:
        on_store(store)  # e.g. webhook notifications of every record written
    requests = 0
    for phase, operation in (("profiles", "search_profiles"), ("listings", "search_listings")):
        if state["phase"] == "listings" and phase == "profiles":
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
    counts = store.counts()
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    work.replace(target)
    for suffix in ("-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    return MirrorReport(counts["profiles"], counts["listings"], resumed, requests)


def _write_page(store: SQLiteStore, phase: str, records: list[dict[str, Any]], state: dict[str, Any]) -> None:
    """The page's records, then the checkpoint past them: a crash between the two only fetches the page again."""
    if phase == "profiles":
        store.upsert_profiles(records)
    else:
        store.upsert_listings(records)
    _save_checkpoint(store, state)
