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


class GenerationHeld(Generic[T]):
    """``get(store)``: the value of the store's generation, ``build(db)`` in a read transaction when not held."""

    def __init__(self, kind: str, version: str, build: Callable[[sqlite3.Connection], T]) -> None:
        self.kind = kind
        self.version = version
        self.build = build
        self.lock = threading.Lock()
        self.held: tuple[int, T] | None = None
        """The value and the generation it is of."""

    def get(self, store: SQLiteCatalogueBase) -> T:
        generation = store.generation()
        with self.lock:
            held = self.held
            if held is not None and held[0] == generation:
                return held[1]
            self.held = held = None  # the generation before is let go before the next is built
            if store._shared is None:
                value = self._read(store)[1]
                release_free_memory()  # what the build held, handed back (glibc would keep it for the process)
            else:
                value = self._mapped(store)
            self.held = (generation, value)
            return value

    def _read(self, store: SQLiteCatalogueBase) -> tuple[int, T]:
        with store._reading() as db:
            return store._read_generation(), self.build(db)

    def _mapped(self, store: SQLiteCatalogueBase) -> T:
        """The value as one process built it, mapped from the files it wrote."""
        shared = store._shared
        assert shared is not None

        def key(generation: int) -> str:
            return f"{self.version}-{store._index_key(generation)}"

        def build() -> tuple[str, T]:
            generation, value = self._read(store)
            return key(generation), value

        value: T = shared.get(self.kind, lambda: key(store.generation()), build)
        return value
