"""What each operation takes, and the store query a listing or profile request becomes.

A family of operations (listings, profiles, webhooks) has one model that declares every parameter its operations
may take, with the types, bounds and help of :mod:`.parameters`. Each operation accepts some of them, named in
order by :meth:`Family.accepting`: that subset is what the OpenAPI document lists for it, what a request is
validated against (once, by :mod:`.pipeline`), and the family's typed object is what the operation reads.
:func:`listing_query` and :func:`profile_query` turn a request of their family into the store's query.

To add a query parameter, all here: declare it on its family, name it in the operations that take it, read it in
the family's query function; then docs/api.md (and the store's query type and the store, for a new question).
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any, ClassVar, Literal, cast

from pydantic import BaseModel, ConfigDict, create_model

from precon import filters
from precon.filters import Expr
from precon.schema import HISTORY_FIELDS, LISTING_FIELDS
from precon.service.api.parameters import (
    DEFAULT_PER_PAGE,
    DEFAULT_RADIUS_M,
    EXPANDABLE_REFERENCES,
    MAX_PER_PAGE_EXPANDED,
    Change,
    CollectionParam,
    DeliveriesOf,
    Facet,
    FacetQuery,
    Facets,
    FilterQuery,
    Format,
    HighlightResults,
    HistoryFields,
    Ids,
    ListingId,
    MaxFacetHits,
    MaxRecommendations,
    MinScore,
    Nearby,
    Page,
    PerPage,
    ProductId,
    ProfileId,
    Radius,
    Referrences,
    RequiredFacets,
    RetrieveAttributes,
    Scope,
    Search,
    Since,
    SortByListings,
    SortByName,
    SubscriptionId,
    UnitFilter,
    Until,
)
from precon.service.api.scope import listing_facets, listing_filter, listing_text, names, trim_profile_listings
from precon.service.api.shaping import ListingShaper
from precon.service.api.units import unit_filter
from precon.service.api.visibility import is_visible
from precon.service.errors import bad_request
from precon.service.search.text import TextQuery
from precon.service.stores.history import iso_time
from precon.service.stores.types import MAX_FACET_VALUES, GeoCircle, HistoryQuery, ListingQuery, ProfileQuery
from precon.service.webhooks.model import Selection

if typing.TYPE_CHECKING:
    from precon.service.api.calls import Call


class Family(BaseModel):
    """What every family's parameters share. A family's class declares its parameters; the class it derives from
    first (fieldless, as this one is) reads them. An operation's model (:meth:`accepting`) derives from that reader too,
    with the family's other parameters at their defaults as class attributes: what an operation reads is its own
    validated object, with every attribute and method of its family."""

    model_config = ConfigDict(frozen=True)

    OPERATION_SUFFIX: ClassVar[str] = "Parameters"

    @classmethod
    def accepting(cls, operation: str, *fields: str, **required: Any) -> type[BaseModel]:
        """The model of one operation's query: these of the family's parameters, in this order (the OpenAPI
        document's). A family parameter whose default is ``""`` is required wherever it is taken; ``required``
        declares another parameter as this operation requires it (``facets`` for ``facet_counts``)."""
        hints = typing.get_type_hints(cls, include_extras=True)
        definitions: dict[str, Any] = {}
        for name in fields:
            if name in required:
                definitions[name] = (required[name], ...)
            else:
                definitions[name] = (hints[name], ... if cls.model_fields[name].default == "" else None)
        model_name = "".join(part[:1].upper() + part[1:] for part in operation.split("_")) + cls.OPERATION_SUFFIX
        model = create_model(model_name, __base__=cls.__bases__[0], **definitions)
        for name, field in cls.model_fields.items():
            if name not in definitions:
                setattr(model, name, field.default)
        return model

    def page_and_size(self) -> tuple[int, int]:
        """The page and its size. With objects expanded, a size over 100 is reduced to 100 (the answer's
        ``perPage`` and ``pages`` say so): real clients ask for 1000 with ``referrences`` and page on."""
        page = cast("int | None", getattr(self, "page", None)) or 0
        per_page = cast("int | None", getattr(self, "perPage", None))
        size = DEFAULT_PER_PAGE if per_page is None else per_page
        if any(name in EXPANDABLE_REFERENCES for name in names(getattr(self, "referrences", None))):
            size = min(size, MAX_PER_PAGE_EXPANDED)
        return page, size


class Searching(Family):
    """The parameters the listing and profile families declare alike."""

    product_id: ProductId = None
    search: Search = None
    page: Page = None
    perPage: PerPage = None
    facets: Facets = None
    filterQuery: FilterQuery = None
    retrieveAttributes: RetrieveAttributes = None
    referrences: Referrences = None
    highlightResults: HighlightResults = None


class ListingReader(Family):
    """Reads a listing request (see :class:`ListingRequest`)."""

    # The readers declare nothing: a field an operation's model declares again would move to its base's place.

    def circle(self) -> GeoCircle | None:
        """``nearby`` and ``radius``: the circle a search is limited to and ordered from."""
        raw = (cast("str | None", getattr(self, "nearby", None)) or "").strip()
        radius = cast("float | None", getattr(self, "radius", None))
        if not raw:
            if radius is not None:
                raise bad_request("radius needs nearby: give the centre as nearby=latitude,longitude")
            return None
        lat, lng = (float(part) for part in raw.split(","))  # the declared pattern holds: two decimals
        if not (-90 <= lat <= 90 and -180 <= lng <= 180):
            raise bad_request(
                f"nearby is out of range: latitude must be in [-90, 90] and longitude in [-180, 180], got {raw!r}"
            )
        return GeoCircle(lat, lng, DEFAULT_RADIUS_M if radius is None else radius)


class ListingRequest(ListingReader, Searching):
    """Every parameter of the listing operations (searches, look-ups, facets)."""

    id: ListingId = ""
    ids: Ids = ""
    facet: Facet = ""
    nearby: Nearby = None
    radius: Radius = None
    unitFilter: UnitFilter = None
    minScore: MinScore = None
    maxRecommendations: MaxRecommendations = None
    format: Format = None
    facetQuery: FacetQuery = None
    maxFacetHits: MaxFacetHits = None
    fields: HistoryFields = None
    scope: Scope = None
    since: Since = None
    until: Until = None
    change: Change = None


class ProfileReader(Family):
    """Reads a profile request (see :class:`ProfileRequest`)."""

    def collection_name(self) -> str | None:
        collection = cast("Enum | None", getattr(self, "collection", None))
        return collection.value if collection is not None else None


class ProfileRequest(ProfileReader, Searching):
    """Every parameter of the profile operations."""

    id: ProfileId = ""
    collection: CollectionParam = None
    sortByName: SortByName = None
    sortByListings: SortByListings = None


class WebhookRequest(Family):
    """Every query parameter of the webhook operations (their bodies are their own)."""

    product_id: ProductId = None
    id: SubscriptionId = ""
    subscription: DeliveriesOf = None
    page: Page = None
    perPage: PerPage = None


# Each operation's parameters: these of its family's, in the order its document lists them.
SEARCH_LISTINGS = ListingRequest.accepting(
    "search_listings",
    *("product_id", "search", "page", "perPage", "facets", "retrieveAttributes", "highlightResults"),
    *("nearby", "radius", "referrences", "filterQuery", "unitFilter"),
)
LISTING = ListingRequest.accepting("listing", "id", "product_id", "retrieveAttributes", "referrences")
SIMILAR_LISTINGS = ListingRequest.accepting(
    "similar_listings", "id", "product_id", "retrieveAttributes", "referrences", "minScore", "maxRecommendations"
)
TRENDING_LISTINGS = ListingRequest.accepting(
    "trending_listings",
    *("product_id", "page", "perPage", "filterQuery", "unitFilter", "retrieveAttributes", "referrences"),
)
MULTIPLE_LISTINGS = ListingRequest.accepting(
    "multiple_listings", "ids", "product_id", "retrieveAttributes", "referrences"
)
FACET_COUNTS = ListingRequest.accepting(
    "facet_counts", "facets", "product_id", "format", "filterQuery", "search", "unitFilter", facets=RequiredFacets
)
SEARCH_FACET_VALUES = ListingRequest.accepting(
    "search_facet_values",
    *("facet", "product_id", "facetQuery", "search", "filterQuery", "unitFilter", "maxFacetHits"),
)
SEARCH_PROFILES = ProfileRequest.accepting(
    "search_profiles",
    *("product_id", "collection", "search", "page", "perPage", "facets", "filterQuery", "retrieveAttributes"),
    *("referrences", "sortByName", "sortByListings", "highlightResults"),
)
PROFILE = ProfileRequest.accepting("profile", "id", "product_id", "collection", "referrences")
PROFILES_OF_LISTING = ProfileRequest.accepting("profiles_of_listing", "id", "product_id", "referrences", id=ListingId)
LISTING_HISTORY = ListingRequest.accepting("listing_history", "id", "product_id", "page", "perPage", "fields", "scope")
CHANGES = ListingRequest.accepting(
    "changes",
    *("product_id", "since", "until", "fields", "scope", "change", "filterQuery", "unitFilter", "search"),
    *("page", "perPage"),
)
WEBHOOKS = WebhookRequest.accepting("webhooks", "product_id")
DELETE_WEBHOOK = WebhookRequest.accepting("delete_webhook", "product_id", "id")
WEBHOOK_DELIVERIES = WebhookRequest.accepting("webhook_deliveries", "product_id", "subscription", "page", "perPage")


def listing_query(
    call: Call[ListingRequest],
    *,
    order: Literal["relevance", "trending"] = "relevance",
    facets: tuple[str, ...] | None = None,
    limit: int | None = None,
    all_facet_values: bool = False,
    whole: bool = False,
    fields: frozenset[str] | None = None,
) -> ListingQuery:
    """The store query of a listing request, each parameter read once and checked against what the call's version
    may name (the order of the checks is the order of the 400s a request with several faults gets).
    ``facets``, ``limit`` and ``all_facet_values`` are the facet operations' (which count, and return no
    listings); ``whole`` asks for the stored documents' bytes, when the answer shows them whole; ``fields`` for
    only the attributes it shows (:attr:`ListingQuery.fields`)."""
    asked = call.params
    page, per_page = asked.page_and_size()
    relevance = order == "relevance"
    text = listing_text(call.version, asked.search) if relevance else None
    if facets is None:
        facets = listing_facets(call.version, names(asked.facets)) if relevance else ()
    units = unit_filter(asked.unitFilter, call.version)
    return ListingQuery(
        province=call.province,
        text=text,
        filter=listing_filter(call.version, asked.filterQuery),
        unit_filter=units,
        circle=asked.circle() if relevance and limit is None else None,
        facets=facets,
        offset=page * per_page if limit is None else 0,
        limit=per_page if limit is None else limit,
        order=order,
        max_facet_values=None if all_facet_values else MAX_FACET_VALUES,
        raw=whole,
        fields=fields,
    )


def profile_query(call: Call[ProfileRequest]) -> ProfileQuery:
    """The store query of a profile search."""
    asked = call.params
    page, per_page = asked.page_and_size()
    facets = tuple(names(asked.facets))
    for name in facets:
        if not all(part.isidentifier() for part in name.split(".")):
            raise bad_request(f"facets: {name!r} is not an attribute name")
    try:
        expression: Expr | None = filters.parse(asked.filterQuery)
    except filters.FilterSyntaxError as error:
        raise bad_request(str(error)) from None
    return ProfileQuery(
        province=call.province,
        collection=asked.collection_name(),
        text=TextQuery.parse(asked.search or ""),
        filter=expression,
        facets=facets,
        offset=page * per_page,
        limit=per_page,
        sort_by_name=asked.sortByName.value if asked.sortByName else None,
        sort_by_listings=asked.sortByListings.value if asked.sortByListings else None,
    )


def listing_shaper(call: Call[ListingRequest]) -> ListingShaper:
    """How this call's listings are shaped (its version, ``retrieveAttributes`` and ``referrences``), with
    ``retrieveAttributes`` scoped (by the shaper, through :func:`visible_attribute`) and the profiles that
    references expand trimmed to the call's listings."""

    shaper = requested_shape(call)
    shaper.trim_profiles = lambda records: trim_profile_listings(call, records)
    return shaper


