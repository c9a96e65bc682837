"""A catalogue moved forward in time, day by day, by the market's rules (:mod:`precon.service.catalogue.market`).

:func:`simulate` is ``precon catalogue simulate``: from the day of the catalogue's newest change, each simulated
day's price lists are one write through the store (``upsert_listings`` at that day's time), as an import's are, so
the store records their history and the webhooks hear of them. :func:`simulated_past` gives a new catalogue its
past instead: the same days run over documents in memory, each write's entries computed as the store computes them
(:func:`precon.service.stores.history.listing_changes`), then the catalogue as they leave it and the entries are
written in bulk. A catalogue with no one listening yet gets two years of history in seconds, not minutes.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import queue
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from random import Random
from typing import Any, BinaryIO, Protocol, runtime_checkable

from precon.service.catalogue.market import (
    Draws,
    Listing,
    UnitsSeen,
    Week,
    apply_week,
    draw_week,
    publishing_day,
    year_pace,
)
from precon.service.collector import collector_paused
from precon.service.stores.derived import complete_listing
from precon.service.stores.forked import available_cores, can_fork, forked
from precon.service.stores.history import Entry, HistoryRow, history_rows, iso_time, listing_changes
from precon.service.stores.loading import batched
from precon.service.stores.records import as_stored_listing, province_of
from precon.service.stores.types import CatalogueChange, before_wanted

WRITE_HOUR = 14
"""The hour (UTC) of each simulated day's write: mid-morning in Toronto, when price lists go out."""
PUBLISHED_EVERY = 14
"""Days between two price lists of one listing: each listing publishes on a day of its own in each fortnight."""
READ_BATCH = 500
COLLECT_EVERY = 30
"""Days between two collections of reference cycles during a simulation, which otherwise runs with the collector
paused (a day parses and drops hundreds of documents, thousands of objects each, none in a cycle: the collector
spent a tenth of the time walking them, and most of the time of reading the catalogue at the start)."""
EVERY_SLOT = range(PUBLISHED_EVERY)
OWN_SLOTS = frozenset({0, 3, 6, 9, 12})
"""The days (by :func:`slot`) the process that writes decides itself when a simulation shares its days with a helper
process (:class:`_Helper`), which decides the other 9 of each 14: deciding a day's write takes about three times as
long as writing it (at 50,000 listings, where the helper decides a day in 1.07 s, this process decides and writes one
in 1.32 s and writes one of the helper's in 0.34 s), so both are busy about the same time. They are spread over the
fortnight, so that the helper, deciding ahead, is never kept waiting long."""
HELPER_SLOTS = frozenset(EVERY_SLOT) - OWN_SLOTS
HELPER_WORTH = 1_000_000
"""The listings times days from which a simulation shares its days with a helper process by default (starting one
takes a second or two, and it reads the whole catalogue again)."""
HELPER_EXIT_S = 30
LOOKAHEAD = 2
"""The helper's days decided and waiting to be sent, at most (a few more are on their way: see :class:`_Helper`)."""


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


@runtime_checkable
class PreparingStore(UpdatingStore, Protocol):
    """A store whose updates can be decided on a read of the catalogue, in another process of its own, and written
    afterwards (SQLite's): what lets a simulation share its days with a helper process."""

    listeners: list[Any]

    def prepare_update(self, ids: Sequence[str], update: Move, at: float, keep_before: bool = False) -> Any: ...
    def apply_update(self, prepared: Any) -> list[CatalogueChange]: ...
    def opener(self) -> Callable[[], PreparingStore]: ...
    def close(self) -> None: ...


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


def last_past_day(now: datetime | None = None) -> date:
    """The last day a simulated past may end on at ``now`` (default: the current time): today once its write time
    has passed, else yesterday. No entry of a new catalogue's history is stamped after the catalogue was made: a
    client that reads the changes feed from the newest entry it saw would otherwise skip every real change made
    before that stamp."""
    now = datetime.now(UTC) if now is None else now
    today = now.astimezone(UTC).date()
    return today if now.timestamp() >= day_time(today) else today - timedelta(days=1)


