"""What the service tells its operators: each request counted (:mod:`precon.service.metrics`) and logged as one line
(``precon.access``), and ``/metrics`` in Prometheus's text format, on the API's port or a port of its own.

``/metrics`` is answered here, before the API's middleware: it needs no API key, meets no rate limit and is not
counted among the requests. Who may read it (``PRECON_SERVICE_METRICS``, ``_TOKEN``, ``_PORT``) is
:func:`metrics_policy`'s; docs/api.md (Metrics) lists the names and labels.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging
import logging.config
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio.to_thread
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from precon.service import metrics
from precon.service.config import ServiceSettings
from precon.service.logs import ACCESS, log_fields, logging_config
from precon.service.stores.types import CatalogueStore
from precon.service.webhooks.model import Outbox

log = logging.getLogger("precon.service")

METRICS_PATH = "/metrics"
API_PREFIX = "/{version}/{province}/"
LOOPBACK_NAMES = frozenset({"localhost"})
NO_ANSWER = 499
"""The status counted for a request that got no answer at all (its client left first), as nginx names it."""


# -- who may read /metrics -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricsPolicy:
    on_api_port: bool
    """Whether the API's port answers ``/metrics`` (not when a port of its own serves it)."""
    port: int | None = None
    """The port of its own (on the service's address), when one is set."""
    token: str | None = None
    """The bearer token ``/metrics`` asks for, when one is set (on either port)."""

    @property
    def enabled(self) -> bool:
        return self.on_api_port or self.port is not None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def metrics_policy(settings: ServiceSettings) -> MetricsPolicy:
    """Where ``/metrics`` is served: by default on the API's port when the service listens on loopback only; beyond
    loopback only behind a token (``metrics_token``) or on a port of its own (``metrics_port``, which then serves it
    alone, behind the token if there is one). ``metrics=False`` turns it off; ``metrics=True`` beyond loopback
    without either is refused (ValueError): it would publish the service's figures to anyone."""
    token = settings.metrics_token or None
    guarded = token is not None or settings.metrics_port is not None
    if settings.metrics is False:
        return MetricsPolicy(False)
    if not is_loopback(settings.host) and not guarded:
        if settings.metrics:
            raise ValueError(
                f"PRECON_SERVICE_METRICS is on but the service listens on {settings.host}, beyond loopback: set "
                "PRECON_SERVICE_METRICS_TOKEN (then /metrics asks for it) or PRECON_SERVICE_METRICS_PORT"
            )
        return MetricsPolicy(False)
    return MetricsPolicy(settings.metrics_port is None, settings.metrics_port, token)


def observed_serving(settings: ServiceSettings) -> dict[str, Any]:
    """Before ``precon serve`` starts anything: its metrics settings checked (ValueError when they cannot be met),
    and its logging configured in the format of ``log_format``; answers that configuration, for uvicorn to apply
    in each worker process too."""
    metrics_policy(settings)
    config = logging_config(settings.log_format)
    logging.config.dictConfig(config)
    return config


def authorized(policy: MetricsPolicy, authorization: str | None) -> bool:
    """Whether a request to ``/metrics`` with this ``Authorization`` header may read it."""
    if policy.token is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), policy.token.encode())


# -- what is read from the stores when scraped -----------------------------------------------------------------


