"""The service's two catalogues in one PostgreSQL database: the live one (schema ``public``) and the sandbox
(schema ``sandbox``), made and filled on first use, however many replicas start at once."""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg

from precon.service.stores.postgres.store import PostgresCatalogueStore

log = logging.getLogger("precon.store.postgres")

SEED_LOCK = 0x70726566
"""Held while a replica fills an empty catalogue: the others wait, then find it full."""
SANDBOX_SCHEMA = "sandbox"

Progress = Callable[[str, int], None]


def open_catalogues(
    database_url: str, default_listings: int, default_seed: int, progress: Progress | None = None
) -> tuple[PostgresCatalogueStore, PostgresCatalogueStore]:
    """(live, sandbox) over ``database_url``: migrated, and an empty catalogue given the generated default (live)
    or the fixed sandbox, each in one transaction (``progress`` hears of each batch written)."""
    from precon.service import catalogue
    from precon.service.stores.loading import load

    live = PostgresCatalogueStore(database_url)
    sandbox = PostgresCatalogueStore(database_url, schema=SANDBOX_SCHEMA)
    try:
        with psycopg.connect(database_url, autocommit=True) as lock:
            lock.execute("SELECT pg_advisory_lock(%s)", (SEED_LOCK,))
            try:
                if live.counts()["listings"] == 0:
                    log.info("generating the default catalogue (%d listings) in PostgreSQL", default_listings)
                    generated = catalogue.generate(default_listings, default_seed)
                    if progress is not None:
                        progress("generated", len(generated.listings))
                    with live.atomic():
                        load(live, generated.listings, generated.profiles, progress)
                if sandbox.counts()["listings"] == 0:
                    fixed = catalogue.sandbox()
                    with sandbox.atomic():
                        load(sandbox, fixed.listings, fixed.profiles)
            finally:
                lock.execute("SELECT pg_advisory_unlock(%s)", (SEED_LOCK,))
    except BaseException:
        live.close()
        sandbox.close()
        raise
    return live, sandbox
