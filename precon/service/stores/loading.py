"""Loading a whole catalogue into a store, in batches: what a new data directory, an import and a mirror share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import islice
from typing import Any, Protocol

from precon.service.stores.history import HistoryRow
from precon.service.stores.types import CatalogueChange

BATCH = 2000


def batched(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class Loadable(Protocol):
    """What a catalogue is loaded into: a store (SQLite's, PostgreSQL's, or a replica's, which writes to PostgreSQL)."""

    def bulk_load(self) -> AbstractContextManager[None]: ...
    def counts(self) -> dict[str, int]: ...
    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]: ...
    def upsert_listings(self, records: Iterable[dict[str, Any]], at: float | None = None) -> list[CatalogueChange]: ...


Progress = Callable[[str, int], None]
"""Told ``(what, records)`` after each batch written: ``("profiles", 2000)``, ``("listings", 2000)``."""


def load(
    store: Loadable,
    listings: Iterable[dict[str, Any]],
    profiles: Iterable[dict[str, Any]],
    progress: Progress | None = None,
    at: float | None = None,
    bulk: bool = True,
) -> list[CatalogueChange]:
    """Writes profiles, then listings, in batches (one transaction each), the listings as of ``at`` (now when
    None). Into an empty catalogue the indexes are built once, at the end, unless ``bulk`` is False (the load is
    part of a larger transaction: see ``atomic``)."""
    changes: list[CatalogueChange] = []
    loading = store.bulk_load() if bulk and store.counts()["listings"] == 0 else nullcontext()
    with loading:
        for batch in batched(profiles):
            changes += store.upsert_profiles(batch)
            if progress is not None:
                progress("profiles", len(batch))
        for batch in batched(listings):
            changes += store.upsert_listings(batch, at=at)
            if progress is not None:
                progress("listings", len(batch))
    return changes


class NewLoadable(Protocol):
    """A store a new catalogue is written into whole (SQLite's): its listings added at once, its history beside."""

    def bulk_load(self) -> AbstractContextManager[None]: ...
    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]: ...
    def add_new_listings(
        self, records: Sequence[dict[str, Any]], progress: Progress | None = None, at: float | None = None
    ) -> None: ...
    def copy_history(self, rows: Sequence[HistoryRow]) -> None: ...


class Past(Protocol):
    """A catalogue and the history that led to it (:class:`precon.service.stores.simulation.Past`)."""

    listings: list[dict[str, Any]]
    history: list[HistoryRow]


def load_new(
    store: NewLoadable,
    listings: Sequence[dict[str, Any]],
    profiles: Iterable[dict[str, Any]],
    progress: Progress | None = None,
    at: float | None = None,
    history: Sequence[HistoryRow] = (),
) -> None:
    """Writes a new catalogue into an empty store: profiles, then the listings, created at ``at`` (as they are
    where None), then ``history`` recorded elsewhere. Nobody hears of it: a new catalogue has no subscribers."""
    with store.bulk_load():
        for batch in batched(profiles):
            store.upsert_profiles(batch)
            if progress is not None:
                progress("profiles", len(batch))
        store.add_new_listings(listings, progress, at)
        if history:
            store.copy_history(history)


def load_past(
    store: NewLoadable, past: Past, profiles: Iterable[dict[str, Any]], progress: Progress | None = None
) -> None:
    """Writes a new catalogue with its simulated past (:func:`precon.service.stores.simulation.simulated_past`):
    profiles, the listings as the past left them, then the history that led there."""
    load_new(store, past.listings, profiles, progress, history=past.history)
