"""The typed client of the listings API: one method per operation, models back, errors per status.

It speaks what the production service expects (docs/api.md) (comma-joined lists, ``referrences`` spelled
so, the key in ``x-api-key``), so the same client reads this project's service and
``https://api.getbuildify.com`` alike::

    from precon import Client
    from precon.filters import any_of, between, and_

    with Client() as client:  # PRECON_API_URL, PRECON_API_KEY, PRECON_PRODUCT_ID from the environment
        page = client.search_listings("king west", filter=and_(any_of("type", ["Condo"]), between("minBeds", 2)))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import Retrying, retry_if_exception, stop_after_attempt

from precon.client.cache import ResponseCache
from precon.client.errors import (
    PreconError,
    error_for_response,
    error_for_transport,
)
from precon.client.market_models import MarketStats
from precon.client.metrics import ServiceOperations
from precon.client.models import (
    FacetCounts,
    FacetCountsResponse,
    FacetValueHits,
    HistoryEntry,
    HistoryPage,
    Listing,
    ListingPage,
    Page,
    Profile,
    ProfilePage,
    ProfilesOfListing,
    ResponseMeta,
)
from precon.client.query_values import Filter, csv_value, filter_value, flag_value, nearby_value
from precon.client.retries import IDEMPOTENCY_HEADER, RETRY_ATTEMPTS, may_retry, wait_before_retry
from precon.client.settings import PRODUCTION_URL, ClientSettings
from precon.client.webhooks import WebhookOperations

USER_AGENT = "precon-explorer/0.1"

ModelT = TypeVar("ModelT", bound=BaseModel)


class Client(WebhookOperations, ServiceOperations):
    """A connection to one deployment of the listings API, as one key, through the cache."""

    def __init__(
        self,
        api_url: str | None = None,
        api_key: str | None = None,
        product_id: str | None = None,
        *,
        base_url: str | None = None,
        version: str | None = None,
        province: str | None = None,
        cache: ResponseCache | Literal[False] | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float | None = None,
        max_retries: int = RETRY_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``base_url`` (or, as aliases, the first argument or ``api_url``) is the service address; each setting
        left out (or empty) comes from its ``PRECON_*`` environment variable. ``product_id`` may be left out: the
        service then reads through the key's own product, and no ``product_id`` is sent."""
        if base_url and api_url and base_url.rstrip("/") != api_url.rstrip("/"):
            raise ValueError(f"base_url {base_url!r} and api_url {api_url!r} name different services; give one")
        settings = ClientSettings()
        self.api_url = (base_url or api_url or settings.api_url or PRODUCTION_URL).rstrip("/")
        key = api_key if api_key is not None else (settings.api_key.get_secret_value() if settings.api_key else None)
        self.product_id = (product_id or "").strip() or settings.product_id
        self.version = version or settings.version
        self.province = province or settings.province
        if cache is None:
            cache = ResponseCache(settings.cache_url)
        self.cache: ResponseCache | None = None if cache is False else cache
        inner = transport or httpx.HTTPTransport()
        if self.cache is not None:
            inner = self.cache.transport(inner, credential=key)
        headers = {"user-agent": USER_AGENT, "accept": "application/json"}
        if key:
            headers["x-api-key"] = key
        self._http = httpx.Client(
            base_url=self.api_url,
            transport=inner,
            headers=headers,
            timeout=timeout or settings.timeout,
            follow_redirects=False,
        )
        self.max_retries = max_retries
        self._sleep = sleep

    # -- plumbing ------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def _path(self, operation: str, version: str | None, province: str | None) -> str:
        return f"/{version or self.version}/{province or self.province}/{operation}"

    def _send_once(
        self, method: str, path: str, params: Mapping[str, Any], body: Any, headers: Mapping[str, str]
    ) -> tuple[Any, ResponseMeta]:
        started = time.perf_counter()
        try:
            response = self._http.request(
                method, path, params={k: v for k, v in params.items() if v is not None}, json=body, headers=headers
            )
        except httpx.TransportError as error:
            raise error_for_transport(error, self.api_url) from error
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code >= 400:
            raise error_for_response(response)
        meta = ResponseMeta(
            request_id=response.headers.get("x-request-id"),
            status=response.status_code,
            elapsed_ms=round(elapsed, 2),
            from_cache=bool(response.extensions.get("from_cache")),
        )
        try:
            return response.json(), meta
        except ValueError as error:
            raise PreconError(
                f"the service answered {path} with something that is not JSON",
                status=response.status_code,
                request_id=meta.request_id,
            ) from error

    def call(
        self,
        method: str,
        operation: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        *,
        version: str | None = None,
        province: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[Any, ResponseMeta]:
        """One operation as raw JSON, with the retry policy: for callers that need the records untouched.
        ``headers`` go with every attempt; one of them an ``Idempotency-Key`` lets a POST be sent again as a GET
        would be."""
        path = self._path(operation, version, province)
        headers = dict(headers or {})
        keyed = any(name.lower() == IDEMPOTENCY_HEADER.lower() for name in headers)
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_before_retry,
            retry=retry_if_exception(may_retry(method, idempotency_key=keyed)),
            sleep=self._sleep,
            reraise=True,
        )
        result: tuple[Any, ResponseMeta] = retrying(self._send_once, method, path, params or {}, body, headers)
        return result

    def _get(self, operation: str, params: Mapping[str, Any], model: type[ModelT], **scope: str | None) -> ModelT:
        data, meta = self.call("GET", operation, params, **scope)
        return self._parse(model, data, meta)

    @property
    def base_url(self) -> str:
        """The service address (``api_url`` is the same, under its older name)."""
        return self.api_url

    def _product(self, product_id: str | None) -> str | None:
        return product_id or self.product_id

    # -- listings ------------------------------------------------------------------------------------------

    def search_listings(
        self,
        search: str | None = None,
        *,
        page: int = 0,
        per_page: int = 20,
        facets: str | Iterable[str] | None = None,
        retrieve_attributes: str | Iterable[str] | None = None,
        highlight: bool | None = None,
        nearby: tuple[float, float] | str | None = None,
        radius: float | None = None,
        references: str | Iterable[str] | None = None,
        filter: Filter = None,
        unit_filter: Filter = None,
        product_id: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> ListingPage:
        """A page of listings; ``unit_filter`` (this project's service) keeps those with a floor plan meeting it."""
        params = {
            "product_id": self._product(product_id),
            "search": search or None,
            "page": page,
            "perPage": per_page,
            "facets": csv_value(facets),
            "retrieveAttributes": csv_value(retrieve_attributes),
            "highlightResults": flag_value(highlight),
            "nearby": nearby_value(nearby),
            "radius": None if radius is None else round(radius),
            "referrences": csv_value(references),
            "filterQuery": filter_value(filter),
            "unitFilter": filter_value(unit_filter),
        }
        return self._get("search_listings", params, ListingPage, version=version, province=province)

    def get_listing(
        self,
        id: str,
        *,
        retrieve_attributes: str | Iterable[str] | None = None,
        references: str | Iterable[str] | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> Listing:
        params = {"id": id, "retrieveAttributes": csv_value(retrieve_attributes), "referrences": csv_value(references)}
        return self._get("listing", params, Listing, version=version, province=province)

    def similar_listings(
        self,
        id: str,
        *,
        retrieve_attributes: str | Iterable[str] | None = None,
        references: str | Iterable[str] | None = None,
        min_score: float | None = None,
        max_recommendations: int | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> ListingPage:
        params = {
            "id": id,
            "retrieveAttributes": csv_value(retrieve_attributes),
            "referrences": csv_value(references),
            "minScore": min_score,
            "maxRecommendations": max_recommendations,
        }
        return self._get("similar_listings", params, ListingPage, version=version, province=province)

    def trending_listings(
        self,
        *,
        page: int = 0,
        per_page: int = 20,
        filter: Filter = None,
        unit_filter: Filter = None,
        retrieve_attributes: str | Iterable[str] | None = None,
        references: str | Iterable[str] | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> ListingPage:
        params = {
            "page": page,
            "perPage": per_page,
            "filterQuery": filter_value(filter),
            "unitFilter": filter_value(unit_filter),
            "retrieveAttributes": csv_value(retrieve_attributes),
            "referrences": csv_value(references),
        }
        return self._get("trending_listings", params, ListingPage, version=version, province=province)

    def multiple_listings(
        self,
        ids: Sequence[str],
        *,
        retrieve_attributes: str | Iterable[str] | None = None,
        references: str | Iterable[str] | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> list[Listing]:
        params = {
            "ids": csv_value(ids),
            "retrieveAttributes": csv_value(retrieve_attributes),
            "referrences": csv_value(references),
        }
        page = self._get("multiple_listings", params, ListingPage, version=version, province=province)
        return page.results

    def facet_counts(
        self,
        facets: str | Iterable[str],
        *,
        filter: Filter = None,
        search: str | None = None,
        format: Literal["object", "list"] | None = None,
        unit_filter: Filter = None,
        product_id: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> FacetCounts:
        params = {
            "product_id": self._product(product_id),
            "facets": csv_value(facets),
            "format": format,
            "filterQuery": filter_value(filter),
            "search": search or None,
            "unitFilter": filter_value(unit_filter),
        }
        return self._get("facet_counts", params, FacetCountsResponse, version=version, province=province).as_counts()

    def search_facet_values(
        self,
        facet: str,
        query: str | None = None,
        *,
        filter: Filter = None,
        search: str | None = None,
        unit_filter: Filter = None,
        max_hits: int = 10,
        product_id: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> FacetValueHits:
        """The values of one facet whose words start with ``query``'s words, with their counts over the listings
        the other parameters select, most frequent first (this project's service only)."""
        params = {
            "product_id": self._product(product_id),
            "facet": facet,
            "facetQuery": query or None,
            "filterQuery": filter_value(filter),
            "search": search or None,
            "unitFilter": filter_value(unit_filter),
            "maxFacetHits": max_hits,
        }
        return self._get("search_facet_values", params, FacetValueHits, version=version, province=province)

    # -- profiles ------------------------------------------------------------------------------------------

    def search_profiles(
        self,
        search: str | None = None,
        *,
        collection: str | None = None,
        page: int = 0,
        per_page: int = 20,
        facets: str | Iterable[str] | None = None,
        filter: Filter = None,
        retrieve_attributes: str | Iterable[str] | None = None,
        references: str | Iterable[str] | None = None,
        sort_by_name: Literal["asc", "dsc"] | None = None,
        sort_by_listings: Literal["desc", "asc"] | None = None,
        product_id: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> ProfilePage:
        """``sort_by_listings`` (this project's service only): most (``desc``) or fewest listings first."""
        params = {
            "product_id": self._product(product_id),
            "collection": collection or None,
            "search": search or None,
            "page": page,
            "perPage": per_page,
            "facets": csv_value(facets),
            "filterQuery": filter_value(filter),
            "retrieveAttributes": csv_value(retrieve_attributes),
            "referrences": csv_value(references),
            "sortByName": sort_by_name,
            "sortByListings": sort_by_listings,
        }
        return self._get("search_profiles", params, ProfilePage, version=version, province=province)

    def get_profile(
        self,
        id: str,
        *,
        collection: str | None = None,
        references: str | Iterable[str] | None = None,
        product_id: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> Profile:
        params = {
            "product_id": self._product(product_id),
            "id": id,
            "collection": collection or None,
            "referrences": csv_value(references),
        }
        return self._get("profile", params, Profile, version=version, province=province)

    def profiles_of_listing(
        self,
        id: str,
        *,
        references: str | Iterable[str] | None = None,
        product_id: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> ProfilesOfListing:
        params = {"product_id": self._product(product_id), "id": id, "referrences": csv_value(references)}
        return self._get("profiles_of_listing", params, ProfilesOfListing, version=version, province=province)

    def listing_history(
        self,
        id: str,
        *,
        fields: str | Iterable[str] | None = None,
        scope: str | None = None,
        page: int | None = None,
        per_page: int | None = None,
        **scoped: str | None,
    ) -> HistoryPage:
        """(ours) What changed in a listing, newest first; ``scoped``: ``product_id``, ``version``, ``province``."""
        params = {
            "product_id": self._product(scoped.pop("product_id", None)),
            "id": id,
            "fields": csv_value(fields),
            "scope": scope,
            "page": page,
            "perPage": per_page,
        }
        return self._get("listing_history", params, HistoryPage, **scoped)

    def changes(
        self,
        *,
        since: str | float | None = None,
        until: str | float | None = None,
        fields: str | Iterable[str] | None = None,
        scope: str | None = None,
        change: str | None = None,
        filter: Filter = None,
        unit_filter: Filter = None,
        search: str | None = None,
        page: int | None = None,
        per_page: int | None = None,
        **scoped: str | None,
    ) -> HistoryPage:
        """(ours) What changed in the catalogue, newest first, in the listings that match the filters now;
        ``since`` and ``until`` as ISO timestamps or Unix seconds; ``scoped``: ``product_id``, ``version``,
        ``province``."""
        params = {
            "product_id": self._product(scoped.pop("product_id", None)),
            "since": None if since is None else str(since),
            "until": None if until is None else str(until),
            "fields": csv_value(fields),
            "scope": scope,
            "change": change,
            "filterQuery": filter_value(filter),
            "unitFilter": filter_value(unit_filter),
            "search": search,
            "page": page,
            "perPage": per_page,
        }
        return self._get("changes", params, HistoryPage, **scoped)

    def market_stats(
        self,
        *,
        filter: Filter = None,
        unit_filter: Filter = None,
        search: str | None = None,
        group_by: str | None = None,
        interval: Literal["month", "quarter"] = "month",
        since: str | float | None = None,
        until: str | float | None = None,
        **scoped: str | None,
    ) -> MarketStats:
        """(ours) The market's figures per ``interval`` from the one holding ``since`` to the one holding ``until``
        (ISO timestamps or Unix seconds), over the listings that ``filter`` and ``search`` match now, a series per
        value of ``group_by``; ``unit_filter`` chooses their units, each in its state at the moment counted
        (docs/api.md, "Market statistics"); ``scoped``: ``product_id``, ``version``, ``province`` (and
        ``group_limit``)."""
        limit = scoped.pop("group_limit", None)
        params = {
            "product_id": self._product(scoped.pop("product_id", None)),
            "filterQuery": filter_value(filter),
            "unitFilter": filter_value(unit_filter),
            "search": search,
            "groupBy": group_by,
            "groupLimit": limit,
            "interval": interval,
            "since": None if since is None else str(since),
            "until": None if until is None else str(until),
        }
        return self._get("market_stats", params, MarketStats, **scoped)

    def iter_changes(self, *, per_page: int = 1000, **asked: Any) -> Iterator[HistoryEntry]:
        """Every entry :meth:`changes` answers, page by page (newest first; ``asked`` as :meth:`changes` takes).

        Without an ``until``, it is held at the newest entry of the first page: entries written while it pages are
        left out (the next call's first page has them), where they would push the entries already read onto the
        next page and answer them twice."""
        page = 0
        while True:
            answer = self.changes(page=page, per_page=per_page, **asked)
            yield from answer.results
            if page == 0 and asked.get("until") is None and answer.results and answer.results[0].at is not None:
                asked = {**asked, "until": answer.results[0].at.isoformat(timespec="milliseconds")}
            page += 1
            if page >= answer.pages or not answer.results:
                return

    # -- paging --------------------------------------------------------------------------------------------

    def iter_listings(
        self,
        search: str | None = None,
        *,
        per_page: int = 250,
        progress: Callable[[int, int], None] | None = None,
        start_page: int = 0,
        **params: Any,
    ) -> Iterator[Listing]:
        """Every listing a search matches, page after page; ``progress(done, total)`` after each page."""
        yield from self._iterate(
            lambda page: self.search_listings(search, page=page, per_page=per_page, **params),
            progress,
            start_page,
            per_page,
        )

    def iter_profiles(
        self,
        search: str | None = None,
        *,
        per_page: int = 250,
        progress: Callable[[int, int], None] | None = None,
        start_page: int = 0,
        **params: Any,
    ) -> Iterator[Profile]:
        """Every profile a search matches, page after page; ``progress(done, total)`` after each page."""
        params.setdefault("sort_by_name", "asc")
        yield from self._iterate(
            lambda page: self.search_profiles(search, page=page, per_page=per_page, **params),
            progress,
            start_page,
            per_page,
        )

    @staticmethod
    def _iterate(
        fetch: Callable[[int], Page[Any]],
        progress: Callable[[int, int], None] | None,
        start_page: int,
        per_page: int,
    ) -> Iterator[Any]:
        page = start_page
        done = start_page * per_page
        while True:
            result = fetch(page)
            yield from result.results
            done += len(result.results)
            if progress is not None:
                progress(min(done, result.total), result.total)
            page += 1
            if not result.results or page >= result.pages:
                return