def requested_shape(call: Call[ListingRequest]) -> ListingShaper:
    """How this call's listings are to be shaped: its version, ``retrieveAttributes`` and ``referrences``."""
    return ListingShaper(
        version=call.version,
        store=call.store,
        media=call.media,
        retrieve=names(call.params.retrieveAttributes),
        references=names(call.params.referrences),
    )


def history_query(call: Call[ListingRequest], listing_id: str | None) -> HistoryQuery:
    """The store's query for a page of history entries: ``fields`` checked (a 400 names an unknown one), and under
    a version that shows no floor plans (``v1-lite``) only the listing's own entries, of the fields it shows."""
    asked = call.params
    page, per_page = asked.page_and_size()
    fields = tuple(names(asked.fields))
    known_fields(fields)
    scopes: tuple[str, ...] = (asked.scope.value,) if asked.scope is not None else ()
    if not is_visible(call.version, "floorPlans"):
        if scopes and scopes != ("listing",):
            raise bad_request(f"scope: {call.version} has no floor plans; use scope=listing")
        scopes = ("listing",)
        shown_fields(call.version, fields)
        if not fields:  # every field it shows, and the listing's creation and deletion
            shown = tuple(name for name in LISTING_FIELDS if is_visible(call.version, name))
            return HistoryQuery(listing_id, scopes, shown, page * per_page, per_page, records=True)
    return HistoryQuery(listing_id, scopes, fields, page * per_page, per_page)


