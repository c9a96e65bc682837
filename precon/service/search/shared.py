"""What the worker processes of one data directory share: the in-memory indexes as files they map, a cheap signal
that the catalogue changed, and the lock that lets one process build what the others then read.

An index object (see :mod:`precon.service.search.columns`) is written as a pickle whose numpy arrays are kept apart, one
``.npy`` file each; reading it back maps those files (``mmap_mode="r"``), so every process that reads the same
generation shares one copy of its arrays in the page cache instead of holding its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import gc
import hashlib
import io
import logging
import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

log = logging.getLogger("precon.service")

T = TypeVar("T")

INDEX_FILE = "index.pickle"


def _code_version() -> str:
    """A digest of this package's code: an index written by other code (an upgrade) is not read, even where its
    classes still load (an object pickled before an attribute was added would lack it), but built again, once."""
    digest = hashlib.blake2b(digest_size=6)
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


CODE_VERSION = _code_version()


class _ArrayPickler(pickle.Pickler):
    def __init__(self, handle: io.BufferedWriter, directory: Path) -> None:
        super().__init__(handle, protocol=pickle.HIGHEST_PROTOCOL)
        self.directory = directory
        self.count = 0

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is np.ndarray or isinstance(obj, np.memmap):
            name = f"{self.count}.npy"
            self.count += 1
            np.save(self.directory / name, np.ascontiguousarray(obj), allow_pickle=False)
            return ("npy", name)
        return None


class _ArrayUnpickler(pickle.Unpickler):
    def __init__(self, handle: io.BufferedReader, directory: Path) -> None:
        super().__init__(handle)
        self.directory = directory

    def persistent_load(self, pid: Any) -> Any:
        kind, name = pid
        if kind != "npy":
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        mapped = np.load(self.directory / name, mmap_mode="r", allow_pickle=False)
        # A plain read-only ndarray over the mapping (the memmap subclass would follow every result around).
        return mapped.view(np.ndarray) if isinstance(mapped, np.memmap) else mapped


def save_index(obj: Any, directory: Path) -> None:
    """Writes ``obj`` into ``directory`` (made here): its arrays as ``.npy`` files, the rest as one pickle."""
    directory.mkdir(parents=True)
    with (directory / INDEX_FILE).open("wb") as handle:
        _ArrayPickler(handle, directory).dump(obj)


def load_index(directory: Path) -> Any:
    """What :func:`save_index` wrote, its arrays mapped read-only from their files."""
    with (directory / INDEX_FILE).open("rb") as handle:
        return _ArrayUnpickler(handle, directory).load()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``fcntl`` lock on ``path`` (made if missing), held by one process at a time."""
    with path.open("a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def release_free_memory() -> None:
    """Hands the heap a build left behind back to the system (glibc keeps freed memory otherwise)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).malloc_trim(0)


class SharedIndexes:
    """The indexes of one catalogue file, shared between processes through ``<catalogue>.index/``.

    ``get(kind, key, build)`` answers the index named ``kind`` for ``key`` (the file and its generation): mapped
    from its directory when some process wrote it already, else built by ``build`` under a file lock (one
    process builds, the others wait for it and map what it wrote), written to a temporary directory and renamed
    into place, so a reader never sees half an index. Older directories of the same kind are removed: processes
    that still map their files keep reading them until they swap.
    """

    def __init__(self, catalogue: Path) -> None:
        self.root = catalogue.with_name(catalogue.name + ".index")

    def _directory(self, kind: str, key: str) -> Path:
        return self.root / f"{kind}-{CODE_VERSION}-{key}"

    def get(self, kind: str, key: Callable[[], str], build: Callable[[], tuple[str, T]]) -> T:
        """``key()`` names the index wanted now; ``build()`` builds the current one and names it."""
        wanted = self._directory(kind, key())
        if wanted.is_dir() and (loaded := _readable(wanted)) is not None:
            return loaded
        self.root.mkdir(parents=True, exist_ok=True)
        with file_lock(self.root / f"{kind}.lock"):
            wanted = self._directory(kind, key())  # what is current once the lock is ours
            if wanted.is_dir() and (loaded := _readable(wanted)) is not None:
                return loaded
            built_key, built = build()
            wanted = self._directory(kind, built_key)
            if not wanted.is_dir() or _readable(wanted) is None:
                shutil.rmtree(wanted, ignore_errors=True)
                temporary = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=self.root))
                temporary.rmdir()
                save_index(built, temporary)
                os.rename(temporary, wanted)
            del built
            release_free_memory()
            for stale in self.root.iterdir():
                if stale != wanted and stale.is_dir() and stale.name.startswith((f"{kind}-", f".{kind}-")):
                    shutil.rmtree(stale, ignore_errors=True)
            loaded = load_index(wanted)
        return loaded


def _readable(directory: Path) -> Any:
    """The index in ``directory``, or None where it cannot be read: removed meanwhile, or written by another
    version of this code whose classes are not where they were (an upgrade rebuilds it, once)."""
    try:
        return load_index(directory)
    except (OSError, EOFError, pickle.UnpicklingError, ImportError, AttributeError, TypeError, ValueError):
        return None


class GenerationSignal:
    """A file beside the catalogue that every write replaces (a new inode each time): a process sees that another
    changed the catalogue with one ``stat``, without asking SQLite on every request."""

    def __init__(self, catalogue: Path) -> None:
        self.path = catalogue.with_name(catalogue.name + ".generation")

    def stamp(self) -> tuple[int, int] | None:
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        return status.st_ino, status.st_mtime_ns

    def touch(self, generation: int) -> None:
        with contextlib.suppress(OSError):
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            temporary.write_text(str(generation))
            os.replace(temporary, self.path)