def newest_change_day(store: SimulatedStore) -> date:
    """The day of the catalogue's newest history entry (today, for a catalogue without history)."""
    newest = store.newest_change()
    if newest is not None:
        return datetime.fromisoformat(newest.replace("Z", "+00:00")).date()
    return datetime.now(UTC).date()


class Simulation:
    """The market over a catalogue: the small state of each listing, and the days it has run."""

    def __init__(
        self, documents: Iterable[dict[str, Any]], seed: int, start: date, keeps_documents: bool = False
    ) -> None:
        """``keeps_documents``: the caller moves the documents :meth:`moved` returns (not copies read again from a
        store), so what a week found of a listing's units may serve its next weeks (:data:`UnitsSeen`)."""
        self.seed = seed
        self._units_seen: dict[str, UnitsSeen] | None = {} if keeps_documents else None
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

    def days(
        self, count: int, slots: Container[int] = EVERY_SLOT
    ) -> Iterator[tuple[date, list[tuple[Listing, Draws]] | None]]:
        """Each of the next ``count`` days, with the listings to which something happens that day (and what); None
        for a day whose :func:`slot` is not one of ``slots`` (another process's: its listings are not drawn)."""
        for _ in range(count):
            self.day += timedelta(days=1)
            if slot(self.day) not in slots:
                yield self.day, None
                continue
            pace = year_pace(self.day)
            happening = []
            for listing_id in self._published[slot(self.day)]:
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
        seen = None if self._units_seen is None else self._units_seen.setdefault(state.listing_id, {})
        new = apply_week(doc, state, draws, week, rng, seen)
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


def slot(day: date) -> int:
    """Which of the fortnight's days ``day`` is: the listings that publish that day are the same every fortnight
    (and no other day's), so days of different slots touch different listings."""
    return day.toordinal() % PUBLISHED_EVERY


def _fortnight_day(listing_id: str) -> int:
    return (
        publishing_day(listing_id) * 2 + hashlib.blake2b(listing_id.encode(), digest_size=1).digest()[0]
    ) % PUBLISHED_EVERY


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


def simulate(
    store: SimulatedStore, days: int, seed: int = 0, progress: Progress | None = None, helper: bool | None = None
) -> Report:
    """Moves the catalogue in ``store`` forward ``days`` days from its newest change: each day one write of the
    listings whose price lists changed, at that day's time.

    ``helper``: whether a helper process decides most days' writes while this one writes them (see
    :class:`_Helper`); by default where the store can (:class:`PreparingStore`), the run is long enough to pay for
    starting one (:data:`HELPER_WORTH`) and there is a second core. The outcome is the same either way."""
    started = time.perf_counter()
    start = newest_change_day(store)
    ids = store.listing_ids()
    report = Report(start + timedelta(days=1), start + timedelta(days=days))
    if helper is None:
        helper = isinstance(store, PreparingStore) and len(ids) * days >= HELPER_WORTH and available_cores() > 1
    if helper and not isinstance(store, PreparingStore):
        raise TypeError(f"a {type(store).__name__} cannot share a simulation's days with a helper process")
    with (
        store.many_writes() if isinstance(store, UpdatingStore) else nullcontext(),
        collector_paused(),
        _Helper.started(store, days, seed, start) if helper else nullcontext() as shared,  # type: ignore[arg-type]
    ):
        simulation = Simulation(_documents(store, ids), seed, start)
        slots = EVERY_SLOT if shared is None else OWN_SLOTS
        for count, (day, happening) in enumerate(simulation.days(days, slots), start=1):
            at = day_time(day)
            if happening is None:
                assert shared is not None and isinstance(store, PreparingStore)
                changes = store.apply_update(shared.decided(day))
            else:
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


class SimulationFailed(RuntimeError):
    """A simulation's helper process failed or stopped (the days written before are kept, each whole)."""


