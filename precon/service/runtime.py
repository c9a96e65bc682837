"""Opening a data directory: its catalogue, sandbox and accounts, filled with defaults on first use."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import islice
from typing import Any

from fastapi import FastAPI

from precon.service.accounts import AccountStore
from precon.service.app import create_app
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.notify import CatalogueNotifier
from precon.service.store import CatalogueChange, SQLiteStore
from precon.service.webhooks import WebhookStore

log = logging.getLogger("precon.service")
BATCH = 2000


def batched(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


Progress = Callable[[str, int], None]
"""Told ``(what, records)`` after each batch written: ``("profiles", 2000)``, ``("listings", 2000)``."""


def load(
    store: SQLiteStore,
    listings: Iterable[dict[str, Any]],
    profiles: Iterable[dict[str, Any]],
    progress: Progress | None = None,
) -> list[CatalogueChange]:
    """Writes profiles, then listings, in batches (one transaction each)."""
    changes: list[CatalogueChange] = []
    loading = store.bulk_load() if store.counts()["listings"] == 0 else nullcontext()
    with loading:
        for batch in batched(profiles):
            changes += store.upsert_profiles(batch)
            if progress is not None:
                progress("profiles", len(batch))
        for batch in batched(listings):
            changes += store.upsert_listings(batch)
            if progress is not None:
                progress("listings", len(batch))
    return changes


@dataclass
class DataDirectory:
    settings: ServiceSettings
    live: SQLiteStore
    sandbox: SQLiteStore
    accounts: AccountStore
    webhooks: WebhookStore

    @classmethod
    def open(cls, settings: ServiceSettings, progress: Progress | None = None) -> DataDirectory:
        """The directory's stores, the default catalogue generated and loaded first where there is none
        (``progress`` hears of each batch written)."""
        from precon.service import catalogue

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        live = SQLiteStore(settings.catalogue_path)
        if live.counts()["listings"] == 0:
            log.info(
                "generating the default catalogue (%d listings) in %s",
                settings.default_listings,
                settings.catalogue_path,
            )
            generated = catalogue.generate(settings.default_listings, settings.default_seed)
            if progress is not None:
                progress("generated", len(generated.listings))
            load(live, generated.listings, generated.profiles, progress)
        sandbox = SQLiteStore(settings.sandbox_path)
        if sandbox.counts()["listings"] == 0:
            fixed = catalogue.sandbox()
            load(sandbox, fixed.listings, fixed.profiles)
        live.warm()
        accounts = AccountStore(settings.accounts_path)
        if settings.dev:
            accounts.create_key(DEV_PRODUCT_ID, key=DEV_API_KEY, label="development")
        webhooks = WebhookStore(settings.webhooks_path)
        for store, env in ((live, "live"), (sandbox, "sandbox")):
            CatalogueNotifier(webhooks, accounts, store, env, settings.webhook_first_delay).attach()
        return cls(settings, live, sandbox, accounts, webhooks)

    def app(self) -> FastAPI:
        return create_app(
            self.settings, live=self.live, sandbox=self.sandbox, accounts=self.accounts, webhooks=self.webhooks
        )

    def close(self) -> None:
        self.live.close()
        self.sandbox.close()
        self.webhooks.close()


def build_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The ASGI app over a data directory (``uvicorn --factory precon.service.runtime:build_app``)."""
    return DataDirectory.open(settings or ServiceSettings()).app()
