"""What a catalogue store answers, whatever holds the catalogue: the query and result types and the protocol.

:class:`CatalogueStore` is what the service needs of a store;
:class:`~precon.service.stores.sqlite.store.SQLiteStore` and
:class:`~precon.service.stores.postgres.store.PostgresCatalogueStore` implement it. The types are here, in a module of
their own that imports neither store, so that the routes, the shaping and both stores share them without an
import cycle (``precon.service.stores.sqlite.store`` re-exports every name).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from precon.facet_keys import MAX_FACET_VALUES
from precon.filters import Expr
from precon.service.search.plans import PlanMatch
from precon.service.search.similar import SimilarityFeatures
from precon.service.search.text import TextQuery

log = logging.getLogger("precon.store")

TRENDING_HALF_LIFE_S = 24 * 3600.0
"""A view's weight in the trending rank halves every day."""
TRENDING_DECAY_PER_S = math.log(2) / TRENDING_HALF_LIFE_S
TRENDING_EPOCH_S = 1_767_225_600.0
"""2026-01-01: the decayed view scores are stored relative to it, so they need no rewriting as time passes."""


# ----------------------------------------------------------------------------------------------------------
# What a store answers
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeoCircle:
    lat: float
    lng: float
    radius_m: float


@dataclass(frozen=True)
class ListingQuery:
    province: str | None = None
    """A province code, or None for every province."""
    text: TextQuery | None = None
    filter: Expr | None = None
    unit_filter: Expr | None = None
    """Over the fields of one floor plan: keeps the listings with at least one plan for which it holds."""
    circle: GeoCircle | None = None
    facets: tuple[str, ...] = ()
    max_facet_values: int | None = MAX_FACET_VALUES
    """The most values counted per facet, highest count first; None for every value."""
    offset: int = 0
    limit: int = 20
    order: Literal["relevance", "trending"] = "relevance"
    raw: bool = False
    """The page's stored documents as they are stored (:attr:`SearchHits.blobs`), not decoded, where the engine
    can: for answers made of the stored bytes (see :mod:`precon.service.api.splice`)."""
    fields: frozenset[str] | None = None
    """The top-level attributes of each document the answer shows (None: all): an engine may read only those, and
    give each page's documents with those alone."""


@dataclass
class SearchHits:
    """One page of a listing or profile search, with the whole result set's total and facet counts."""

    total: int
    documents: list[dict[str, Any]]
    scores: list[float | None]
    facets: dict[str, list[tuple[str, int]]]
    text: TextQuery | None
    """The text query that matched, typo variants included: what the highlighter marks."""
    blobs: list[tuple[int, bytes]] | None = None
    """With :attr:`ListingQuery.raw`, where the engine gives them: the page's (rowid, stored JSON) in place of
    ``documents``, which is then empty."""
    source: str = ""
    """Names the catalogue file and generation the blobs come from: a rowid names one document within it."""
    matched: list[PlanMatch] | None = None
    """With :attr:`ListingQuery.unit_filter`, where the engine knows them: per listing of the page, the floor plans
    (and units) the unit filter holds for; None where they are to be found in the documents."""


@dataclass(frozen=True)
class ProfileQuery:
    province: str | None = None
    collection: str | None = None
    text: TextQuery | None = None
    filter: Expr | None = None
    facets: tuple[str, ...] = ()
    offset: int = 0
    limit: int = 20
    sort_by_name: Literal["asc", "dsc"] | None = None
    sort_by_listings: Literal["asc", "desc"] | None = None
    """Most (``desc``) or fewest listings first (in ``province`` when given), then by name (``sort_by_name``'s
    direction, else A to Z); before ``sort_by_name`` and relevance."""


@dataclass(frozen=True)
class HistoryQuery:
    """Entries of one listing's history (``listing_id``), or of the catalogue's (None), newest first."""

    listing_id: str | None = None
    scopes: tuple[str, ...] = ()
    """Only these scopes (``listing``, ``floorPlan``, ``unit``); empty for all."""
    fields: tuple[str, ...] = ()
    """Only entries of these fields; empty for all."""
    offset: int = 0
    limit: int = 20
    records: bool = False
    """With ``fields``: the entries of records created or deleted too (which name no field)."""
    since: str | None = None
    """Entries at or after this time (an ISO timestamp as entries carry them); None for any."""
    until: str | None = None
    changes: tuple[str, ...] = ()
    """Only these kinds of change (``created``, ``updated``, ``deleted``); empty for all."""
    listing_ids: tuple[str, ...] | None = None
    """Only the entries of these listings; None for every listing."""
    provinces: tuple[str, ...] | None = None
    """Only the entries of listings in these provinces; None for every province."""


