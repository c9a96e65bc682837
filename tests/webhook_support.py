"""What the webhook tests share: a receiver on loopback that verifies deliveries with Standard Webhooks, the
service with fast (or slow) retries, and a world of keys subscribed to profile events. A pytest plugin (conftest.py
loads it): its fixtures serve tests/test_webhooks*.py and tests/test_pg_suite_webhooks.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from standardwebhooks import Webhook

from precon.client import Client
from precon.service.accounts.model import Accounts
from precon.service.accounts.sqlite import AccountStore
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.webhooks.model import (
    Outbox,
)
from precon.service.webhooks.notify import CatalogueNotifier
from precon.service.webhooks.sqlite import WebhookStore
from tests.ports import free_port

if TYPE_CHECKING:
    from precon.service.stores.postgres.store import PostgresCatalogueStore

KEY_A = "webhook-key-a"
KEY_B = "webhook-key-b"
KEY_BC = "webhook-key-bc"
FAST_SCHEDULE = [0.3, 0.6, 1.0, 1.0, 1.0, 1.0]
QUEUED = ("pending", "delivered")
"""What replay and send now answer to a receiver that accepts: the delivery queued (pending), or delivered when the
worker, woken before the answer is read, sent it first (often so with the outbox in PostgreSQL)."""


@dataclass
class Receiver:
    """An HTTP receiver on loopback that records what arrives and answers with ``status``."""

    port: int = field(default_factory=free_port)
    status: int = 204
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.allow_reuse_address = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def wait_for(self, count: int, timeout: float = 15) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.received) >= count, f"{len(self.received)} deliveries arrived, {count} expected"
        return self.received


def verified(secret: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The payload, if the Standard Webhooks verifier accepts the delivery's signature (it raises if not)."""
    payload: dict[str, Any] = Webhook(secret).verify(body, headers)
    return payload


@dataclass
class Running:
    url: str
    directory: DataDirectory

    def client(self, key: str = KEY_A, province: str = "all") -> Client:
        return Client(self.url, key, cache=False, max_retries=0, province=province)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Running]:
    settings = ServiceSettings(
        data_dir=tmp_path / "data",
        dev=True,
        rate_limit=0,
        default_listings=120,
        webhook_retry_schedule=FAST_SCHEDULE,
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("a", key=KEY_A)
    directory.accounts.create_key("b", key=KEY_B)
    directory.accounts.create_key("bc-only", ["v1"], ["bc"], key=KEY_BC)
    with ServerThread(directory.app()) as server:
        yield Running(server.url, directory)
    directory.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def a_profile(running: Running) -> tuple[str, str]:
    profile = running.client().search_profiles(collection="Builders", per_page=1).results[0]
    return profile.profile_id or "", "Builders"


# -- profile events reach only keys that may read the profile ------------------------------------------------


def stored_event_bodies(webhooks: Outbox) -> list[tuple[int, bytes]]:
    """Each stored delivery's key and event body, in the order they were stored: read from the store's tables."""
    if isinstance(webhooks, WebhookStore):
        return (
            webhooks._db()
            .execute("SELECT d.key_id, e.body FROM deliveries d JOIN events e ON e.id = d.event_id ORDER BY d.rowid")
            .fetchall()
        )
    with webhooks.pool.connection() as db:
        rows = db.execute(
            "SELECT d.key_id, e.body FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "
            "ORDER BY d.seq"
        ).fetchall()
    return [(key_id, bytes(body)) for key_id, body in rows]


def _deliveries_by_key(webhooks: Outbox) -> dict[int, list[dict[str, Any]]]:
    found: dict[int, list[dict[str, Any]]] = {}
    for key_id, body in stored_event_bodies(webhooks):
        found.setdefault(key_id, []).append(orjson.loads(body))
    return found


@dataclass
class ProfileWorld:
    store: SQLiteStore | PostgresCatalogueStore
    accounts: Accounts
    webhooks: Outbox
    keys: dict[str, int]


@pytest.fixture
def profile_world(tmp_path: Path) -> Iterator[ProfileWorld]:
    """A catalogue, keys and subscriptions in SQLite files (tests/test_pg_suite_webhooks.py: in PostgreSQL)."""
    yield from make_profile_world(
        SQLiteStore(tmp_path / "catalogue.sqlite3"),
        AccountStore(tmp_path / "accounts.sqlite3"),
        WebhookStore(tmp_path / "webhooks.sqlite3"),
    )


def make_profile_world(
    store: SQLiteStore | PostgresCatalogueStore, accounts: Accounts, webhooks: Outbox
) -> Iterator[ProfileWorld]:
    grants = {
        "on": (["v1"], ["on"]),
        "bc-lite": (["v1-lite"], ["bc"]),
        "ab": (["v1"], ["ab"]),
        "everywhere": (None, None),
        "sandbox": (["v1-sandbox"], None),
    }
    keys: dict[str, int] = {}
    for name, (versions, provinces) in grants.items():
        raw = accounts.create_key(name, versions, provinces)
        key = accounts.authenticate(raw)
        assert key is not None
        keys[name] = key.key_id
        for event in ("profile.created", "profile.updated", "profile.deleted"):
            webhooks.subscribe(key.key_id, "live", event, f"https://1.1.1.1/{name}")
    CatalogueNotifier(webhooks, accounts, store, "live").attach()
    yield ProfileWorld(store, accounts, webhooks, keys)
    store.close()
    webhooks.close()
    accounts.close()


# -- send now, and replay of any delivery --------------------------------------------------------------------------

SLOW_SCHEDULE = [3600.0] * 5
"""Retries an hour apart: a delivery that failed once stays pending, with its next attempt far away."""


@pytest.fixture
def slow_service(tmp_path: Path) -> Iterator[Running]:
    settings = ServiceSettings(
        data_dir=tmp_path / "data", dev=True, rate_limit=0, default_listings=60, webhook_retry_schedule=SLOW_SCHEDULE
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("a", key=KEY_A)
    directory.accounts.create_key("b", key=KEY_B)
    with ServerThread(directory.app()) as server:
        yield Running(server.url, directory)
    directory.close()
