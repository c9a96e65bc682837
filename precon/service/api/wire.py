"""The answers of every operation as they go over the wire: the response schemas of the OpenAPI document.

These describe what the service sends, not what a client makes of it (that is :mod:`precon.client.models`, which also
reads the production service's looser records). Every field may be left out by ``retrieveAttributes`` or by
``v1-lite``, so none is required but the envelopes'; unknown fields of imported records pass through.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Text = str | None
Count = int | None
Amount = int | float | None
Flag = bool | None


class Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class Image(Wire):
    name: Text = None
    url: Text = None


class GeoPoint(Wire):
    lat: float
    lng: float


class FloorPlan(Wire):
    id: str = Field(description="Stable across re-imports: `<listingId>-<position>-<digest>` unless imported")
    name: Text = None
    planCategory: Text = None
    floorPlanType: list[str] | None = None
    squareFeet: int | float | str | None = Field(None, description="Often text, as the production service sends")
    startPrice: int | float | str | None = Field(None, description='`""` where the plan has no price')
    contactForPricing: Flag = None
    status: Text = None
    numberOfBedrooms: Amount = None
    numberOfBathrooms: Amount = None
    exposure: list[str] | None = None
    image: Image | None = None
    createdAt: Text = None
    lastUpdated: Text = None


class Milestone(Wire):
    amount: Amount = None
    prefix: Text = None
    suffix: Text = None
    text: Text = None
    type: Text = None


class PaymentStructure(Wire):
    type: Text = None
    totalDeposit: Amount = None
    milestones: list[Milestone] | None = None


class ProfileReference(Wire):
    """A reference expanded by ``referrences``: the profile's public fields."""

    name: Text = None
    path: Text = None


class MatchedFloorPlans(Wire):
    count: int
    of: int
    minPrice: Amount = None
    names: list[str]
    units: int | None = Field(None, description="Units of the matching plans that meet a unitFilter naming units.*")


class Listing(Wire):
    listingId: str | None = None
    objectID: str | None = None
    path: Text = None
    name: Text = None
    summary: Text = None
    mode: Text = None
    sellingStatus: Text = None
    sellingStatusUpdateTimestamp: int | None = Field(None, description="Unix seconds of the last status change")
    constructionStatus: Text = None
    type: list[str] | None = None
    isFeatured: Flag = None
    createdAt: Text = None
    updatedAt: Text = None
    state: Text = None
    cityOrDistrict: Text = None
    neighbourhood: list[str] | None = None
    geoloc: GeoPoint | None = Field(None, alias="_geoloc")
    startPrice: Amount = None
    endPrice: Amount = None
    minBeds: Amount = None
    maxBeds: Amount = None
    minBaths: Amount = None
    maxBaths: Amount = None
    minSize: Amount = None
    maxSize: Amount = None
    coverPhoto: Image | None = None
    photos: list[Wire] | None = None
    videos: list[str] | None = Field(None, description="URLs")
    floorPlans: list[FloorPlan] | None = None
    paymentStructures: list[PaymentStructure] | None = None
    builders: list[str | ProfileReference] | None = Field(None, description="Paths, or profiles when expanded")
    architects: list[str | ProfileReference] | None = None
    interiorDesigners: list[str | ProfileReference] | None = None
    marketingCompanies: list[str | ProfileReference] | None = None
    salesCentres: list[str | ProfileReference] | None = None
    salesCompanies: list[str | ProfileReference] | None = None
    owners: list[str | ProfileReference] | None = None
    score: float | None = Field(None, alias="_score", description="With `search` only")
    highlightResult: dict[str, object] | None = Field(None, alias="_highlightResult")
    matchedFloorPlans: MatchedFloorPlans | None = Field(
        None, alias="_matchedFloorPlans", description="(ours) With `unitFilter` only"
    )


FacetCounts = dict[str, dict[str, int]]


class ListingsPage(Wire):
    results: list[Listing]
    total: int
    page: int
    pages: int
    perPage: int
    facets: FacetCounts | None = Field(None, description="With `facets` only")