def _timestamp(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None


class StoreCollector(Collector):
    """Gauges read from the stores at each scrape: the catalogues' sizes and newest change, the outbox's pending
    deliveries and the age of the oldest. A store that cannot be read leaves its gauges out (and logs why)."""

    def __init__(self, catalogues: dict[str, CatalogueStore], outbox: Outbox | None) -> None:
        self.catalogues = catalogues
        self.outbox = outbox
        self._counted: dict[str, tuple[int, int]] = {}
        """Each catalogue's history entries, by the generation they were counted at."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        listings = GaugeMetricFamily("precon_catalogue_listings", "Listings in the catalogue", labels=["catalogue"])
        profiles = GaugeMetricFamily("precon_catalogue_profiles", "Profiles in the catalogue", labels=["catalogue"])
        history = GaugeMetricFamily(
            "precon_catalogue_history_entries", "Entries of the catalogue's history", labels=["catalogue"]
        )
        newest = GaugeMetricFamily(
            "precon_catalogue_last_change_timestamp_seconds",
            "When the catalogue's newest recorded change was made (an import, a mirror, a write), in Unix seconds",
            labels=["catalogue"],
        )
        for name, store in self.catalogues.items():
            try:
                counts = store.counts()
                listings.add_metric([name], counts.get("listings", 0))
                profiles.add_metric([name], counts.get("profiles", 0))
                entries = self._history_entries(name, store)
                if entries is not None:
                    history.add_metric([name], entries)
                changed = _timestamp(getattr(store, "newest_change", lambda: None)())
                if changed is not None:
                    newest.add_metric([name], changed)
            except Exception:
                log.exception("cannot read the %s catalogue's figures for /metrics", name)
        yield from (listings, profiles, history, newest)
        yield from self._outbox()

    def _history_entries(self, name: str, store: CatalogueStore) -> int | None:
        """How many entries the catalogue's history holds: counted in its SQLite file (a replica's copy included)
        once a generation, on a read-only connection of its own (None for a store without one)."""
        path = getattr(store, "path", None)
        generation: Callable[[], int] | None = getattr(store, "generation", None)
        if path is None or generation is None:
            return None
        current = generation()
        held = self._counted.get(name)
        if held is not None and held[0] == current:
            return held[1]
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
            count = int(db.execute("SELECT count(*) FROM listing_history").fetchone()[0])
        self._counted[name] = (current, count)
        return count

    def _outbox(self) -> Iterator[GaugeMetricFamily]:
        if self.outbox is None:
            return
        try:
            pending, oldest, due = self.outbox.pending_summary()
        except Exception:
            log.exception("cannot read the webhook outbox for /metrics")
            return
        now = time.time()
        yield GaugeMetricFamily(
            "precon_webhook_outbox_pending", "Deliveries waiting to be sent (first attempt or a retry)", value=pending
        )
        created = _timestamp(oldest)
        yield GaugeMetricFamily(
            "precon_webhook_outbox_oldest_pending_age_seconds",
            "Age of the oldest delivery waiting to be sent, its retries included (0 when none waits)",
            value=0.0 if created is None else max(0.0, now - created),
        )
        yield GaugeMetricFamily(
            "precon_webhook_outbox_overdue_seconds",
            "How long past its time the most overdue waiting delivery is (0 when every one waits for its time)",
            value=0.0 if due is None else max(0.0, now - due),
        )


class _Registry(Collector):
    """This process's default registry, as one collector of a scrape's."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


def render(stores: StoreCollector) -> bytes:
    """The text of ``/metrics``: every worker's values (their files, in multiprocess mode) and the stores' gauges."""
    registry = CollectorRegistry(auto_describe=False)
    if metrics.multiprocess():
        MultiProcessCollector(registry)
    else:
        registry.register(_Registry())
    registry.register(stores)
    return generate_latest(registry)


# -- the requests ----------------------------------------------------------------------------------------------


def operation_of(scope: Scope, cache: dict[int, str]) -> str:
    """The operation a route answers: ``search_listings``, ``webhooks/deliveries`` (its path under
    ``/{version}/{province}/``), else the first segment of its path (``healthz``, ``media``, ``docs``); ``other``
    where no route answers."""
    route: BaseRoute | None = scope.get("route")
    if route is None:
        # Starlette's own routes (/openapi.json, /docs) record only their endpoint; their paths are fixed.
        return metrics.OTHER if scope.get("endpoint") is None else _first_segment(str(scope.get("path", "")))
    label = cache.get(id(route))  # routes live as long as the app (and are not hashable)
    if label is None:
        path = str(getattr(route, "path", "")) or "/"
        if path.startswith(API_PREFIX):
            label = path[len(API_PREFIX) :].strip("/") or metrics.OTHER
        else:
            label = _first_segment(path)
        cache[id(route)] = label
    return label


def _first_segment(path: str) -> str:
    """A page outside the API by the first segment of its path (``index`` for ``/``)."""
    return path.strip("/").split("/")[0] or "index"


