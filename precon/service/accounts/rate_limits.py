"""Rate limits: a token bucket per caller, kept in the process, in a file the worker processes of one machine map,
or in Redis, which service replicas on any number of machines share."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger("precon.service")


class Limiter(Protocol):
    @property
    def is_local(self) -> bool:
        """Whether a check costs no round trip to a server (it may run on the event loop)."""
        ...

    def retry_after(self, caller: Hashable) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        ...


class RateLimiter:
    """A token bucket per caller (a key, or an address): ``rate`` requests a second on average, ``burst`` at once.

    Buckets that have refilled are forgotten once there are more than :data:`MAX_BUCKETS`, so callers with ever
    new names (addresses) cannot grow it without bound."""

    MAX_BUCKETS = 10_000

    is_local = True
    """In this process's memory, or a file its workers map: no round trip."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[Hashable, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, caller: Hashable) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            if len(self._buckets) >= self.MAX_BUCKETS:
                self._forget_full(now)
            tokens, stamp = self._buckets.get(caller, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - stamp) * self.rate)
            if tokens >= 1:
                self._buckets[caller] = (tokens - 1, now)
                return 0.0
            self._buckets[caller] = (tokens, now)
            return (1 - tokens) / self.rate

    def _forget_full(self, now: float) -> None:
        refill_s = self.burst / self.rate
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < refill_s}
        if len(self._buckets) >= self.MAX_BUCKETS:  # all busy: keep the most recent half
            recent = sorted(self._buckets.items(), key=lambda item: item[1][1])[len(self._buckets) // 2 :]
            self._buckets = dict(recent)


def caller_hash(caller: Hashable) -> int:
    """A caller's 64-bit name (never 0), the same in every process and on every machine."""
    digest = hashlib.blake2b(repr(caller).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1


class SharedRateLimiter:
    """:class:`RateLimiter`'s buckets in a file every worker process maps, so that a caller's rate holds across
    them all (not once per process). Each bucket is a slot of a fixed table, found by a hash of the caller and
    taken under a lock of the file (``fcntl``) and of the process (threads); a caller whose bucket has refilled
    is as good as absent, so its slot is taken by another when the table is crowded, and failing that the oldest
    slot near the hash is. Time is the system's monotonic clock, the same in every process."""

    SLOTS = 16384
    PROBE = 16
    SLOT = struct.Struct("<Qdd")
    """The caller's hash (0: empty), its tokens, when they were counted."""

    is_local = True
    """In this process's memory, or a file its workers map: no round trip."""

    def __init__(self, rate: float, burst: int, path: Path) -> None:
        self.rate = rate
        self.burst = burst
        self._lock = threading.Lock()
        self._file = path.open("a+b")
        size = self.SLOTS * self.SLOT.size
        fcntl.flock(self._file, fcntl.LOCK_EX)
        try:
            if os.fstat(self._file.fileno()).st_size < size:
                os.ftruncate(self._file.fileno(), size)
        finally:
            fcntl.flock(self._file, fcntl.LOCK_UN)
        self._map = mmap.mmap(self._file.fileno(), size)

    _hash = staticmethod(caller_hash)

    def retry_after(self, caller: Hashable) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        wanted = self._hash(caller)
        start = wanted % self.SLOTS
        refill_s = self.burst / self.rate
        burst = float(self.burst)
        with self._lock:
            fcntl.flock(self._file, fcntl.LOCK_EX)
            try:
                now = time.monotonic()
                chosen, tokens, stamp = -1, burst, now
                free, oldest, oldest_stamp = -1, start, math.inf
                for step in range(self.PROBE):
                    slot = (start + step) % self.SLOTS
                    key, slot_tokens, slot_stamp = self.SLOT.unpack_from(self._map, slot * self.SLOT.size)
                    if key == wanted:
                        chosen, tokens, stamp = slot, slot_tokens, min(slot_stamp, now)
                        break
                    if free < 0 and (key == 0 or now - slot_stamp >= refill_s or slot_stamp > now):
                        free = slot
                    if slot_stamp < oldest_stamp:
                        oldest, oldest_stamp = slot, slot_stamp
                if chosen < 0:
                    chosen = free if free >= 0 else oldest
                tokens = min(burst, tokens + (now - stamp) * self.rate)
                wait = 0.0
                if tokens >= 1:
                    tokens -= 1
                else:
                    wait = (1 - tokens) / self.rate
                self.SLOT.pack_into(self._map, chosen * self.SLOT.size, wanted, tokens, now)
                return wait
            finally:
                fcntl.flock(self._file, fcntl.LOCK_UN)


REDIS_PREFIX = "precon:rate:"
REDIS_TIMEOUT_S = 0.25
"""How long a call to Redis may take (connecting, or waiting for an answer) before the local limiter decides."""

_TAKE = """
if redis.replicate_commands then redis.replicate_commands() end
local rate, burst, ttl_ms = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens, stamp = tonumber(state[1]), tonumber(state[2])
if tokens == nil or stamp == nil then tokens, stamp = burst, now end
if stamp > now then stamp = now end
tokens = math.min(burst, tokens + (now - stamp) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'stamp', string.format('%.6f', now))
redis.call('PEXPIRE', KEYS[1], ttl_ms)
return string.format('%.17g', wait)
"""
"""Takes a token from one bucket, atomically: :class:`RateLimiter`'s arithmetic on Redis's clock (``TIME``), so
that replicas on different machines count time alike. Answers the wait as text (Lua numbers would be truncated)."""


def redis_client(url: str, timeout_s: float = REDIS_TIMEOUT_S) -> redis.Redis:
    """A client for the limiters: connects on first use, gives up after ``timeout_s`` and never retries (a
    limiter that cannot reach Redis decides locally rather than keep the request waiting)."""
    return redis.Redis.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
    )


class RedisRateLimiter:
    """:class:`RateLimiter`'s buckets in Redis, which every replica of the service shares: a caller's rate holds
    across them all. A bucket is the hash ``precon:rate:<name>:<hash of the caller>``, updated by one Lua script
    and expiring once it would have refilled (``burst / rate`` seconds and a second), so idle callers cost nothing.

    When Redis does not answer (down, unreachable, slower than the client's timeout) the request is not kept
    waiting nor failed: ``fallback`` — the limiter the service would use without Redis — decides, and Redis is
    not asked again for :data:`RETRY_S` seconds, so that only one call in that time waits out the timeout.
    Meanwhile the limit holds per replica rather than across them; a warning is logged at most once every
    :data:`WARN_EVERY_S` seconds."""

    RETRY_S = 5.0
    WARN_EVERY_S = 60.0

    def __init__(self, rate: float, burst: int, client: redis.Redis, name: str, fallback: Limiter) -> None:
        self.rate = rate
        self.burst = burst
        self.name = name
        self.fallback = fallback
        self._client = client
        self._take = client.register_script(_TAKE)
        self._ttl_ms = math.ceil((burst / rate + 1) * 1000) if rate > 0 else 0
        self._lock = threading.Lock()
        self._down_until = -math.inf
        self._warned_at = -math.inf

    @property
    def is_local(self) -> bool:
        """Only when there is no limit: otherwise each check is a round trip to Redis."""
        return self.rate <= 0

    def key(self, caller: Hashable) -> str:
        return f"{REDIS_PREFIX}{self.name}:{caller_hash(caller):016x}"

    def retry_after(self, caller: Hashable) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        if time.monotonic() < self._down_until:
            return self.fallback.retry_after(caller)
        try:
            answer = self._take(keys=[self.key(caller)], args=[repr(self.rate), self.burst, self._ttl_ms])
        except redis.RedisError as error:
            self._failed(error)
            return self.fallback.retry_after(caller)
        return float(answer)

    def _failed(self, error: redis.RedisError) -> None:
        now = time.monotonic()
        with self._lock:
            self._down_until = now + self.RETRY_S
            if now - self._warned_at < self.WARN_EVERY_S:
                return
            self._warned_at = now
        log.warning(
            "rate limit %r: Redis did not answer (%s); limiting in this process alone for now", self.name, error
        )

    def close(self) -> None:
        self._client.close()