class HistoryEntry(Wire):
    at: str = Field(description="When the write was made (a simulated write: its simulated time)")
    listingId: str
    scope: Literal["listing", "floorPlan", "unit"]
    plan: str | None = Field(None, description="The floor plan's id (its position, `#n`, without one)")
    unit: str | None = Field(None, description="The unit's number (its position, `#n`, without one)")
    field: str | None = Field(None, description="Null for a listing, plan or unit created or deleted")
    change: Literal["created", "updated", "deleted"]
    from_: Any = Field(None, alias="from")
    to: Any = None


class HistoryPage(Wire):
    results: list[HistoryEntry]
    total: int
    page: int
    pages: int
    perPage: int


class MarketPoint(Wire):
    start: str = Field(description="The interval's start (UTC)")
    unitsSold: Count = Field(None, description="Units whose status became Sold in the interval (null under v1-lite)")
    unitsAvailable: Count = Field(None, description="Units Available at the interval's end")
    sellThrough: float | None = Field(None, description="Units Sold at the end over the units existing then")
    launches: int = Field(description="Listings whose sellingStatus became Selling Now (or created so) in it")
    medianPrice: float | None = Field(None, description="Of the units Available at the end; null where none")
    medianPricePerSqFt: float | None = Field(None, description="Their price over their plan's squareFeet")
    priceIncreases: Count = Field(None, description="Unit price entries that went up in the interval")
    priceCuts: Count = Field(None, description="Unit price entries that went down in the interval")


class MarketSeries(Wire):
    group: str | None = Field(description="The value of `groupBy`; null without it")
    points: list[MarketPoint]


class MarketStats(Wire):
    interval: Literal["month", "quarter"]
    groupBy: str | None
    series: list[MarketSeries]


class ListingsByIds(Wire):
    results: list[Listing]


class FacetValue(Wire):
    value: str
    count: int


class FacetCountsAnswer(BaseModel):
    """Per facet, value → count (`format=object`) or `[{value, count}]` highest first (`format=list`)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": True})


class FacetHit(Wire):
    value: str
    count: int
    highlighted: Text = None
    label: Text = None


class FacetValuesAnswer(Wire):
    facetHits: list[FacetHit]
    exhaustiveFacetsCount: bool
    total: int


class Profile(Wire):
    objectID: str | None = None
    id: Text = None
    path: Text = None
    name: Text = None
    summary: Text = None
    address: Text = None
    website: Text = None
    email: Text = None
    phone: Text = None
    logo: Text = None
    state: Text = None
    provinces: list[str] | None = None
    listings: list[str | Listing] | None = Field(None, description="Paths, or listings when expanded")
    createdAt: Text = None
    updatedAt: Text = None
    score: float | None = Field(None, alias="_score")
    highlightResult: dict[str, object] | None = Field(None, alias="_highlightResult")


class ProfilesPage(Wire):
    results: list[Profile]
    total: int
    page: int
    pages: int
    perPage: int
    facets: FacetCounts | None = None


class ProfilesOfListing(Wire):
    """The listing's companies by role: paths, or profiles when expanded."""


class Subscription(Wire):
    id: str
    env: Literal["live", "sandbox"]
    targetUrl: str
    event: str
    createdAt: str
    filterQuery: str | None = Field(None, description="(ours) Present when the subscription has one")
    unitFilter: str | None = Field(None, description="(ours) Present when the subscription has one")
    fields: list[str] | None = Field(None, description="(ours) Present when the subscription has them")


class NewSubscription(Subscription):
    secret: str = Field(description="Shown only here: the key that signs its deliveries")


class Subscriptions(Wire):
    results: list[Subscription]


class Deleted(Wire):
    id: str
    deleted: bool


class Triggered(Wire):
    eventId: str
    deliveries: int


class Delivery(Wire):
    id: str


class Deliveries(Wire):
    results: list[Delivery]
    total: int
    page: int
    pages: int
    perPage: int


class Error(BaseModel):
    requestId: str
    message: str = Field(description="What is wrong, and where")


class BlankProfileId(BaseModel):
    error: Literal["Id cannnot be blank"]


class ServerError(BaseModel):
    message: Literal["Error 500", "Error: 500"]
