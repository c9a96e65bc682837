"""The client's private HTTP cache: hishel's RFC 9111 cache on SQLite, Redis or memory, keyed per API key.

``ResponseCache(url).transport(inner, credential=key)`` wraps an httpx transport in three layers, outermost first:

1. a counting layer that reads hishel's ``response.extensions`` (``from_cache``, ``revalidated``) into
   :class:`CacheStats`;
2. hishel's :class:`hishel.CacheTransport` with a :class:`hishel.Controller` configured as a *private* (non-shared)
   cache of ``GET`` 200 answers: ``Cache-Control: private, max-age=60`` is stored, a fresh answer is served with no
   request at all, a stale one is revalidated with ``If-None-Match`` / ``If-Modified-Since`` and a 304 reuses the
   stored body, ``no-store`` is never stored, other methods are never cached;
3. a header layer next to the network that gives a ``GET`` 200 answer carrying neither ``Cache-Control`` nor
   ``Expires`` the header ``Cache-Control: max-age=<default_ttl>`` (so servers that say nothing are cached for
   ``default_ttl`` seconds, 60 by default; ``default_ttl <= 0`` turns that off), adds a ``Date`` when the server sent
   none (hishel cannot compute an age without it), and turns an unparseable ``Cache-Control`` into ``no-store``
   (hishel would raise on it).

Keys: hishel's own key (method, URL, body) prefixed with a SHA-256 of the credential and of any credential-bearing
request headers, so one API key never sees an answer stored for another. The raw key is stored nowhere: before a
request is written next to its answer, its ``x-api-key`` / ``Authorization`` / ``Cookie`` values are replaced by
their SHA-256.

Bounds: at most ``max_entries`` answers (the least recently stored are evicted after each store) and none older
than ``max_age`` seconds (24 h by default), on every backend.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import hishel
import httpcore
import httpx
import redis
from hishel._headers import parse_cache_control
from hishel._utils import generate_key

logger = logging.getLogger(__name__)

DEFAULT_TTL_S = 60.0
"""Freshness given to ``GET`` 200 answers that carry no caching headers at all."""
DEFAULT_MAX_ENTRIES = 5_000
"""Most answers kept; beyond that the least recently stored are evicted."""
DEFAULT_MAX_AGE_S = 24 * 3600.0
"""No stored answer outlives this, fresh or not."""
CACHE_URL_ENV = "PRECON_CACHE_URL"
CACHE_DIR_ENV = "PRECON_CACHE_DIR"
DEFAULT_FILE_NAME = "http-cache.sqlite3"
REDIS_PREFIX = "precon:http:"
"""Every Redis key this cache writes starts with this; the eviction index is ``precon:http-index``."""
REDIS_INDEX = "precon:http-index"

SENSITIVE_HEADERS = frozenset({b"authorization", b"proxy-authorization", b"cookie", b"x-api-key", b"api-key"})
"""Request headers whose values are never written to a storage (their SHA-256 is, so ``Vary`` still works)."""
SUPPORTED_URLS = (
    "'sqlite:///abs/path.sqlite3', a filesystem path (containing '/' or ending in .sqlite3/.sqlite/.db), "
    "'redis://host:port/db', 'rediss://host:port/db' or 'memory:'"
)

_SQLITE_SUFFIXES = (".sqlite3", ".sqlite", ".db")


def _sha256(value: bytes) -> str:
    return hashlib.sha256(value).hexdigest()


def _redact_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [
        (name, b"sha256:" + _sha256(value).encode("ascii") if name.lower() in SENSITIVE_HEADERS else value)
        for name, value in headers
    ]


def _redacted(request: httpcore.Request) -> httpcore.Request:
    """A copy of ``request`` whose credential-bearing header values are replaced by their SHA-256."""
    return httpcore.Request(
        method=request.method,
        url=request.url,
        headers=_redact_headers(request.headers),
        extensions=request.extensions,
    )


# -- statistics ------------------------------------------------------------------------------------------------


@dataclass
class CacheStats:
    """How requests through a cache ended; safe to update and read from several threads.

    ``hits``: served from the cache without a request. ``misses``: went to the server and was not a revalidation
    (includes uncacheable requests such as POST). ``revalidations``: a stored answer was confirmed by a 304.
    """

    hits: int = 0
    misses: int = 0
    revalidations: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, outcome: Literal["hits", "misses", "revalidations"]) -> None:
        with self._lock:
            setattr(self, outcome, getattr(self, outcome) + 1)

    def reset(self) -> None:
        with self._lock:
            self.hits = self.misses = self.revalidations = 0

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "revalidations": self.revalidations}


# -- storages ----------------------------------------------------------------------------------------------------


class _ManagedStorage(hishel.BaseStorage):
    """A hishel storage wrapped with one lock, credential redaction and a size bound.

    hishel's ``CacheTransport.close()`` closes its storage; since one storage serves every transport of a
    :class:`ResponseCache`, ``close()`` here does nothing and :meth:`shutdown` closes the backend instead.
    """

    backend = ""

    def __init__(self, inner: hishel.BaseStorage, max_entries: int, max_age: float) -> None:
        super().__init__(ttl=max_age)
        self._inner = inner
        self._max_entries = max_entries
        self._lock = threading.RLock()

    def _storage_key(self, key: str) -> str:
        return key

    def _after_store(self, key: str) -> None:
        raise NotImplementedError

    def count(self) -> int:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def shutdown(self) -> None:
        with self._lock:
            self._inner.close()

    def store(
        self,
        key: str,
        response: httpcore.Response,
        request: httpcore.Request,
        metadata: hishel.Metadata | None = None,
    ) -> None:
        with self._lock:
            self._inner.store(self._storage_key(key), response=response, request=_redacted(request), metadata=metadata)
            self._after_store(self._storage_key(key))

    def remove(self, key: str | httpcore.Response) -> None:
        if isinstance(key, httpcore.Response):
            key = str(key.extensions["cache_metadata"]["cache_key"])
        elif not key.startswith(self._storage_key("")):
            key = self._storage_key(key)
        with self._lock:
            self._inner.remove(key)

    def update_metadata(
        self, key: str, response: httpcore.Response, request: httpcore.Request, metadata: hishel.Metadata
    ) -> None:
        with self._lock:
            self._inner.update_metadata(
                self._storage_key(key), response=response, request=_redacted(request), metadata=metadata
            )

    def retrieve(self, key: str) -> tuple[httpcore.Response, httpcore.Request, hishel.Metadata] | None:
        with self._lock:
            found = self._inner.retrieve(self._storage_key(key))
            if found is not None:
                # hishel's in-memory storage hands every caller the one stored response, whose body can be read once
                # (its transport reads it first thing): read here, under the lock, so that threads that retrieve it
                # at once find it read instead of both reading its stream. The other backends give a copy each.
                found[0].read()
            return found

    def close(self) -> None:
        """Called by every transport's ``close()``: the shared backend stays open (see :meth:`shutdown`)."""


