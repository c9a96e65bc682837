"""Who is calling and what they may read: authentication, product grants and rate limits of every operation."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from precon.client.models import PROVINCES
from precon.filters import Expr
from precon.service import metrics
from precon.service.accounts.model import ApiKey, digest
from precon.service.accounts.rate_limits import Limiter, RateLimiter, RedisRateLimiter, SharedRateLimiter, redis_client
from precon.service.accounts.sqlite import AccountStore
from precon.service.api.shaping import MediaLinks
from precon.service.config import ServiceSettings
from precon.service.errors import ApiError, forbidden, no_data_product
from precon.service.stores.types import CatalogueStore

T = TypeVar("T")
P = TypeVar("P")

SMALL_READ = 20
"""The most records a read by key answers on the event loop (see :meth:`Service.run_small_read`)."""

PROVINCE_SEGMENTS = ("all", *PROVINCES)


def too_many(message: str, wait: float) -> ApiError:
    return ApiError(429, f"{message}; retry in {math.ceil(wait)} s", headers={"Retry-After": str(math.ceil(wait))})


@dataclass
class Call(Generic[P]):
    """One request to an operation, resolved once: who is calling (the key, its rate checked), what it may read
    (version, province, product) and the operation's parameters, validated (``params``, its family's object)."""

    request: Request
    service: Service
    params: P
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
        self.limiter: Limiter
        """Requests with a valid key, per key."""
        self.guessing: Limiter
        """Requests without a valid key, per client address: keys cannot be guessed at speed."""
        if settings.workers > 1:  # the limits hold across the worker processes, in files they share
            self.limiter = SharedRateLimiter(settings.rate_limit, settings.rate_burst, settings.rate_limits_path)
            self.guessing = SharedRateLimiter(
                settings.failed_auth_rate, settings.failed_auth_burst, settings.guessing_limits_path
            )
        else:
            self.limiter = RateLimiter(settings.rate_limit, settings.rate_burst)
            self.guessing = RateLimiter(settings.failed_auth_rate, settings.failed_auth_burst)
        if settings.redis_url:  # the limits hold across the replicas; the local ones decide when Redis is away
            client = redis_client(settings.redis_url)
            self.limiter = RedisRateLimiter(settings.rate_limit, settings.rate_burst, client, "keys", self.limiter)
            self.guessing = RedisRateLimiter(
                settings.failed_auth_rate, settings.failed_auth_burst, client, "addresses", self.guessing
            )

    def checks_locally(self, raw_key: str | None) -> bool:
        """Whether this call's key and rate are checked in this machine's memory and files (microseconds), with no
        round trip to PostgreSQL or Redis: what lets a quick call run on the event loop. Keys in SQLite are; keys in
        PostgreSQL are when the replica remembers the key (see :class:`~precon.service.accounts.postgres.
        PostgresAccountStore`); rates are unless they are kept in Redis (and limited)."""
        if not self.limiter.is_local:
            return False
        if isinstance(self.accounts, AccountStore):  # an unknown key meets the limit on guessing
            return self.guessing.is_local
        remembers = getattr(self.accounts, "remembers", None)
        return remembers is not None and bool(remembers(raw_key))

    def store_of(self, version: str) -> CatalogueStore:
        """The catalogue a version reads: the sandbox's for ``v1-sandbox``, the live one otherwise."""
        return self.sandbox if version == "v1-sandbox" else self.live

    async def run_listing_search(
        self,
        version: str,
        work: Callable[[], T],
        *,
        text_in_some_fields: bool,
        unit_filter: bool,
        filter_expr: Expr | None = None,
    ) -> T:
        """``work()``, a listing search of ``version`` (its key checked already): on the event loop when the store
        answers it from indexes already in memory (handing a call of a millisecond to a worker thread and
        back costs as much again). Otherwise in a worker thread, so that a round trip to a server, or an index
        being built, holds up only the calls that wait for it; the indexes are then built for the next. A filter
        (``filter_expr``) on a path the column index does not hold goes to a worker thread until what answers it is
        held for the current generation (the path's values, the floor plans' index): its first answer may read
        them."""
        store = self.store_of(version)
        if store.answers_from_memory(text_in_some_fields, unit_filter, filter_expr):
            return work()

        def warmed() -> T:
            store.warm()
            return work()

        return await run_in_threadpool(warmed)

    async def run_small_read(self, work: Callable[[], T], records: int) -> T:
        """``work()``, a read of ``records`` records by key from the local catalogue: on the event loop when they
        are few (:data:`SMALL_READ`), each a fraction of a millisecond from SQLite. Under load the event loop is
        busy with the searches it answers from memory, and a call handed to a worker thread waits for it twice (to
        start, and to hand back its answer): at 20,000 listings under the query mix, a one-listing read took about
        100 ms that way, four times a search. A larger read goes to a worker thread, so that it holds up no one."""
        if records <= SMALL_READ:
            return work()
        return await run_in_threadpool(work)

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
        raw = request.headers.get("x-api-key")
        key = self.accounts.authenticate(raw)
        if key is None:
            metrics.AUTH_FAILURES.inc()
            address = request.client.host if request.client else ""
            wait = self.guessing.retry_after(address)
            if wait > 0:
                metrics.RATE_LIMITED.labels("address").inc()
                raise too_many("Too many requests without a valid key from this address", wait)
            raise forbidden()
        request.state.key_id = key.key_id  # for the request's log line (never the key itself)
        # Per key by its digest, not its row id: the same in every replica's key store, and never another key's.
        wait = self.limiter.retry_after(digest(raw or ""))
        if wait > 0:
            metrics.RATE_LIMITED.labels("key").inc()
            raise too_many(f"Too many requests: this key may make {self.settings.rate_limit:g} requests a second", wait)
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

    def call(self, request: Request, key: ApiKey, version: str, province: str, params: P) -> Call[P]:
        """An authenticated call of ``version`` and ``province`` (both as declared), authorised: the product it
        reads through (``product_id``, optional on every operation) grants them, or 403."""
        product_id: str | None = None
        if version != "v1-sandbox":
            asked = getattr(params, "product_id", None) or ""
            product_id = self.product(key, asked.strip(), version, province)
        return Call(
            request=request,
            service=self,
            params=params,
            version=version,
            province=None if province == "all" else province,
            key=key,
            store=self.store_of(version),
            media=MediaLinks(str(request.base_url)),
            product_id=product_id,
            provinces=self.readable_provinces(key, version, province),
        )