def known_fields(fields: Sequence[str]) -> None:
    """A 400 naming the first of ``fields`` that is no field of a listing, a floor plan or a unit."""
    unknown = [name for name in fields if name not in HISTORY_FIELDS]
    if unknown:
        raise bad_request(f"fields: {unknown[0]!r} is not a field of a listing, a floor plan or a unit")


def shown_fields(version: str, fields: Sequence[str]) -> None:
    """A 400 naming the first of ``fields`` that ``version`` does not show (under ``v1-lite``, a plan's or a unit's
    fields too: it shows no floor plans)."""
    hidden = [name for name in fields if not is_visible(version, name)]
    if hidden:
        raise bad_request(f"fields: {hidden[0]!r} is not an attribute of a {version} listing")


def webhook_selection(
    version: str, event: str, filter_query: str | None, units: str | None, fields: Sequence[str] | None
) -> Selection:
    """What a new subscription hears of (its filters checked and scoped as a search's under ``version``, its
    ``fields`` as ``changes`` checks them): a 400 names the parameter and what is wrong."""
    listing_filter(version, filter_query)
    unit_filter(units, version)
    chosen = None
    if fields is not None:
        chosen = tuple(dict.fromkeys(fields))
        if not chosen:
            raise bad_request("fields: name at least one field, or leave fields out to hear of every change")
        if len(fields) > len(HISTORY_FIELDS):
            raise bad_request(
                f"fields: {len(fields)} names given; at most {len(HISTORY_FIELDS)} (the fields of a listing, a "
                "floor plan and a unit), each once"
            )
        known_fields(chosen)
        shown_fields(version, chosen)
    given = [text if (text or "").strip() else None for text in (filter_query, units)]
    selection = Selection(given[0], given[1], chosen)
    if selection and not event.startswith("listing."):
        raise bad_request(f"filterQuery, unitFilter and fields select listings: {event} takes none of them")
    if event == "listing.matched" and not selection.filtered:
        raise bad_request("listing.matched needs filterQuery or unitFilter: it fires when a listing comes to match")
    return selection