class _SQLiteStorage(_ManagedStorage):
    """hishel's ``SQLiteStorage`` on a file of its own, with indexes and pruning to ``max_entries``."""

    backend = "sqlite"

    def __init__(self, path: Path, max_entries: int, max_age: float) -> None:
        path = path.expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            # The cache holds this user's answers: readable by this user only.
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        self.path = path
        self._connection = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
        # The table as hishel creates it (so its own CREATE TABLE IF NOT EXISTS is a no-op), plus indexes.
        self._connection.execute("CREATE TABLE IF NOT EXISTS cache(key TEXT, data BLOB, date_created REAL)")
        self._connection.execute("CREATE INDEX IF NOT EXISTS cache_key ON cache(key)")
        self._connection.execute("CREATE INDEX IF NOT EXISTS cache_date_created ON cache(date_created)")
        self._connection.commit()
        super().__init__(hishel.SQLiteStorage(connection=self._connection, ttl=max_age), max_entries, max_age)

    def _after_store(self, key: str) -> None:
        (count,) = self._connection.execute("SELECT COUNT(*) FROM cache").fetchone()
        if count > self._max_entries:
            self._connection.execute(
                "DELETE FROM cache WHERE rowid IN (SELECT rowid FROM cache ORDER BY date_created, rowid LIMIT ?)",
                [count - self._max_entries],
            )
            self._connection.commit()

    def count(self) -> int:
        with self._lock:
            self._connection.execute("DELETE FROM cache WHERE date_created + ? < ?", [self._ttl, time.time()])
            self._connection.commit()
            (count,) = self._connection.execute("SELECT COUNT(*) FROM cache").fetchone()
            return int(count)

    def clear(self) -> None:
        with self._lock:
            self._connection.execute("DELETE FROM cache")
            self._connection.commit()