@dataclass
class HistoryPage:
    total: int
    entries: list[dict[str, Any]]
    provinces: set[str | None]
    """The provinces the listing stood in while its history was recorded (None: a listing without one)."""


@dataclass
class CatalogueChange:
    """One record written or removed: what catalogue change events are made of."""

    kind: Literal["listing", "profile"]
    action: Literal["created", "updated", "deleted"]
    key: str
    """The listing id, or the profile path."""
    entries: list[dict[str, Any]] | None = field(default=None, compare=False)
    """A listing's history entries of this write (None where the store records none): ``listing.updated``
    deliveries carry them as ``data.changes``."""
    before: bytes | None = field(default=None, compare=False, repr=False)
    """The listing's stored document before the write (its JSON, as the store held it; None for a new listing, or
    where the store keeps none): what a filtered webhook subscription's "matched before" is judged on. Kept only
    while a listener asks for it (:func:`before_wanted`): a bulk import holds no second copy of what it replaces
    for nobody."""


class CatalogueStore(Protocol):
    def search_listings(self, query: ListingQuery) -> SearchHits: ...
    def get_listings(self, ids: Sequence[str], province: str | None) -> dict[str, dict[str, Any]]: ...
    def get_profiles(self, paths: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def find_profile(self, profile_id: str, collection: str | None, province: str | None) -> dict[str, Any] | None: ...
    def search_profiles(self, query: ProfileQuery) -> SearchHits: ...
    def similarity_features(
        self, listing_id: str, province: str | None, radius_m: float, limit: int
    ) -> tuple[SimilarityFeatures | None, list[SimilarityFeatures]]: ...
    def record_view(self, listing_id: str, at: float | None = None) -> None: ...
    def listing_history(self, query: HistoryQuery) -> HistoryPage: ...
    def matching_listing_ids(self, query: ListingQuery) -> list[str]: ...
    def deleted_matching(self, query: ListingQuery) -> list[str]: ...
    def changes(self, query: HistoryQuery, matching: ListingQuery | None) -> HistoryPage:
        """The catalogue's entries ``query`` asks for, of the listings ``matching`` (when given) matches now and of
        the deleted ones whose last document it matches."""
        ...

    def upsert_listings(self, records: Iterable[dict[str, Any]], at: float | None = None) -> list[CatalogueChange]:
        """Writes listings (each completed as of ``at``, the write's time: now when None, a simulated write's time
        otherwise), recording what changed in each at that time."""
        ...

    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]: ...
    def _notify(self, changes: list[CatalogueChange]) -> list[CatalogueChange]:
        return notify_listeners(self.listeners, changes)  # type: ignore[attr-defined]

    def delete_listing(self, listing_id: str, at: float | None = None) -> list[CatalogueChange]: ...
    def delete_profile(self, path: str) -> list[CatalogueChange]: ...
    def listing_attribute_names(self) -> frozenset[str]: ...
    def counts(self) -> dict[str, int]: ...
    def answers_from_memory(
        self, text_in_some_fields: bool, unit_filter: bool, filter_expr: Expr | None = None
    ) -> bool: ...
    def warm(self, now: bool = False) -> None: ...


def before_wanted(listeners: Iterable[object]) -> bool:
    """Whether a listener wants each change's :attr:`CatalogueChange.before` (one that has ``wants_before()``
    answering True): asked once per write."""
    return any(bool(getattr(listener, "wants_before", lambda: False)()) for listener in listeners)


def notify_listeners(
    listeners: Iterable[Callable[[list[CatalogueChange]], None]],
    changes: list[CatalogueChange],
    logger: logging.Logger = log,
) -> list[CatalogueChange]:
    """Tells each listener of a committed write's changes: one listener's failure is logged (on the store's
    ``logger``), and neither stops the others nor undoes or hides the write."""
    for listener in listeners:
        try:
            listener(changes)
        except Exception:  # a listener's failure must not undo or hide a committed write
            logger.exception("a catalogue listener failed")
    return changes
