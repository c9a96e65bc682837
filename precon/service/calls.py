"""Who is calling and what they may read: authentication, product grants and rate limits of every operation."""

from __future__ import annotations

import fcntl
import hashlib
import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request

from precon.models import PROVINCES, VERSIONS
from precon.service.accounts import AccountStore, ApiKey
from precon.service.config import ServiceSettings
from precon.service.errors import ApiError, bad_request, forbidden, no_data_product
from precon.service.params import QueryParams
from precon.service.shaping import MediaLinks
from precon.service.store import CatalogueStore

PROVINCE_SEGMENTS = ("all", *PROVINCES)


class RateLimiter:
    """A token bucket per caller (a key, or an address): ``rate`` requests a second on average, ``burst`` at once.

    Buckets that have refilled are forgotten once there are more than :data:`MAX_BUCKETS`, so callers with ever
    new names (addresses) cannot grow it without bound."""

    MAX_BUCKETS = 10_000

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

    @staticmethod
    def _hash(caller: Hashable) -> int:
        digest = hashlib.blake2b(repr(caller).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") or 1

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


def too_many(message: str, wait: float) -> ApiError:
    return ApiError(429, f"{message}; retry in {math.ceil(wait)} s", headers={"Retry-After": str(math.ceil(wait))})


@dataclass
class Call:
    request: Request
    params: QueryParams
    version: str
    province: str | None
    """The province code the data is scoped to, or None for ``all``."""
    key: ApiKey
    store: CatalogueStore
    media: MediaLinks
    product_id: str | None = None
    """The product the call reads through (None on the sandbox, which any key may read)."""
    provinces: frozenset[str] | None = None
    """The provinces whose listings the call may see: the path's province, else those the key is granted for the
    version; None for every listing (``all`` on a key granted every province, or the sandbox)."""


class Service:
    def __init__(
        self,
        settings: ServiceSettings,
        live: CatalogueStore,
        sandbox: CatalogueStore,
        accounts: AccountStore,
    ) -> None:
        self.settings = settings
        self.live = live
        self.sandbox = sandbox
        self.accounts = accounts
        self.limiter: RateLimiter | SharedRateLimiter
        self.guessing: RateLimiter | SharedRateLimiter
        if settings.workers > 1:  # the limits hold across the worker processes, in files they share
            self.limiter = SharedRateLimiter(settings.rate_limit, settings.rate_burst, settings.rate_limits_path)
            self.guessing = SharedRateLimiter(
                settings.failed_auth_rate, settings.failed_auth_burst, settings.guessing_limits_path
            )
        else:
            self.limiter = RateLimiter(settings.rate_limit, settings.rate_burst)
            self.guessing = RateLimiter(settings.failed_auth_rate, settings.failed_auth_burst)
        """Requests without a valid key, per client address: keys cannot be guessed at speed."""

    @staticmethod
    def product(key: ApiKey, product_id: str, version: str, province: str) -> str:
        """The product a call reads through: the one named, else the key's oldest that grants the version and
        province. A name that is not one of the key's products, or a key with none, is "No data product"."""
        if not key.grants:
            raise no_data_product()
        if product_id:
            grant = key.grant(product_id)
            if grant is None:
                raise no_data_product()
            if not grant.allows(version, province):
                raise forbidden()
            return grant.product_id
        granting = key.granting(version, province)
        if not granting:
            raise forbidden()
        return granting[0].product_id

    def authenticate(self, request: Request) -> ApiKey:
        """The caller's key, or 403; then 429 when the key is over its rate. Runs before any parameter is read,
        so that a caller without a key learns nothing from the service, and bad requests count against the rate."""
        cached: ApiKey | None = getattr(request.state, "api_key", None)
        if cached is not None:
            return cached
        key = self.accounts.authenticate(request.headers.get("x-api-key"))
        if key is None:
            address = request.client.host if request.client else ""
            wait = self.guessing.retry_after(address)
            if wait > 0:
                raise too_many("Too many requests without a valid key from this address", wait)
            raise forbidden()
        wait = self.limiter.retry_after(key.key_id)
        if wait > 0:
            raise too_many(f"Too many requests: this key may make {self.settings.rate_limit:g} requests a second", wait)
        request.state.api_key = key
        return key

    @staticmethod
    def readable_provinces(key: ApiKey, version: str, province: str) -> frozenset[str] | None:
        """What :attr:`Call.provinces` holds for an authorised call: None when nothing needs trimming."""
        if province != "all":
            return frozenset([province])
        if version == "v1-sandbox":
            return None
        granted = frozenset(code for code in PROVINCES if key.allows(version, code))
        return None if granted == frozenset(PROVINCES) else granted

    def call(self, request: Request, version: str, province: str) -> Call:
        """Authenticates and authorises a call; ``product_id`` is optional on every operation."""
        key = self.authenticate(request)
        if version not in VERSIONS:
            raise bad_request(f"unknown API version {version!r}; use one of {', '.join(VERSIONS)}")
        if province not in PROVINCE_SEGMENTS:
            raise bad_request(f"unknown province {province!r}; use one of {', '.join(PROVINCE_SEGMENTS)}")
        params = QueryParams(request.query_params)
        product_id: str | None = None
        if version != "v1-sandbox":
            product_id = self.product(key, (params.text("product_id") or "").strip(), version, province)
        return Call(
            request=request,
            params=params,
            version=version,
            province=None if province == "all" else province,
            key=key,
            store=self.sandbox if version == "v1-sandbox" else self.live,
            media=MediaLinks(str(request.base_url)),
            product_id=product_id,
            provinces=self.readable_provinces(key, version, province),
        )