class _RedisStorage(_ManagedStorage):
    """hishel's ``RedisStorage`` under a key prefix; entries expire after ``max_age`` and a sorted set of store
    times evicts the least recently stored beyond ``max_entries``."""

    backend = "redis"

    def __init__(self, client: redis.Redis, max_entries: int, max_age: float) -> None:
        self._client = client
        super().__init__(hishel.RedisStorage(client=client, ttl=max_age), max_entries, max_age)

    def _storage_key(self, key: str) -> str:
        return REDIS_PREFIX + key

    def _drop_expired_from_index(self) -> None:
        self._client.zremrangebyscore(REDIS_INDEX, "-inf", time.time() - float(self._ttl or 0))

    def _after_store(self, key: str) -> None:
        self._client.zadd(REDIS_INDEX, {key: time.time()})
        self._drop_expired_from_index()
        excess = int(self._client.zcard(REDIS_INDEX)) - self._max_entries
        if excess > 0:
            evicted = [member for member, _ in self._client.zpopmin(REDIS_INDEX, excess)]
            if evicted:
                self._client.delete(*evicted)

    def count(self) -> int:
        with self._lock:
            self._drop_expired_from_index()
            return int(self._client.zcard(REDIS_INDEX))

    def clear(self) -> None:
        with self._lock:
            keys = list(self._client.scan_iter(match=REDIS_PREFIX + "*", count=500))
            for start in range(0, len(keys), 500):
                self._client.delete(*keys[start : start + 500])
            self._client.delete(REDIS_INDEX)


class _MemoryStorage(_ManagedStorage):
    """hishel's ``InMemoryStorage``, with its own eviction order by store time instead of hishel's LFU."""

    backend = "memory"

    def __init__(self, max_entries: int, max_age: float) -> None:
        self._stored_at: OrderedDict[str, float] = OrderedDict()
        # One spare slot, so that hishel's LFU never evicts before this class does.
        super().__init__(hishel.InMemoryStorage(ttl=max_age, capacity=max_entries + 1), max_entries, max_age)

    def _after_store(self, key: str) -> None:
        self._stored_at[key] = time.monotonic()
        self._stored_at.move_to_end(key)
        while len(self._stored_at) > self._max_entries:
            oldest, _ = self._stored_at.popitem(last=False)
            self._inner.remove(oldest)

    def count(self) -> int:
        with self._lock:
            cutoff = time.monotonic() - float(self._ttl or 0)
            while self._stored_at and next(iter(self._stored_at.values())) < cutoff:
                self._stored_at.popitem(last=False)
            return len(self._stored_at)

    def clear(self) -> None:
        with self._lock:
            for key in list(self._stored_at):
                self._inner.remove(key)
            self._stored_at.clear()


# -- transports --------------------------------------------------------------------------------------------------


class _Controller(hishel.Controller):
    """hishel's controller, comparing ``Vary`` headers in their redacted form (stored requests are redacted)."""

    def _validate_vary(
        self, request: httpcore.Request, response: httpcore.Response, original_request: httpcore.Request
    ) -> bool:
        return super()._validate_vary(request=_redacted(request), response=response, original_request=original_request)


def _key_generator(credential: str | None) -> Callable[[httpcore.Request, bytes | None], str]:
    """hishel's ``key_generator(request, body) -> str``, prefixed with a SHA-256 of who is asking."""
    credential_bytes = (credential or "").encode("utf-8")

    def generate(request: httpcore.Request, body: bytes | None = b"") -> str:
        who = hashlib.sha256(b"precon-cache-v1\0" + credential_bytes)
        for name, value in sorted(request.headers):
            if name.lower() in SENSITIVE_HEADERS:
                who.update(b"\0" + name.lower() + b"=" + value)
        return f"{who.hexdigest()}-{generate_key(request, body or b'')}"

    return generate


class _HeaderTransport(httpx.BaseTransport):
    """Next to the network: default freshness for header-less GET 200 answers, a ``Date``, sane ``Cache-Control``."""

    def __init__(self, inner: httpx.BaseTransport, default_ttl: float) -> None:
        self._inner = inner
        self._max_age = math.ceil(default_ttl) if default_ttl > 0 else None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if request.method != "GET":
            return response
        headers = response.headers
        if "cache-control" in headers:
            try:
                parse_cache_control(headers.get_list("cache-control"))
            except hishel.CacheControlError:
                logger.warning("uncacheable answer from %s: malformed Cache-Control %r", request.url.path, headers)
                headers["cache-control"] = "no-store"
        elif "expires" not in headers and response.status_code == 200 and self._max_age is not None:
            headers["cache-control"] = f"max-age={self._max_age}"
        if "date" not in headers:
            headers["date"] = email.utils.formatdate(usegmt=True)
        return response

    def close(self) -> None:
        self._inner.close()


