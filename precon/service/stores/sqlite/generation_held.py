"""(ours) A value read from the whole catalogue, kept per generation: the market columns, the unit ledger.

Built once a generation, by one thread while the others wait; where indexes are shared between processes
(:class:`~precon.service.search.shared.SharedIndexes`), by one process, the others mapping the files it wrote, under
the value's kind and the version of the code that builds it (files another version wrote are built again).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from precon.service.search.shared import release_free_memory
from precon.service.stores.sqlite.catalogue import SQLiteCatalogueBase

T = TypeVar("T")

Patch = Callable[[sqlite3.Connection, int, T], T | None]
"""``patch(db, generation, held)``: ``held`` (of ``generation``) moved to the generation of ``db``'s read
transaction, reading only what was written since; None: it cannot be."""


class GenerationHeld(Generic[T]):
    """``get(store)``: the value of the store's generation: the one held patched (``patch``, when given), else
    ``build(db)``, in a read transaction."""

    def __init__(
        self, kind: str, version: str, build: Callable[[sqlite3.Connection], T], patch: Patch[T] | None = None
    ) -> None:
        self.kind = kind
        self.version = version
        self.build = build
        self.patch = patch
        self.lock = threading.Lock()
        self.held: tuple[int, T] | None = None
        """The value and the generation it is of."""
        self._before: tuple[int, T] | None = None
        """While a new generation's is made (under the lock): the one before, to patch."""

    def get(self, store: SQLiteCatalogueBase) -> T:
        generation = store.generation()
        with self.lock:
            held = self.held
            if held is not None and held[0] == generation:
                return held[1]
            self.held = None
            self._before = held if self.patch is not None else None
            del held  # the generation before is let go before the next is built whole (see _read)
            if store._shared is None:
                _, value, whole = self._read(store)
                if whole:  # what the build held, handed back (glibc would keep it for the process)
                    release_free_memory()
            else:
                value = self._mapped(store)
                self._before = None  # (another process may have built it: nothing was read here)
            self.held = (generation, value)
            return value

    def _read(self, store: SQLiteCatalogueBase) -> tuple[int, T, bool]:
        """The value of the generation read, and whether it was built whole: the one before (``_before``, taken
        here) patched, else, that one let go, built."""
        before, self._before = self._before, None
        with store._reading() as db:
            patched = None if before is None or self.patch is None else self.patch(db, *before)
            if patched is not None:
                return store._read_generation(), patched, False
            del before
            return store._read_generation(), self.build(db), True

    def _mapped(self, store: SQLiteCatalogueBase) -> T:
        """The value as one process built (or patched) it, mapped from the files it wrote."""
        shared = store._shared
        assert shared is not None

        def key(generation: int) -> str:
            return f"{self.version}-{store._index_key(generation)}"

        def build() -> tuple[str, T]:
            generation, value, _ = self._read(store)
            return key(generation), value

        value: T = shared.get(self.kind, lambda: key(store.generation()), build)
        return value
