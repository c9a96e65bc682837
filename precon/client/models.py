"""Typed records of the listings API, lenient where the production service is loose.

The production service sends absent or null fields, numbers as text (``numberOfUnits``, ``squareFeet``), an
empty string for an unknown floor-plan price, and fields this module does not know about. Every model here
accepts all of that: numbers are parsed from text (``""`` becomes ``None``), unknown fields are kept as extra
attributes, and nothing is required but what identifies a record.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, RootModel

COLLECTIONS: tuple[str, ...] = (
    "Architects",
    "Builders",
    "InteriorDesigners",
    "Marketers",
    "SalesCentres",
    "SalesCompanies",
)
"""Profile collections, spelled as the API spells them (case-sensitive)."""

PROFILE_COLLECTIONS: tuple[str, ...] = (*COLLECTIONS, "Owners")
"""Every collection a profile belongs to (the first part of its path): owners are profiles too."""

REFERENCE_FIELDS: dict[str, str] = {
    "architects": "Architects",
    "builders": "Builders",
    "interiorDesigners": "InteriorDesigners",
    "marketingCompanies": "Marketers",
    "salesCentres": "SalesCentres",
    "salesCompanies": "SalesCompanies",
    "owners": "Owners",
}
"""Listing fields holding reference paths, and the collection their paths point into."""

PROVINCES: dict[str, str] = {
    "on": "Ontario",
    "bc": "British Columbia",
    "ab": "Alberta",
    "mb": "Manitoba",
    "nb": "New Brunswick",
    "nl": "Newfoundland and Labrador",
    "ns": "Nova Scotia",
    "pe": "Prince Edward Island",
    "qc": "Quebec",
    "sk": "Saskatchewan",
}
"""The province path segments and the ``state`` each selects; ``all`` selects every province."""

VERSIONS: tuple[str, ...] = ("v1", "v1-lite", "v1-sandbox")

WEBHOOK_EVENTS: tuple[str, ...] = (
    "listing.created",
    "listing.updated",
    "listing.deleted",
    "listing.matched",
    "profile.created",
    "profile.updated",
    "profile.deleted",
)


def _number(value: Any) -> Any:
    """Numbers sent as text become numbers; blank text becomes None; anything else is left to pydantic."""
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _integer(value: Any) -> Any:
    value = _number(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _timestamp(value: Any) -> Any:
    """ISO 8601 text becomes a datetime; text that is not a timestamp becomes None rather than an error."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    return value


def _string_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return value


def _none_is_empty(value: Any) -> Any:
    return [] if value is None else value


def _lenient_integer(value: Any) -> Any:
    """As ``Integer``, but a fractional number is truncated and anything else unreadable becomes None."""
    value = _integer(value)
    if isinstance(value, bool) or value is None:
        return None if isinstance(value, bool) else value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    return value if isinstance(value, int) else None


def _text_id(value: Any) -> Any:
    """An id sent as a number becomes text; a blank one or anything else unreadable becomes None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if isinstance(value, str):
        return value if value.strip() else None
    return None


def _url_list(value: Any) -> Any:
    """Video URLs: strings kept, an object with a ``url`` (other deployments) becomes that URL, others dropped."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else [value]
    urls: list[str] = []
    for item in items:
        url = item.get("url") if isinstance(item, dict) else item
        if isinstance(url, str) and url.strip():
            urls.append(url.strip())
    return urls


Number = Annotated[float | None, BeforeValidator(_number)]
Integer = Annotated[int | None, BeforeValidator(_integer)]
Timestamp = Annotated[datetime | None, BeforeValidator(_timestamp)]
StringList = Annotated[list[str], BeforeValidator(_string_list)]
LenientInteger = Annotated[int | None, BeforeValidator(_lenient_integer)]
TextId = Annotated[str | None, BeforeValidator(_text_id)]
UrlList = Annotated[list[str], BeforeValidator(_url_list)]


class ResponseMeta(BaseModel):
    """How an answer came: what to quote to the service's operators, and how long it took."""

    request_id: str | None = None
    status: int = 200
    elapsed_ms: float = 0.0
    from_cache: bool = False


