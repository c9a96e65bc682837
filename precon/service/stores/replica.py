"""A replica's local copies: each catalogue in PostgreSQL read from a SQLite copy in the replica's data directory.

PostgreSQL keeps the truth (every write, with the keys it changed logged under the generation it raised:
``catalogue_log``, migration ``0006``); every replica keeps a
:class:`~precon.service.stores.sqlite.store.SQLiteStore` copy of each
catalogue and answers every question from it, with the single node's code: the same column index, text ranking,
facets and distances, in the replica's own memory.

* **Built** from a snapshot when the replica starts without a copy (or with a copy of another database, or one
  older than the log's floor): every document read in one repeatable-read transaction, loaded in bulk.
* **Kept current** by a :class:`Follower` thread: ``LISTEN`` on :data:`~.catalogue_base.CHANNEL`, with a poll every
  :data:`POLL_S` as the fallback. Each catch-up reads, in one snapshot, the keys logged since the copy's generation
  and their documents (a key without one was deleted), with the history those writes recorded, and applies them in
  **one SQLite transaction that also stores the generation reached**: a reader sees the copy before or after a
  write, never half of it, and a replica killed mid-apply resumes from the generation it had stored. A copy older
  than the log's floor (the log keeps :data:`LOG_KEEP_S`), or behind by more records than a batch holds in memory,
  is rebuilt from a snapshot in one transaction, not patched.
* **History** is PostgreSQL's (``listing_history``, migration ``0007``), copied in the order it was written: a
  copy records none of its own, so every replica answers ``listing_history`` and ``changes`` alike.
* **Read your writes.** A write made through :class:`ReplicaCatalogue` returns once this replica's copy holds it.
* **Views** (trending) are counted in the copy at once, added up in PostgreSQL every :data:`VIEWS_S` in one
  statement, and the sums read back into every copy then, so that trending agrees across replicas.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from precon.service.errors import ApiError
from precon.service.stores.postgres.catalogue_base import CHANNEL
from precon.service.stores.postgres.documents import RebuildCopy
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.postgres.writes import combined_rank
from precon.service.stores.prompt_switch import prompt_switching
from precon.service.stores.sqlite.catalogue import _DERIVED_TABLES
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import TRENDING_DECAY_PER_S, TRENDING_EPOCH_S, CatalogueChange

log = logging.getLogger("precon.replica")

POLL_S = 0.5
"""How long the follower waits for a notification before it looks at the log anyway."""
VIEWS_S = 2.0
"""How often a replica adds its views to PostgreSQL's counts and reads every replica's back."""
VIEWS_OVERLAP_S = 10.0
"""How far before its last look a replica reads changed view counts again (writes that were committing then)."""
LOG_KEEP_S = 7 * 24 * 3600.0
"""How long the log keeps a write's entries: a replica away longer rebuilds its copy from a snapshot."""
TRIM_S = 60.0
"""How often a replica trims the log."""
HEALTHY_WITHIN_S = 5.0
"""How long a replica's copy may go without catching up before its health check fails."""
RECONNECT_S = 1.0
"""How long the follower waits before trying a database it lost again."""


def catalogue_id(store: PostgresCatalogueStore) -> str:
    """What names the catalogue a copy copies: the database's catalogue id (made once, by the first replica) and
    the schema. A copy of another database or schema is rebuilt, not patched."""
    with store.pool.connection() as db:
        db.execute("INSERT INTO meta VALUES ('catalogue_id', gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING")
        row = db.execute("SELECT value FROM meta WHERE key = 'catalogue_id'").fetchone()
    assert row is not None
    return f"{row[0]}/{store.schema}"


