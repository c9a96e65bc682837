"""The listings data service: the application around the operations of ``routes/`` (docs/api.md describes them):
request ids, body limits, error answers, the delivery worker's lifespan, and the pages outside the API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from precon.service import metrics
from precon.service.accounts.sqlite import AccountStore
from precon.service.api.calls import Service
from precon.service.api.media import placeholder_svg
from precon.service.api.middleware import RequestIdMiddleware
from precon.service.api.observe import MetricsPort, ObservedRequests, StoreCollector, metrics_policy
from precon.service.api.openapi import truthful_openapi
from precon.service.api.request_errors import request_error
from precon.service.api.responses import error_response
from precon.service.api.routes import facets, history, listings, profiles
from precon.service.api.routes import webhooks as webhook_routes
from precon.service.config import ServiceSettings
from precon.service.errors import ApiError
from precon.service.stores.sqlite.refresher import Refresher
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import CatalogueStore
from precon.service.webhooks.delivery import DeliveryWorker
from precon.service.webhooks.model import Outbox, RetrySchedule
from precon.service.webhooks.sqlite import WebhookStore
from precon.service.webhooks.targets import TargetPolicy

log = logging.getLogger("precon.service")

WORKER_THREADS = 4

# -- the application -----------------------------------------------------------------------------------------


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Queries are CPU-bound and each worker thread holds a SQLite connection and its cache: a few threads answer
    # as fast on two cores as forty, in a fraction of the memory.
    anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
    worker: DeliveryWorker | None = app.state.webhook_worker
    if worker is not None:
        worker.start()
    port: MetricsPort | None = app.state.metrics_port
    if port is not None:
        port.start()
    refreshers = [Refresher(store).start() for store in app.state.refreshed]
    try:
        yield
    finally:
        for refresher in refreshers:
            refresher.stop()
        if worker is not None:
            worker.stop()
        if port is not None:
            port.stop()
        metrics.process_ended()


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """Every method some route answers at this request's path (one route per method here, so one route's
    own 405 would name only its method)."""
    allowed: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match != Match.NONE:
            allowed |= getattr(route, "methods", None) or set()
    return sorted(allowed)


def create_app(
    settings: ServiceSettings,
    *,
    live: CatalogueStore,
    sandbox: CatalogueStore,
    accounts: AccountStore,
    webhooks: WebhookStore | None = None,
) -> FastAPI:
    """The service over these stores; with a webhook store, the webhook operations and a delivery worker too."""
    service = Service(settings, live, sandbox, accounts)
    app = FastAPI(
        title="Precon listings data service",
        version="1.0",
        description=(
            "Canada's pre-construction listings and the companies behind them. Every operation is under "
            "`/{version}/{province}/` and takes the API key in the `x-api-key` header. See docs/api.md."
        ),
        redirect_slashes=False,
        lifespan=_lifespan,
    )
    app.openapi = lambda: truthful_openapi(app)  # type: ignore[method-assign]
    app.state.service = service
    # A served SQLite catalogue's indexes follow its writes (a replica's copy is followed by its own thread).
    app.state.refreshed = [store for store in (live, sandbox) if isinstance(store, SQLiteStore)]
    app.add_middleware(RequestIdMiddleware)
    _observe(app, settings, {"live": live, "sandbox": sandbox}, webhooks)

    _answer_errors(app)

    # The operations' routes as they are: including a router would wrap each one in FastAPI's own route types.
    for router in (listings.router, facets.router, profiles.router, history.router):
        app.router.routes.extend(router.routes)

    _around_the_api(app, live)
    _serve_webhooks(app, settings, webhooks)
    return app


def _observe(
    app: FastAPI, settings: ServiceSettings, catalogues: dict[str, CatalogueStore], webhooks: Outbox | None
) -> None:
    """Every request counted and logged (outside the request id's middleware, so that it sees every answer), and
    ``/metrics`` where the settings serve it: on the API's port, or on a port of its own started with the app."""
    policy = metrics_policy(settings)
    stores = StoreCollector(catalogues, webhooks)
    app.add_middleware(ObservedRequests, policy=policy, stores=stores)
    app.state.metrics_port = None
    if policy.port is not None:
        shared = settings.workers > 1
        app.state.metrics_port = MetricsPort(settings.host, policy.port, policy, stores, shared=shared)


def _answer_errors(app: FastAPI) -> None:
    """Every error as the API's JSON error: its own, a request that breaks its declarations (a 400, not 422),
    and Starlette's 404 and 405 (which names the methods the path does answer)."""

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, error: ApiError) -> Response:
        return error_response(request, error)

    @app.exception_handler(RequestValidationError)
    async def on_invalid_request(request: Request, error: RequestValidationError) -> Response:
        return error_response(request, request_error(error.errors(), request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 405:
            allowed = allowed_methods(app, request.scope)
            message = f"{request.method} is not allowed here; use {', '.join(allowed)}"
            return error_response(request, ApiError(405, message, headers={"Allow": ", ".join(allowed)}))
        message = "Not Found" if error.status_code == 404 else str(error.detail)
        return error_response(request, ApiError(error.status_code, message, headers=dict(error.headers or {})))


def _around_the_api(app: FastAPI, live: CatalogueStore) -> None:
    """The media placeholders, the health check and the index."""

    @app.get("/media/{path:path}", include_in_schema=False)
    def media(path: str) -> Response:
        svg = placeholder_svg(path)
        if svg is None:
            raise ApiError(404, "Not Found")
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/healthz", include_in_schema=False)
    async def health() -> Response:
        # On the event loop (two counts in SQLite): a health check handed to a worker thread waits for the loop
        # twice, about 100 ms under load, and a balancer's check should see the replica, not the queue.
        return Response(orjson.dumps({"status": "ok", **live.health()}), media_type="application/json")

    @app.get("/", include_in_schema=False)
    def index() -> RedirectResponse:
        return RedirectResponse("/docs")


def _serve_webhooks(app: FastAPI, settings: ServiceSettings, webhooks: WebhookStore | None) -> None:
    """With a webhook store, the webhook operations and (where this process sends) a delivery worker."""
    app.state.webhook_worker = None
    if webhooks is not None:
        policy = TargetPolicy(allow_http=settings.dev, allow_loopback=settings.dev)
        if settings.webhook_worker:
            schedule = RetrySchedule(tuple(settings.webhook_retry_schedule), settings.webhook_first_delay)
            exclusive = settings.delivery_lock_path if settings.workers > 1 else None
            app.state.webhook_worker = DeliveryWorker(webhooks, policy, schedule, exclusive=exclusive)
        app.state.webhooks = webhooks
        app.state.webhook_policy = policy
        # After /media/{path:path}, as before: /media/<a>/webhooks stays a media path.
        app.router.routes.extend(webhook_routes.router.routes)