class Record(BaseModel):
    """Base of every API record: unknown fields are kept, and fields may be filled by name or alias."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    _meta: ResponseMeta | None = PrivateAttr(default=None)

    @property
    def response_meta(self) -> ResponseMeta | None:
        """Set on the object a client call returned: its request id, timing and whether the cache answered."""
        return self._meta


class GeoPoint(Record):
    lat: float
    lng: float


class Image(Record):
    name: str | None = None
    url: str | None = None


class Photo(Record):
    createdAt: Timestamp = None
    name: str | None = None
    tags: StringList = Field(default_factory=list)
    type: str | None = None
    url: str | None = None


class Milestone(Record):
    amount: Number = None
    prefix: str | None = None
    suffix: str | None = None
    text: str | None = None
    type: str | None = None


class PaymentStructure(Record):
    type: str | None = None
    totalDeposit: Number = None
    milestones: list[Milestone] = Field(default_factory=list)


class Unit(Record):
    """One unit of a floor plan, as the production service lists them (``floorPlans[].units[]``)."""

    unitNumber: TextId = None
    floor: TextId = None
    """A string in the API ("6"); :attr:`floor_number` reads it as a number."""
    status: str | None = None
    """``Available``, ``Reserved`` or ``Sold``."""
    price: Number = None
    description: str | None = None

    @property
    def floor_number(self) -> float | None:
        try:
            return float(self.floor) if self.floor is not None else None
        except ValueError:
            return None


class FloorPlan(Record):
    id: TextId = None
    """Stable across re-imports and unique in the catalogue (clients name files after it)."""
    name: str | None = None
    planCategory: str | None = None
    floorPlanType: StringList = Field(default_factory=list)
    squareFeet: Number = None
    startPrice: Number = None
    contactForPricing: bool | None = None
    status: str | None = None
    numberOfBedrooms: Number = None
    numberOfBathrooms: Number = None
    exposure: StringList = Field(default_factory=list)
    image: Image | None = None
    createdAt: Timestamp = None
    lastUpdated: Timestamp = None
    units: Annotated[list[Unit], BeforeValidator(_none_is_empty)] = Field(default_factory=list)
    """Empty where the plan lists none (houses, or a source that does not)."""

    @property
    def available_units(self) -> list[Unit]:
        return [unit for unit in self.units if unit.status == "Available"]

    @property
    def price_per_square_foot(self) -> float | None:
        if self.startPrice and self.squareFeet:
            return self.startPrice / self.squareFeet
        return None


class HighlightField(Record):
    value: str
    matchLevel: Literal["none", "partial", "full"] = "none"
    matchedWords: list[str] = Field(default_factory=list)


class Profile(Record):
    id: str | None = None
    objectID: str | None = None
    path: str | None = None
    name: str | None = None
    address: str | None = None
    website: str | None = None
    email: str | None = None
    phone: str | None = None
    logo: str | None = None
    summary: str | None = None
    listings: StringList = Field(default_factory=list)
    createdAt: Timestamp = None
    updatedAt: Timestamp = None
    highlight: dict[str, Any] | None = Field(default=None, alias="_highlightResult")
    score: float | None = Field(default=None, alias="_score")

    @property
    def collection(self) -> str | None:
        """The collection named by the profile's path (``Builders`` for ``Builders/5fH9...``)."""
        if self.path and "/" in self.path:
            return self.path.split("/", 1)[0]
        return None

    @property
    def profile_id(self) -> str | None:
        if self.id or self.objectID:
            return self.id or self.objectID
        if self.path and "/" in self.path:
            return self.path.split("/", 1)[1]
        return None


Reference = str | Profile
"""A reference field holds a path (``Builders/<id>``), or the profile itself when asked with referrences."""


class MatchedFloorPlans(Record):
    """What a ``unitFilter`` found in one listing (ours): ``count`` of its ``of`` floor plans match."""

    count: int = 0
    of: Integer = None
    """How many floor plans the listing has."""
    minPrice: Number = None
    """The lowest price above zero among the matching plans; None when none of them has a price."""
    names: StringList = Field(default_factory=list)
    """The matching plans' names, in the listing's order."""
    units: Integer = None
    """Where the filter names units (``units.*``): how many units of the matching plans meet it."""