class CatalogueCopy:
    """The local copy of one PostgreSQL catalogue: built, caught up and rebuilt here (one applier at a time in a
    process; several processes over one file apply in turn, each batch once)."""

    def __init__(self, primary: PostgresCatalogueStore, path: Path, shared_indexes: bool = False) -> None:
        self.primary = primary
        self.path = path
        self.source = catalogue_id(primary)
        self._apply_lock = threading.Lock()
        self.local = self._open(shared_indexes)
        self.applied_at = time.time()
        """When the copy last caught up with PostgreSQL (or found nothing new)."""

    def _open(self, shared_indexes: bool) -> SQLiteStore:
        """The copy, made from a snapshot when there is none of this catalogue, or it is past repair."""
        local = SQLiteStore(self.path, shared_indexes=shared_indexes)
        position = local.copy_position()
        if position is not None and position[0] == self.source:
            local.background_index = True
            try:
                self._catch_up(local)
                return local
            except RebuildCopy as reason:
                log.warning("the copy %s is made again from a snapshot: %s", self.path, reason)
        local.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        local = SQLiteStore(self.path, shared_indexes=shared_indexes)
        self._load_snapshot(local, bulk=True)
        local.background_index = True
        return local

    def _load_snapshot(self, local: SQLiteStore, bulk: bool) -> int:
        """Loads every document of one snapshot into ``local`` (emptied first), with the generation it is of."""
        started = time.monotonic()
        with self.primary.snapshot() as snapshot:
            # In bulk (a new file no one reads yet), batch by batch: a copy killed meanwhile has no position and is
            # made again. In place, one transaction: readers see the old copy until the new one is whole.
            loading = local.bulk_load() if bulk else local._transaction()
            with loading:
                if not bulk:
                    _empty(local)
                for profiles in snapshot.profiles():
                    local.upsert_profiles(profiles)
                for listings in snapshot.listings():
                    local.upsert_listings(listings, as_stored=True)
                for rows in snapshot.history():
                    local.copy_history(rows)
                for deleted in snapshot.deleted_listings():
                    local.copy_deleted(deleted)
                local.mark_copy(self.source, snapshot.generation)
            generation = snapshot.generation
        self.applied_at = time.time()
        log.info(
            "%s copied from PostgreSQL (%s, generation %d) in %.1f s",
            self.path,
            self.primary.schema,
            generation,
            time.monotonic() - started,
        )
        return generation

    def catch_up(self) -> int:
        """Applies what PostgreSQL committed since the copy's generation (rebuilding the copy when the log no longer
        reaches back to it): the generation the copy holds then."""
        try:
            with prompt_switching():
                return self._catch_up(self.local)
        except RebuildCopy as reason:
            log.warning("the copy %s is rebuilt from a snapshot: %s", self.path, reason)
            with self._apply_lock:
                return self._load_snapshot(self.local, bulk=False)

    def _catch_up(self, local: SQLiteStore) -> int:
        with self._apply_lock:
            position = local.copy_position()
            held = 0 if position is None else position[1]
            batch = self.primary.read_log(held)
            if batch.generation > held:
                local.apply_copy(self.source, batch.generation, batch.listings, batch.profiles, batch.history)
            self.applied_at = time.time()
            return max(held, batch.generation)

    def generation(self) -> int:
        """The PostgreSQL generation the copy holds."""
        position = self.local.copy_position()
        return 0 if position is None else position[1]

    def close(self) -> None:
        self.local.close()


def _empty(local: SQLiteStore) -> None:
    """Removes every record and what finds it, in the current transaction (a copy rebuilt in place: readers see
    the old copy until the new one commits)."""
    db = local._db()
    for table in _DERIVED_TABLES:
        if not table.endswith("_vocab"):
            db.execute(f"DELETE FROM {table}")  # fixed names
    db.execute("DELETE FROM listing_views")
    db.execute("DELETE FROM listing_history")  # the snapshot holds all of PostgreSQL's
    db.execute("DELETE FROM deleted_listings")


class ViewCounter:
    """Views recorded on this replica since they were last added to PostgreSQL's counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, list[float]] = {}
        self.read_since = 0.0
        """The database's clock at the last read of the counts (less :data:`VIEWS_OVERLAP_S`)."""

    def add(self, listing_id: str, at: float) -> None:
        with self._lock:
            self._views.setdefault(listing_id, []).append(at)

    def take(self) -> dict[str, tuple[float, int, float]]:
        """The views gathered, per listing: (their combined trending rank, how many, the last one's time)."""
        with self._lock:
            views, self._views = self._views, {}
        return {
            listing_id: (
                combined_rank(TRENDING_DECAY_PER_S * (at - TRENDING_EPOCH_S) for at in times),
                len(times),
                max(times),
            )
            for listing_id, times in views.items()
        }


