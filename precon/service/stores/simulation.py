"""A catalogue moved forward in time, day by day, by the market's rules (:mod:`precon.service.catalogue.market`).

:func:`simulate` is ``precon catalogue simulate``: from the day of the catalogue's newest change, each simulated
day's price lists are one write through the store (``upsert_listings`` at that day's time), as an import's are, so
the store records their history and the webhooks hear of them. :func:`simulated_past` gives a new catalogue its
past instead: the same days run over documents in memory, each write's entries computed as the store computes them
(:func:`precon.service.stores.history.listing_changes`), then the catalogue as they leave it and the entries are
written in bulk. A catalogue with no one listening yet gets two years of history in seconds, not minutes.
"""

from __future__ import annotations

import gc
import hashlib
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from random import Random
from typing import Any, Protocol, runtime_checkable

from precon.service.catalogue.market import Draws, Listing, Week, apply_week, draw_week, publishing_day, year_pace
from precon.service.stores.derived import complete_listing
from precon.service.stores.history import Entry, HistoryRow, history_rows, iso_time, listing_changes
from precon.service.stores.loading import batched
from precon.service.stores.records import as_stored_listing, province_of
from precon.service.stores.types import CatalogueChange

WRITE_HOUR = 14
"""The hour (UTC) of each simulated day's write: mid-morning in Toronto, when price lists go out."""
PUBLISHED_EVERY = 14
"""Days between two price lists of one listing: each listing publishes on a day of its own in each fortnight."""
READ_BATCH = 500
COLLECT_EVERY = 30
"""Days between two collections of reference cycles during a simulation."""


class SimulatedStore(Protocol):
    """What a simulation reads and writes: a catalogue store."""

    def get_listings(self, ids: list[str], province: str | None) -> dict[str, dict[str, Any]]: ...
    def upsert_listings(self, records: Iterable[dict[str, Any]], at: float | None = None) -> list[CatalogueChange]: ...
    def newest_change(self) -> str | None: ...
    def listing_ids(self) -> list[str]: ...


Move = Callable[[str, dict[str, Any]], dict[str, Any]]
"""A listing's document after a simulated day, given its id and its document."""


@runtime_checkable
class UpdatingStore(Protocol):
    """A store with a read-modify-write of its own, and a way to make many writes in a row (SQLite's)."""

    def update_listings(self, ids: Sequence[str], update: Move, at: float | None = None) -> list[CatalogueChange]: ...
    def many_writes(self) -> AbstractContextManager[None]: ...


@dataclass
class Report:
    """What a simulation did."""

    first_day: date
    last_day: date
    writes: int = 0
    listings_written: int = 0
    entries: int = 0
    seconds: float = 0.0


Progress = Callable[[date, int], None]
"""Told each simulated day and how many listings it wrote."""


def day_time(day: date) -> float:
    """The Unix time of a simulated day's write."""
    return datetime(day.year, day.month, day.day, WRITE_HOUR, tzinfo=UTC).timestamp()


def newest_change_day(store: SimulatedStore) -> date:
    """The day of the catalogue's newest history entry (today, for a catalogue without history)."""
    newest = store.newest_change()
    if newest is not None:
        return datetime.fromisoformat(newest.replace("Z", "+00:00")).date()
    return datetime.now(UTC).date()


class Simulation:
    """The market over a catalogue: the small state of each listing, and the days it has run."""

    def __init__(self, documents: Iterable[dict[str, Any]], seed: int, start: date) -> None:
        self.seed = seed
        self.day = start
        self.listings: dict[str, Listing] = {}
        by_city: dict[str, list[float]] = {}
        for doc in documents:
            state = Listing.of(doc)
            self.listings[state.listing_id] = state
            if state.start_price:
                by_city.setdefault(state.city, []).append(state.start_price)
        self.medians = {city: statistics.median(prices) for city, prices in by_city.items()}
        self._published: list[list[str]] = [[] for _ in range(PUBLISHED_EVERY)]
        for listing_id in sorted(self.listings):  # each day's writes in one order, whoever read the documents
            self._published[_fortnight_day(listing_id)].append(listing_id)

    def days(self, count: int) -> Iterator[tuple[date, list[tuple[Listing, Draws]]]]:
        """Each of the next ``count`` days, with the listings to which something happens that day (and what)."""
        for _ in range(count):
            self.day += timedelta(days=1)
            pace = year_pace(self.day)
            happening = []
            for listing_id in self._published[self.day.toordinal() % PUBLISHED_EVERY]:
                state = self.listings[listing_id]
                week = Week(self.day, pace, self.medians.get(state.city, 0.0))
                draws = draw_week(state, week, _week_draws(self.seed, listing_id, self.day))
                if draws:
                    happening.append((state, draws))
            yield self.day, happening

    def moved(self, doc: dict[str, Any], state: Listing, draws: Draws, at: float) -> dict[str, Any]:
        """The listing's document after the day's draws, with its times (``updatedAt``, each changed plan's
        ``lastUpdated``) set to ``at``."""
        week = Week(self.day, year_pace(self.day), self.medians.get(state.city, 0.0))
        rng = Random(f"precon/market/{self.seed}/{state.listing_id}/{self.day.isoformat()}/events")
        new = apply_week(doc, state, draws, week, rng)
        stamp = iso_time(at)
        old_plans = {plan.get("id"): plan for plan in doc.get("floorPlans") or () if isinstance(plan, dict)}
        for plan in new["floorPlans"]:
            if old_plans.get(plan.get("id")) != plan:
                plan["lastUpdated"] = stamp
        new["updatedAt"] = stamp
        return new

    def mover(self, happening: list[tuple[Listing, Draws]], at: float) -> Move:
        """What the day does to each listing of ``happening`` (given its document): :meth:`moved`."""
        moves = {state.listing_id: (state, draws) for state, draws in happening}

        def move(listing_id: str, doc: dict[str, Any]) -> dict[str, Any]:
            state, draws = moves[listing_id]
            return self.moved(doc, state, draws, at)

        return move