class Listing(Record):
    listingId: str | None = None
    objectID: str | None = None
    path: str | None = None
    name: str | None = None
    summary: str | None = None
    mode: str | None = None
    sellingStatus: str | None = None
    sellingStatusUpdateTimestamp: LenientInteger = None
    """Unix seconds of the last change of ``sellingStatus``."""
    constructionStatus: str | None = None
    type: StringList = Field(default_factory=list)
    isFeatured: bool | None = None
    createdAt: Timestamp = None
    updatedAt: Timestamp = None
    score: float | None = Field(default=None, alias="_score")
    country: str | None = None
    state: str | None = None
    region: str | None = None
    cityOrDistrict: str | None = None
    streetName: str | None = None
    streetNumber: Integer = None
    postalCode: str | None = None
    neighbourhood: StringList = Field(default_factory=list)
    municipalities: StringList = Field(default_factory=list)
    fullAddress: str | None = None
    geographicAddress: str | None = None
    lat: Number = None
    long: Number = None
    geoloc: GeoPoint | None = Field(default=None, alias="_geoloc")
    completionDate: str | None = None
    estimatedCompletionDate: str | None = None
    firstOccupancyDate: str | None = None
    constructionStarted: str | None = None
    salesStarted: str | None = None
    completionDateTBD: bool | None = None
    estimatedCompletionDateTBD: bool | None = None
    firstOccupancyDateTBD: bool | None = None
    constructionStartedTBD: bool | None = None
    salesStartedTBD: bool | None = None
    completionYear: Integer = None
    estimatedCompletionYear: Integer = None
    firstOccupancyYear: Integer = None
    constructionStartedYear: Integer = None
    salesStartedYear: Integer = None
    startPrice: Number = None
    endPrice: Number = None
    averagePricePerSqFeet: Number = None
    endPricePerSqFeet: Number = None
    contactForPricing: bool | None = None
    assignmentFee: Number = None
    assignmentFeeFree: bool | None = None
    ccOrMaintFee: Number = None
    ccOrMaintFeeIncluded: bool | None = None
    developmentLevies: str | None = None
    developmentLeviesIncluded: bool | None = None
    parkingCost: Number = None
    parkingMaintainance: Number = None
    storageCost: Number = None
    lockerMaintainance: Number = None
    parkingCostIncluded: bool | None = None
    parkingMaintainanceIncluded: bool | None = None
    storageCostIncluded: bool | None = None
    lockerMaintainanceIncluded: bool | None = None
    parkingRestriction: str | None = None
    storageRestriction: str | None = None
    hasParking: bool | None = None
    hasLocker: bool | None = None
    metering: str | None = None
    meteringIncluded: bool | None = None
    minBeds: Number = None
    maxBeds: Number = None
    minBaths: Number = None
    maxBaths: Number = None
    minSize: Number = None
    maxSize: Number = None
    numberOfUnits: Integer = None
    numberOfFloors: Integer = None
    numberOfFloorPlans: Integer = None
    numberOfIncentives: Integer = None
    ceilingHeights: str | None = None
    finishes: str | None = None
    virtualShowing: str | None = None
    exposures: StringList = Field(default_factory=list)
    amenities: StringList = Field(default_factory=list)
    incentives: list[Any] = Field(default_factory=list)
    brokerages: list[Any] = Field(default_factory=list)
    videos: UrlList = Field(default_factory=list)
    """Video URLs; objects with a ``url`` (from other deployments) are read as that URL."""
    logo: Image | None = None
    coverPhoto: Image | None = None
    photos: list[Photo] = Field(default_factory=list)
    paymentStructures: list[PaymentStructure] = Field(default_factory=list)
    architects: list[Reference] = Field(default_factory=list)
    builders: list[Reference] = Field(default_factory=list)
    interiorDesigners: list[Reference] = Field(default_factory=list)
    marketingCompanies: list[Reference] = Field(default_factory=list)
    salesCentres: list[Reference] = Field(default_factory=list)
    salesCompanies: list[Reference] = Field(default_factory=list)
    owners: list[Reference] = Field(default_factory=list)
    floorPlans: list[FloorPlan] | None = None
    highlight: dict[str, Any] | None = Field(default=None, alias="_highlightResult")
    matched_floor_plans: MatchedFloorPlans | None = Field(default=None, alias="_matchedFloorPlans")
    """Present when the search had a ``unitFilter`` (ours)."""

    @property
    def id(self) -> str | None:
        return self.listingId or self.objectID