class ReplicaCatalogue:
    """A catalogue whose writes go to PostgreSQL and whose questions are answered by the local copy.

    Every read operation of :class:`~precon.service.stores.types.CatalogueStore` is the copy's (attributes not
    defined here are looked up on it); writes are PostgreSQL's, and return once the copy holds them."""

    engine = "postgres"
    """Writes are PostgreSQL's: an import is one transaction there (see :func:`precon.service.stores.importer`)."""

    def __init__(self, copy: CatalogueCopy) -> None:
        self.copy = copy
        self.primary = copy.primary
        self.views = ViewCounter()

    @property
    def local(self) -> SQLiteStore:
        return self.copy.local

    def __getattr__(self, name: str) -> Any:
        return getattr(self.copy.local, name)

    # -- writes: PostgreSQL's, then caught up -----------------------------------------------------------------

    @property
    def pool(self) -> Any:
        return self.primary.pool

    @property
    def listeners(self) -> list[Any]:
        return self.primary.listeners

    @property
    def journal(self) -> Any:
        return self.primary.journal

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self.primary.atomic():
            yield
        self._caught_up()

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        with self.primary.bulk_load():
            yield

    def _caught_up(self) -> None:
        """After a write through this replica: the copy holds it, and its searches too (the index built now)."""
        if not self.primary._in_atomic():
            self.copy.catch_up()
            self.local.warm(now=True)

    def upsert_listings(self, records: Iterable[dict[str, Any]], at: float | None = None) -> list[CatalogueChange]:
        changes = self.primary.upsert_listings(records, at=at)
        self._caught_up()
        return changes

    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes = self.primary.upsert_profiles(records)
        self._caught_up()
        return changes

    def delete_listing(self, listing_id: str, at: float | None = None) -> list[CatalogueChange]:
        changes = self.primary.delete_listing(listing_id, at=at)
        self._caught_up()
        return changes

    def delete_profile(self, path: str) -> list[CatalogueChange]:
        changes = self.primary.delete_profile(path)
        self._caught_up()
        return changes

    def listings_holding_plans(self, plan_ids: Iterable[str]) -> dict[str, list[str]]:
        return self.primary.listings_holding_plans(plan_ids)

    def record_view(self, listing_id: str, at: float | None = None) -> None:
        """Counted in the copy at once, and added to PostgreSQL's counts by the follower."""
        now = time.time() if at is None else at
        self.local.record_view(listing_id, now)
        self.views.add(listing_id, now)

    def sync_views(self) -> None:
        """Adds this replica's views to PostgreSQL's counts, then reads back the counts changed since the last look
        (every replica's) into the copy."""
        self.primary.add_views(self.views.take())
        clock, rows = self.primary.views_since(self.views.read_since)
        if rows:
            self.local.set_views(rows)
        self.views.read_since = clock - VIEWS_OVERLAP_S

    # -- the replica -----------------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` says: the copy's counts, the generation it holds and how long since it last caught up
        (the follower looks every :data:`POLL_S`). A replica whose database has not answered for
        :data:`HEALTHY_WITHIN_S` fails it (503), and leaves HAProxy's rotation: it could not take a write or a new
        key."""
        since = max(0.0, time.time() - self.copy.applied_at)
        if since > HEALTHY_WITHIN_S:
            raise ApiError(503, f"the replica has not reached PostgreSQL for {since:.0f} s")
        return {**self.local.counts(), "generation": self.copy.generation(), "caughtUpSecondsAgo": round(since, 3)}

    def close(self) -> None:
        self.copy.close()
        self.primary.close()


class Follower:
    """The thread that keeps a replica's copies current: woken by ``NOTIFY`` (or every :data:`POLL_S`), it catches
    each copy up; every :data:`VIEWS_S` it syncs the view counts, every :data:`TRIM_S` it trims the log."""

    def __init__(self, conninfo: str, catalogues: list[ReplicaCatalogue]) -> None:
        self.conninfo = conninfo
        self.catalogues = catalogues
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="precon-follower", daemon=True)

    def start(self) -> Follower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as listener:
                    listener.execute(f"LISTEN {CHANNEL}")  # a fixed name
                    self._follow(listener)
            except psycopg.OperationalError as error:  # the database went away: the copies serve as they are
                log.warning("PostgreSQL is out of reach (%s); trying again in %.0f s", error, RECONNECT_S)
                self._stop.wait(RECONNECT_S)
            except Exception:
                log.exception("following PostgreSQL failed; trying again in %.0f s", RECONNECT_S)
                self._stop.wait(RECONNECT_S)

    def _follow(self, listener: psycopg.Connection[Any]) -> None:
        views_due = trim_due = 0.0
        while not self._stop.is_set():
            for catalogue in self.catalogues:
                catalogue.copy.catch_up()
            now = time.monotonic()
            if now >= views_due:
                for catalogue in self.catalogues:
                    catalogue.sync_views()
                views_due = now + VIEWS_S
            if now >= trim_due:
                for catalogue in self.catalogues:
                    catalogue.primary.trim_log(LOG_KEEP_S)
                trim_due = now + TRIM_S
            wait = max(0.0, min(POLL_S, views_due - time.monotonic()))
            for _ in listener.notifies(timeout=wait, stop_after=1):
                pass


def open_replicas(
    conninfo: str, primaries: list[PostgresCatalogueStore], folder: Path, shared_indexes: bool
) -> list[ReplicaCatalogue]:
    """Each PostgreSQL catalogue with its local copy in ``folder`` (built or caught up now)."""
    folder.mkdir(parents=True, exist_ok=True)
    replicas = []
    for primary in primaries:
        path = folder / f"copy-{primary.schema}.sqlite3"
        replicas.append(ReplicaCatalogue(CatalogueCopy(primary, path, shared_indexes)))
    return replicas
