"""Opening a data directory: its catalogue, sandbox, accounts and webhooks, filled with defaults on first use.

With a database URL (``settings.database_url``) all of them are in that PostgreSQL database instead of the
directory's SQLite files: the catalogue and the sandbox, the keys and products, the webhook subscriptions and
the delivery outbox (which every replica's delivery worker then serves).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import logging
import os
import signal
import sys
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from precon.service.accounts.model import Accounts
from precon.service.accounts.sqlite import AccountStore
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.stores.loading import Progress, load, load_past
from precon.service.stores.simulation import last_past_day, simulated_past
from precon.service.stores.sqlite.store import SQLiteStore, write_whole
from precon.service.webhooks.model import Outbox
from precon.service.webhooks.notify import CatalogueNotifier
from precon.service.webhooks.sqlite import WebhookStore

if TYPE_CHECKING:
    from precon.service.stores.replica import Follower, ReplicaCatalogue

log = logging.getLogger("precon.service")


def _load_default_catalogue(store: SQLiteStore, settings: ServiceSettings, progress: Progress | None) -> None:
    """The default catalogue generated, given its simulated past and loaded into ``store``."""
    from precon.service import catalogue

    log.info("generating the default catalogue (%d listings) in %s", settings.default_listings, store.path)
    generated = catalogue.generate(settings.default_listings, settings.default_seed)
    if progress is not None:
        progress("generated", len(generated.listings))
    past = simulated_past(generated.listings, settings.default_history_days, settings.default_seed, last_past_day())
    if progress is not None:
        progress("history", len(past.history))
    load_past(store, past, generated.profiles, progress)


@dataclass
class DataDirectory:
    settings: ServiceSettings
    live: SQLiteStore | ReplicaCatalogue
    sandbox: SQLiteStore | ReplicaCatalogue
    accounts: Accounts
    webhooks: Outbox
    follower: Follower | None = None
    """A replica's: what keeps its copies of PostgreSQL's catalogues current."""

    @classmethod
    def open(cls, settings: ServiceSettings, progress: Progress | None = None, serving: bool = True) -> DataDirectory:
        """The directory's stores, the default catalogue generated and loaded first where there is none
        (``progress`` hears of each batch written). With ``settings.database_url``, the catalogue, the sandbox, the
        accounts and the webhooks are in that PostgreSQL database (see :mod:`precon.service.stores.postgres`); the
        development key is registered there, which replicas starting together do once between them.

        ``serving``: the catalogue's in-memory indexes are built before this returns. A caller that only makes the
        directory ready and closes it (``precon catalogue prepare``) passes False: indexes held in this process
        would end with it (those shared between worker processes are files, and are written either way)."""
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        if settings.database_url:
            return cls._open_postgres(settings, progress)
        live, sandbox = cls._open_sqlite(settings, progress, serving)
        accounts, webhooks = cls._open_accounts_and_webhooks(settings, [(live, "live"), (sandbox, "sandbox")])
        return cls(settings, live, sandbox, accounts, webhooks)

    @staticmethod
    def _open_accounts_and_webhooks(
        settings: ServiceSettings, catalogues: list[tuple[Any, str]]
    ) -> tuple[Accounts, Outbox]:
        """The keys (the development key registered with ``dev``) and the webhooks, whose notifiers hear each of
        ``catalogues``' writes. A database the catalogues migrated already has the accounts' and webhooks' tables."""
        accounts = open_accounts(settings, migrate=False)
        webhooks = open_webhooks(settings, migrate=False)
        if settings.dev:
            accounts.create_key(DEV_PRODUCT_ID, key=DEV_API_KEY, label="development")
        for store, env in catalogues:
            CatalogueNotifier(webhooks, accounts, store, env, settings.webhook_first_delay).attach()
        return accounts, webhooks

    @classmethod
    def _open_postgres(cls, settings: ServiceSettings, progress: Progress | None) -> DataDirectory:
        """A replica: the catalogues in PostgreSQL (filled with the defaults on first use), each read from a local
        copy in the data directory that a follower thread keeps current (see :mod:`precon.service.stores.replica`).
        Webhook events are made from PostgreSQL's records, by whichever process wrote them."""
        from precon.service.stores.postgres.catalogues import open_catalogues
        from precon.service.stores.replica import Follower, open_replicas

        assert settings.database_url is not None
        primaries = open_catalogues(settings.database_url, settings.default_listings, settings.default_seed, progress)
        try:
            live, sandbox = open_replicas(
                settings.database_url, list(primaries), settings.copies_dir, shared_indexes=settings.workers > 1
            )
        except BaseException:
            for primary in primaries:
                primary.close()
            raise
        accounts, webhooks = cls._open_accounts_and_webhooks(
            settings, [(primaries[0], "live"), (primaries[1], "sandbox")]
        )
        live.warm(now=True)
        directory = cls(settings, live, sandbox, accounts, webhooks)
        directory.follower = Follower(settings.database_url, [live, sandbox]).start()
        return directory

    @staticmethod
    def _open_sqlite(
        settings: ServiceSettings, progress: Progress | None, serving: bool
    ) -> tuple[SQLiteStore, SQLiteStore]:
        from precon.service import catalogue

        shared = settings.workers > 1
        path = settings.catalogue_path
        if not path.exists() or path.stat().st_size == 0:
            # Built beside and moved into place once whole: a first start stopped midway starts again.
            write_whole(path, partial(_load_default_catalogue, settings=settings, progress=progress))
        live = SQLiteStore(path, shared_indexes=shared)
        if live.counts()["listings"] == 0:  # a catalogue emptied: the defaults loaded into it, where it is
            _load_default_catalogue(live, settings, progress)
        sandbox = SQLiteStore(settings.sandbox_path, shared_indexes=shared)
        if sandbox.counts()["listings"] == 0:
            fixed = catalogue.sandbox()
            load(sandbox, fixed.listings, fixed.profiles)
        if serving or shared:
            live.warm()
        return live, sandbox

    def app(self) -> FastAPI:
        """The service over this directory, in the process that serves it (tuned as the settings say)."""
        # Imported here: ``precon catalogue prepare`` opens a data directory without serving it, and the app's
        # modules are a second of a new catalogue's first start.
        from precon.service.app import create_app

        if self.settings.switch_interval_ms is not None:
            sys.setswitchinterval(self.settings.switch_interval_ms / 1000)

        return create_app(
            self.settings, live=self.live, sandbox=self.sandbox, accounts=self.accounts, webhooks=self.webhooks
        )

    def close(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        self.live.close()
        self.sandbox.close()
        self.webhooks.close()
        self.accounts.close()


def open_accounts(settings: ServiceSettings, migrate: bool = True) -> Accounts:
    """The keys and products: in the PostgreSQL database of ``settings.database_url`` (migrated first when
    ``migrate``), else in the data directory's SQLite file (what ``precon keys`` should write to as well)."""
    if settings.database_url:
        from precon.service.accounts.postgres import PostgresAccountStore

        return PostgresAccountStore(settings.database_url, migrate=migrate)
    return AccountStore(settings.accounts_path)


def open_webhooks(settings: ServiceSettings, migrate: bool = True) -> Outbox:
    """The webhook subscriptions and outbox: in the PostgreSQL database of ``settings.database_url`` (migrated
    first when ``migrate``), else in the data directory's SQLite file."""
    if settings.database_url:
        from precon.service.webhooks.postgres import PostgresWebhookStore

        return PostgresWebhookStore(settings.database_url, migrate=migrate)
    return WebhookStore(settings.webhooks_path)


def build_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The ASGI app over a data directory (``uvicorn --factory precon.service.runtime:build_app``)."""
    return DataDirectory.open(settings or ServiceSettings()).app()


def settle_heap() -> None:
    """After start-up: what was loaded is moved out of the collector's sight (``gc.freeze``), so that collections
    caused by requests do not walk it again and again, and young collections run less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)