def changes_query(call: Call[ListingRequest]) -> tuple[HistoryQuery, ListingQuery | None]:
    """The store's query for the catalogue's changes: :func:`history_query`'s, over the listings the call may see,
    between ``since`` and ``until``; and, with a ``filterQuery``, ``unitFilter`` or ``search``, the search whose
    listings (those it matches now, and the deleted ones whose last state it matched) the entries are of."""
    asked = call.params
    since, until = moment(asked.since, "since"), moment(asked.until, "until")
    if since is not None and until is not None and since > until:
        raise bad_request(f"since ({asked.since}) is after until ({asked.until})")
    query = history_query(call, None)
    matching = None
    if asked.filterQuery or asked.unitFilter or asked.search:
        matching = listing_query(call, facets=(), limit=0)
    provinces = None if call.provinces is None else tuple(sorted(call.provinces))
    changes = (asked.change.value,) if asked.change is not None else ()
    return replace(query, since=since, until=until, changes=changes, provinces=provinces), matching


def moment(raw: str | None, name: str) -> str | None:
    """A time given as an ISO timestamp or Unix seconds, as history entries write theirs (UTC, milliseconds)."""
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise bad_request(f"{name} must be an ISO timestamp or Unix seconds, got {raw!r}") from None
        seconds = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    if not math.isfinite(seconds) or not 0 <= seconds <= 253_402_300_799:
        raise bad_request(f"{name} must be a time from 1970 to 9999, got {raw!r}")
    return iso_time(seconds)