class _CountingTransport(httpx.BaseTransport):
    """Outermost: counts hishel's verdict on each answer into :class:`CacheStats`."""

    def __init__(self, inner: hishel.CacheTransport, stats: CacheStats) -> None:
        self._inner = inner
        self._stats = stats

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        from_cache = response.extensions.get("from_cache")
        if from_cache is None:
            return response  # hishel's own 504 for only-if-cached: neither served nor sent
        if response.extensions.get("revalidated"):
            # revalidated: a conditional request went out; from_cache tells a 304 from a full new answer.
            self._stats.record("revalidations" if from_cache else "misses")
        else:
            self._stats.record("hits" if from_cache else "misses")
        return response

    def close(self) -> None:
        self._inner.close()


# -- the cache ---------------------------------------------------------------------------------------------------


def default_path() -> Path:
    """``$PRECON_CACHE_DIR/http-cache.sqlite3``, or ``~/.cache/precon/http-cache.sqlite3``."""
    directory = os.environ.get(CACHE_DIR_ENV) or str(Path("~/.cache/precon"))
    return Path(directory).expanduser() / DEFAULT_FILE_NAME


def _sqlite_path(url: str) -> Path | None:
    if url.startswith("sqlite://"):
        rest = url.removeprefix("sqlite://")
        return Path(rest) if rest and rest != "/" else None
    if "://" in url or ":" in url.split("/")[0]:
        return None
    if "/" in url or os.sep in url or url.startswith("~") or url.endswith(_SQLITE_SUFFIXES):
        return Path(url)
    return None


class ResponseCache:
    """One HTTP cache, shared by every transport made from it (and so by every client and thread using them).

    ``url``: ``None`` for the default SQLite file (:func:`default_path`); ``sqlite:///abs/path.sqlite3`` or a plain
    filesystem path for that SQLite file; ``redis://host:port/db`` or ``rediss://…`` for Redis; ``memory:`` for a
    cache that lives as long as this object. See the module docstring for what is cached and how.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        default_ttl: float = DEFAULT_TTL_S,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_age: float = DEFAULT_MAX_AGE_S,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        if max_age <= 0:
            raise ValueError(f"max_age must be positive, not {max_age}")
        self.default_ttl = default_ttl
        self.max_entries = max_entries
        self.stats = CacheStats()
        self.url = url
        self._storage = self._open(url.strip() if url is not None else None, max_entries, max_age)

    @staticmethod
    def _open(url: str | None, max_entries: int, max_age: float) -> _ManagedStorage:
        if url is None:
            return _SQLiteStorage(default_path(), max_entries, max_age)
        if url in ("memory:", "memory://"):
            return _MemoryStorage(max_entries, max_age)
        if url.startswith(("redis://", "rediss://")):
            return _RedisStorage(redis.Redis.from_url(url), max_entries, max_age)
        path = _sqlite_path(url)
        if path is None:
            raise ValueError(f"unsupported cache URL {url!r}: use {SUPPORTED_URLS}")
        return _SQLiteStorage(path, max_entries, max_age)

    @classmethod
    def from_env(cls) -> ResponseCache:
        """The cache named by ``PRECON_CACHE_URL`` (unset or empty: the default SQLite file)."""
        return cls(os.environ.get(CACHE_URL_ENV) or None)

    @property
    def backend(self) -> str:
        """``"sqlite"``, ``"redis"`` or ``"memory"``."""
        return self._storage.backend

    @property
    def path(self) -> Path | None:
        """The SQLite file, for a SQLite cache."""
        return self._storage.path if isinstance(self._storage, _SQLiteStorage) else None

    def transport(self, inner: httpx.BaseTransport, credential: str | None) -> httpx.BaseTransport:
        """``inner`` behind this cache, for requests made as ``credential`` (the API key, or ``None``)."""
        controller = _Controller(
            cacheable_methods=["GET"],
            # Only 200: hishel would store 301/308 for any method and serve them without freshness checks.
            cacheable_status_codes=[200],
            cache_private=True,  # a private, per-user cache: ``Cache-Control: private`` answers are storable
            allow_heuristics=False,
            allow_stale=False,
            key_generator=_key_generator(credential),
        )
        cached = hishel.CacheTransport(
            transport=_HeaderTransport(inner, self.default_ttl), storage=self._storage, controller=controller
        )
        return _CountingTransport(cached, self.stats)

    def __len__(self) -> int:
        """How many answers are stored now."""
        return self._storage.count()

    def clear(self) -> None:
        """Forget every stored answer (statistics are kept)."""
        self._storage.clear()

    def close(self) -> None:
        """Close the backend; transports made from this cache stop working."""
        self._storage.shutdown()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({self.url!r}, default_ttl={self.default_ttl}, max_entries={self.max_entries})"
