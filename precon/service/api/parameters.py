"""Every parameter of the API, named once with its type, bounds and help: what the OpenAPI document states and
what the service enforces before an operation runs (a breach is a 400 that names the parameter).

An empty value (``page=``) counts as left out, as clients that build query strings from empty variables send
it; the document says so by allowing ``""`` beside the type.
Rules that span parameters or need the catalogue (the filter grammar, attribute names, ``v1-lite``'s fields)
are checked by the operations, with the same kind of 400.
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import AliasChoices, BeforeValidator, Field

from precon import filters
from precon.client.models import PROFILE_COLLECTIONS, PROVINCES, VERSIONS
from precon.schema import LISTING_REFERENCE_FIELDS
from precon.service.search.facet_values import MAX_FACET_HITS, MAX_FACET_QUERY_LENGTH

MAX_FILTER_LENGTH = filters.MAX_LENGTH
MAX_PER_PAGE = 1000
MAX_PER_PAGE_EXPANDED = 100
DEFAULT_PER_PAGE = 20
MAX_SEARCH_LENGTH = 512
MAX_IDS = 100
DEFAULT_RADIUS_M = 10_000
MAX_RADIUS_M = 1_000_000
MAX_PAGE = 1_000_000

EXPANDABLE_REFERENCES = frozenset({*LISTING_REFERENCE_FIELDS, "listings"})
"""``referrences`` names that replace paths by records: a listing's companies, a profile's listings."""

TRUE_WORDS = {"true": True, "1": True, "false": False, "0": False}

ApiVersion = Enum("ApiVersion", {name.replace("-", "_"): name for name in VERSIONS}, type=str)  # type: ignore[misc]
ApiProvince = Enum("ApiProvince", {code: code for code in ("all", *PROVINCES)}, type=str)  # type: ignore[misc]
Collection = Enum("Collection", {name: name for name in PROFILE_COLLECTIONS}, type=str)  # type: ignore[misc]


class HistoryScope(StrEnum):
    listing = "listing"
    floorPlan = "floorPlan"
    unit = "unit"


class ChangeKind(StrEnum):
    created = "created"
    updated = "updated"
    deleted = "deleted"


class FacetFormat(StrEnum):
    object = "object"
    list = "list"


class NameOrder(StrEnum):
    asc = "asc"
    dsc = "dsc"


class CountOrder(StrEnum):
    desc = "desc"
    asc = "asc"


def blank_is_absent(value: Any) -> Any:
    return None if value == "" else value


def true_or_false(value: Any) -> Any:
    """Only ``true``/``false``/``1``/``0``: pydantic's wider set ("yes", "on") is not the API's."""
    if value == "":
        return None
    if isinstance(value, str):
        if value not in TRUE_WORDS:
            raise ValueError("must be true or false (or 1 or 0)")
        return TRUE_WORDS[value]
    return value


Blank = BeforeValidator(blank_is_absent)


class Bounded:
    """``Bounded[int, 0, 10]``: a number within these bounds (inside the ``| None``, where pydantic applies them)."""

    def __class_getitem__(cls, args: tuple[type, float, float]) -> Any:
        kind, low, high = args
        return Annotated[kind, Field(ge=low, le=high, allow_inf_nan=False) if kind is float else Field(ge=low, le=high)]


Version = Annotated[ApiVersion, Path(description="`v1` (everything), `v1-lite` (the lite fields), `v1-sandbox`")]
Province = Annotated[ApiProvince, Path(description="A province code, or `all`")]

# ``product_Id`` and ``perpage``: misspellings the production service accepts, so real clients send them.
PRODUCT_ID_NAMES = AliasChoices("product_id", "product_Id")
ProductId = Annotated[
    str | None,
    Query(validation_alias=PRODUCT_ID_NAMES, description="The data product to read through; the key's own if left out"),
]

Search = Annotated[
    str | None,
    Query(max_length=MAX_SEARCH_LENGTH, description="Words to match; the last one also as a prefix"),
]
Page = Annotated[Bounded[int, 0, MAX_PAGE] | None, Blank, Query(description="Zero-based page (default 0)")]
PerPage = Annotated[
    Bounded[int, 0, MAX_PER_PAGE] | None,
    Blank,
    Query(
        validation_alias=AliasChoices("perPage", "perpage"),
        description="Results per page (default 20; at most 100 with `referrences`)",
    ),
]
Facets = Annotated[str | None, Query(description="Comma-separated attributes to count, or `*` for the usual set")]
RequiredFacets = Annotated[str, Query(description="Comma-separated attributes to count, or `*` (required)")]
RetrieveAttributes = Annotated[
    str | None, Query(description="Comma-separated attributes to return, or `*` for all (default: all)")
]
Referrences = Annotated[
    str | None,
    Query(description="Comma-separated reference fields to expand into profiles; other names are ignored"),
]
FilterQuery = Annotated[
    str | None,
    Query(max_length=MAX_FILTER_LENGTH, description="Algolia filter syntax: `a:v`, `n >= 1`, AND, OR, NOT, ( )"),
]
UnitFilter = Annotated[
    str | None,
    Query(
        max_length=MAX_FILTER_LENGTH,
        description="(ours) filterQuery syntax over one floor plan: listings with a plan for which it all holds",
    ),
]
HighlightResults = Annotated[
    bool | None, BeforeValidator(true_or_false), Query(description="`true` adds `_highlightResult`")
]
Nearby = Annotated[
    str | None,
    Query(
        pattern=r"^\s*[-+]?\d+(\.\d+)?\s*,\s*[-+]?\d+(\.\d+)?\s*$",
        description="`latitude,longitude`: nearest first, within `radius`",
    ),
]
Radius = Annotated[
    Bounded[float, 0, MAX_RADIUS_M] | None, Blank, Query(description="Metres around `nearby` (default 10000)")
]
ListingId = Annotated[str, Query(pattern=r"\S", description="A listing id")]
ProfileId = Annotated[str, Query(pattern=r"\S", description="A profile id")]
Ids = Annotated[str, Query(pattern=r"[^\s,]", description=f"Comma-separated listing ids, at most {MAX_IDS}")]
MinScore = Annotated[Bounded[float, 0, 1] | None, Blank, Query(description="Lowest similarity to return (default 0)")]
MaxRecommendations = Annotated[Bounded[int, 1, 50] | None, Blank, Query(description="At most this many (default 5)")]
CollectionParam = Annotated[Collection | None, Blank, Query(alias="collection", description="Profiles of one kind")]
SortByName = Annotated[NameOrder | None, Blank, Query(description="Order by name instead of relevance")]
SortByListings = Annotated[
    CountOrder | None,
    Blank,
    Query(
        description="(ours) Order by number of listings in the province, `desc` most first, `asc` fewest; "
        "ties by name (`sortByName`'s direction, else A to Z)"
    ),
]
Format = Annotated[FacetFormat | None, Blank, Query(description="`object` (default) or `list`, highest count first")]
Facet = Annotated[str, Query(pattern=r"^[^,*]+$", description="One facetable attribute (required)")]
FacetQuery = Annotated[
    str | None,
    Query(max_length=MAX_FACET_QUERY_LENGTH, description="Words that start words of the values; empty for all"),
]
MaxFacetHits = Annotated[
    Bounded[int, 1, MAX_FACET_HITS] | None, Blank, Query(description="At most this many hits (default 10)")
]
SubscriptionId = Annotated[str, Query(pattern=r"\S", description="The subscription")]
DeliveriesOf = Annotated[str | None, Query(description="Only this subscription's deliveries")]
HistoryFields = Annotated[
    str | None,
    Query(
        max_length=MAX_FILTER_LENGTH,
        description="(ours) Comma-separated field names of a listing, floor plan or unit: only their entries",
    ),
]
Scope = Annotated[
    HistoryScope | None, Blank, Query(description="(ours) Only entries of a `listing`, a `floorPlan` or a `unit`")
]
Since = Annotated[
    str | None, Query(max_length=64, description="(ours) Entries at or after: an ISO timestamp or Unix seconds")
]
Until = Annotated[
    str | None, Query(max_length=64, description="(ours) Entries at or before: an ISO timestamp or Unix seconds")
]
Change = Annotated[ChangeKind | None, Blank, Query(description="(ours) Only `created`, `updated` or `deleted` entries")]