class _Helper:
    """A process that decides the writes of the days of :data:`HELPER_SLOTS` (reads their listings, moves them,
    compares: :meth:`PreparingStore.prepare_update`) while this one writes the days before: deciding a day takes
    most of its time, and a core. Its own copy of the simulation draws as this one's would, and all of a listing's
    days are of one slot, so each listing is moved by one process, always from what its last day wrote.

    It is ``python -m precon.service.stores.simulation_helper`` (:func:`decide_days`), not a fork (this process
    has connections open) nor a ``multiprocessing`` spawn (which runs the caller's main module again). It is given
    its work pickled on its input and answers each day's update pickled on its output. It decides ahead of the
    writes, but not far: when it starts on a day, at most four of its days are not yet written here
    (:data:`LOOKAHEAD` waiting to be sent, one being sent, one being written), the oldest at most seven days before
    it (with :data:`OWN_SLOTS` between), far fewer than :data:`PUBLISHED_EVERY`: the day before it of its listings
    is written. An update is refused (:class:`~precon.service.stores.sqlite.writes.StaleUpdate`) if one of its
    listings was written after it was read all the same."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @classmethod
    @contextmanager
    def started(cls, store: PreparingStore, days: int, seed: int, start: date) -> Iterator[_Helper]:
        package_root = str(Path(__file__).resolve().parents[3])
        search_path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        process = subprocess.Popen(
            [sys.executable, "-m", "precon.service.stores.simulation_helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": search_path},
        )
        try:
            assert process.stdin is not None
            with process.stdin:
                pickle.dump((store.opener(), days, seed, start, before_wanted(store.listeners)), process.stdin)
            yield cls(process)
            with contextlib.suppress(subprocess.TimeoutExpired):  # killed below
                process.wait(timeout=HELPER_EXIT_S)  # it has answered its last day: it closes its store and ends
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()

    def decided(self, day: date) -> Any:
        """The helper's update of ``day`` (the next of its days), once decided."""
        assert self._process.stdout is not None
        try:
            got = pickle.load(self._process.stdout)
        except EOFError:
            raise SimulationFailed(
                f"the simulation's helper process stopped (exit code {self._process.wait()})"
            ) from None
        if got[0] == "failed":
            raise SimulationFailed(f"the simulation's helper process failed: {got[1]}")
        _, decided_day, prepared = got
        if decided_day != day:
            raise SimulationFailed(f"the simulation's helper process decided {decided_day}, not {day}")
        return prepared


def decide_days(given: BinaryIO, answers: BinaryIO) -> None:
    """The helper process (:class:`_Helper`): its work read from ``given``, each of its days' updates decided in
    order and written to ``answers`` as ``("day", day, update)`` (by a thread of its own, while the next day is
    decided); a failure as ``("failed", traceback)``."""
    gc.disable()
    waiting: queue.Queue[tuple[Any, ...] | None] = queue.Queue(maxsize=LOOKAHEAD)
    sender = threading.Thread(target=_send, args=(waiting, answers), name="simulation-helper-send", daemon=True)
    sender.start()
    try:
        open_store, days, seed, start, keep_before = pickle.load(given)
        store = open_store()
        simulation = Simulation(_documents(store, store.listing_ids()), seed, start)
        for count, (day, happening) in enumerate(simulation.days(days, HELPER_SLOTS), start=1):
            if happening is not None:
                at = day_time(day)
                moving = [state.listing_id for state, _ in happening]
                waiting.put(
                    ("day", day, store.prepare_update(moving, simulation.mover(happening, at), at, keep_before))
                )
            if count % COLLECT_EVERY == 0:
                gc.collect()
        store.close()
    except Exception:
        waiting.put(("failed", traceback.format_exc()))
    waiting.put(None)
    sender.join()


