"""One catalogue operation at a time on a data directory's catalogue file: an import, a generate, a mirror or a
simulation waits for the one running (saying which), then refuses with a message if it runs too long.

SQLite already makes each write wait for the one before; what this adds is that two long operations do not
interleave their writes (a simulation's days between an import's batches would move listings the import is
rewriting) and that the one waiting says why. PostgreSQL's catalogue writes take its advisory write lock instead.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class CatalogueBusy(Exception):
    """Another catalogue operation held the catalogue for longer than the wait allowed."""


@contextmanager
def exclusive(
    catalogue: Path, operation: str, wait_s: float = 600.0, waiting: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Holds the catalogue's operation lock while the block runs; ``waiting`` is told once what runs meanwhile."""
    catalogue.parent.mkdir(parents=True, exist_ok=True)
    lock_path = catalogue.with_name(catalogue.name + ".operation")
    with lock_path.open("a+") as handle:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another catalogue operation"
                if not told and waiting is not None:
                    waiting(holder)
                    told = True
                if time.monotonic() >= deadline:
                    raise CatalogueBusy(f"{holder} is still running on {catalogue}; try again when it ends") from None
                time.sleep(0.2)
        try:
            handle.truncate(0)
            handle.write(f"{operation} (process {os.getpid()})")
            handle.flush()
            yield
        finally:
            handle.truncate(0)
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