class ObservedRequests:
    """Counts, times and logs every request (the outermost middleware, so that even an answer made before routing
    is seen); answers ``/metrics`` where the policy serves it on this port."""

    def __init__(self, app: ASGIApp, policy: MetricsPolicy, stores: StoreCollector) -> None:
        self.app = app
        self.policy = policy
        self.stores = stores
        self.requests = metrics.RequestMetrics() if policy.enabled else None
        """None where /metrics is served nowhere: requests are then only logged."""
        self._operations: dict[int, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.policy.on_api_port and scope["path"] == METRICS_PATH:
            await self._metrics(scope, send)
            return
        started = time.perf_counter()
        status = NO_ANSWER
        size = 0

        async def observed_send(message: Message) -> None:
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            try:
                self._observed(scope, status, size, time.perf_counter() - started)
            except Exception:  # counting must never fail a request
                log.exception("cannot count the request to %s", scope.get("path"))

    def _observed(self, scope: Scope, status: int, size: int, seconds: float) -> None:
        operation = operation_of(scope, self._operations)
        params = scope.get("path_params") or {}
        version = metrics.bounded_version(params.get("version") if operation != metrics.OTHER else None)
        method = metrics.bounded_method(scope["method"])
        if self.requests is not None:
            self.requests.observe(operation, method, version, status, seconds, size)
        if ACCESS.isEnabledFor(logging.INFO):
            state = scope.get("state") or {}
            fields = {
                "requestId": state.get("request_id"),
                "method": scope["method"],
                "path": scope["path"],
                "operation": operation,
                "version": version,
                "status": status,
                "latencyMs": round(seconds * 1000, 2),
                "bytes": size,
                "keyId": state.get("key_id"),
            }
            log_fields(ACCESS, "request", fields)

    async def _metrics(self, scope: Scope, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if not authorized(self.policy, authorization):
            body, status = b"a bearer token is needed to read /metrics\n", 401
            extra = [(b"www-authenticate", b'Bearer realm="metrics"')]
            content_type = b"text/plain; charset=utf-8"
        else:
            body = await anyio.to_thread.run_sync(render, self.stores)
            status, extra, content_type = 200, [], CONTENT_TYPE_PLAIN_0_0_4.encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type), (b"cache-control", b"no-store"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": body})


# -- a port of its own -----------------------------------------------------------------------------------------


class _MetricsServer(ThreadingHTTPServer):
    daemon_threads = True


class _ReusedPortServer(_MetricsServer):
    """Every worker process binds the metrics port (``SO_REUSEPORT``): whichever the kernel picks answers for all."""

    allow_reuse_port = True


class MetricsPort:
    """``/metrics`` on a port of its own, served by a thread of this process."""

    def __init__(
        self, host: str, port: int, policy: MetricsPolicy, stores: StoreCollector, *, shared: bool = False
    ) -> None:
        """``shared``: the worker processes of one service bind the port together (one process alone binds it
        alone, so that another service given the same port fails to start rather than answer for this one)."""

        def answer(handler: BaseHTTPRequestHandler) -> None:
            if handler.path.split("?")[0] not in (METRICS_PATH, "/"):
                handler.send_error(404)
                return
            if not authorized(policy, handler.headers.get("authorization")):
                handler.send_response(401)
                handler.send_header("www-authenticate", 'Bearer realm="metrics"')
                handler.send_header("content-length", "0")
                handler.end_headers()
                return
            body = render(stores)
            handler.send_response(200)
            handler.send_header("content-type", CONTENT_TYPE_PLAIN_0_0_4)
            handler.send_header("content-length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Scrapes are not logged."""

        self.address = (host, port)
        self._handler = Handler
        self._kind = _ReusedPortServer if shared else _MetricsServer
        self._server: _MetricsServer | None = None

    def start(self) -> MetricsPort:
        """Binds the port (a port in use by another program fails the start) and serves it on a thread."""
        self._server = self._kind(self.address, self._handler)
        self.address = (self.address[0], int(self._server.server_address[1]))
        threading.Thread(target=self._server.serve_forever, name="precon-metrics", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