class ProfilesOfListing(Record):
    id: str | None = None
    owners: list[Reference] = Field(default_factory=list)
    builders: list[Reference] = Field(default_factory=list)
    marketingCompanies: list[Reference] = Field(default_factory=list)
    salesCompanies: list[Reference] = Field(default_factory=list)
    salesCentres: list[Reference] = Field(default_factory=list)
    architects: list[Reference] = Field(default_factory=list)
    interiorDesigners: list[Reference] = Field(default_factory=list)


FacetCounts = dict[str, dict[str, int]]
"""Counts per facet value, keyed by facet name; values ordered by count, highest first."""


class FacetValue(Record):
    value: str
    count: int


class FacetCountsResponse(RootModel[dict[str, dict[str, int] | list[FacetValue]]]):
    """The body of ``facet_counts``: per facet an object (``format=object``) or a ranked list (``format=list``)."""

    def as_counts(self) -> FacetCounts:
        counts: FacetCounts = {}
        for facet, values in self.root.items():
            if isinstance(values, dict):
                counts[facet] = dict(values)
            else:
                counts[facet] = {item.value: item.count for item in values}
        return counts


class FacetHit(Record):
    """One value found by facet value search (ours): its count, and for a reference facet its profile's name."""

    value: str
    count: int = 0
    label: str | None = None
    highlighted: str | None = None
    """The value (or label) with the matched word starts in ``<em>``, everything else HTML-escaped."""


class FacetValueHits(Record):
    """The answer of ``search_facet_values`` (ours): Algolia's searchForFacetValues shape."""

    hits: list[FacetHit] = Field(default_factory=list, alias="facetHits")
    total: int | None = None
    """How many values matched, of which ``hits`` are the most frequent."""
    exhaustive: bool | None = Field(default=None, alias="exhaustiveFacetsCount")


T = TypeVar("T", bound=BaseModel)


class Page(Record, Generic[T]):
    """The list envelope every list operation answers with."""

    results: list[T] = Field(default_factory=list)
    total: int = 0
    page: int = 0
    pages: int = 0
    perPage: int = 20
    facets: FacetCounts | None = None


class ListingPage(Page[Listing]):
    """A page of listings (a named class, so answers can be pickled into caches)."""


class ProfilePage(Page[Profile]):
    """A page of profiles."""


class ErrorBody(Record):
    requestId: str | None = None
    message: str | None = None
    error: str | None = None


class WebhookSubscription(Record):
    id: str
    env: Literal["live", "sandbox"]
    targetUrl: str
    event: str
    createdAt: Timestamp = None
    secret: str | None = None
    filterQuery: str | None = None
    """(ours) Only listings matching this filter before or after a change; None: every listing."""
    unitFilter: str | None = None
    fields: list[str] | None = None
    """(ours) Only changes to these fields; None: every change."""


class DeliveryAttempt(Record):
    attemptedAt: Timestamp = None
    status: int | None = None
    """The receiver's HTTP status; None when no answer came (see ``error``)."""
    latencyMs: float | None = None
    error: str | None = None
    response: str | None = None
    """The start of the receiver's answer."""


class WebhookDelivery(Record):
    """One event sent to one subscription (ours): its state and every attempt."""

    id: str
    eventId: str | None = None
    event: str | None = None
    env: str | None = None
    subscription: str | None = None
    targetUrl: str | None = None
    status: Literal["pending", "delivered", "failed"] | str = "pending"
    attempts: list[DeliveryAttempt] = Field(default_factory=list)
    nextAttemptAt: Timestamp = None
    createdAt: Timestamp = None
    updatedAt: Timestamp = None


class DeliveryPage(Page[WebhookDelivery]):
    """A page of the webhook delivery log."""


class HistoryEntry(Record):
    """(ours) One change to a listing, a floor plan or a unit of it (docs/api.md, "History")."""

    at: Timestamp = None
    listingId: str | None = None
    scope: str | None = None
    """``listing``, ``floorPlan`` or ``unit``."""
    plan: str | None = None
    unit: str | None = None
    field: str | None = None
    """Null where the record was created or deleted."""
    change: str | None = None
    """``created``, ``updated`` or ``deleted``."""
    before: Any = Field(None, alias="from")
    after: Any = Field(None, alias="to")


class HistoryPage(Page[HistoryEntry]):
    """A page of a listing's history, newest first."""


class WebhookDeletion(Record):
    id: str
    deleted: bool


class WebhookTrigger(Record):
    eventId: str
    deliveries: int