GC_THRESHOLD = 20_000
"""Allocations between young collections (Python's default is 700): a request decodes and builds thousands of
objects, and a collection after every 700 of them cost about a fifth of the service's time."""


def prepare_workers(settings: ServiceSettings | None = None) -> None:
    """Before the worker processes start, once: the data directory made ready (the default catalogue generated,
    migrations run, the development key seeded) and the shared indexes written; the workers then only map them.
    The rate-limit buckets of an earlier run are dropped. Settings from ``PRECON_SERVICE_*`` when none are given."""
    settings = settings or ServiceSettings()
    for path in (settings.rate_limits_path, settings.guessing_limits_path):
        path.unlink(missing_ok=True)
    DataDirectory.open(settings).close()


def _die_with_parent() -> None:
    """A worker ends (SIGTERM, so gracefully) when the process that started it is gone, even killed with SIGKILL:
    it must not keep the port and the delivery worker to itself."""
    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:
        os.kill(os.getpid(), signal.SIGTERM)


PR_SET_PDEATHSIG = 1


def worker_app() -> FastAPI:
    """The app of one worker process of ``precon serve --workers N`` (settings from ``PRECON_SERVICE_*``, which
    the command sets): the data directory is ready, so this opens it and maps the indexes the first process
    wrote."""
    _die_with_parent()
    settings = ServiceSettings()
    app = DataDirectory.open(settings).app()
    settle_heap()
    return app