def _fortnight_day(listing_id: str) -> int:
    return (publishing_day(listing_id) * 2 + hashlib.blake2b(listing_id.encode(), digest_size=1).digest()[0]) % 14


class _Draws:
    """A listing's draws of one day: uniform numbers from a hash of (seed, listing, day), cheaper than a generator
    per listing and day, and the same whatever else the simulation did."""

    def __init__(self, digest: bytes) -> None:
        self._values = [int.from_bytes(digest[k : k + 4], "big") / 2**32 for k in range(0, len(digest), 4)]
        self._next = 0

    def random(self) -> float:
        value = self._values[self._next % len(self._values)]
        self._next += 1
        return value


def _week_draws(seed: int, listing_id: str, day: date) -> Any:
    return _Draws(hashlib.blake2b(f"{seed}/{listing_id}/{day.toordinal()}".encode(), digest_size=40).digest())


def simulate(store: SimulatedStore, days: int, seed: int = 0, progress: Progress | None = None) -> Report:
    """Moves the catalogue in ``store`` forward ``days`` days from its newest change: each day one write of the
    listings whose price lists changed, at that day's time."""
    started = time.perf_counter()
    start = newest_change_day(store)
    ids = store.listing_ids()
    simulation = Simulation(_documents(store, ids), seed, start)
    report = Report(start + timedelta(days=1), start + timedelta(days=days))
    with store.many_writes() if isinstance(store, UpdatingStore) else nullcontext(), _collecting_rarely():
        for count, (day, happening) in enumerate(simulation.days(days), start=1):
            at = day_time(day)
            moving = [state.listing_id for state, _ in happening]
            changes = _write_day(store, moving, simulation.mover(happening, at), at)
            if changes:
                report.writes += 1
                report.listings_written += len(changes)
                report.entries += sum(len(change.entries or ()) for change in changes)
            if progress is not None:
                progress(day, len(changes))
            if count % COLLECT_EVERY == 0:
                gc.collect()
    report.seconds = time.perf_counter() - started
    return report


@contextmanager
def _collecting_rarely() -> Iterator[None]:
    """Python's collector of reference cycles off (a day parses and drops hundreds of documents, thousands of objects
    each, none in a cycle: the collector spent a tenth of the time walking them); :func:`simulate` collects every
    :data:`COLLECT_EVERY` days instead."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _write_day(store: SimulatedStore, ids: list[str], move: Move, at: float) -> list[CatalogueChange]:
    """A day's write: a read-modify-write in the store where it has one (each document read and parsed once, and
    what did not change known unchanged), else the documents read, then written."""
    if not ids:
        return []
    if isinstance(store, UpdatingStore):
        return store.update_listings(ids, move, at=at)
    written: list[dict[str, Any]] = []
    for some in batched(ids, READ_BATCH):
        docs = store.get_listings(some, None)
        written += [move(listing_id, docs[listing_id]) for listing_id in some if listing_id in docs]
    return store.upsert_listings(written, at=at) if written else []


def _documents(store: SimulatedStore, ids: list[str]) -> Iterator[dict[str, Any]]:
    for some in batched(ids, READ_BATCH):
        yield from store.get_listings(some, None).values()


@dataclass
class Past:
    """A catalogue as a simulated past leaves it: its listings (as stored) and the history that led there."""

    listings: list[dict[str, Any]]
    history: list[HistoryRow] = field(default_factory=list)
    report: Report | None = None


def simulated_past(listings: list[dict[str, Any]], days: int, seed: int, end: date) -> Past:
    """The catalogue of ``listings`` created ``days`` days before ``end`` and moved forward to ``end``: its
    documents as the store would hold them and its history entries, as writing each day through the store would
    record them (the same completion and the same comparison of each listing's documents)."""
    started = time.perf_counter()
    start = end - timedelta(days=days)
    created_at = day_time(start) if days else time.time()
    current: dict[str, dict[str, Any]] = {}
    entries: list[HistoryRow] = []
    for record in listings:
        listing_id, stored = as_stored_listing(record)
        current[listing_id] = complete_listing(stored, None, created_at)
        entries += _rows(listing_changes(None, current[listing_id], iso_time(created_at)), current[listing_id])
    simulation = Simulation(current.values(), seed, start)
    report = Report(start + timedelta(days=1), end)
    for day, happening in simulation.days(days):
        at = day_time(day)
        for state, draws in happening:
            old = current[state.listing_id]
            _, record = as_stored_listing(simulation.moved(old, state, draws, at))
            new = complete_listing(record, old, at)
            entries += _rows(listing_changes(old, new, iso_time(at)), new)
            current[state.listing_id] = new
        report.writes += bool(happening)
        report.listings_written += len(happening)
    report.entries = len(entries)
    report.seconds = time.perf_counter() - started
    return Past(list(current.values()), entries, report)


def _rows(changed: list[Entry], doc: dict[str, Any]) -> list[HistoryRow]:
    return history_rows(changed, province_of(doc.get("state")))
