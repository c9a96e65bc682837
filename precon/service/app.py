"""The listings data service: every operation of the listings API, as docs/api.md describes it."""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import orjson
from fastapi import FastAPI, Query, Request
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from precon.models import COLLECTIONS, PROVINCES, VERSIONS
from precon.service import similar
from precon.service.accounts import AccountStore, ApiKey
from precon.service.config import ServiceSettings
from precon.service.errors import (
    ApiError,
    bad_request,
    blank_profile_id,
    forbidden,
    no_data_product,
    not_found,
    server_error_body,
)
from precon.service.facet_values import add_facet_value_routes
from precon.service.media import placeholder_svg
from precon.service.params import MAX_IDS, QueryParams, pages
from precon.service.schema import (
    ATTRIBUTE_ALIASES,
    DEFAULT_FACETS,
    LISTING_ATTRIBUTES,
    LISTING_REFERENCE_FIELDS,
    PROFILES_OF_LISTING_FIELDS,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_PROFILE_FIELDS,
)
from precon.service.search import highlight_record
from precon.service.shaping import (
    ListingShaper,
    MediaLinks,
    expand_references,
    profile_object,
    profile_search_object,
    profiles_of_listing,
    reference_fields,
    retrieved_names,
)
from precon.service.store import CatalogueStore, ListingQuery, ProfileQuery, SearchHits
from precon.service.units import add_matched_floor_plans, unit_filter
from precon.service.webhook_routes import add_webhook_routes
from precon.service.webhook_targets import TargetPolicy
from precon.service.webhooks import DeliveryWorker, RetrySchedule, WebhookStore

log = logging.getLogger("precon.service")

CACHE_CONTROL = "private, max-age=60"
PROFILE_COLLECTIONS = (*COLLECTIONS, "Owners")
PROVINCE_SEGMENTS = ("all", *PROVINCES)
MAX_BODY_BYTES = 64 * 1024
WORKER_THREADS = 4

# -- request ids, body limits, rate limits -------------------------------------------------------------------


class RequestIdMiddleware:
    """Gives every request an id, sent back as ``x-request-id`` on every answer, error or not."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY_BYTES:
                body = orjson.dumps({"requestId": request_id, "message": f"request body over {MAX_BODY_BYTES} bytes"})
                await send_with_id(
                    {
                        "type": "http.response.start",
                        "status": 413,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_id(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception:
            # Answered here rather than re-raised, so the connection stays usable and no trace leaves.
            log.exception("unexpected failure on %s", scope.get("path"))
            if started:
                return
            body = orjson.dumps(server_error_body(scope.get("path", "")))
            await send_with_id(
                {"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})


class RateLimiter:
    """A token bucket per key: ``rate`` requests a second on average, ``burst`` at once."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, key_id: int) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, stamp = self._buckets.get(key_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - stamp) * self.rate)
            if tokens >= 1:
                self._buckets[key_id] = (tokens - 1, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1 - tokens) / self.rate


# -- the context of one call ---------------------------------------------------------------------------------


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
        self.limiter = RateLimiter(settings.rate_limit, settings.rate_burst)

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

    def call(self, request: Request, version: str, province: str) -> Call:
        """Authenticates and authorises a call; ``product_id`` is optional on every operation."""
        key = self.accounts.authenticate(request.headers.get("x-api-key"))
        if key is None:
            raise forbidden()
        if version not in VERSIONS:
            raise bad_request(f"unknown API version {version!r}; use one of {', '.join(VERSIONS)}")
        if province not in PROVINCE_SEGMENTS:
            raise bad_request(f"unknown province {province!r}; use one of {', '.join(PROVINCE_SEGMENTS)}")
        params = QueryParams(request.query_params)
        product_id: str | None = None
        if version != "v1-sandbox":
            product_id = self.product(key, (params.text("product_id") or "").strip(), version, province)
        wait = self.limiter.retry_after(key.key_id)
        if wait > 0:
            raise ApiError(
                429,
                f"Too many requests: this key may make {self.settings.rate_limit:g} requests a second; "
                f"retry in {math.ceil(wait)} s",
                headers={"Retry-After": str(math.ceil(wait))},
            )
        return Call(
            request=request,
            params=params,
            version=version,
            province=None if province == "all" else province,
            key=key,
            store=self.sandbox if version == "v1-sandbox" else self.live,
            media=MediaLinks(str(request.base_url)),
            product_id=product_id,
        )


