"""What the worker processes of one data directory share: the in-memory indexes as files they map, a cheap signal
that the catalogue changed, and the lock that lets one process build what the others then read.

An index object (see :mod:`precon.service.search.columns`) is written as a pickle whose numpy arrays are kept apart, in
packs: files of arrays one after the other. Reading it back maps each pack once (read-only), so every process that
reads the same generation shares one copy of its arrays in the page cache instead of holding its own.

A write changes a few listings, and the index of the next generation is the one before patched (or layered): most of
its arrays are the very arrays mapped from the directory before. Those are not written again: the packs holding them
are linked (hard links) into the new directory, and only the arrays the patch made go into a new pack. So a
generation costs the disk what it changed, as a search engine's segments do, not a copy of every index; a pack kept
for less than half of what it holds is written out again (:data:`LEAST_LIVE_SHARE`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import functools
import gc
import hashlib
import io
import logging
import math
import os
import pickle
import shutil
import sys
import tempfile
import threading
import uuid
import weakref
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


PACK_SUFFIX = ".pack"
ALIGNMENT = 64
"""Where each array starts in a pack (a cache line: what numpy's own allocations give)."""
TRIM_AFTER_BYTES = 16 << 20
"""An index that wrote this many bytes of arrays was built whole (or nearly): the heap it used is handed back."""
LEAST_LIVE_SHARE = 0.5
"""A pack an index links must hold at least this share of bytes it still uses; else those arrays are written again
(so that a long run of writes does not keep packs alive for one array each)."""


class _Origins:
    """Where each array mapped in this process lies: its pack's name and device and inode, and its offset. Weakly
    held: an entry goes with its array."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[weakref.ref[np.ndarray], str, tuple[int, int], int]] = {}
        self._packs: dict[tuple[int, int], weakref.ref[np.ndarray]] = {}
        self._lock = threading.Lock()

    def note(self, array: np.ndarray, pack: str, file: tuple[int, int], offset: int) -> None:
        key = id(array)
        with self._lock:
            self._by_id[key] = (weakref.ref(array, lambda _: self._by_id.pop(key, None)), pack, file, offset)

    def of(self, array: Any) -> tuple[str, tuple[int, int], int] | None:
        found = self._by_id.get(id(array))
        if found is None or found[0]() is not array:
            return None
        return found[1], found[2], found[3]

    def mapped(self, path: Path) -> tuple[np.ndarray, tuple[int, int]]:
        """The pack at ``path`` mapped read-only, once per process however many directories link it."""
        status = os.stat(path)
        file = (status.st_dev, status.st_ino)
        with self._lock:
            held = self._packs.get(file)
            pack = None if held is None else held()
            if pack is None:
                pack = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)
                self._packs[file] = weakref.ref(pack, lambda _: self._packs.pop(file, None))
        return pack, file


ORIGINS = _Origins()


class _PackWriter(pickle.Pickler):
    """Pickles an index with its arrays kept apart: an array mapped from a pack another index of this kind wrote (one
    a patch kept as it was) is linked into the new directory with that pack, not written again; any other goes into
    the directory's own new pack."""

    def __init__(self, handle: io.BufferedWriter, directory: Path, find: Callable[[str, tuple[int, int]], Path | None],
                 avoid: frozenset[str]) -> None:  # fmt: skip
        super().__init__(handle, protocol=pickle.HIGHEST_PROTOCOL)
        self.directory, self.find, self.avoid = directory, find, avoid
        self.name = f"{uuid.uuid4().hex}{PACK_SUFFIX}"
        self.pack = (directory / self.name).open("wb")
        self.size = 0
        self.linked: dict[str, int] = {}
        """Per pack linked, the bytes of it this index uses."""
        self.missing: set[str] = set()

    def reducer_override(self, obj: Any) -> Any:
        # Called for objects other than str, list, dict and the like: an index's thousands of words cost nothing.
        if not (type(obj) is np.ndarray or isinstance(obj, np.memmap)):
            return NotImplemented
        descriptor = _descriptor(obj.dtype)
        origin = ORIGINS.of(obj)
        if origin is not None and obj.flags.c_contiguous and self._linked(origin[0], origin[1]):
            self.linked[origin[0]] += obj.nbytes
            return _packed_array, (origin[0], origin[2], descriptor, obj.shape)
        data = np.ascontiguousarray(obj)
        offset = -(-self.size // ALIGNMENT) * ALIGNMENT
        if data.nbytes:
            self.pack.seek(offset)
            self.pack.write(memoryview(data).cast("B"))
            self.size = offset + data.nbytes
        return _packed_array, (self.name, offset, descriptor, obj.shape)

    def _linked(self, pack: str, file: tuple[int, int]) -> bool:
        if pack in self.linked:
            return True
        if pack in self.avoid or pack in self.missing:
            return False
        source = self.find(pack, file)
        if source is None:
            self.missing.add(pack)
            return False
        try:
            os.link(source, self.directory / pack)
        except OSError:  # removed meanwhile, or a file system without links: its arrays are written again
            self.missing.add(pack)
            return False
        self.linked[pack] = 0
        return True


class _PackReader(pickle.Unpickler):
    def __init__(self, handle: io.BufferedReader, directory: Path) -> None:
        super().__init__(handle)
        self.directory = directory
        self.packs: dict[str, tuple[np.ndarray, tuple[int, int]]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == _packed_array.__name__:
            return self._array
        return super().find_class(module, name)

    def _array(self, name: str, offset: int, descriptor: Any, shape: tuple[int, ...]) -> np.ndarray:
        if not name.endswith(PACK_SUFFIX) or "/" in name:
            raise pickle.UnpicklingError(f"not a pack: {name!r}")
        dtype = np.lib.format.descr_to_dtype(descriptor)
        size = math.prod(shape) * dtype.itemsize
        if not size:
            empty = np.empty(shape, dtype=dtype)
            empty.flags.writeable = False
            return empty
        if name not in self.packs:
            self.packs[name] = ORIGINS.mapped(self.directory / name)
        pack, file = self.packs[name]
        array = pack[offset : offset + size].view(dtype).reshape(shape)
        ORIGINS.note(array, name, file, offset)
        return array


@functools.lru_cache(maxsize=256)
def _descriptor(dtype: np.dtype[Any]) -> Any:
    return np.lib.format.dtype_to_descr(dtype)


def _packed_array(name: str, offset: int, descriptor: Any, shape: tuple[int, ...]) -> np.ndarray:
    """What a pickled array names: read only through :func:`load_index`, which maps its pack."""
    raise pickle.UnpicklingError("an index's arrays are read by load_index")


def save_index(obj: Any, directory: Path, find: Callable[[str, tuple[int, int]], Path | None] | None = None) -> int:
    """Writes ``obj`` into ``directory`` (made here): the rest as one pickle, its arrays in one new pack, except those
    mapped from a pack ``find`` locates (by name and device and inode): that pack is linked into ``directory``
    instead, unless this index would use less than :data:`LEAST_LIVE_SHARE` of it. The bytes of arrays written."""
    avoid: frozenset[str] = frozenset()
    while True:
        directory.mkdir(parents=True)
        with (directory / INDEX_FILE).open("wb") as handle:
            writer = _PackWriter(handle, directory, find or (lambda pack, file: None), avoid)
            with writer.pack:
                writer.dump(obj)
        sparse = {pack for pack, used in writer.linked.items()
                  if used < LEAST_LIVE_SHARE * os.stat(directory / pack).st_size}  # fmt: skip
        if not sparse:
            if not writer.size:
                (directory / writer.name).unlink()
            return writer.size
        shutil.rmtree(directory)
        avoid |= sparse


def load_index(directory: Path) -> Any:
    """What :func:`save_index` wrote, its arrays read-only views of its packs, mapped."""
    with (directory / INDEX_FILE).open("rb") as handle:
        return _PackReader(handle, directory).load()


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
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, looked up once (finding the C library runs ``ldconfig``), or None elsewhere."""
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


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

    def _find(self, pack: str, file: tuple[int, int]) -> Path | None:
        """A directory's link to the pack of this name, device and inode (the one an array was mapped from), if one
        is still there."""
        for path in self.root.glob(f"*/{pack}"):
            with contextlib.suppress(OSError):
                status = os.stat(path)
                if (status.st_dev, status.st_ino) == file:
                    return path
        return None

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
            written = 0
            if not wanted.is_dir() or _readable(wanted) is None:
                shutil.rmtree(wanted, ignore_errors=True)
                temporary = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=self.root))
                temporary.rmdir()
                written = save_index(built, temporary, self._find)
                os.rename(temporary, wanted)
            del built
            if written >= TRIM_AFTER_BYTES:  # a build, not a patch: what it held is handed back
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