def _send(waiting: queue.Queue[tuple[Any, ...] | None], answers: BinaryIO) -> None:
    while (answer := waiting.get()) is not None:
        try:
            pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
            answers.flush()
        except BrokenPipeError:  # the process that writes stopped: nobody to tell
            os._exit(1)


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


def simulated_past(listings: list[dict[str, Any]], days: int, seed: int, end: date, fork: bool | None = None) -> Past:
    """The catalogue of ``listings`` created ``days`` days before ``end`` and moved forward to ``end``: its
    documents as the store would hold them and its history entries, as writing each day through the store would
    record them (the same completion and the same comparison of each listing's documents).

    ``fork``: whether a forked copy of this process moves the listings of half the fortnight's days
    (:data:`FORKED_PAST_SLOTS`) meanwhile; by default where that is safe and worth it (:func:`can_fork`,
    :data:`FORK_WORTH`). The outcome is the same either way: each listing is moved by one process."""
    started = time.perf_counter()
    start = end - timedelta(days=days)
    created_at = day_time(start) if days else time.time()
    current: dict[str, dict[str, Any]] = {}
    entries: list[HistoryRow] = []
    for record in listings:
        listing_id, stored = as_stored_listing(record)
        current[listing_id] = complete_listing(stored, None, created_at)
        entries += _rows(listing_changes(None, current[listing_id], iso_time(created_at)), current[listing_id])
    simulation = Simulation(current.values(), seed, start, keeps_documents=True)
    if fork is None:
        fork = len(listings) * days >= FORK_WORTH and can_fork()
    with forked(partial(_past_days, simulation, current, days, FORKED_PAST_SLOTS)) if fork else nullcontext() as copy:
        parts = [_past_days(simulation, current, days, OWN_PAST_SLOTS if copy else EVERY_SLOT)]
        if copy is not None:
            parts.append(copy.result())
    report = Report(start + timedelta(days=1), end)
    for part in parts:
        current.update(part.moved)
        report.writes += part.writes
        report.listings_written += part.listings_written
    for day in range(1, days + 1):  # in the order one process would have written them
        for part in parts:
            entries += part.rows.get(day, ())
    report.entries = len(entries)
    report.seconds = time.perf_counter() - started
    return Past(list(current.values()), entries, report)


FORK_WORTH = 200_000
"""The listings times days from which :func:`simulated_past` shares its days with a forked copy of this process by
default (forking and reading back its half cost about a tenth of a second a thousand listings)."""
FORKED_PAST_SLOTS = frozenset(range(1, PUBLISHED_EVERY, 2))
OWN_PAST_SLOTS = frozenset(EVERY_SLOT) - FORKED_PAST_SLOTS


@dataclass
class _PastDays:
    """What the days of some slots did to a simulated past: the documents of the listings they moved (as the last
    day left them), each day's entries (by the day's number, from 1), and how many writes and listings."""

    moved: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: dict[int, list[HistoryRow]] = field(default_factory=dict)
    writes: int = 0
    listings_written: int = 0


def _past_days(
    simulation: Simulation, current: dict[str, dict[str, Any]], days: int, slots: Container[int]
) -> _PastDays:
    """The days of ``slots`` (:func:`slot`) of the next ``days``, run over ``current`` (which they update)."""
    done = _PastDays()
    for number, (day, happening) in enumerate(simulation.days(days, slots), start=1):
        if happening is None:
            continue
        at = day_time(day)
        rows: list[HistoryRow] = []
        for state, draws in happening:
            old = current[state.listing_id]
            _, record = as_stored_listing(simulation.moved(old, state, draws, at))
            new = complete_listing(record, old, at)
            rows += _rows(listing_changes(old, new, iso_time(at)), new)
            current[state.listing_id] = done.moved[state.listing_id] = new
        done.rows[number] = rows
        done.writes += bool(happening)
        done.listings_written += len(happening)
    return done


def _rows(changed: list[Entry], doc: dict[str, Any]) -> list[HistoryRow]:
    return history_rows(changed, province_of(doc.get("state")))