# -- answers -------------------------------------------------------------------------------------------------


def _etag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    candidates = [part.strip() for part in header.split(",")]
    return "*" in candidates or any(c.removeprefix("W/") == etag for c in candidates)


def answer(request: Request, payload: Any, cache_control: str = CACHE_CONTROL) -> Response:
    """A JSON answer with an ``ETag``; a matching ``If-None-Match`` gets 304 and no body."""
    body = orjson.dumps(payload)
    etag = _etag(body)
    headers = {"ETag": etag, "Cache-Control": cache_control}
    if request.method == "GET" and _etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def error_response(request: Request, error: ApiError) -> Response:
    request_id = request.scope.get("state", {}).get("request_id", "")
    return Response(
        orjson.dumps(error.payload(request_id)),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


def envelope(results: list[Any], total: int, page: int, per_page: int) -> dict[str, Any]:
    return {
        "results": results,
        "total": total,
        "page": page,
        "pages": pages(total, per_page),
        "perPage": per_page,
    }


def requested_shape(call: Call) -> ListingShaper:
    """How this call's listings are to be shaped: its version, ``retrieveAttributes`` and ``referrences``."""
    return ListingShaper(
        version=call.version,
        store=call.store,
        media=call.media,
        retrieve=call.params.names("retrieveAttributes"),
        references=call.params.names("referrences"),
    )


def facet_names(call: Call, names: list[str]) -> tuple[str, ...]:
    """The facets asked for, validated; ``*`` is every facetable attribute."""
    chosen: list[str] = []
    for name in names:
        if name == "*":
            chosen += DEFAULT_FACETS
        elif ATTRIBUTE_ALIASES.get(name, name) in LISTING_ATTRIBUTES:
            chosen.append(name)
        else:
            raise bad_request(
                f"facets: {name!r} is not a facetable attribute; use '*' or any of "
                f"{', '.join(sorted(LISTING_ATTRIBUTES))}"
            )
    return tuple(dict.fromkeys(chosen))


def facets_payload(facets: dict[str, list[tuple[str, int]]], as_list: bool = False) -> dict[str, Any]:
    if as_list:
        return {name: [{"value": v, "count": c} for v, c in values] for name, values in facets.items()}
    return {name: dict(values) for name, values in facets.items()}


# -- the application -----------------------------------------------------------------------------------------


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Queries are CPU-bound and each worker thread holds a SQLite connection and its cache: a few threads answer
    # as fast on two cores as forty, in a fraction of the memory.
    anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
    worker: DeliveryWorker | None = app.state.webhook_worker
    if worker is not None:
        worker.start()
    try:
        yield
    finally:
        if worker is not None:
            worker.stop()


API = "/{version}/{province}/"


def operation(
    app: FastAPI, name: str, method: str, *, route_name: str | None = None, openapi_extra: dict[str, Any] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers an operation under every version and province, with and without a trailing slash."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        app.add_api_route(API + name, fn, methods=[method], name=route_name or name, openapi_extra=openapi_extra)
        app.add_api_route(API + name + "/", fn, methods=[method], include_in_schema=False)
        return fn

    return register


Q = Query  # documented parameters are declared as text; the service reads and validates them itself
UNIT_FILTER_HELP = "(ours) filterQuery syntax over one floor plan: listings with a plan for which it all holds"


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
    app.state.service = service
    app.add_middleware(RequestIdMiddleware)

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, error: ApiError) -> Response:
        return error_response(request, error)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, error: StarletteHTTPException) -> Response:
        message = "Not Found" if error.status_code == 404 else str(error.detail)
        return error_response(request, ApiError(error.status_code, message))

    def route(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return operation(app, name, "GET")

    # -- listings ----------------------------------------------------------------------------------------

    def listing_search(call: Call, *, order: str = "relevance", highlight: bool = False) -> dict[str, Any]:
        p = call.params
        page, per_page = p.page()
        text = p.search() if order == "relevance" else None
        shaper = requested_shape(call)
        facets = facet_names(call, p.names("facets")) if order == "relevance" else ()
        units = unit_filter(p, call.version)
        hits: SearchHits = call.store.search_listings(
            ListingQuery(
                province=call.province,
                text=text,
                filter=p.filter_query(),
                unit_filter=units,
                circle=p.circle() if order == "relevance" else None,
                facets=facets,
                offset=page * per_page,
                limit=per_page,
                order="trending" if order == "trending" else "relevance",
            )
        )
        results = shaper.shape(
            hits.documents,
            hits.scores if text is not None else None,
            highlight=hits.text if highlight else False,
            searchable=SEARCHABLE_LISTING_FIELDS,
        )
        add_matched_floor_plans(results, hits.documents, units)
        body = envelope(results, hits.total, page, per_page)
        if p.text("facets") is not None:
            body["facets"] = facets_payload(hits.facets)
        return body

    @route("search_listings")
    def search_listings(
        request: Request,
        version: str,
        province: str,
        product_id: str | None = Q(None, description="The data product (optional: the key's own by default)"),
        search: str | None = Q(None, description="Words to match; the last also as a prefix"),
        page: str | None = Q(None, description="Zero-based page"),
        perPage: str | None = Q(None, description="Results per page, 0 to 1000 (default 20)"),
        facets: str | None = Q(None, description="Comma-separated facets, or *"),
        retrieveAttributes: str | None = Q(None, description="Comma-separated attributes to return"),
        highlightResults: str | None = Q(None, description="true to add _highlightResult"),
        nearby: str | None = Q(None, description="lat,lng"),
        radius: str | None = Q(None, description="Metres around nearby (default 10000)"),
        referrences: str | None = Q(None, description="Reference fields to expand"),
        filterQuery: str | None = Q(None, description="Algolia filter syntax"),
        unitFilter: str | None = Q(None, description=UNIT_FILTER_HELP),
    ) -> Response:
        call = service.call(request, version, province)
        return answer(request, listing_search(call, highlight=call.params.boolean("highlightResults")))

    @route("listing")
    def get_listing(
        request: Request,
        version: str,
        province: str,
        id: str | None = Q(None, description="The listing id"),
        retrieveAttributes: str | None = Q(None),
        referrences: str | None = Q(None),
    ) -> Response:
        call = service.call(request, version, province)
        listing_id = call.params.required("id")
        shaper = requested_shape(call)
        record = call.store.get_listings([listing_id], call.province).get(listing_id)
        if record is None:
            raise not_found(f"Listing {listing_id!r} not found")
        call.store.record_view(listing_id)
        return answer(request, shaper.shape([record])[0])

    @route("similar_listings")
    def similar_listings(
        request: Request,
        version: str,
        province: str,
        id: str | None = Q(None, description="The listing to find others like"),
        retrieveAttributes: str | None = Q(None),
        referrences: str | None = Q(None),
        minScore: str | None = Q(None, description="Lowest score to return, 0 to 1"),
        maxRecommendations: str | None = Q(None, description="At most this many (default 5, max 50)"),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        listing_id = p.required("id")
        min_score = p.number("minScore", 0.0, 0.0, 1.0)
        limit = p.integer("maxRecommendations", 5, 1, 50)
        shaper = requested_shape(call)
        target, candidates = call.store.similarity_features(
            listing_id, call.province, similar.CANDIDATE_RADIUS_M, similar.CANDIDATE_LIMIT
        )
        if target is None:
            raise not_found(f"Listing {listing_id!r} not found")
        ranked = similar.rank(target, candidates, min_score, limit)
        records = call.store.get_listings([i for i, _ in ranked], call.province)
        kept = [(records[i], s) for i, s in ranked if i in records]
        results = shaper.shape([r for r, _ in kept], [s for _, s in kept])
        return answer(request, envelope(results, len(results), 0, limit))

    @route("trending_listings")
    def trending_listings(
        request: Request,
        version: str,
        province: str,
        page: str | None = Q(None),
        perPage: str | None = Q(None),
        filterQuery: str | None = Q(None),
        unitFilter: str | None = Q(None, description=UNIT_FILTER_HELP),
        retrieveAttributes: str | None = Q(None),
        referrences: str | None = Q(None),
    ) -> Response:
        call = service.call(request, version, province)
        return answer(request, listing_search(call, order="trending"))

    @route("multiple_listings")
    def multiple_listings(
        request: Request,
        version: str,
        province: str,
        ids: str | None = Q(None, description=f"Comma-separated listing ids, at most {MAX_IDS}"),
        retrieveAttributes: str | None = Q(None),
        referrences: str | None = Q(None),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        wanted = p.names("ids")
        if not wanted:
            raise bad_request("ids is required")
        if len(wanted) > MAX_IDS:
            raise bad_request(f"ids names {len(wanted)} listings; at most {MAX_IDS} are allowed")
        shaper = requested_shape(call)
        found = call.store.get_listings(wanted, call.province)
        return answer(request, {"results": shaper.shape([found[i] for i in wanted if i in found])})

    @route("facet_counts")
    def facet_counts(
        request: Request,
        version: str,
        province: str,
        product_id: str | None = Q(None),
        facets: str | None = Q(None, description="Comma-separated facets, or * (required)"),
        format: str | None = Q(None, description="object (default) or list"),
        filterQuery: str | None = Q(None),
        search: str | None = Q(None),
        unitFilter: str | None = Q(None, description=UNIT_FILTER_HELP),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        names = p.names("facets")
        if not names:
            raise bad_request("facets is required: name the facets to count, or '*' for all")
        shape = p.choice("format", ("object", "list"), "object")
        hits = call.store.search_listings(
            ListingQuery(
                province=call.province,
                text=p.search(),
                filter=p.filter_query(),
                unit_filter=unit_filter(p, call.version),
                facets=facet_names(call, names),
                limit=0,
            )
        )
        return answer(request, facets_payload(hits.facets, as_list=shape == "list"))

    # -- profiles ----------------------------------------------------------------------------------------

    def collection_param(p: QueryParams) -> str | None:
        return p.choice("collection", PROFILE_COLLECTIONS)

    @route("search_profiles")
    def search_profiles(
        request: Request,
        version: str,
        province: str,
        product_id: str | None = Q(None),
        collection: str | None = Q(None, description=", ".join(COLLECTIONS) + ", or empty for all"),
        search: str | None = Q(None),
        page: str | None = Q(None),
        perPage: str | None = Q(None),
        facets: str | None = Q(None),
        filterQuery: str | None = Q(None),
        retrieveAttributes: str | None = Q(None),
        referrences: str | None = Q(None, description="listings"),
        sortByName: str | None = Q(None, description="asc or dsc"),
        highlightResults: str | None = Q(None),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        page_number, per_page = p.page()
        collection = collection_param(p)
        sort = p.choice("sortByName", ("asc", "dsc"))
        references = reference_fields(p.names("referrences"), {"listings": "listings"})
        retrieve = retrieved_names(p.names("retrieveAttributes"))
        facets = tuple(p.names("facets"))
        for name in facets:
            if not all(part.isidentifier() for part in name.split(".")):
                raise bad_request(f"facets: {name!r} is not an attribute name")
        text = p.search()
        highlight = p.boolean("highlightResults")
        hits = call.store.search_profiles(
            ProfileQuery(
                province=call.province,
                collection=collection,
                text=text,
                filter=p.filter_query(),
                facets=facets,
                offset=page_number * per_page,
                limit=per_page,
                sort_by_name=sort,  # type: ignore[arg-type]
            )
        )
        results = []
        for record, score in zip(hits.documents, hits.scores, strict=True):
            out = profile_search_object(record, call.media)
            if retrieve:
                out = {k: v for k, v in out.items() if k == "objectID" or k in retrieve}
            if text is not None and score is not None:
                out["_score"] = score
            if highlight:
                out["_highlightResult"] = highlight_record(out, SEARCHABLE_PROFILE_FIELDS, hits.text)
            results.append(out)
        if references:
            expand_profile_listings(call, results)
        body = envelope(results, hits.total, page_number, per_page)
        if p.text("facets") is not None:
            body["facets"] = facets_payload(hits.facets)
        return answer(request, body)

    def expand_profile_listings(call: Call, records: list[dict[str, Any]]) -> None:
        ids = {
            path.split("/", 1)[1]
            for record in records
            for path in record.get("listings") or ()
            if isinstance(path, str) and path.startswith("Listings/")
        }
        shaper = ListingShaper(version=call.version, store=call.store, media=call.media)
        found = call.store.get_listings(sorted(ids), call.province)
        shaped = dict(zip(found, shaper.shape(list(found.values())), strict=True))
        for record in records:
            if isinstance(record.get("listings"), list):
                record["listings"] = [
                    shaped.get(path.split("/", 1)[1], path) if isinstance(path, str) and "/" in path else path
                    for path in record["listings"]
                ]

    @route("profile")
    def get_profile(
        request: Request,
        version: str,
        province: str,
        product_id: str | None = Q(None),
        id: str | None = Q(None, description="The profile id"),
        collection: str | None = Q(None),
        referrences: str | None = Q(None, description="listings"),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        profile_id = (p.text("id") or "").strip()
        if not profile_id:
            raise blank_profile_id()
        collection_name = collection_param(p)
        references = reference_fields(p.names("referrences"), {"listings": "listings"})
        record = call.store.find_profile(profile_id, collection_name, call.province)
        if record is None:
            where = f" in {collection_name}" if collection_name else ""
            raise not_found(f"Profile {profile_id!r} not found{where}")
        out = profile_object(record, call.media)
        if references:
            expand_profile_listings(call, [out])
        return answer(request, out)

    @route("profiles_of_listing")
    def get_profiles_of_listing(
        request: Request,
        version: str,
        province: str,
        product_id: str | None = Q(None),
        id: str | None = Q(None, description="The listing id"),
        referrences: str | None = Q(None),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        listing_id = p.required("id")
        allowed = {k: v for k, v in LISTING_REFERENCE_FIELDS.items() if v in PROFILES_OF_LISTING_FIELDS}
        references = reference_fields(p.names("referrences"), allowed, strict=False)
        record = call.store.get_listings([listing_id], call.province).get(listing_id)
        if record is None:
            raise not_found(f"Listing {listing_id!r} not found")
        out = profiles_of_listing(record)
        expand_references([out], references, call.store, call.media)
        return answer(request, out)

    add_facet_value_routes(app, service)

    # -- around the API ----------------------------------------------------------------------------------

    @app.get("/media/{path:path}", include_in_schema=False)
    def media(path: str) -> Response:
        svg = placeholder_svg(path)
        if svg is None:
            raise ApiError(404, "Not Found")
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/healthz", include_in_schema=False)
    def health() -> Response:
        return Response(orjson.dumps({"status": "ok", **live.counts()}), media_type="application/json")

    @app.get("/", include_in_schema=False)
    def index() -> RedirectResponse:
        return RedirectResponse("/docs")

    app.state.webhook_worker = None
    if webhooks is not None:
        policy = TargetPolicy(allow_http=settings.dev, allow_loopback=settings.dev)
        worker = None
        if settings.webhook_worker:
            schedule = RetrySchedule(tuple(settings.webhook_retry_schedule), settings.webhook_first_delay)
            worker = DeliveryWorker(webhooks, policy, schedule)
            app.state.webhook_worker = worker
        add_webhook_routes(app, service, webhooks, policy, worker)
    return app
